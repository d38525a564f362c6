// Waits for a file descriptor to become readable on Node's event loop, through
// libuv (koffi.node.poll): no thread is parked in a blocking call, and a
// watcher with no waiter does not keep the process alive.
import koffi from 'koffi';
import type { node as koffiNode } from 'koffi';
import { libc, F_GETFL, F_SETFL, O_NONBLOCK, POLLIN } from '../ffi/libc.js';
import { RdmaError } from '../ffi/errors.js';

/** Sets O_NONBLOCK on `fd` so reads report EAGAIN instead of blocking. */
export function setNonBlocking(fd: number): void {
  const flags = libc.fcntl(fd, F_GETFL, 0);
  if (flags < 0 || libc.fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) throw new RdmaError('fcntl', koffi.errno());
}

/** Blocks the thread until `fd` is readable or `timeoutMs` passes (-1: forever). For the synchronous API only. */
export function blockUntilReadable(fd: number, timeoutMs: number): boolean {
  const pollfd = Buffer.alloc(8);
  pollfd.writeInt32LE(fd, 0);
  pollfd.writeInt16LE(POLLIN, 4);
  for (;;) {
    const ready = libc.poll(pollfd, 1, timeoutMs);
    if (ready >= 0) return ready > 0;
    if (koffi.errno() !== 4 /* EINTR */) throw new RdmaError('poll', koffi.errno());
  }
}

export class FdWatcher {
  /** Watchers created and not yet closed (a leak check for tests). */
  static open = 0;
  #handle: koffiNode.PollHandle | undefined;
  #waiters: (() => void)[] = [];
  #closed = false;

  constructor(readonly fd: number) {
    FdWatcher.open++;
  }

  /** Resolves when the fd is readable (or the watcher closes). */
  readable(): Promise<void> {
    return new Promise((resolve) => {
      if (this.#closed) return resolve();
      this.#waiters.push(resolve);
      if (!this.#handle) {
        this.#handle = koffi.node.poll(this.fd, { readable: true }, () => this.#wake());
      } else if (this.#waiters.length === 1) {
        this.#handle.start({ readable: true }, () => this.#wake());
      }
    });
  }

  /** Stops watching and releases the current waiters (the fd may not be readable): nobody needs the fd now. */
  idle(): void {
    if (this.#waiters.length > 0) this.#wake();
  }

  #wake(): void {
    this.#handle?.stop();
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const wake of waiters) wake();
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    FdWatcher.open--;
    this.#handle?.close();
    this.#handle = undefined;
    this.#wake();
  }
}
