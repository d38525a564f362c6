// `rdmacm smoke` end to end on the device, as `npm run smoke` runs it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rdmacm } from '../support/processes.js';
import { freshPort } from '../support/device.js';

test('rdmacm smoke --json passes every step', { timeout: 120_000 }, async () => {
  const { code, stdout, stderr } = await rdmacm(['smoke', '--json', '-p', String(freshPort())]).finished;
  assert.equal(code, 0, stderr + stdout);
  const report = JSON.parse(stdout) as { ok: boolean; steps: { step: string; ok: boolean; ms: number }[] };
  assert.equal(report.ok, true);
  assert.deepEqual(report.steps.map((s) => s.step), [
    'device found',
    'rdma_cm connects client and server',
    'send/recv both ways',
    'RDMA write, then read, returns the bytes written',
    'teardown is clean',
  ]);
  assert.ok(report.steps.every((s) => s.ok && Number.isFinite(s.ms)));
});
