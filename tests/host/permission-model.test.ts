// Under Node's permission model native addons are refused, and koffi is one:
// the README says to add --allow-addons. Both halves of that, with the build,
// in a child node of this line (Node 20 spells the flag --experimental-permission).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import process from 'node:process';
import { pathToFileURL } from 'node:url';
import { packageRoot } from '../../src/package-info.js';

const permissionFlag = process.allowedNodeEnvironmentFlags.has('--permission') ? '--permission' : '--experimental-permission';
const entry = pathToFileURL(join(packageRoot(), 'dist', 'src', 'index.js')).href;
const script = `
  let outcome;
  try {
    const m = await import(${JSON.stringify(entry)});
    let channel = 'opened';
    try { new m.EventChannel().close(); } catch (error) { channel = { name: error.name, code: error.code }; }
    outcome = { devices: m.listDevices().length, channel };
  } catch (error) {
    outcome = { importError: { name: error.name, code: error.code, message: error.message } };
  }
  console.log(JSON.stringify(outcome));`;

/** The child's outcome under the permission model, reading anywhere, with `extra` flags. */
function underPermissionModel(extra: string[]): Record<string, unknown> {
  const result = spawnSync(process.execPath, [permissionFlag, '--allow-fs-read=*', ...extra, '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60_000 });
  assert.equal(result.status, 0, result.stderr);
  return JSON.parse(result.stdout.trim().split('\n').at(-1)!) as Record<string, unknown>;
}

test(`under ${permissionFlag}, importing rdmacm fails with Node's ERR_DLOPEN_DISABLED; with --allow-addons it loads and its errors stay typed`, { timeout: 120_000 }, () => {
  const refused = underPermissionModel([]);
  assert.equal((refused.importError as { code?: string } | undefined)?.code, 'ERR_DLOPEN_DISABLED', JSON.stringify(refused));

  const allowed = underPermissionModel(['--allow-addons']);
  assert.equal(allowed.importError, undefined, JSON.stringify(allowed));
  assert.equal(typeof allowed.devices, 'number');
  // Opened where the host has an RDMA stack; else a typed RdmaError (ENODEV, ENOENT…), never an untyped one.
  const channel = allowed.channel as 'opened' | { name: string; code: unknown };
  if (channel !== 'opened') {
    assert.equal(channel.name, 'RdmaError', JSON.stringify(channel));
    assert.match(String(channel.code), /^E[A-Z]+$/);
  }
});
