// atTurnEnd (no device needed): tasks queued from a watch's callback run after
// that turn's microtasks and immediates, in the order queued, once each; a task
// queued by a task waits for the next turn; the same on the main thread (a
// libuv prepare hook made through FFI) and in a worker (one immediate a turn),
// and the hook keeps no process alive.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runAlone, supportScript } from '../support/alone.js';

test('tasks for the end of a turn run after its microtasks and immediates, in order, on the main thread and in a worker', { timeout: 60_000 }, () => {
  const expected = ['microtask', 'immediate', 'end 1', 'end 2', 'end 3', 'immediate from end 2', 'end queued by end 2'];
  const [main, worker] = runAlone([], supportScript('turn-end-order.mjs'), 30_000).split('\n').map((line) => JSON.parse(line) as unknown);
  assert.deepEqual(main, expected, 'main thread');
  assert.deepEqual(worker, expected, 'worker');
});
