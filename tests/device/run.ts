// The device tier in one process (node start-up is slow in the emulated guest).
// With CI=true the tier refuses to run without a device instead of skipping.
// RDMACM_TEST_ONLY=name[,name] runs only those files (e.g. "connection");
// RDMACM_TEST_EXCEPT=name[,name] runs all but those (a second pass leaves out
// what the first ran at length). Either says what it left out.
import { after } from 'node:test';
import { hasDevice, testDevice } from '../support/device.js';
import { startHangWatchdog } from '../support/hang-watchdog.js';
import { describeFailures, recordFailures } from '../support/failures.js';

const files = ['raw-interop', 'devices', 'diagnosis', 'connection', 'safe-api', 'async', 'event-loop', 'event-loop-ping-pong', 'completion-channel', 'one-sided', 'datagram', 'multicast', 'shared-receive-queue', 'shared-cq', 'examples', 'readme', 'ping', 'bench', 'repl', 'misuse', 'fuzz-hostile', 'load', 'faults', 'smoke', 'net', 'net-ipv6', 'net-destinations', 'net-interop', 'net-riostream-default', 'net-ecosystem', 'net-scale', 'net-cli', 'memlock-fork', 'addrinfo', 'sync-id'];

if (!hasDevice()) {
  console.error('device tier: no RDMA device here (set RDMACM_TEST_DEVICE or run through scripts/rxe-vm.sh)');
  process.exit(process.env.CI ? 1 : 0);
}
// The device, its port and address: the harness's RDMACM_TEST_* variables, else
// found in /sys (said on stderr); written back into process.env for the files
// and the child processes. Where none fits, the message names what to set.
try {
  testDevice();
} catch (error) {
  console.error(error instanceof Error ? error.message : String(error));
  process.exit(1);
}

// Bound calls are opt-in (RDMACM_BOUND_CALLS=1); CI runs the tier both ways,
// so a pass that asked for them and did not get them must not pass quietly.
const { boundCallStatus } = await import('../../src/index.js');
const bound = boundCallStatus();
console.log(`device tier: bound calls ${bound.active ? 'on' : `off (${bound.reason})`}`);
if (bound.enabled && !bound.active && process.env.CI && process.arch === 'x64') {
  console.error('device tier: RDMACM_BOUND_CALLS=1 asked for bound calls and they could not be set up here');
  process.exit(1);
}

// Holds the event loop open while tests run: a test left waiting on nothing then
// fails at its own timeout, instead of node:test cancelling every test after it
// when the loop empties (a CI run lost 17 tests that way to one).
const holdLoop = setInterval(() => undefined, 60_000);
// A test that outlives every test's own timeout, or a loop blocked longer than
// any synchronous spawn here waits (120 s), is named and ends the run, well
// before the harness's limit. RDMACM_HANG_S raises the first (a soak's load runs for an hour).
startHangWatchdog({ testMs: Number(process.env.RDMACM_HANG_S ?? 600) * 1000, blockedMs: 200_000 });
recordFailures();

// A filter says what it left out (scripts/test.sh repeats the line under its
// closing count), and a name that is not a file is an error, not an empty run.
const fileList = (variable: string) => {
  const names = process.env[variable]?.split(',').map((name) => name.trim()).filter((name) => name !== '');
  const unknown = names?.filter((name) => !files.includes(name)) ?? [];
  if (unknown.length > 0) {
    console.error(`device tier: ${variable} names no test file: ${unknown.join(', ')} (the files: ${files.join(', ')})`);
    process.exit(1);
  }
  return names;
};
const only = fileList('RDMACM_TEST_ONLY');
const except = fileList('RDMACM_TEST_EXCEPT') ?? [];
const runs = (file: string) => (!only || only.includes(file)) && !except.includes(file);
const dropped = files.filter((file) => !runs(file));
const filter = [only && `RDMACM_TEST_ONLY=${only.join(',')}`, except.length > 0 && `RDMACM_TEST_EXCEPT=${except.join(',')}`].filter(Boolean).join(' ');
if (filter) console.log(`device tier: ${filter}: not run (${dropped.length} of ${files.length} files): ${dropped.join(', ') || 'none'}`);
for (const file of files) {
  if (runs(file)) await import(`./${file}.test.js`);
}

// Every test closes what it opened, so the loop should drain by itself; if a
// handle leaks, say so and end the run instead of waiting for the harness's timeout.
after(async () => {
  clearInterval(holdLoop);
  const { FdWatcher } = await import('../../src/api/core/fd-watcher.js');
  if (FdWatcher.open !== 0) {
    console.error(`device tier: ${FdWatcher.open} fd watcher(s) still open after the tests: a resource leaked`);
    process.exitCode = 1;
  }
  setTimeout(() => {
    const busy = process.getActiveResourcesInfo().filter((kind) => kind !== 'TTYWrap' && kind !== 'PipeWrap');
    console.error(`device tier: the event loop is still busy 5 s after the tests (${busy.join(', ') || 'a native handle'}): a resource leaked`);
    // Ending now loses the reporter's closing list of failures (and its counts).
    const failed = describeFailures();
    if (failed) console.error(`device tier: the tests that failed:\n${failed}`);
    process.exit(1);
  }, 5000).unref();
});
