// The test command's closing count (scripts/test-counts.awk), read from what
// node:test's own reporters print: a run of a file with tests that pass, fail,
// throw and skip, in the spec reporter (as the host and device tiers run) and
// in the TAP reporter behind each guest's "[hostN] " (as the two-host tier
// runs, its two guests' lines interleaved), and a VM pass run again. CI shows
// only the tail of a run, so each failure must be named there with the step
// that ran it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const FIXTURE = `
import { test } from 'node:test';
import assert from 'node:assert/strict';
test('passes', () => undefined);
test('fails an assertion', () => { assert.equal(1, 2, 'one is not two\\nsecond line'); });
test('throws', () => { throw new Error('the reason'); });
test('is skipped', { skip: 'no device here' }, () => undefined);
`;

/** The fixture's output in one reporter (a run of its own, not a child of this one); it exits 1, two tests failing. */
function report(folder: string, reporter: 'spec' | 'tap'): string[] {
  const { NODE_TEST_CONTEXT: _child, ...env } = process.env;
  const run = spawnSync(process.execPath, ['--test', `--test-reporter=${reporter}`, join(folder, 'fixture.test.mjs')], { encoding: 'utf8', env });
  assert.equal(run.status, 1, run.stderr);
  return run.stdout.split('\n');
}

/** Two lists' lines alternated, as two guests' output reaches the log. */
function interleave(a: string[], b: string[]): string[] {
  const lines: string[] = [];
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    if (i < a.length) lines.push(a[i]!);
    if (i < b.length) lines.push(b[i]!);
  }
  return lines;
}

test('the count names each failure with its step and what it said, and each skip with its reason', () => {
  const folder = mkdtempSync(join(tmpdir(), 'rdmacm-test-counts-'));
  try {
    writeFileSync(join(folder, 'fixture.test.mjs'), FIXTURE);
    const spec = report(folder, 'spec');
    const tap = report(folder, 'tap');
    const log = [
      'platform: host tier: Linux, node',
      ...spec,
      'platform: device tier (soft-RoCE VM): Linux, node',
      ...spec,
      '== the same pass again: it failed in a guest whose clock jumped (above), which says nothing of the code',
      ...interleave(tap.map((line) => `[host0] ${line}`), tap.map((line) => `[host1] ${line}`)),
    ];
    writeFileSync(join(folder, 'log'), log.join('\n'));
    const count = execFileSync('awk', ['-f', 'scripts/test-counts.awk', join(folder, 'log')], { encoding: 'utf8' });
    const failures = (where: string, assertion: string, thrown: string) => [
      `  failed: [${where}] fails an assertion: ${assertion}`,
      `  failed: [${where}] throws: ${thrown}`,
    ];
    assert.deepEqual(count.trimEnd().split('\n'), [
      'tests: 4 passed, 8 failed, 0 cancelled, 4 skipped',
      ...failures('host tier', 'AssertionError [ERR_ASSERTION]: one is not two', 'Error: the reason'),
      ...failures('device tier (soft-RoCE VM)', 'AssertionError [ERR_ASSERTION]: one is not two', 'Error: the reason'),
      // in the order the interleaved lines give them
      '  failed: [two hosts, host0] fails an assertion: one is not two',
      '  failed: [two hosts, host1] fails an assertion: one is not two',
      "  failed: [two hosts, host0] throws: 'the reason'",
      "  failed: [two hosts, host1] throws: 'the reason'",
      ...Array.from({ length: 4 }, () => '  skipped: is skipped — no device here'),
      '  the same pass again: it failed in a guest whose clock jumped (above), which says nothing of the code',
    ]);
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
});
