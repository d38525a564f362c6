// riostream's application protocol (rdma-core librdmacm/examples/riostream.c),
// for a TypeScript peer of the real tool: each side maps its buffer for the
// peer's RDMA writes (riomap at offset 0), a 16-byte sync goes each way over
// the stream (which carries each side's iomap entry first), then per iteration
// each side RDMA-writes the whole buffer `count` times into the peer's, the
// last one with a marker in its last byte that the peer polls for (even from
// the client, odd from the server; where the peer verifies, this side writes
// the marker after the rest). With -T v the final write of an iteration carries the sender's running byte
// count mod 256 in bytes 0..size-2.
// Its default run (DEFAULT_RUN) is such runs at four sizes, on two connections.
import { Buffer } from 'node:buffer';
import type { RdmaSocket } from '../../src/net/index.js';
import { ExactReader } from './rstream-peer.js';

/**
 * How long one look at the marker spins before it yields to the event loop.
 * riostream spins on it without end; a look per event-loop turn made this
 * side's 64 B round trip 7× C's, and the default run 80 s a way.
 */
const SPIN_MS = 0.2;

/** Polls `ready`, yielding to the event loop between spins (completions keep flowing), bounded; `failure` says what never came. */
async function until(ready: () => boolean, timeoutMs: number, failure: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const spinEnd = performance.now() + SPIN_MS;
    do {
      if (ready()) return;
    } while (performance.now() < spinEnd);
    if (Date.now() > deadline) throw new Error(failure());
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/**
 * How long a message's other bytes may still be landing once its marker is
 * seen. One RDMA write's bytes land in no set order: rxe on Linux 6.12 can lay
 * down the last byte before the first, and there riostream -T v against itself
 * failed 5 runs of 40 beside one busy loop ("data verification failed", then a
 * hang), with nothing of ours involved. It lands separate writes on one
 * connection in order.
 */
const LANDING_MS = 2_000;

/** Where an exchange stands, for a report when it stalls. */
export interface ExchangeProgress {
  phase: string;
}

/** One run_test of riostream: `count` writes of `size` bytes each way per iteration; `verify` as its -T v (the default). */
export interface RiostreamPlan {
  readonly size: number;
  readonly count: number;
  readonly iterations: number;
  readonly verify?: boolean;
}

/** rdma-core's size_to_count (librdmacm/examples/common.c): the transfers of each size in a default run. */
const sizeToCount = (size: number) => (size >= 1 << 20 ? 100 : size >= 1 << 16 ? 1000 : size >= 1 << 10 ? 10_000 : 100_000);

/** The sizes of riostream's default run (its test_size[] entries of option 0). */
const DEFAULT_SIZES = [64, 4096, 1 << 16, 1 << 20];

/**
 * riostream's default run (no -S): each size's latency test on one
 * connection, then each size's bandwidth test on a second. It formats
 * nothing without -T v, so only the markers can be checked.
 */
export const DEFAULT_RUN: Readonly<Record<'latency' | 'bandwidth', readonly RiostreamPlan[]>> = {
  latency: DEFAULT_SIZES.map((size) => ({ size, count: 1, iterations: sizeToCount(size), verify: false })),
  bandwidth: DEFAULT_SIZES.map((size) => ({ size, count: sizeToCount(size), iterations: 1, verify: false })),
};

export async function riostreamExchange(
  socket: RdmaSocket, role: 'client' | 'server', plan: RiostreamPlan,
  progress: ExchangeProgress = { phase: '' }, timeoutMs = 60_000,
): Promise<void> {
  const { size, verify = true } = plan;
  const reader = new ExactReader(socket);
  const buffer = Buffer.alloc(size);
  buffer[size - 1] = 0xff;
  const mapping = socket.mapForRemoteWrite(buffer, { offset: 0 });
  let sent = 0;
  let received = 0;
  let marker = 0;
  const write = (data: Buffer) => new Promise<void>((resolve, reject) => socket.write(data, (error) => (error ? reject(error) : resolve())));
  // Verified data goes first and the marker in a write of its own, so that it
  // cannot land before the data (see LANDING_MS): riostream polls it, then verifies.
  const finalWrite = async () => {
    if (verify) for (let i = 0; i < size - 1; i++) buffer[i] = (sent + i) & 0xff;
    sent += size - 1;
    buffer[size - 1] = marker++ & 0xff;
    if (verify && size > 1) {
      await socket.writeToRemote(buffer.subarray(0, size - 1), 0);
      await socket.writeToRemote(buffer.subarray(size - 1), size - 1);
    } else {
      await socket.writeToRemote(buffer, 0);
    }
  };
  const awaitPeer = async () => {
    const expected = marker++ & 0xff;
    progress.phase = `awaiting the peer's marker ${expected} in the last byte (${received} B verified so far)`;
    await until(() => buffer[size - 1] === expected, timeoutMs, () => 'the peer never wrote the marker');
    if (verify) {
      // riostream writes its marker with the data: the data may still be landing.
      const firstWrong = () => {
        for (let i = 0; i < size - 1; i++) if (buffer[i] !== ((received + i) & 0xff)) return i;
        return -1;
      };
      let wrong = -1;
      await until(() => (wrong = firstWrong()) < 0, LANDING_MS, () => `data verification failed at byte ${received + wrong}`);
    }
    received += size - 1;
  };
  const writeRound = async () => {
    for (let i = 0; i < plan.count - 1; i++) {
      progress.phase = `writing ${i + 1} of ${plan.count} into the peer's mapping`;
      await socket.writeToRemote(buffer, 0);
    }
    progress.phase = `writing the last of ${plan.count}, with the marker`;
    await finalWrite();
  };
  try {
    progress.phase = 'the 16-byte sync';
    if (role === 'client') {
      await write(Buffer.alloc(16));
      await reader.read(16);
      for (let i = 0; i < plan.iterations; i++) {
        await writeRound();
        await awaitPeer();
      }
    } else {
      await reader.read(16);
      await write(Buffer.alloc(16));
      for (let i = 0; i < plan.iterations; i++) {
        await awaitPeer();
        await writeRound();
      }
    }
  } finally {
    mapping.unmap();
  }
}
