// rstream's application protocol (rdma-core librdmacm/examples/rstream.c), for
// a TypeScript peer of the real tool: a 16-byte sync each way, then per
// iteration `count` × `size` bytes client → server, then the same back. With
// -T v every byte a process sends is its running byte count mod 256, and the
// receiver checks its own running count.
import { Buffer } from 'node:buffer';
import type { Duplex } from 'node:stream';

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

/** One side of an rstream custom run (-S size -C count -I iterations -T v). */
export async function rstreamExchange(
  socket: Duplex, role: 'client' | 'server', plan: { size: number; count: number; iterations: number },
): Promise<void> {
  const reader = new ExactReader(socket);
  let sent = 0;
  let received = 0;
  const patterned = (length: number) => {
    const out = Buffer.allocUnsafe(length);
    for (let i = 0; i < length; i++) out[i] = (sent + i) & 0xff;
    sent += length;
    return out;
  };
  const write = (data: Buffer) => new Promise<void>((resolve, reject) => socket.write(data, (error) => (error ? reject(error) : resolve())));
  const expect = async (length: number) => {
    const data = await reader.read(length);
    for (let i = 0; i < length; i++) {
      if (data[i] !== ((received + i) & 0xff)) throw new Error(`data verification failed at byte ${received + i}`);
    }
    received += length;
  };
  const sendRound = async () => {
    for (let i = 0; i < plan.count; i++) await write(patterned(plan.size));
  };
  const receiveRound = () => expect(plan.count * plan.size);
  if (role === 'client') {
    await write(patterned(16));
    await expect(16);
    for (let i = 0; i < plan.iterations; i++) {
      await sendRound();
      await receiveRound();
    }
  } else {
    await expect(16);
    await write(patterned(16));
    for (let i = 0; i < plan.iterations; i++) {
      await receiveRound();
      await sendRound();
    }
  }
}
