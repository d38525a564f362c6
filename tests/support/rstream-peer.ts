// rstream's application protocol (rdma-core librdmacm/examples/rstream.c), for
// a TypeScript peer of the real tool: a 16-byte sync each way, then per
// iteration `count` × `size` bytes client → server, then the same back. With
// -T v every byte a process sends is its running byte count mod 256, and the
// receiver checks its own running count. The exchange is `rdmacm bench
// stream`'s (src/cli/stream-exchange.ts); ExactReader serves rcopy-peer.ts.
import assert from 'node:assert/strict';
import { Buffer } from 'node:buffer';
import type { Duplex } from 'node:stream';
import { streamExchange } from '../../src/cli/stream-exchange.js';
import type { Finished } from './processes.js';

/** Reads exact byte counts from a stream, in order. */
export class ExactReader {
  #chunks: Buffer[] = [];
  #buffered = 0;
  #ended = false;
  #error: Error | undefined;
  #wake: (() => void) | undefined;

  constructor(stream: Duplex) {
    stream.on('data', (chunk: Buffer) => {
      this.#chunks.push(chunk);
      this.#buffered += chunk.length;
      this.#wake?.();
    });
    stream.on('end', () => {
      this.#ended = true;
      this.#wake?.();
    });
    stream.on('error', (error: Error) => {
      this.#error = error;
      this.#wake?.();
    });
    stream.on('close', () => {
      this.#error ??= new Error('the stream closed before its end');
      this.#wake?.();
    });
  }

  async read(length: number): Promise<Buffer> {
    while (this.#buffered < length) {
      if (this.#error) throw this.#error;
      if (this.#ended) throw new Error(`the stream ended ${length - this.#buffered} bytes short`);
      await new Promise<void>((resolve) => (this.#wake = resolve));
      this.#wake = undefined;
    }
    const all = Buffer.concat(this.#chunks);
    this.#chunks = all.length > length ? [all.subarray(length)] : [];
    this.#buffered -= length;
    return all.subarray(0, length);
  }
}

/** One side of an rstream custom run (-S size -C count -I iterations -T v): the CLI's own exchange, verifying every byte. */
export async function rstreamExchange(
  socket: Duplex, role: 'client' | 'server', plan: { size: number; count: number; iterations: number },
): Promise<void> {
  await streamExchange(socket, role, { ...plan, verify: true });
}

/** rstream exited 0 having printed its 'custom' row, with no verification failure (it exits 0 even when a test failed). */
export function checkRstream(result: Finished): void {
  const context = `exit ${result.code}\n${result.stdout}\n${result.stderr}`;
  assert.equal(result.code, 0, context);
  assert.doesNotMatch(result.stdout, /verification failed/, context);
  assert.match(result.stdout, /^custom\s+\S+\s+\S+\s+\S+\s+\S+\s+[\d.]+s\s+[\d.]+\s+[\d.]+$/m, context);
}
