// rstream's custom exchange (src/cli/stream-exchange.ts) over node:net on the
// loopback: the bytes each side sends, the verification, plans that do not
// match, a peer that ends early, and the figures.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { availableParallelism } from 'node:os';
import { createServer, connect, type Socket } from 'node:net';
import { streamExchange, streamFigures, StreamExchangeError, SYNC_BYTES, type StreamPlan } from '../../src/cli/stream-exchange.js';

/** A connected pair of node:net sockets on 127.0.0.1. */
async function pair(): Promise<{ client: Socket; server: Socket; close(): void }> {
  const listener = createServer();
  listener.listen(0, '127.0.0.1');
  await once(listener, 'listening');
  const accepted = once(listener, 'connection') as Promise<[Socket]>;
  const client = connect((listener.address() as { port: number }).port, '127.0.0.1');
  await once(client, 'connect');
  const [server] = await accepted;
  listener.close();
  return { client, server, close: () => (client.destroy(), server.destroy()) };
}

/** rstream's -T v pattern: byte i of a side's stream is i mod 256. */
const pattern = (from: number, length: number) => Buffer.from(Array.from({ length }, (_, i) => (from + i) & 0xff));

test('both sides finish, each having received the other\'s pattern, and time only the measured iterations', async () => {
  const { client, server, close } = await pair();
  try {
    const plan: StreamPlan = { size: 300, count: 3, iterations: 4, warmup: 2, verify: true };
    const seenByServer: Buffer[] = [];
    server.on('data', (chunk: Buffer) => seenByServer.push(chunk));
    const [c, s] = await Promise.all([streamExchange(client, 'client', plan), streamExchange(server, 'server', plan)]);
    const total = SYNC_BYTES + 6 * 3 * 300;
    assert.deepEqual(Buffer.concat(seenByServer), pattern(0, total));
    for (const timing of [c, s]) {
      assert.equal(timing.iterationMs.length, 4);
      assert.ok(timing.iterationMs.every((ms) => ms > 0), String(timing.iterationMs));
      assert.ok(timing.elapsedMs > 0);
      // Both sides ran in this process for the interval: some CPU, and no more than every CPU's worth of it.
      const cpuMs = (timing.cpuMicros.user + timing.cpuMicros.system) / 1000;
      assert.ok(cpuMs > 0 && cpuMs <= availableParallelism() * timing.elapsedMs + 20, `${cpuMs} ms of CPU in ${timing.elapsedMs} ms`);
    }
  } finally {
    close();
  }
});

test('verification names the first byte that is not the pattern', async () => {
  const { client, server, close } = await pair();
  try {
    const run = streamExchange(server, 'server', { size: 10, count: 1, iterations: 1, verify: true });
    client.write(pattern(0, SYNC_BYTES));
    const corrupt = pattern(SYNC_BYTES, 10);
    corrupt[7] = 0;
    client.on('data', () => client.write(corrupt));
    await assert.rejects(run, (error: Error) => {
      assert.ok(error instanceof StreamExchangeError);
      assert.equal(error.message, `data verification failed at byte ${SYNC_BYTES + 7}: got 0, expected ${SYNC_BYTES + 7}`);
      return true;
    });
  } finally {
    close();
  }
});

test('a peer that sends more than the plan holds, or ends early, fails the run with what was short', async () => {
  {
    const { client, server, close } = await pair();
    try {
      const run = streamExchange(server, 'server', { size: 10, count: 1, iterations: 1 });
      client.write(pattern(0, SYNC_BYTES + 5));
      await assert.rejects(run, /^StreamExchangeError: the peer sent 5 bytes more than was due: do both sides have the same -S, -C and -I\?$/);
    } finally {
      close();
    }
  }
  {
    const { client, server, close } = await pair();
    try {
      const run = streamExchange(server, 'server', { size: 100, count: 2, iterations: 3, warmup: 1 });
      client.on('data', () => client.end(pattern(SYNC_BYTES, 150)));
      client.write(pattern(0, SYNC_BYTES));
      await assert.rejects(run, /^StreamExchangeError: the peer ended the stream 50 bytes short, in warm-up iteration 1 of 1$/);
    } finally {
      close();
    }
  }
});

test('figures follow rstream\'s formulas', () => {
  const plan = { size: 1000, count: 10, iterations: 4 };
  const figures = streamFigures(plan, { elapsedMs: 8, iterationMs: Float64Array.from([2, 1, 4, 1]), cpuMicros: { user: 6000, system: 2000 } });
  assert.equal(figures.bytes, 80_000); // iterations × count × size × 2
  assert.equal(figures.seconds, 0.008);
  assert.equal(figures.gbps, 0.08); // 640 000 bits over 8000 µs
  assert.equal(figures.mb_per_s, 10);
  assert.equal(figures.usec_per_xfer, 100); // 8000 µs / 4 / 20
  // Per transfer: each iteration over 2 × 10 transfers, in µs.
  assert.deepEqual([figures.min_us, figures.p50_us, figures.avg_us, figures.p99_us, figures.max_us], [50, 50, 100, 200, 200]);
  // CPU: 8 ms over 80 000 bytes, so 8e-3 × 2^30 / 80 000 s per GiB.
  assert.deepEqual([figures.cpu_s, figures.cpu_user_s, figures.cpu_system_s], [0.008, 0.006, 0.002]);
  assert.equal(figures.cpu_s_per_gib, 107.374182);
});
