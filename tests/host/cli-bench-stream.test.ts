// `rdmacm bench stream` on a host without RDMA: help, option errors, the
// no-device answer, and whole runs over node:net TCP (--tcp needs no device):
// TS against TS, and against rstream -T s (rdma-core's own tool over plain
// sockets, the same application protocol) where rstream is installed. The
// RDMA runs are in tests/device/net-cli.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, execFileSync } from 'node:child_process';
import { createServer } from 'node:net';
import { once } from 'node:events';
import { packageRoot, noDeviceAdvice } from '../../src/package-info.js';
import { hasDevice } from '../support/device.js';
import { STREAM_KEYS } from '../support/stream-keys.js';

const root = packageRoot();

function rdmacm(...args: string[]) {
  return spawnSync(process.execPath, ['bin/rdmacm', 'bench', 'stream', ...args], { cwd: root, encoding: 'utf8', timeout: 60_000 });
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(command: string, args: string[]): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** A TCP port nothing listens on just now. */
async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, 'close');
  return port;
}

function parseFigures(result: Run, who: string): Record<string, number | string> {
  assert.equal(result.code, 0, `${who}: ${result.stderr}`);
  const lines = result.stdout.trim().split('\n');
  assert.equal(lines.length, 1, `${who} printed one line: ${result.stdout}`);
  const figures = JSON.parse(lines[0]!) as Record<string, number | string>;
  const timer = 'timer_ticks' in figures
    ? ['timer_ticks', 'timer_p50_ms', 'timer_p99_ms', 'timer_max_ms', 'timer_late_ticks', 'timer_late_sum_ms', 'timer_late_queued_ms', 'timer_late_on_cpu_ms',
      'timer_warmup_ticks', 'timer_warmup_p99_ms', 'timer_warmup_max_ms']
    : [];
  assert.deepEqual(Object.keys(figures), [...STREAM_KEYS, ...timer]);
  return figures;
}

test('rdmacm bench stream --help prints its usage and exits 0', () => {
  for (const args of [['--help'], ['-h'], ['-l', '--help']]) {
    const result = rdmacm(...args);
    assert.equal(result.status, 0, result.stderr);
    assert.match(result.stdout, /^Usage: rdmacm bench stream \[-S SIZE\] \[-C COUNT\] \[-I ITERS\] \[-w ITERS\] \[-p PORT\] \[-B BYTES\] \[-V\] \[--wait MODE\] \[--spin US\] \[--max-spin US\] \[--tcp\] \[--onread\] \[--timer\] \[--json\] SERVER_ADDR\n {7}rdmacm bench stream -l /);
    assert.equal(result.stderr, '');
  }
});

test('a bad option or argument exits 1 with one line and the usage', () => {
  const cases: [string[], RegExp][] = [
    [[], /^rdmacm bench stream: say SERVER_ADDR to connect to, or -l to serve$/],
    [['-x'], /^rdmacm bench stream: Unknown option '-x'/],
    [['-S', '0', '10.0.0.1'], /^rdmacm bench stream: --size must be an integer from 1 to 1073741824 \(got '0'\)$/],
    [['-C', 'many', '10.0.0.1'], /^rdmacm bench stream: --count must be an integer from 1 /],
    [['-I', '1e3', '10.0.0.1'], /^rdmacm bench stream: --iters must be an integer from 1 /],
    [['-w', '-1', '10.0.0.1'], /^rdmacm bench stream: /],
    [['-p', '65536', '10.0.0.1'], /^rdmacm bench stream: --port must be an integer from 1 to 65535/],
    [['-B', '1000', '10.0.0.1'], /^rdmacm bench stream: --buffer must be an integer from 2048 /],
    [['-B', '3000', '10.0.0.1'], /^rdmacm bench stream: --buffer must be a power of two or a multiple of 2048 \(got 3000\)$/],
    [['--tcp', '-B', '65536', '10.0.0.1'], /^rdmacm bench stream: -B is for RDMA sockets/],
    [['--wait', 'sometimes', '10.0.0.1'], /^rdmacm bench stream: --wait takes adaptive, events, busy-poll \(got 'sometimes'\)$/],
    [['--tcp', '--wait', 'events', '10.0.0.1'], /^rdmacm bench stream: --wait is for RDMA sockets: node:net TCP waits on the kernel$/],
    [['--tcp', '--spin', '100', '10.0.0.1'], /^rdmacm bench stream: --spin is for RDMA sockets: node:net TCP waits on the kernel$/],
    [['--wait', 'events', '--spin', '100', '10.0.0.1'], /^rdmacm bench stream: --spin is adaptive mode's budget: not with --wait events$/],
    [['--spin', '2.5', '10.0.0.1'], /^rdmacm bench stream: --spin must be an integer from 0 to 1000000 \(got '2.5'\)$/],
    [['--tcp', '--max-spin', '100', '10.0.0.1'], /^rdmacm bench stream: --max-spin is for RDMA sockets: node:net TCP waits on the kernel$/],
    [['--wait', 'busy-poll', '--max-spin', '100', '10.0.0.1'], /^rdmacm bench stream: --max-spin is adaptive mode's budget: not with --wait busy-poll$/],
    [['--tcp', '--onread', '-l'], /^rdmacm bench stream: --onread does not go with --tcp -l: node:net's servers take no onread$/],
    [['10.0.0.1', 'extra'], /^rdmacm bench stream: unexpected argument 'extra'$/],
    [['server.example'], /^rdmacm bench stream: SERVER_ADDR must be an IP address \(got 'server.example'\)$/],
    [['-l', 'any'], /^rdmacm bench stream: BIND_ADDR must be an IP address \(got 'any'\)$/],
  ];
  for (const [args, first] of cases) {
    const result = rdmacm(...args);
    assert.equal(result.status, 1, `bench stream ${args.join(' ')}: ${result.stderr}`);
    assert.equal(result.stdout, '');
    const [line, blank, usage] = result.stderr.split('\n');
    assert.match(line!, first, `bench stream ${args.join(' ')}`);
    assert.equal(blank, '');
    assert.match(usage!, /^Usage: rdmacm bench stream/);
  }
});

test('with no RDMA device, bench stream over RDMA exits 2 with the hint', { skip: hasDevice() && 'this host has an RDMA device' }, () => {
  for (const args of [['10.0.0.1'], ['-l', '--json']]) {
    const result = rdmacm(...args);
    assert.equal(result.status, 2, `bench stream ${args.join(' ')}: ${result.stderr}`);
    assert.equal(result.stdout, '');
    assert.equal(result.stderr, `rdmacm: no RDMA device found: ${noDeviceAdvice()}\n`);
  }
});

test('--tcp: a server and a client (reading with --onread) run a verified ping-pong and agree on the figures', { timeout: 90_000 }, async () => {
  const port = String(await freePort());
  // Enough iterations for the timer to tick during the measured ones (the warm-up's ticks are reported apart).
  const plan = ['-S', '100', '-C', '1', '-I', '3000', '-w', '5', '-V', '--json', '--tcp', '-p', port];
  const server = run(process.execPath, ['bin/rdmacm', 'bench', 'stream', '-l', '127.0.0.1', ...plan]);
  const client = parseFigures(await run(process.execPath, ['bin/rdmacm', 'bench', 'stream', '127.0.0.1', ...plan, '--timer', '--onread']), 'client');
  const served = parseFigures(await server, 'server');
  // --timer: a 1 ms timer ran beside the client's exchange, and its lateness is reported.
  const { timer_ticks: ticks, timer_p50_ms: p50Late, timer_p99_ms: p99Late, timer_max_ms: maxLate } = client as Record<string, number>;
  assert.ok(Number.isInteger(ticks) && ticks >= 1, `timer ticks ${ticks}`);
  assert.ok(p50Late >= 0 && p50Late <= p99Late && p99Late <= maxLate, `lateness ${p50Late} ${p99Late} ${maxLate}`);
  // The late ticks' scheduler figures: the thread's queued and running time fit inside those intervals (1 ms + lateness each).
  const { timer_late_ticks: lateTicks, timer_late_sum_ms: lateSum, timer_late_queued_ms: queued, timer_late_on_cpu_ms: onCpu } = client as Record<string, number>;
  assert.ok(Number.isInteger(lateTicks) && lateTicks >= 0 && lateTicks <= ticks, `late ticks ${lateTicks} of ${ticks}`);
  assert.ok(lateTicks > 0 ? lateSum >= 2 * lateTicks : lateSum === 0, `late ticks ${lateTicks}, ${lateSum} ms late`);
  assert.ok(queued >= 0 && onCpu >= 0 && queued + onCpu <= lateSum + 2 * lateTicks, `queued ${queued} + on CPU ${onCpu} within ${lateSum} + ${lateTicks} ms`);
  const { timer_warmup_ticks: warmupTicks, timer_warmup_p99_ms: warmupP99, timer_warmup_max_ms: warmupMax } = client as Record<string, number>;
  assert.ok(Number.isInteger(warmupTicks) && warmupTicks >= 0 && warmupP99 >= 0 && warmupP99 <= warmupMax, `warm-up: ${warmupTicks} ticks, p99 ${warmupP99}, max ${warmupMax}`);
  assert.equal(served.timer_ticks, undefined, 'the server ran no timer');
  assert.equal(client.reads, 'onread');
  assert.equal(served.reads, 'data');
  for (const [figures, role] of [[client, 'client'], [served, 'server']] as const) {
    assert.equal(figures.transport, 'tcp');
    assert.equal(figures.role, role);
    assert.equal(figures.size, 100);
    assert.equal(figures.iterations, 3000);
    assert.equal(figures.warmup, 5);
    assert.equal(figures.bytes, 3000 * 100 * 2);
    const { min_us: min, p50_us: p50, max_us: max, usec_per_xfer: mean } = figures as Record<string, number>;
    assert.ok(min > 0 && min <= p50 && p50 <= max, `${role}: min ${min} <= p50 ${p50} <= max ${max}`);
    assert.ok(mean > 0 && Number.isFinite(figures.gbps as number) && (figures.gbps as number) > 0, `${role}: ${JSON.stringify(figures)}`);
  }
});

test('--tcp: a throughput run in human form prints the figures table', { timeout: 90_000 }, async () => {
  const port = String(await freePort());
  const plan = ['-S', '65536', '-C', '64', '-I', '2', '--tcp', '-p', port];
  const server = run(process.execPath, ['bin/rdmacm', 'bench', 'stream', '-l', '127.0.0.1', ...plan]);
  const client = await run(process.execPath, ['bin/rdmacm', 'bench', 'stream', '127.0.0.1', ...plan]);
  const served = await server;
  assert.equal(client.code, 0, client.stderr);
  assert.equal(served.code, 0, served.stderr);
  assert.match(served.stderr, /^rdmacm bench stream: waiting for a client on 127\.0\.0\.1:\d+\n$/);
  for (const [result, role] of [[client, 'client'], [served, 'server']] as const) {
    assert.match(result.stdout, new RegExp(`^rdmacm bench stream \\(${role}, node:net TCP\\): 65536 B × 64 each way × 2 iterations\\n`));
    assert.match(result.stdout, /\n\s+bytes\s+time s\s+Gb\/sec\s+MB\/s\s+usec\/xfer\n\s+16777216\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+[\d.]+\n/);
    assert.match(result.stdout, /\n  CPU [\d.]+ s \(user [\d.]+, system [\d.]+\), [\d.]+ s per GiB\n$/);
  }
});

const rstream = (() => {
  try {
    execFileSync('sh', ['-c', 'command -v rstream'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

// rstream -T s speaks the same application protocol over plain TCP sockets: the
// exchange is checked against rdma-core's own code here; over RDMA on the device tier.
for (const [name, spec] of [['ping-pong', ['-S', '64', '-C', '1', '-I', '200']], ['throughput', ['-S', '65536', '-C', '50', '-I', '1']]] as const) {
  test(`--tcp against rstream -T s -T v (${name}): both verify every byte, both ways`, { skip: !rstream && 'rstream (rdmacm-utils) is not installed', timeout: 90_000 }, async () => {
    // rstream as the client, against bench stream -l (rstream does not retry: wait for the server)
    let port = String(await freePort());
    // Not --json: the human form says on stderr when it listens.
    const server = spawn(process.execPath, ['bin/rdmacm', 'bench', 'stream', '-l', '127.0.0.1', '--tcp', '-V', '-p', port, ...spec], { cwd: root });
    let serverOut = '';
    let serverErr = '';
    server.stdout.setEncoding('utf8').on('data', (chunk: string) => (serverOut += chunk));
    server.stderr.setEncoding('utf8').on('data', (chunk: string) => (serverErr += chunk));
    const serverDone = once(server, 'close');
    for (let i = 0; i < 400 && !serverErr.includes('waiting for a client'); i++) await new Promise((resolve) => setTimeout(resolve, 50));
    const tool = await run('rstream', ['-T', 's', '-T', 'b', '-T', 'v', '-s', '127.0.0.1', '-p', port, ...spec]);
    const [code] = await serverDone;
    assert.equal(tool.code, 0, tool.stdout + tool.stderr);
    assert.match(tool.stdout, /^custom\s+/m);
    assert.doesNotMatch(tool.stdout, /verification failed/);
    assert.equal(code, 0, serverErr);
    const bytes = Number(spec[1]) * Number(spec[3]) * Number(spec[5]) * 2;
    assert.match(serverOut, new RegExp(`^rdmacm bench stream \\(server, node:net TCP\\): .*\\n.*\\n\\s+${bytes}\\s`));

    // rstream as the server, bench stream as the client (which retries while rstream starts), reading with --onread
    port = String(await freePort());
    const toolServer = run('rstream', ['-T', 's', '-T', 'b', '-T', 'v', '-b', '127.0.0.1', '-p', port, ...spec]);
    const client = await run(process.execPath, ['bin/rdmacm', 'bench', 'stream', '127.0.0.1', '--tcp', '--onread', '-V', '--json', '-p', port, ...spec]);
    const served = await toolServer;
    assert.equal(parseFigures(client, 'client').reads, 'onread');
    assert.equal(served.code, 0, served.stdout + served.stderr);
    assert.match(served.stdout, /^custom\s+/m);
    assert.doesNotMatch(served.stdout, /verification failed/);
  });
}
