// The test bed's own failures. A guest that never boots: CI once saw Debian
// 13's guest exit with no output at all; now rxe-vm.sh says how QEMU ended,
// boots once more (nothing has run yet), and exits 125 if that fails too. A
// 32-bit CPU model makes the failure certain: the 64-bit kernel cannot start.
// And a guest whose clock jumps, which rxe-vm.sh names with an exit of its own.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import process from 'node:process';
import { packageRoot } from '../../src/package-info.js';

// The VM needs QEMU, which rxe-vm.sh installs as root; CI runs as root, so it never skips there.
const canBootVm = Boolean(process.env.CI) || process.getuid?.() === 0 || spawnSync('sh', ['-c', 'command -v qemu-system-x86_64']).status === 0;

test('a guest that cannot boot: rxe-vm.sh tells how QEMU ended, boots once more, then exits 125', { timeout: 600_000, skip: !canBootVm && 'no QEMU and not root' }, () => {
  const env = { ...process.env, RDMACM_VM_CPU: 'qemu32', RDMACM_VM_BOOT_TIMEOUT: '120' };
  const run = spawnSync('bash', ['scripts/rxe-vm.sh', '--timeout', '300', '--', 'sh', '-c', 'echo the command ran'], {
    cwd: packageRoot(), env, encoding: 'utf8', timeout: 540_000,
  });
  assert.equal(run.status, 125, `exit ${run.status}: ${run.stderr}`);
  assert.doesNotMatch(run.stdout, /the command ran/);
  const first = /the guest did not boot: QEMU exited with status (\d+) after \d+s: the kernel stopped .*; booting it again \(once\)/.exec(run.stderr);
  assert.ok(first, run.stderr);
  assert.match(run.stderr, /the guest failed to boot again: QEMU exited with status \d+ after \d+s: the kernel stopped/);
  assert.ok(run.stderr.indexOf('booting it again') < run.stderr.indexOf('failed to boot again'), run.stderr);
});

// A guest whose clock jumps ahead (its TSC is read from this host's, which a VM host may not keep steady)
// fires its command's timeouts early. rxe-vm.sh holds the guest's uptime over the command against its own;
// here the command stands in for a jump of 600 s by moving its recorded start back, then fails.
test('a guest whose clock ran ahead of this host\'s during a failed command: rxe-vm.sh says so and exits 123', { timeout: 600_000, skip: !canBootVm && 'no QEMU and not root' }, () => {
  const run = spawnSync('bash', ['scripts/rxe-vm.sh', '--timeout', '300', '--', 'sh', '-c', 'echo -600 >/run/rdmacm/started; exit 1'], {
    cwd: packageRoot(), encoding: 'utf8', timeout: 540_000,
  });
  assert.equal(run.status, 123, `exit ${run.status}: ${run.stderr}`);
  assert.match(run.stderr, /the guest's clock did not keep time with this host's: its command ran \d+ s by its clock, \d+ s by this host's/);
  assert.match(run.stderr, /the command failed in a guest whose clock jumped: exit 123 \(run it again\)/);
});
