// The net layer's queue (src/net/ring-queue.ts): first in, first out as its ring
// wraps and grows, with peek, takeAll and clear. (What it saves over Array#shift
// is measured in the guest: docs/performance-notes.md.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RingQueue } from '../../src/net/ring-queue.js';

test('items come out in the order they went in, as the ring wraps and grows', () => {
  const queue = new RingQueue<number>();
  assert.equal(queue.shift(), undefined);
  assert.equal(queue.peek(), undefined);
  let next = 0;
  let expected = 0;
  // Interleaved, so the ring wraps before it grows and grows while wrapped: 5 in 3 out, …, then everything out.
  for (const [push, take] of [[5, 3], [20, 10], [3000, 2500], [3000, 3512]] as const) {
    for (let i = 0; i < push; i++) queue.push(next++);
    for (let i = 0; i < take; i++) {
      assert.equal(queue.peek(), expected);
      assert.equal(queue.shift(), expected++);
      assert.equal(queue.length, next - expected);
    }
  }
  assert.equal(queue.length, 0);
  assert.equal(queue.shift(), undefined);
});

test('takeAll empties the queue, oldest first; clear drops everything', () => {
  const queue = new RingQueue<string>();
  for (const item of ['a', 'b', 'c', 'd']) queue.push(item);
  assert.equal(queue.shift(), 'a');
  assert.deepEqual(queue.takeAll(), ['b', 'c', 'd']);
  assert.equal(queue.length, 0);
  queue.push('e');
  queue.clear();
  assert.equal(queue.length, 0);
  queue.push('f');
  assert.equal(queue.shift(), 'f');
});
