// A watchdog for a test run in one process (the device tier): a test that
// hangs, or a native call that blocks the event loop, is named on stderr and
// the run ends, instead of the harness killing a silent guest at its overall
// limit (a CI run lost a whole tier's output that way, with no hint of where).
//
// The checks run on a worker thread, which goes on while the main thread is
// stuck in C; it writes straight to fd 2, since a worker's console goes
// through the main thread. The main thread beats a shared clock and posts
// each test's start and end (node:test's root-level hooks run for every test).
import { Worker } from 'node:worker_threads';
import { afterEach, beforeEach } from 'node:test';
import { failureLine, testNameOf } from './failures.js';

export interface HangLimits {
  /** A test running longer than this (above any test's own timeout) is a hang. */
  readonly testMs: number;
  /** An event loop that has not turned for this long is blocked. */
  readonly blockedMs: number;
}

// Plain CommonJS, so the worker runs the same from tsx and from built JS (it
// takes none of the process's flags: --input-type=module would make it ESM).
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { readFileSync, writeSync } = require('node:fs');
const { testMs, blockedMs, beat, since } = workerData;
const running = new Map();
const failures = [];
parentPort.on('message', (m) => {
  if (m.started) return running.set(m.started, Date.now());
  running.delete(m.finished);
  if (m.failure) failures.push(m.failure);
});
const read = (file) => { try { return readFileSync(file, 'utf8').trim().replace(/\\n/g, ' | '); } catch (e) { return '(' + e.code + ')'; } };
const names = () => [...running.entries()].map(([name, at]) => '"' + name + '" (' + Math.round((Date.now() - at) / 1000) + ' s)').join('; ') || 'no test';
const stop = (why) => {
  const task = '/proc/' + process.pid + '/task/' + process.pid;
  writeSync(2, 'hang watchdog: ' + why + '; running: ' + names() + '\\n' +
    'hang watchdog: main thread: wchan ' + read(task + '/wchan') + ', syscall ' + read(task + '/syscall') + ', kernel stack ' + read(task + '/stack') + '\\n' +
    (failures.length > 0 ? 'hang watchdog: the tests that failed before:\\n' + failures.join('\\n') + '\\n' : '') +
    'hang watchdog: ending the run\\n');
  process.kill(process.pid, 'SIGKILL');
};
setInterval(() => {
  const now = Date.now();
  const silent = now - since - Atomics.load(beat, 0);
  if (silent >= blockedMs) stop('the event loop has not turned for ' + Math.round(silent / 1000) + ' s (a synchronous call holds it: native, or a spawnSync)');
  for (const [name, at] of running) if (now - at >= testMs) stop('"' + name + '" has run for ' + Math.round((now - at) / 1000) + ' s');
}, 1000);
`;

/** Starts the watchdog for the tests of this process; it never holds the process open. */
export function startHangWatchdog(limits: HangLimits): void {
  // The last beat, in ms since the watchdog started (an Int32 holds 24 days).
  const since = Date.now();
  const beat = new Int32Array(new SharedArrayBuffer(4));
  const tick = () => Atomics.store(beat, 0, Date.now() - since);
  tick();
  setInterval(tick, 1000).unref();
  const worker = new Worker(WORKER_SOURCE, { eval: true, execArgv: [], workerData: { ...limits, beat, since } });
  worker.unref();
  beforeEach((t) => worker.postMessage({ started: testNameOf(t) }));
  afterEach((t) => worker.postMessage({ finished: testNameOf(t), failure: failureLine(t) }));
}
