// `rdmacm nc` as users run it (bin/rdmacm): help, argument errors, and the
// no-device answer on a host without RDMA. Moving bytes needs a device:
// tests/device/net-cli.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { packageRoot } from '../../src/package-info.js';
import { hasDevice } from '../support/device.js';
import { noDeviceAdvice } from '../../src/package-info.js';

function rdmacm(...args: string[]) {
  return spawnSync(process.execPath, ['bin/rdmacm', ...args], { cwd: packageRoot(), encoding: 'utf8', timeout: 60_000, input: '' });
}

test('rdmacm nc --help prints both forms of the usage and exits 0', () => {
  for (const args of [['--help'], ['-h'], ['-l', '-h'], ['10.0.0.1', '7000', '--help']]) {
    const result = rdmacm('nc', ...args);
    assert.equal(result.status, 0, `nc ${args.join(' ')}: ${result.stderr} (a stale dist/? run npm run build)`);
    assert.match(result.stdout, /^Usage: rdmacm nc \[-v\] HOST PORT\n {7}rdmacm nc -l \[-v\] \[HOST\] PORT\n/);
    assert.match(result.stdout, /EOF on stdin ends this side's writing/);
    assert.equal(result.stderr, '');
  }
});

test('rdmacm --help lists nc', () => {
  const result = rdmacm('--help');
  assert.equal(result.status, 0);
  assert.match(result.stdout, /^\s+nc\s+netcat over RDMA/m);
});

test('a bad option or argument exits 1 with one line and the usage, before looking for a device', () => {
  const cases: [string[], RegExp][] = [
    [[], /^rdmacm nc: say HOST and PORT to connect to, or -l to listen$/],
    [['10.0.0.1'], /^rdmacm nc: say the PORT to connect to$/],
    [['10.0.0.1', '7000', 'extra'], /^rdmacm nc: unexpected argument 'extra'$/],
    [['10.0.0.1', '0'], /^rdmacm nc: PORT must be an integer from 1 to 65535 \(got '0'\)$/],
    [['10.0.0.1', '65536'], /^rdmacm nc: PORT must be an integer from 1 to 65535 \(got '65536'\)$/],
    [['10.0.0.1', 'http'], /^rdmacm nc: PORT must be an integer from 1 to 65535 \(got 'http'\)$/],
    [['-l'], /^rdmacm nc: say the PORT to listen on$/],
    [['-l', '10.0.0.1', '7000', 'extra'], /^rdmacm nc: unexpected argument 'extra'$/],
    [['-l', '-1'], /^rdmacm nc: Unknown option '-1'/],
    [['-l', '10.0.0.1', '7x'], /^rdmacm nc: PORT must be an integer from 0 to 65535 \(got '7x'\)$/],
    [['no_such host!', '7000'], /^rdmacm nc: HOST must be an IP address or a host name \(got 'no_such host!'\)$/],
    [['-u', '10.0.0.1', '7000'], /^rdmacm nc: Unknown option '-u'/],
    [['--listen=yes', '7000'], /^rdmacm nc: Option '-l, --listen' does not take an argument/],
  ];
  for (const [args, first] of cases) {
    const result = rdmacm('nc', ...args);
    assert.equal(result.status, 1, `nc ${args.join(' ')}: ${result.stderr}`);
    assert.equal(result.stdout, '');
    const [line, blank, usage] = result.stderr.split('\n');
    assert.match(line!, first, `nc ${args.join(' ')}`);
    assert.equal(blank, '');
    assert.match(usage!, /^Usage: rdmacm nc/);
  }
});

// Where this host has an RDMA device, nc would listen or connect instead: the device tier covers that.
test('with no RDMA device, nc exits 2 with the hint and writes nothing to stdout', { skip: hasDevice() && 'this host has an RDMA device' }, () => {
  for (const args of [['10.0.0.1', '7000'], ['-l', '7000'], ['-l', '-v', '10.0.0.1', '7000']]) {
    const result = rdmacm('nc', ...args);
    assert.equal(result.status, 2, `nc ${args.join(' ')}: ${result.stderr}`);
    assert.equal(result.stdout, '');
    assert.equal(result.stderr, `rdmacm: no RDMA device found: ${noDeviceAdvice()}\n`);
  }
});
