// `rdmacm devices` as users run it (bin/rdmacm, which prefers the build in
// dist/ — scripts/test.sh builds first — and falls back to tsx): help, option
// errors, and the no-device answer on a host without RDMA.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { packageRoot } from '../../src/package-info.js';
import { hasDevice } from '../support/device.js';
import { noDeviceAdvice } from '../../src/package-info.js';

// The checkout's root, whether this runs from tests/ (tsx) or dist/tests/ (built).
const repoRoot = packageRoot();

function rdmacm(...args: string[]) {
  return spawnSync(process.execPath, ['bin/rdmacm', ...args], { cwd: repoRoot, encoding: 'utf8' });
}

test('rdmacm devices --help prints the usage and exits 0', () => {
  for (const flag of ['--help', '-h']) {
    const result = rdmacm('devices', flag);
    assert.equal(result.status, 0, `stderr: ${result.stderr} (a stale dist/? run npm run build)`);
    assert.match(result.stdout, /^Usage: rdmacm devices \[-v\] \[--json\] \[-h\]/);
    assert.match(result.stdout, /--json/);
    assert.equal(result.stderr, '');
  }
});

test('rdmacm --help lists the devices command', () => {
  const result = rdmacm('--help');
  assert.equal(result.status, 0);
  assert.match(result.stdout, /^\s+devices\s+list RDMA devices/m);
});

test('an unknown option or an argument exits 1 with one line and the usage', () => {
  for (const args of [['--bogus'], ['-x'], ['rxe0']]) {
    const result = rdmacm('devices', ...args);
    assert.equal(result.status, 1, `devices ${args.join(' ')}`);
    assert.equal(result.stdout, '');
    const [first, blank, usage] = result.stderr.split('\n');
    assert.match(first!, /^rdmacm devices: (Unknown option|Unexpected argument)/);
    assert.equal(blank, '');
    assert.match(usage!, /^Usage: rdmacm devices/);
  }
});

// Where this host has an RDMA device the command lists it instead: the device
// tier (tests/device/devices.test.ts) covers that case.
test('with no RDMA device, devices and devices --json exit 2 with the hint on stderr', { skip: hasDevice() && 'this host has an RDMA device' }, () => {
  for (const args of [[], ['--json'], ['-v']]) {
    const result = rdmacm('devices', ...args);
    assert.equal(result.status, 2, `devices ${args.join(' ')}: ${result.stderr}`);
    assert.equal(result.stdout, '', 'nothing on stdout, not even [] for --json');
    assert.equal(
      result.stderr,
      `rdmacm: no RDMA device found: ${noDeviceAdvice()}\n`,
    );
  }
});
