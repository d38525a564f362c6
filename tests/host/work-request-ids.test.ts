// wr_id allocation and the contexts behind the ids, without a device: a
// table with a small id space wraps after a few ids, so the wrap-around is
// exercised as it would be after 2^32 - 1 posts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { RdmaError } from '../../src/index.js';
import { PreparedRequestIds, WorkRequestIds } from '../../src/api/work/work-request-ids.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

test('ids count up from 1 and wrap to 1 after the last', () => {
  const ids = new WorkRequestIds(1, 4);
  assert.deepEqual([1, 2, 3, 4, 5, 6].map(() => ids.takeOnce(undefined)), [1, 2, 3, 4, 1, 2]);
  assert.equal(ids.size, 0, 'a one-shot post without a context holds nothing');
});

test('after a wrap-around, ids still held by prepared requests and pending one-shot posts are skipped', () => {
  const ids = new WorkRequestIds(1, 8);
  const prepared = new PreparedRequestIds(ids);
  const send = prepared.lease({}, 1, undefined);
  const chain = prepared.lease({}, 3, 'chain');
  const pending = ids.takeOnce('pending');
  assert.deepEqual([send.first, chain.first, pending], [1, 2, 5]);
  assert.deepEqual([6, 7, 8].map(() => ids.takeOnce('done')).map((id) => (ids.contextOf(id), id)), [6, 7, 8]);

  // Wrapped: 1 (the send, even without a context), 2–4 (the chain) and 5 (not completed yet) are in use.
  const next = ids.takeOnce('one-shot');
  assert.equal(next, 6);
  assert.equal(ids.contextOf(send.first), undefined);
  assert.equal(ids.contextOf(chain.first + 2), 'chain', 'the one-shot post did not overwrite the chain');
  assert.equal(ids.contextOf(pending), 'pending');
  assert.equal(ids.contextOf(next), 'one-shot');
});

test('a block stays consecutive: it starts after the wrap rather than straddle it, and skips past a live id in its way', () => {
  const ids = new WorkRequestIds(1, 8);
  const prepared = new PreparedRequestIds(ids);
  const live = prepared.lease({}, 1, 'live'); // 1
  for (let i = 0; i < 5; i++) ids.takeOnce(undefined); // 2–6
  const block = prepared.lease({}, 3, 'block');
  assert.equal(block.first, 2, '7–9 would straddle the wrap; 1–3 holds a live id');
  assert.equal(live.first, 1);
  assert.equal(ids.contextOf(1), 'live');
  assert.deepEqual([2, 3, 4].map((id) => ids.contextOf(id)), ['block', 'block', 'block']);
});

test('with no free run left, allocation throws instead of looping or reusing a live id', () => {
  const ids = new WorkRequestIds(1, 4);
  const prepared = new PreparedRequestIds(ids);
  prepared.lease({}, 1, undefined);
  prepared.lease({}, 1, undefined);
  prepared.lease({}, 1, undefined);
  assert.throws(() => prepared.lease({}, 2, undefined), (error: unknown) => error instanceof RdmaError && error.code === 'ENOSPC');
  assert.equal(ids.takeOnce('pending'), 4, 'the one id left is still found');
  assert.throws(() => ids.takeOnce(undefined), RdmaError);
});

test('a released lease forgets its ids and context, and releases what it held, once; releaseAll releases every lease of the queue', () => {
  const ids = new WorkRequestIds();
  const prepared = new PreparedRequestIds(ids);
  const released: string[] = [];
  const lease = prepared.lease({}, 4, 'context', { release: () => released.push('lease') });
  const other = prepared.lease({}, 1, 'other', { release: () => released.push('other') });
  assert.equal(ids.size, 5);
  assert.equal(prepared.size, 2);
  lease.release();
  lease.release();
  assert.deepEqual(released, ['lease']);
  assert.equal(lease.released, true);
  assert.equal(ids.contextOf(lease.first), undefined);
  assert.equal(ids.size, 1);
  assert.equal(prepared.size, 1);
  prepared.releaseAll();
  assert.deepEqual(released, ['lease', 'other']);
  assert.equal(other.released, true);
  assert.equal(ids.size, 0);
  assert.equal(prepared.size, 0);
});

test('a one-shot context is forgotten when its completion is decoded; a prepared one is kept for the next post', () => {
  const ids = new WorkRequestIds();
  const prepared = new PreparedRequestIds(ids);
  const lease = prepared.lease({}, 1, 'prepared');
  const once = ids.takeOnce('once');
  assert.equal(ids.contextOf(once), 'once');
  assert.equal(ids.contextOf(once), undefined);
  assert.equal(ids.contextOf(lease.first), 'prepared');
  assert.equal(ids.contextOf(lease.first), 'prepared');
});

test('dropped prepared requests release their ids and what they held, and their contexts can be collected', async () => {
  const ids = new WorkRequestIds();
  const prepared = new PreparedRequestIds(ids);
  const contexts: WeakRef<object>[] = [];
  let heldReleased = 0;
  (() => {
    for (let i = 0; i < 100; i++) {
      const context = { payload: new Uint8Array(100 * 1024) };
      contexts.push(new WeakRef(context));
      prepared.lease({ request: i }, 1, context, { release: () => heldReleased++ });
    }
  })();
  const kept = {};
  const keptLease = prepared.lease(kept, 1, 'kept');
  assert.equal(ids.size, 101);
  for (let attempt = 0; attempt < 50 && ids.size > 1; attempt++) {
    gc();
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  assert.equal(ids.size, 1, 'only the reachable request still holds an id');
  assert.equal(heldReleased, 100, 'what each dropped request held (its bound post) was released with its ids');
  assert.equal(prepared.size, 1);
  gc();
  assert.ok(contexts.every((context) => context.deref() === undefined), 'the dropped requests\' contexts were collected');
  assert.equal(ids.contextOf(keptLease.first), 'kept');
  assert.ok(kept);
});
