// Every rdmacm command: --help exits 0 with its usage, and where a command needs
// a device, a host without one gets exit code 2 and the hint.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { commands } from '../../src/cli/commands.js';
import { packageRoot } from '../../src/package-info.js';
import { hasDevice } from '../support/device.js';

const bin = join(packageRoot(), 'bin', 'rdmacm');
const rdmacm = (args: string[]) => spawnSync(process.execPath, [bin, ...args], { encoding: 'utf8', timeout: 60_000 });

test('rdmacm --version prints the version', () => {
  const result = rdmacm(['--version']);
  assert.equal(result.status, 0);
  const { version } = JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version: string };
  assert.equal(result.stdout, `rdmacm ${version}\n`);
});

for (const { name } of commands) {
  test(`rdmacm ${name} --help prints its usage and exits 0`, () => {
    const result = rdmacm([name, '--help']);
    assert.equal(result.status, 0, result.stderr);
    assert.match(result.stdout, new RegExp(`Usage: rdmacm ${name}`));
  });
}

test('an option before the command: -h shows the command\'s help; others say where options go', () => {
  const help = rdmacm(['-h', 'devices']);
  assert.equal(help.status, 0, help.stderr);
  assert.match(help.stdout, /^Usage: rdmacm devices/);
  const misplaced = rdmacm(['--json', 'devices']);
  assert.equal(misplaced.status, 1);
  assert.equal(misplaced.stderr, 'rdmacm: options go after the command: rdmacm devices [options]\n');
  const unknown = rdmacm(['-h', 'nonsense']);
  assert.equal(unknown.status, 1);
  assert.match(unknown.stderr, /^rdmacm: unknown command 'nonsense'/);
});

// Commands that need a device, with arguments that would otherwise run them.
const needDevice: [string, string[]][] = [
  ['devices', ['devices']],
  ['smoke', ['smoke']],
  ['ping (client)', ['ping', '-c', '-a', '127.0.0.1', '-C', '1']],
  ['bench (client)', ['bench', 'lat', '-n', '10', '127.0.0.1']],
];
for (const [name, args] of needDevice) {
  // Skipped on a host with an RDMA device: there the command would run.
  test(`rdmacm ${name} without a device exits 2 with the hint`, { skip: hasDevice() && 'this host has an RDMA device' }, () => {
    const result = rdmacm(args);
    assert.equal(result.status, 2, result.stdout + result.stderr);
    assert.match(result.stdout + result.stderr, /setup-rxe\.sh|rxe-vm\.sh|no RDMA device/);
  });
}
