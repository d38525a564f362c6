// The device tier's watchdog (tests/support/hang-watchdog.ts), in a child run
// of node:test with short limits: a test that never ends and a loop held by
// a synchronous call are each named on stderr, and the run ends, its later
// tests never reached; a run that does not hang is left alone. The failures
// recorded on the way (tests/support/failures.ts) end such a run's output.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runChildModule } from '../support/child-module.js';

const run = (body: string) => runChildModule(`
  import { test } from 'node:test';
  import { startHangWatchdog } from './tests/support/hang-watchdog.ts';
  startHangWatchdog({ testMs: 3000, blockedMs: 2000 });
  const holdLoop = setInterval(() => undefined, 60_000);
  test('quick', () => undefined);
  ${body}
  test('last', () => { clearInterval(holdLoop); console.log('the last test ran'); });
`);

test('a test that never ends is named, with how long it ran, and the run ends, repeating the failures before it', () => {
  const child = run(`
    test('fails', () => { throw new Error('the reason'); });
    test('waits', async (t) => { await t.test('for nothing', () => new Promise(() => undefined)); });`);
  assert.equal(child.status, null, `a killed run has no exit status: ${child.stderr}`);
  assert.match(child.stderr, /hang watchdog: "waits" has run for [2-4] s; running: "waits" \([2-4] s\); "waits > for nothing" \([2-4] s\)/);
  assert.match(child.stderr, /hang watchdog: main thread: wchan \S+/);
  assert.match(child.stderr, /hang watchdog: the tests that failed before:\n {2}✖ "fails": Error: the reason\n/);
  assert.doesNotMatch(child.stdout, /the last test ran/);
});

test('an event loop held by a synchronous call is named with the test that holds it', () => {
  const child = run(`test('spins', () => { const until = Date.now() + 20_000; while (Date.now() < until); });`);
  assert.equal(child.status, null, child.stderr);
  assert.match(child.stderr, /hang watchdog: the event loop has not turned for [23] s \(a synchronous call holds it: native, or a spawnSync\); running: "spins"/);
  assert.doesNotMatch(child.stdout, /the last test ran/);
});

test('a run that turns its loop and ends its tests in time ends as it would without the watchdog', () => {
  const child = run(`test('sleeps a while', () => new Promise((done) => setTimeout(done, 1500)));`);
  assert.equal(child.status, 0, child.stderr);
  assert.match(child.stdout, /the last test ran/);
  assert.doesNotMatch(child.stderr, /hang watchdog/);
});

test('a run keeps its failures, each with its error, for its own last words', () => {
  const child = runChildModule(`
    import { after, test } from 'node:test';
    import { describeFailures, recordFailures } from './tests/support/failures.ts';
    recordFailures();
    test('passes', () => undefined);
    test('fails', (t) => { throw new RangeError('out of range\\nsecond line'); });
    test('parent', async (t) => { await t.test('child', () => { throw new Error('deep'); }); });
    after(() => console.log(describeFailures()));
  `);
  assert.equal(child.status, 1, child.stderr);
  const listed = child.stdout.split('\n').filter((line) => line.startsWith('  ✖ '));
  // A subtest's failure comes by its full path (the root's hook runs for subtests too).
  for (const line of ['  ✖ "fails": RangeError: out of range | second line', '  ✖ "parent > child": Error: deep']) {
    assert.ok(listed.includes(line), `${line} in ${JSON.stringify(listed)}`);
  }
  assert.ok(!listed.some((line) => line.includes('"passes"')));
});
