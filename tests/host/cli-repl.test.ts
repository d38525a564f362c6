// `rdmacm repl` driven through a pipe, as a script would (bin/rdmacm prefers the
// build in dist/ — scripts/test.sh builds first): help, evaluation, top-level
// await, the preloaded API and helpers, and the no-device banner.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { packageRoot } from '../../src/package-info.js';
import { hasDevice } from '../support/device.js';
import { noDeviceAdvice } from '../../src/package-info.js';

// The checkout's root, whether this runs from tests/ (tsx) or dist/tests/ (built).
const repoRoot = packageRoot();

function repl(input: string, ...args: string[]) {
  return spawnSync(process.execPath, ['bin/rdmacm', 'repl', ...args], { cwd: repoRoot, encoding: 'utf8', input, timeout: 60_000 });
}

/** The lines after the banner (its first line names the REPL; a device line or the hint follows). */
function outputLines(stdout: string): string[] {
  return stdout.split('\n').slice(1).filter((line) => line !== '' && !/^ {2}\S+: port |^no RDMA device found/.test(line));
}

test('rdmacm repl --help prints the usage and exits 0', () => {
  const result = repl('', '--help');
  assert.equal(result.status, 0, `stderr: ${result.stderr} (a stale dist/? run npm run build)`);
  assert.match(result.stdout, /^Usage: rdmacm repl \[-h\]/);
  assert.equal(result.stderr, '');
});

test('rdmacm --help lists the repl command', () => {
  const result = spawnSync(process.execPath, ['bin/rdmacm', '--help'], { cwd: repoRoot, encoding: 'utf8' });
  assert.match(result.stdout, /^\s+repl\s+an interactive REPL/m);
});

test('an unknown option exits 1 with the usage', () => {
  const result = repl('', '--bogus');
  assert.equal(result.status, 1);
  assert.match(result.stderr, /^rdmacm repl: Unknown option '--bogus'/);
});

test('piped lines are evaluated and .exit ends the session with code 0', () => {
  const result = repl('1 + 1\n.exit\n');
  assert.equal(result.status, 0, result.stderr);
  assert.match(result.stdout, /^rdmacm \d+\.\d+\.\d+\S* REPL .*resources are closed on \.exit$/m);
  assert.deepEqual(outputLines(result.stdout), ['2', 'closed 0 resources']);
});

test('the end of input ends the session like .exit', () => {
  const result = repl('6 * 7\n');
  assert.equal(result.status, 0, result.stderr);
  assert.deepEqual(outputLines(result.stdout), ['42', 'closed 0 resources']);
});

test('top-level await works, and each line finishes before the next runs', () => {
  const result = repl(
    ['await Promise.resolve(41 + 1)', 'const late = await new Promise((done) => setTimeout(() => done(7), 200))', 'late * 3', '.exit', ''].join('\n'),
  );
  assert.equal(result.status, 0, result.stderr);
  assert.deepEqual(outputLines(result.stdout), ['42', '21', 'closed 0 resources']);
});

test('the whole API is preloaded as globals and as rdmacm', () => {
  const result = repl(
    ['typeof createId', 'typeof EventChannel', 'typeof DeviceContext.open', 'rdmacm.createId === createId', 'typeof raw.librdmacm', 'Object.keys(rdmacm).length > 30', ''].join('\n'),
  );
  assert.equal(result.status, 0, result.stderr);
  assert.deepEqual(outputLines(result.stdout).slice(0, 6), ["'function'", "'function'", "'function'", 'true', "'object'", 'true']);
});

test('help() lists the helpers and the main entry points', () => {
  const result = repl('help()\n');
  assert.equal(result.status, 0, result.stderr);
  for (const name of ['devices()', 'device(name?)', 'createId', 'new EventChannel()', 'createEndpoint', 'getAddrInfo', 'DeviceContext.open']) {
    assert.ok(result.stdout.includes(name), `help() mentions ${name}`);
  }
  assert.doesNotMatch(result.stdout, /^undefined$/m, 'help() returns nothing to print');
});

test('an error is reported, the session goes on, and the exit code is 1', () => {
  const result = repl('createId("not a channel")\n1 + 2\nawait Promise.reject(new Error("late"))\n4 + 5\n');
  assert.equal(result.status, 1, result.stderr);
  assert.match(result.stdout + result.stderr, /Uncaught/);
  assert.match(result.stdout, /^3$/m);
  assert.match(result.stdout, /^9$/m);
  assert.match(result.stderr, /^rdmacm repl: 2 lines threw$/m);
});

test('a session whose lines all succeed exits 0 without a failure line', () => {
  const result = repl('const e = new Error("kept, not thrown")\ne.message\n');
  assert.equal(result.status, 0, result.stderr);
  assert.doesNotMatch(result.stderr, /threw/);
});

// Where this host has an RDMA device the banner lists it instead: the device
// tier (tests/device/repl.test.ts) covers that case.
test('with no RDMA device, the banner says so with the hint', { skip: hasDevice() && 'this host has an RDMA device' }, () => {
  const result = repl('.exit\n');
  assert.equal(result.status, 0, result.stderr);
  assert.ok(result.stdout.split('\n').includes(`no RDMA device found: ${noDeviceAdvice()}`), result.stdout);
});
