// `rdmacm bench` end to end on the test device: a server and a client, each
// `node bin/rdmacm bench … --json`, must agree and print sane figures. Speed
// is never asserted here (the guest is emulated and shared); docs/performance.md
// and `npm run bench` are where the numbers live.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { packageRoot } from '../../src/package-info.js';
import { deviceAddress, freshPort } from '../support/device.js';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function rdmacm(args: string[], timeoutMs: number): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['bin/rdmacm', ...args], { cwd: packageRoot(), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Runs a server, then a client against it; returns both parsed JSON objects. */
async function pair(args: string[]): Promise<{ server: Record<string, unknown>; client: Record<string, unknown> }> {
  const port = String(freshPort());
  const server = rdmacm(['bench', ...args, '-p', port, '--json'], 240_000);
  // The client retries while the server is still starting (node is slow to start in the guest).
  const client = await rdmacm(['bench', ...args, '-p', port, '--json', deviceAddress()], 240_000);
  const served = await server;
  assert.equal(client.code, 0, `client: ${client.stderr}`);
  assert.equal(served.code, 0, `server: ${served.stderr}`);
  const parse = (run: Run, who: string) => {
    const lines = run.stdout.trim().split('\n');
    assert.equal(lines.length, 1, `${who} printed exactly one line: ${run.stdout}`);
    return JSON.parse(lines[0]!) as Record<string, unknown>;
  };
  return { server: parse(served, 'server'), client: parse(client, 'client') };
}

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

/** Both sides report the latency figures of `size`-byte messages, in order; the client measured `iters` round trips (any, when undefined). */
function assertLatencyRun(run: { server: Record<string, unknown>; client: Record<string, unknown> }, size: number, iters?: number): void {
  assertFigures(run.client, LATENCY_KEYS, size);
  assertFigures(run.server, LATENCY_KEYS, size);
  if (iters !== undefined) assert.equal(run.client.iters, iters);
  const { min_us: min, p50_us: p50, max_us: max } = run.client as { min_us: number; p50_us: number; max_us: number };
  assert.ok(min <= p50 && p50 <= max, `min ${min} <= p50 ${p50} <= max ${max}`);
}

test('bench lat -n 200 --json: server and client agree and report latency figures', { timeout: 300_000 }, async () => {
  assertLatencyRun(await pair(['lat', '-n', '200']), 2, 200);
});

test('bench lat --events: both sides wait on completion events and agree, with a 64 B message', { timeout: 300_000 }, async () => {
  assertLatencyRun(await pair(['lat', '--events', '-n', '100', '-w', '20', '-s', '64']), 64, 100);
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
