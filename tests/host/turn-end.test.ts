// atTurnEnd (no device needed): tasks queued from a watch's callback run after
// that turn's microtasks and immediates, in the order queued, once each; a task
// queued by a task waits for the next turn; the same on the main thread (a
// libuv prepare hook made through FFI) and in a worker (one immediate a turn),
// and the hook keeps no process alive.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

test('tasks for the end of a turn run after its microtasks and immediates, in order, on the main thread and in a worker', { timeout: 60_000 }, () => {
  const script = fileURLToPath(new URL('../support/turn-end-order.mjs', import.meta.url));
  const result = spawnSync(process.execPath, [script], { encoding: 'utf8', timeout: 30_000 });
  assert.equal(result.signal, null, `the process did not end by itself: ${result.stderr}`);
  assert.equal(result.status, 0, result.stderr);
  const expected = ['microtask', 'immediate', 'end 1', 'end 2', 'end 3', 'immediate from end 2', 'end queued by end 2'];
  const [main, worker] = result.stdout.trim().split('\n').map((line) => JSON.parse(line) as unknown);
  assert.deepEqual(main, expected, 'main thread');
  assert.deepEqual(worker, expected, 'worker');
});
