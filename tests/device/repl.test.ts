// `rdmacm repl` next to the real (soft-RoCE) device, driven through stdin: the
// banner names the device, the helpers find it, resources made in the session
// work and are all closed when it ends.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { packageRoot } from '../../src/package-info.js';
import { deviceAddress, deviceName, freshPort } from '../support/device.js';

// The checkout's root, whether this runs from tests/ (tsx) or dist/tests/ (built).
const repoRoot = packageRoot();

// RDMACM_TEST_DEVICE, else the device the tier found by itself (written back into process.env for the child).
const testDeviceName = deviceName;

// Node start-up alone takes seconds in the emulated guest.
function repl(lines: string[]) {
  return spawnSync(process.execPath, ['bin/rdmacm', 'repl'], { cwd: repoRoot, encoding: 'utf8', input: lines.join('\n') + '\n', timeout: 60_000 });
}

test('the repl banner lists the device, its port state and its address', { timeout: 120_000 }, () => {
  const result = repl(['.exit']);
  assert.equal(result.status, 0, result.stderr);
  assert.match(result.stdout, new RegExp(`^  ${testDeviceName()}: port 1 ACTIVE, ${deviceAddress().replace(/\./g, '\\.')}$`, 'm'));
  assert.doesNotMatch(result.stdout, /no RDMA device/);
});

test('the repl evaluates, finds the device, and closes what the session made on .exit', { timeout: 120_000 }, () => {
  const port = freshPort();
  const result = repl([
    '1 + 1',
    'devices().map(d => d.name).includes(process.env.RDMACM_TEST_DEVICE)',
    'device(process.env.RDMACM_TEST_DEVICE).ports[0].state',
    'const ch = new EventChannel(); const id = createId(ch)',
    `await id.resolveAddr({ address: process.env.RDMACM_TEST_ADDR, port: ${port} })`,
    "'resolved ' + (id.device?.name === process.env.RDMACM_TEST_DEVICE)",
    'const ctx = DeviceContext.open(process.env.RDMACM_TEST_DEVICE); const pd = ctx.allocPd()',
    'ctx.name',
    `getAddrInfo(process.env.RDMACM_TEST_ADDR, '${port}') instanceof AddrInfo`,
    '.exit',
  ]);
  assert.equal(result.status, 0, `stdout: ${result.stdout}\nstderr: ${result.stderr}`);
  assert.doesNotMatch(result.stdout, /Uncaught/, result.stdout);
  const lines = result.stdout.split('\n');
  const results = lines.slice(lines.findIndex((line) => line === '2'));
  assert.deepEqual(results.slice(0, 5), ['2', 'true', "'ACTIVE'", "'resolved true'", `'${testDeviceName()}'`]);
  assert.equal(results[5], 'true', 'getAddrInfo() gives an AddrInfo');
  // The address info, the device context (with its PD), the id, the channel.
  const closed = /^closed (\d+) resources?$/m.exec(result.stdout);
  assert.ok(closed, result.stdout);
  assert.equal(Number(closed[1]), 4, result.stdout);
  assert.doesNotMatch(result.stderr, /closing a resource failed|RDMACM_LEAK/, result.stderr);
});

test('the end of input closes the session\'s resources too', { timeout: 120_000 }, () => {
  const result = repl(['const ch = new EventChannel(); const id = createId(ch)']);
  assert.equal(result.status, 0, result.stderr);
  assert.match(result.stdout, /^closed 2 resources$/m);
});
