// A FIFO opened non-blocking for reading and writing: an fd to watch on a host with no RDMA device.
import { closeSync, constants, mkdtempSync, openSync, readSync, rmSync, writeSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A new FIFO in its own temporary folder; remove() deletes both. */
export function makeFifo(): { path: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'rdmacm-fifo-'));
  const path = join(dir, 'fifo');
  execFileSync('mkfifo', [path]);
  return { path, remove: () => rmSync(dir, { recursive: true }) };
}

/** A FIFO known only by its fd: its name is gone once it is open, so a process that exits without close() leaves nothing in the temporary folder. */
export class Fifo {
  readonly fd: number;

  constructor() {
    const fifo = makeFifo();
    try {
      this.fd = openSync(fifo.path, constants.O_RDWR | constants.O_NONBLOCK);
    } finally {
      fifo.remove();
    }
  }

  write(bytes: number): void {
    writeSync(this.fd, Buffer.alloc(bytes, 1));
  }

  /** Reads until EAGAIN; the number of bytes read. */
  drain(): number {
    const chunk = Buffer.alloc(256);
    let total = 0;
    for (;;) {
      try {
        total += readSync(this.fd, chunk);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'EAGAIN') return total;
        throw error;
      }
    }
  }

  close(): void {
    closeSync(this.fd);
  }
}
