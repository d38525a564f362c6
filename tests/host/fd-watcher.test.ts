// FdWatcher on a FIFO (no device needed): it wakes its readers as often as
// they ask, idle() and close() release them, a listen() watch calls back on
// every write, and a watcher nobody waits on lets the process end.
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

test('a listen() callback runs for every write while interest holds, and not once interest is lost or the watcher closed', async () => {
  const fifo = new Fifo();
  const watcher = new FdWatcher(fifo.fd);
  try {
    const seen: number[] = [];
    let wake: () => void = () => {};
    watcher.listen(() => {
      seen.push(fifo.drain());
      wake();
    });
    assert.throws(() => watcher.listen(() => {}), /already in use/);
    await assert.rejects(watcher.readable(), /in listen\(\) use/);
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
    fifo.write(1);
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(seen.length, 201, 'no call after close()');
  } finally {
    watcher.close();
    fifo.close();
  }
});

for (const use of ['readable', 'listen'] as const) {
  test(`a watcher nobody waits on does not keep the process alive (${use})`, { timeout: 60_000 }, () => {
    const child = fileURLToPath(new URL('../support/idle-watcher.ts', import.meta.url));
    const result = spawnSync(process.execPath, ['--import', 'tsx', child, use], { encoding: 'utf8', timeout: 30_000 });
    assert.equal(result.signal, null, `the process did not end by itself: ${result.stderr}`);
    assert.equal(result.status, 0, result.stderr);
    assert.equal(result.stdout.trim(), 'idle');
  });
}
