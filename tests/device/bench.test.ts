// `rdmacm bench` end to end on the test device: a server and a client, each
// `node bin/rdmacm bench … --json`, must agree and print sane figures. Speed
// is never asserted here (the guest is emulated and shared); docs/performance.md
// and `npm run bench` are where the numbers live.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { benchPair as pair } from '../support/bench-pair.js';

function assertFigures(result: Record<string, unknown>, keys: string[], size: number): void {
  assert.deepEqual(Object.keys(result).sort(), [...keys].sort());
  assert.equal(result.size, size);
  for (const key of keys) {
    const value = result[key];
    assert.equal(typeof value, 'number', key);
    assert.ok(Number.isFinite(value) && (value as number) > 0, `${key} = ${String(value)} is positive and finite`);
  }
}

const LATENCY_KEYS = ['size', 'iters', 'min_us', 'p50_us', 'avg_us', 'p99_us', 'p999_us', 'max_us'];

/** What a side waiting in adaptive mode adds: the spin budget it learned. */
const ADAPTIVE_KEYS = ['spin_budget_us'];

/**
 * Both sides report the latency figures of `size`-byte messages, in order (and
 * `adaptive` sides their learned budget); the client measured `iters` round
 * trips (any, when undefined).
 */
function assertLatencyRun(
  run: { server: Record<string, unknown>; client: Record<string, unknown> }, size: number, iters?: number, adaptive: readonly ('server' | 'client')[] = [],
): void {
  assertFigures(run.client, [...LATENCY_KEYS, ...(adaptive.includes('client') ? ADAPTIVE_KEYS : [])], size);
  assertFigures(run.server, [...LATENCY_KEYS, ...(adaptive.includes('server') ? ADAPTIVE_KEYS : [])], size);
  if (iters !== undefined) {
    assert.equal(run.client.iters, iters);
    // The server times the gaps between the client's measured pings: one fewer.
    assert.equal(run.server.iters, iters - 1, "the server's count against the client's");
  }
  const { min_us: min, p50_us: p50, max_us: max } = run.client as { min_us: number; p50_us: number; max_us: number };
  assert.ok(min <= p50 && p50 <= max, `min ${min} <= p50 ${p50} <= max ${max}`);
}

test('bench lat -n 200 --json: server and client agree and report latency figures', { timeout: 300_000 }, async () => {
  assertLatencyRun(await pair(['lat', '-n', '200']), 2, 200);
});

test('bench lat on the event loop, each side its own way (the server -e, the client --wait adaptive --spin 2000), agree with a 64 B message', { timeout: 300_000 }, async () => {
  const run = await pair(['lat', '-n', '100', '-w', '20', '-s', '64'], { server: ['--events'], client: ['--wait', 'adaptive', '--spin', '2000'] });
  assertLatencyRun(run, 64, 100, ['client']);
  assert.ok((run.client.spin_budget_us as number) >= 2000, `the client's budget ${String(run.client.spin_budget_us)} µs is at least its --spin`);
});

test('bench lat --listener: each side takes its receives with a completion listener (the server on events, the client adaptive), and they agree', { timeout: 300_000 }, async () => {
  assertLatencyRun(await pair(['lat', '-n', '100', '-w', '20', '-s', '64', '--listener'], { server: ['--events'], client: ['--wait', 'adaptive'] }), 64, 100, ['client']);
});

test('bench lat -D 1 -I 0: a timed run, sending from registered memory, ends on its own and both sides report what they measured', { timeout: 300_000 }, async () => {
  assertLatencyRun(await pair(['lat', '-D', '1', '-w', '100', '-I', '0']), 2);
});

test('bench bw -n 500 -s 4096 --json: server and client agree and report bandwidth figures', { timeout: 300_000 }, async () => {
  const { server, client } = await pair(['bw', '-n', '500', '-s', '4096']);
  const keys = ['size', 'iters', 'mb_per_s', 'msg_rate_mpps'];
  assertFigures(client, keys, 4096);
  assertFigures(server, keys, 4096);
  assert.equal(client.iters, 500);
  assert.equal(server.iters, 500);
});

test('bench bw --wait adaptive: both sides await their queues on the event loop, drain in batches, and agree', { timeout: 300_000 }, async () => {
  const { server, client } = await pair(['bw', '--wait', 'adaptive', '-n', '500', '-s', '4096']);
  const keys = ['size', 'iters', 'mb_per_s', 'msg_rate_mpps', ...ADAPTIVE_KEYS];
  assertFigures(client, keys, 4096);
  assertFigures(server, keys, 4096);
  assert.equal(client.iters, 500);
  assert.equal(server.iters, 500);
});
