// `rdmacm bench` as users run it (bin/rdmacm, which prefers the build in
// dist/): help, option errors, and the no-device answer on a host without RDMA.
// The measurements themselves need a device: tests/device/bench.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { packageRoot } from '../../src/package-info.js';
import { hasDevice } from '../support/device.js';
import { noDeviceAdvice } from '../../src/package-info.js';

const repoRoot = packageRoot();

function rdmacm(...args: string[]) {
  return spawnSync(process.execPath, ['bin/rdmacm', ...args], { cwd: repoRoot, encoding: 'utf8', timeout: 60_000 });
}

test('rdmacm bench --help prints the usage and exits 0', () => {
  for (const args of [['--help'], ['-h'], ['lat', '--help']]) {
    const result = rdmacm('bench', ...args);
    assert.equal(result.status, 0, `stderr: ${result.stderr} (a stale dist/? run npm run build)`);
    assert.match(result.stdout, /^Usage: rdmacm bench lat\|bw \[-s SIZE\] \[-n ITERS\] \[-w ITERS\] \[-D SECONDS\] \[-p PORT\] \[-I BYTES\] \[-e \| --wait MODE\] \[--spin US\] \[--max-spin US\] \[--listener\] \[--timer\] \[--json\] \[SERVER_ADDR\]\n {7}rdmacm bench stream /);
    assert.equal(result.stderr, '');
  }
});

test('rdmacm --help lists the bench command', () => {
  const result = rdmacm('--help');
  assert.equal(result.status, 0);
  assert.match(result.stdout, /^\s+bench\s+measure RC send\/recv latency/m);
});

test('a bad option or argument exits 1 with one line and the usage', () => {
  const cases: [string[], RegExp][] = [
    [['lat', '--bogus'], /^rdmacm bench: Unknown option '--bogus'/],
    [['lat', '-x'], /^rdmacm bench: Unknown option '-x'/],
    [[], /^rdmacm bench: say lat, bw or stream$/],
    [['ping'], /^rdmacm bench: unknown test 'ping' \(lat, bw or stream\)$/],
    [['--json', 'stream'], /^rdmacm bench: options of bench stream go after the word stream/],
    [['lat', '-s', '0'], /^rdmacm bench: --size must be an integer/],
    [['bw', '-n', 'many'], /^rdmacm bench: --iters must be an integer/],
    [['lat', '-w', '1e3'], /^rdmacm bench: --warmup must be an integer/],
    [['lat', '-p', '70000'], /^rdmacm bench: --port must be an integer from 1 to 65535/],
    [['lat', '--inline', 'all'], /^rdmacm bench: --inline must be an integer from 0 to 65536/],
    [['lat', '-D', '-1'], /^rdmacm bench: /],
    [['lat', '10.0.0.1', 'extra'], /^rdmacm bench: unexpected argument 'extra'$/],
    [['lat', 'not-an-address'], /^rdmacm bench: SERVER_ADDR must be an IP address/],
    [['bw', '--events'], /^rdmacm bench: -e is for lat \(bw takes --wait\)$/],
    [['bw', '--wait', 'events', '-D', '1'], /^rdmacm bench: bw with --wait counts messages: give -n, not -D$/],
    [['lat', '--wait', 'spin'], /^rdmacm bench: --wait takes adaptive, events, busy-poll \(got 'spin'\)$/],
    [['lat', '-e', '--wait', 'events'], /^rdmacm bench: -e is --wait events: give one of them$/],
    [['lat', '--timer'], /^rdmacm bench: --timer needs the event loop: give -e or --wait$/],
    [['lat', '--listener'], /^rdmacm bench: --listener is for lat on the event loop: give -e or --wait$/],
    [['bw', '--wait', 'adaptive', '--listener'], /^rdmacm bench: --listener is for lat on the event loop: give -e or --wait$/],
    [['lat', '--spin', '100'], /^rdmacm bench: --spin is adaptive mode's budget: give --wait adaptive$/],
    [['lat', '-e', '--spin', '100'], /^rdmacm bench: --spin is adaptive mode's budget: give --wait adaptive$/],
    [['lat', '--wait', 'adaptive', '--spin', '1000001'], /^rdmacm bench: --spin must be an integer from 0 to 1000000 \(got '1000001'\)$/],
    [['bw', '--wait', 'adaptive', '--spin', '-5'], /^rdmacm bench: /],
    [['lat', '--wait', 'events', '--max-spin', '100'], /^rdmacm bench: --max-spin is adaptive mode's budget: give --wait adaptive$/],
    [['lat', '--wait', 'adaptive', '--max-spin', '1.5'], /^rdmacm bench: --max-spin must be an integer from 0 to 1000000 \(got '1.5'\)$/],
  ];
  for (const [args, first] of cases) {
    const result = rdmacm('bench', ...args);
    assert.equal(result.status, 1, `bench ${args.join(' ')}: ${result.stderr}`);
    assert.equal(result.stdout, '');
    const [line, blank, usage] = result.stderr.split('\n');
    assert.match(line!, first, `bench ${args.join(' ')}`);
    assert.equal(blank, '');
    assert.match(usage!, /^Usage: rdmacm bench/);
  }
});

// Where this host has an RDMA device, bench would wait for a client (server) or
// connect (client) instead: the device tier covers those runs.
test('with no RDMA device, bench exits 2 with the hint on stderr', { skip: hasDevice() && 'this host has an RDMA device' }, () => {
  for (const args of [['lat'], ['bw', '--json'], ['lat', '10.0.0.1']]) {
    const result = rdmacm('bench', ...args);
    assert.equal(result.status, 2, `bench ${args.join(' ')}: ${result.stderr}`);
    assert.equal(result.stdout, '');
    assert.equal(
      result.stderr,
      `rdmacm: no RDMA device found: ${noDeviceAdvice()}\n`,
    );
  }
});
