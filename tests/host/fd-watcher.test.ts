// FdWatcher on a FIFO (no device needed): it wakes its readers as often as
// they ask, idle() and close() release them, and an idle watcher lets the
// process end.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { FdWatcher } from '../../src/api/fd-watcher.js';
import { Fifo } from '../support/fifo.js';

/** `promise`, or 'pending' if it has not settled within `ms` (the timer does not hold the process). */
const within = <T>(promise: Promise<T>, ms: number) =>
  Promise.race([promise, new Promise<'pending'>((resolve) => setTimeout(() => resolve('pending'), ms).unref())]);

test('a reader that drains and asks again is woken for every write, and every waiter of a wake-up is', async () => {
  const fifo = new Fifo();
  const watcher = new FdWatcher(fifo.fd);
  try {
    for (let round = 0; round < 200; round++) {
      const woken = [watcher.readable(), watcher.readable()];
      setImmediate(() => fifo.write(round % 7 + 1));
      assert.deepEqual(await within(Promise.all(woken), 5000), [undefined, undefined], `round ${round}`);
      assert.equal(fifo.drain(), round % 7 + 1);
    }
    assert.equal(await within(watcher.readable(), 50), 'pending', 'drained: nothing to wake for');
  } finally {
    watcher.close();
    fifo.close();
  }
});

test('idle() and close() release waiters without data; after close() readable() resolves at once', async () => {
  const fifo = new Fifo();
  const watcher = new FdWatcher(fifo.fd);
  const opened = FdWatcher.open;
  try {
    const idled = watcher.readable();
    watcher.idle();
    assert.equal(await within(idled, 1000), undefined);
    const woken = watcher.readable();
    fifo.write(3);
    assert.equal(await within(woken, 5000), undefined, 'watched again after idle()');
    fifo.drain();
    const closing = watcher.readable();
    watcher.close();
    watcher.close();
    assert.equal(await within(closing, 1000), undefined);
    assert.equal(await within(watcher.readable(), 1000), undefined);
    assert.equal(FdWatcher.open, opened - 1, 'closed once');
  } finally {
    watcher.close();
    fifo.close();
  }
});

test('an idle watcher does not keep the process alive', { timeout: 60_000 }, () => {
  const child = fileURLToPath(new URL('../support/idle-watcher.ts', import.meta.url));
  const result = spawnSync(process.execPath, ['--import', 'tsx', child], { encoding: 'utf8', timeout: 30_000 });
  assert.equal(result.signal, null, `the process did not end by itself: ${result.stderr}`);
  assert.equal(result.status, 0, result.stderr);
  assert.equal(result.stdout.trim(), 'idle');
});
