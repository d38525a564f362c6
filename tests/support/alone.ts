// Scripts of tests/support run in a process of their own, for what only a
// whole process shows: that it ends by itself, or what its threads print.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** A script of tests/support, beside this file (under tsx) or built. */
export const supportScript = (script: string): string => fileURLToPath(new URL(`./${script}`, import.meta.url));

/** Runs the script at `path` in its own process, which must end by itself (status 0); what it printed. */
export function runAlone(nodeArgs: string[], path: string, timeoutMs: number): string {
  const result = spawnSync(process.execPath, [...nodeArgs, path], { encoding: 'utf8', timeout: timeoutMs });
  assert.equal(result.signal, null, `the process did not end by itself, or was killed: ${result.stderr}`);
  assert.equal(result.status, 0, result.stderr);
  return result.stdout.trim();
}
