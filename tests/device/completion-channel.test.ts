// One completion channel shared by many completion queues: one fd and one
// watch serve them all, each event reaches its own queue, in every mode and
// with listeners; the channel closes its queues first.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Buffer } from 'node:buffer';
import { CompletionChannel, RdmaArgumentError, type CmId, type CompletionQueue, type CompletionMode } from '../../src/index.js';
import { FdWatcher } from '../../src/api/core/fd-watcher.js';
import { connectPair, type Pair } from '../support/pair.js';
import { openFds } from '../support/resources.js';

const PAIRS = 6;
const MESSAGE = 64;

/** PAIRS connections whose clients each have a send and a receive CQ on one shared channel. */
async function pairsOnOneChannel() {
  let channel: CompletionChannel | undefined;
  const queues: CompletionQueue[] = [];
  const clientQp = (id: CmId) => {
    channel ??= id.device!.createCompletionChannel();
    const recvCq = id.device!.createCq({ entries: 16, channel });
    const sendCq = id.device!.createCq({ entries: 16, channel });
    queues.push(recvCq);
    return { sendWr: 8, recvWr: 8, inlineData: MESSAGE, sendCq, recvCq };
  };
  const pairs: Pair[] = [];
  for (let i = 0; i < PAIRS; i++) pairs.push(await connectPair({ clientQp }));
  return { channel: channel!, queues, pairs };
}

/** Each client posts a receive, each server sends to it; resolves with what each client's queue delivered. */
async function exchange(pairs: Pair[], wait: (cq: CompletionQueue, i: number) => Promise<unknown>, queues: CompletionQueue[]): Promise<string[]> {
  const inboxes = pairs.map((pair) => {
    const inbox = pair.client.regMsgs(Buffer.alloc(MESSAGE));
    pair.client.postRecv(inbox);
    return inbox;
  });
  const waits = queues.map((cq, i) => wait(cq, i));
  pairs.forEach((pair, i) => pair.server.postSend(Buffer.from(`to client ${i}`), { inline: true }));
  await Promise.all(waits);
  return inboxes.map((inbox, i) => inbox.buffer.toString('latin1', 0, `to client ${i}`.length));
}

test(`${PAIRS * 2} queues on one shared channel: one fd and one watch; each queue gets its own completions in every mode and with listeners`, { timeout: 120_000 }, async () => {
  const fdsBefore = openFds();
  const { channel, queues, pairs } = await pairsOnOneChannel();
  try {
    assert.equal(channel.queues, PAIRS * 2);
    for (const cq of queues) assert.equal(cq.sharedChannel, channel);
    const expected = pairs.map((_, i) => `to client ${i}`);
    const watchingBefore = FdWatcher.watching;
    for (const mode of ['events', 'adaptive', 'busy-poll'] as CompletionMode[]) {
      const got = await exchange(pairs, async (cq) => {
        cq.mode = mode;
        const completion = await cq.next();
        assert.equal(completion.opcode, 'RECV');
      }, queues);
      assert.deepEqual(got, expected, mode);
    }
    // Listeners: every queue armed and asleep on the one channel at once.
    const sleeping = await exchange(pairs, (cq) => new Promise<void>((resolve, reject) => {
      cq.mode = 'events';
      cq.setListener({
        onCompletions() {
          const count = cq.poll();
          if (count > 0) {
            if (cq.statusAt(0) !== 0) reject(new Error(`status ${cq.statusAt(0)}`));
            resolve();
          }
          return count;
        },
        onCompletionError: reject,
      });
      assert.ok(FdWatcher.watching <= watchingBefore + 1, 'one watch for every queue on the channel');
    }), queues);
    assert.deepEqual(sleeping, expected, 'listeners');
    for (const cq of queues) cq.setListener(undefined);
    // A blocking wait on a shared channel takes the channel's events and gets its own completion.
    const [first] = pairs;
    const inbox = first!.client.regMsgs(Buffer.alloc(MESSAGE));
    first!.client.postRecv(inbox);
    first!.server.postSend(Buffer.from('blocking'), { inline: true });
    assert.equal(queues[0]!.waitOne().byteLen, 'blocking'.length);
    // The queues' fds: PAIRS × 2 queues added one channel fd, not PAIRS × 2 (the connections' own fds aside).
    const perPair = (openFds() - fdsBefore) / PAIRS;
    console.log(`# ${PAIRS * 2} queues on one channel: ${perPair.toFixed(1)} fds per connection pair (both ends, their event channels and the server's CQ channels)`);
  } finally {
    for (const pair of pairs) await pair.hangUp();
  }
  channel.close(); // the queues, which their closed queue pairs no longer use, then the channel
  assert.ok(queues.every((cq) => cq.closed));
  assert.equal(channel.queues, 0);
});

test('listeners on one shared channel take bursts: a queue that re-arms as its event is handed over misses none of what lands after', { timeout: 120_000 }, async () => {
  const BURST = 8; // each client's receive queue, full
  const ROUNDS = 5;
  const { channel, queues, pairs } = await pairsOnOneChannel();
  try {
    for (let round = 0; round < ROUNDS; round++) {
      const inboxes = pairs.map((pair) => {
        const inbox = pair.client.regMsgs(Buffer.alloc(MESSAGE * BURST));
        for (let k = 0; k < BURST; k++) pair.client.postRecv(inbox, { offset: k * MESSAGE, length: MESSAGE });
        return inbox;
      });
      const bursts = queues.map((cq) => new Promise<void>((resolve, reject) => {
        let taken = 0;
        cq.mode = 'events';
        cq.setListener({
          onCompletions() {
            const count = cq.poll();
            for (let c = 0; c < count; c++) if (cq.statusAt(c) !== 0) reject(new Error(`status ${cq.statusAt(c)}`));
            taken += count;
            if (taken === BURST) resolve();
            return count;
          },
          onCompletionError: reject,
        });
      }));
      // All at once: completions land while the listeners drain and re-arm.
      for (const [i, pair] of pairs.entries()) for (let k = 0; k < BURST; k++) pair.server.postSend(Buffer.from(`${round}:${i}:${k}`), { inline: true });
      await Promise.all(bursts);
      for (const cq of queues) cq.setListener(undefined);
      for (const pair of pairs) for (let k = 0; k < BURST; k++) assert.equal(pair.server.getSendComp().status, 'SUCCESS');
      inboxes.forEach((inbox, i) => {
        for (let k = 0; k < BURST; k++) {
          const text = `${round}:${i}:${k}`;
          assert.equal(inbox.buffer.toString('latin1', k * MESSAGE, k * MESSAGE + text.length), text);
        }
      });
    }
  } finally {
    for (const pair of pairs) await pair.hangUp();
  }
  channel.close();
});

test('a shared channel closes its queues first; a closed channel or a non-channel is refused before native code', { timeout: 60_000 }, async () => {
  let channel: CompletionChannel | undefined;
  let cq: CompletionQueue | undefined;
  const pair = await connectPair({
    clientQp: (id) => {
      channel = id.device!.createCompletionChannel();
      cq = id.device!.createCq({ entries: 16, channel });
      return { sendWr: 4, recvWr: 4, sendCq: cq, recvCq: cq };
    },
  });
  try {
    const device = pair.client.device!;
    assert.throws(() => device.createCq({ channel: {} as CompletionChannel }), RdmaArgumentError);
    const qp = pair.client.queuePair;
    channel!.close(); // its queue's queue pair, then the queue, then itself
    assert.ok(cq!.closed);
    assert.ok(qp.closed);
    assert.throws(() => device.createCq({ channel: channel! }), /closed/);
  } finally {
    pair.close();
  }
});
