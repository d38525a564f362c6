// rstream's custom run (rdma-core librdmacm/examples/rstream.c, -S -C -I) over
// any stream.Duplex: an rdmacm/net socket, a node:net one, or a test's pair.
// A 16-byte sync each way (the client first), then per iteration COUNT
// transfers of SIZE bytes client → server, then the same back. Every byte sent
// is rstream's -T v pattern (the sender's running byte count mod 256), so an
// rstream -T v peer can verify it; with `verify` this side checks what it
// receives the same way. Timing starts at the end of the sync (and warm-up),
// as rstream's does. Used by `rdmacm bench stream` and by the device tests.
// Reads come as 'data' events, or through a ReadRelay: node:net's onread,
// into one buffer reused for every read, as rstream's reads are.
import { Buffer } from 'node:buffer';
import { performance } from 'node:perf_hooks';
import process from 'node:process';
import type { Duplex } from 'node:stream';

/** Bytes of rstream's sync, each way. */
export const SYNC_BYTES = 16;

/** What both sides must agree on (an rstream peer: the same -S and -C, and -I = iterations + warmup). */
export interface StreamPlan {
  /** Bytes per transfer (rstream's -S). */
  readonly size: number;
  /** Transfers each way per iteration (rstream's -C). */
  readonly count: number;
  /** Measured iterations (rstream's -I). */
  readonly iterations: number;
  /** Iterations run before the measured ones. @defaultValue 0 */
  readonly warmup?: number;
  /** Check every received byte against rstream's -T v pattern. @defaultValue false */
  readonly verify?: boolean;
}

/** What one side measured. */
export interface StreamTiming {
  /** From the end of the sync and warm-up to the end of the last iteration, in ms (rstream's interval). */
  readonly elapsedMs: number;
  /** Each measured iteration's duration, in ms. */
  readonly iterationMs: Float64Array;
  /** The CPU time this whole process used over the same interval, in µs (every thread's: the loop's, libuv's, V8's). */
  readonly cpuMicros: { readonly user: number; readonly system: number };
}

/**
 * A socket's onread option that hands each read to the exchange. Reads that
 * come before the exchange starts (the peer's sync can) are kept, copied.
 */
export class ReadRelay {
  readonly #buffer: Buffer;
  readonly #early: Buffer[] = [];
  #listener: ((chunk: Buffer) => void) | undefined;
  /** For the socket's options: every read lands in one buffer of `bytes`. */
  readonly onread: { readonly buffer: Buffer; readonly callback: (bytes: number) => boolean };

  constructor(bytes: number) {
    this.#buffer = Buffer.allocUnsafe(bytes);
    this.onread = { buffer: this.#buffer, callback: (read) => this.#take(read) };
  }

  #take(bytes: number): boolean {
    const chunk = this.#buffer.subarray(0, bytes);
    if (this.#listener) this.#listener(chunk);
    else this.#early.push(Buffer.from(chunk));
    return true; // go on reading (node:net's types ask for a boolean)
  }

  /** Reads go to `listener` (undefined: kept again), the kept ones first. */
  listen(listener: ((chunk: Buffer) => void) | undefined): void {
    this.#listener = listener;
    if (listener) for (const chunk of this.#early.splice(0)) listener(chunk);
  }
}

/** A run that could not finish: the peer ended early, sent other bytes, or the stream failed. */
export class StreamExchangeError extends Error {
  override name = 'StreamExchangeError';
}

/**
 * Runs one side of rstream's custom exchange on `socket`, which must be
 * connected; with `relay`, the socket's reads come through it (its onread);
 * `onMeasuring` is called as the measured iterations begin (performance.now()).
 * Resolves when this side has sent and received everything; the socket stays
 * open (the caller ends it).
 */
export function streamExchange(
  socket: Duplex, role: 'client' | 'server', plan: StreamPlan, relay?: ReadRelay, onMeasuring?: (from: number) => void,
): Promise<StreamTiming> {
  const { size, count, iterations } = plan;
  const warmup = plan.warmup ?? 0;
  const verify = plan.verify === true;
  const total = warmup + iterations;
  const phase = size * count;
  // Every write is a view into this: 256 offsets of the pattern, each followed by SIZE bytes of it.
  const pattern = Buffer.allocUnsafe(256 + Math.max(size, SYNC_BYTES));
  for (let i = 0; i < pattern.length; i++) pattern[i] = i & 0xff;
  const samples = new Float64Array(iterations);

  return new Promise<StreamTiming>((resolve, reject) => {
    let sent = 0; // bytes written so far (the pattern's position)
    let received = 0; // bytes received so far
    let expected = 0; // received must reach this to end the current receive
    let afterReceive: (() => void) | undefined;
    let writesLeft = 0;
    let writeLength = 0;
    let afterSend: (() => void) | undefined;
    let iteration = 0;
    let iterationStart = 0;
    let startedAt = 0;
    let cpuAtStart = process.cpuUsage();
    let settled = false;
    let pastSync = false; // the sync is done

    const finish = (error?: Error) => {
      if (settled) return;
      settled = true;
      if (relay) relay.listen(undefined);
      else socket.off('data', onData);
      socket.off('end', onEnd);
      socket.off('close', onClose);
      socket.off('error', onError);
      socket.off('drain', pump);
      if (error) reject(error);
      else resolve({ elapsedMs: performance.now() - startedAt, iterationMs: samples, cpuMicros: process.cpuUsage(cpuAtStart) });
    };

    const onData = (chunk: Buffer) => {
      if (verify) {
        for (let i = 0; i < chunk.length; i++) {
          if (chunk[i] !== ((received + i) & 0xff)) {
            return finish(new StreamExchangeError(`data verification failed at byte ${received + i}: got ${chunk[i]}, expected ${(received + i) & 0xff}`));
          }
        }
      }
      received += chunk.length;
      // Each side sends only after receiving all the other sent: any excess means another plan.
      if (received > expected) {
        return finish(new StreamExchangeError(`the peer sent ${received - expected} bytes more than was due: do both sides have the same -S, -C and -I?`));
      }
      if (afterReceive && received >= expected) {
        const next = afterReceive;
        afterReceive = undefined;
        next();
      }
    };
    const where = () => !pastSync ? 'in the sync'
      : iteration < warmup ? `in warm-up iteration ${iteration + 1} of ${warmup}` : `in iteration ${iteration - warmup + 1} of ${iterations}`;
    const shortBy = () => `${Math.max(0, expected - received)} bytes short, ${where()}`;
    const onEnd = () => finish(new StreamExchangeError(`the peer ended the stream ${shortBy()}`));
    const onClose = () => finish(new StreamExchangeError(`the stream closed ${shortBy()}`));
    const onError = (error: Error) => finish(error);

    /** Waits until `length` more bytes have arrived, then calls `then`. */
    const receive = (length: number, then: () => void) => {
      expected += length;
      if (received >= expected) then();
      else afterReceive = then;
    };

    /** Writes `writes` transfers of `length` bytes, as the stream takes them (waiting for 'drain'), then calls `then`. */
    const send = (writes: number, length: number, then: () => void) => {
      writesLeft = writes;
      writeLength = length;
      afterSend = then;
      pump();
    };
    function pump(): void {
      while (writesLeft > 0) {
        writesLeft--;
        const at = sent & 0xff;
        sent += writeLength;
        if (!socket.write(pattern.subarray(at, at + writeLength)) && writesLeft > 0) {
          socket.once('drain', pump);
          return;
        }
      }
      const next = afterSend!;
      afterSend = undefined;
      if (!settled) next();
    }

    const synced = () => {
      pastSync = true;
      startedAt = performance.now();
      startIteration();
    };
    const startIteration = () => {
      if (iteration === total) return finish();
      iterationStart = performance.now();
      if (iteration === warmup) {
        startedAt = iterationStart;
        cpuAtStart = process.cpuUsage();
        onMeasuring?.(startedAt);
      }
      if (role === 'client') send(count, size, () => receive(phase, endIteration));
      else receive(phase, () => send(count, size, endIteration));
    };
    const endIteration = () => {
      if (iteration >= warmup) samples[iteration - warmup] = performance.now() - iterationStart;
      iteration++;
      startIteration();
    };

    if (!relay) socket.on('data', onData);
    socket.on('end', onEnd);
    socket.on('close', onClose);
    socket.on('error', onError);
    if (role === 'client') send(1, SYNC_BYTES, () => receive(SYNC_BYTES, synced));
    else receive(SYNC_BYTES, () => send(1, SYNC_BYTES, synced));
    // Last: the relay hands over at once what came before, which the sync's receive must be waiting for.
    relay?.listen(onData);
  });
}

/** Figures as rstream prints them, and per-transfer percentiles from the iterations. */
export interface StreamFigures {
  /** Bytes moved, both directions (rstream's "total"). */
  readonly bytes: number;
  readonly seconds: number;
  /** rstream's Gb/sec: both directions' bits over the time, 1e9 bits/s. */
  readonly gbps: number;
  /** The same in MB/s (1e6 bytes/s). */
  readonly mb_per_s: number;
  /** rstream's usec/xfer: the time over iterations × count × 2. */
  readonly usec_per_xfer: number;
  /** Each iteration's time over 2 × count, in µs (with count 1: half the round trip). */
  readonly min_us: number;
  readonly p50_us: number;
  readonly avg_us: number;
  readonly p99_us: number;
  readonly max_us: number;
  /** This process's CPU time over the run (user + system), in seconds, and its two parts. */
  readonly cpu_s: number;
  readonly cpu_user_s: number;
  readonly cpu_system_s: number;
  /** cpu_s per GiB of `bytes` (both directions' bytes, 2^30 to the GiB). */
  readonly cpu_s_per_gib: number;
}

export function streamFigures(plan: StreamPlan, timing: StreamTiming): StreamFigures {
  const bytes = plan.iterations * plan.count * plan.size * 2;
  const us = timing.elapsedMs * 1000;
  const perXfer = Array.from(timing.iterationMs, (ms) => (ms * 1000) / (2 * plan.count)).sort((a, b) => a - b);
  const at = (p: number) => perXfer[Math.min(perXfer.length - 1, Math.max(0, Math.ceil(p * perXfer.length) - 1))] ?? 0;
  const round = (v: number) => Math.round(v * 1000) / 1000;
  const fine = (v: number) => Math.round(v * 1e6) / 1e6; // a ping-pong's Gb/sec is small
  const cpuSeconds = (timing.cpuMicros.user + timing.cpuMicros.system) / 1e6;
  return {
    bytes,
    seconds: round(us / 1e6),
    gbps: fine((bytes * 8) / (us * 1000)),
    mb_per_s: fine(bytes / us),
    usec_per_xfer: round(us / plan.iterations / (plan.count * 2)),
    min_us: round(perXfer[0] ?? 0),
    p50_us: round(at(0.5)),
    avg_us: round(perXfer.reduce((sum, v) => sum + v, 0) / Math.max(1, perXfer.length)),
    p99_us: round(at(0.99)),
    max_us: round(perXfer[perXfer.length - 1] ?? 0),
    cpu_s: fine(cpuSeconds),
    cpu_user_s: fine(timing.cpuMicros.user / 1e6),
    cpu_system_s: fine(timing.cpuMicros.system / 1e6),
    cpu_s_per_gib: fine(cpuSeconds / (bytes / 2 ** 30)),
  };
}
