// FdWatcher on a FIFO (no device needed): it calls back on every write while
// interest holds, never after close(); what the callback queues runs right
// after it, on every Node line; a poll error reaches its owner; a
// watcher nobody is interested in lets the process end, and a worker thread
// may exit with a watch running. The main thread's watches call libuv
// directly, a worker's go through koffi.node.poll: both call back, and an
// error their callback throws reaches 'uncaughtException'.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { closeSync, constants, openSync } from 'node:fs';
import { join } from 'node:path';
import { FdWatcher } from '../../src/api/core/fd-watcher.js';
import { packageRoot } from '../../src/package-info.js';
import { Fifo, makeFifo } from '../support/fifo.js';
import { runAlone, supportScript } from '../support/alone.js';

/** `promise`, or 'pending' if it has not settled within `ms` (the timer does not hold the process). */
const within = <T>(promise: Promise<T>, ms: number) =>
  Promise.race([promise, new Promise<'pending'>((resolve) => setTimeout(() => resolve('pending'), ms).unref())]);

test('the callback runs for every write while interest holds, and not once interest is lost or the watcher closed', async () => {
  const fifo = new Fifo();
  const seen: number[] = [];
  let wake: () => void = () => {};
  const watcher = new FdWatcher(fifo.fd, () => {
    seen.push(fifo.drain());
    wake();
  });
  const opened = FdWatcher.open;
  try {
    fifo.write(1);
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.deepEqual(seen, [], 'no interest yet: no call');
    fifo.drain();
    for (let round = 0; round < 200; round++) {
      const woken = new Promise<void>((resolve) => (wake = resolve));
      watcher.setInterest(true);
      // Lost and regained within one turn: the watch goes on.
      if (round % 2 === 1) watcher.setInterest(false), watcher.setInterest(true);
      fifo.write(round % 5 + 1);
      assert.equal(await within(woken, 5000), undefined, `round ${round}`);
      if (round % 3 === 0) watcher.setInterest(false);
    }
    assert.deepEqual(seen, Array.from({ length: 200 }, (_, round) => round % 5 + 1), 'one call per write, each draining it');
    watcher.setInterest(false);
    await new Promise((resolve) => setImmediate(resolve));
    fifo.write(2);
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(seen.length, 200, 'interest lost: no call');
    watcher.setInterest(true);
    assert.equal(await within(new Promise<void>((resolve) => (wake = resolve)), 5000), undefined, 'interest back: the pending write is seen');
    assert.deepEqual(seen.slice(200), [2]);
    watcher.close();
    watcher.close();
    assert.equal(FdWatcher.open, opened - 1, 'closed once');
    watcher.setInterest(true);
    fifo.write(1);
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(seen.length, 201, 'no call after close(), interest or not');
  } finally {
    watcher.close();
    fifo.close();
  }
});

test('a poll error reaches the owner, and renewed interest watches again', async () => {
  // A FIFO's write end whose reader is gone polls POLLERR, as a device's event queue closed under it does.
  const fifo = makeFifo();
  const reader = openSync(fifo.path, constants.O_RDONLY | constants.O_NONBLOCK);
  const writer = openSync(fifo.path, constants.O_WRONLY | constants.O_NONBLOCK);
  let calls = 0;
  let wake: () => void = () => {};
  const watcher = new FdWatcher(writer, () => {
    calls++;
    wake();
  });
  const watching = FdWatcher.watching;
  try {
    closeSync(reader);
    let woken = new Promise<void>((resolve) => (wake = resolve));
    watcher.setInterest(true);
    assert.equal(await within(woken, 5000), undefined, 'the error reaches the owner, who reads the fd and meets it');
    assert.equal(FdWatcher.watching, watching, 'libuv stopped the watch on the error, so it is not counted as running');
    woken = new Promise<void>((resolve) => (wake = resolve));
    watcher.setInterest(true);
    assert.equal(await within(woken, 5000), undefined, 'renewed interest starts the watch again, and the error comes again');
    assert.equal(calls, 2);
  } finally {
    watcher.close();
    closeSync(writer);
    fifo.remove();
  }
});

test('a watcher nobody is interested in does not keep the process alive', { timeout: 60_000 }, () => {
  assert.equal(runAlone(['--import', 'tsx'], supportScript('idle-watcher.ts'), 30_000), 'idle');
});

test('process.exit() in a worker thread whose watch is running does not abort the process', { timeout: 120_000 }, () => {
  assert.equal(runAlone([], supportScript('exit-in-worker.mjs'), 90_000), 'survived 20');
});

test('the main thread watches through libuv directly and a worker through koffi; in both, an error thrown by the callback or by a tick it queued reaches uncaughtException and the watch calls back again, a tick that feeds an HTTP parser runs, and so does a callback that feeds one itself past a throwing tick, without aborting Node', { timeout: 60_000 }, () => {
  const [main, worker] = runAlone([], supportScript('watch-kinds.mjs'), 30_000).split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
  const expected = {
    first: 'first', second: 'second', third: 'third', fourth: 'fourth', body: 'body', fifth: 'fifth', fed: 'fed', calls: 5,
    uncaught: ['thrown by the first callback', 'thrown by a tick the second callback queued', 'thrown by a tick queued before the callback fed a parser'],
  };
  assert.deepEqual(main, { kind: 'libuv', ...expected });
  assert.deepEqual(worker, { kind: 'koffi', ...expected });
});

test('the callback runs right after its fd is written, and what it queues (a nextTick, a promise it settles) right after it, not at the next timer: Node 26 drains neither after a libuv callback by itself', { timeout: 60_000 }, () => {
  // The built script under plain node: tsx's loader, in the child, drains the queues by itself.
  const delays = JSON.parse(runAlone([], join(packageRoot(), 'dist/tests/support/callback-queues.js'), 30_000)) as { callback: number; reaction: number; nextTick: number };
  assert.ok(delays.callback > 0 && delays.callback < 1000, `the callback ran ${delays.callback.toFixed(1)} ms after the write`);
  assert.ok(delays.reaction < 1000, `the promise's reaction ran ${delays.reaction.toFixed(1)} ms after the callback`);
  assert.ok(delays.nextTick > 0 && delays.nextTick < 1000, `the nextTick ran ${delays.nextTick.toFixed(1)} ms after the callback`);
});
