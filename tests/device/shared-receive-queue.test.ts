// A shared receive queue: made on an id before its queue pair, which then takes
// its receives from it; completions arrive on the QP's receive CQ with their contexts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RdmaArgumentError, type MemoryRegion, type SharedReceiveQueue } from '../../src/index.js';
import { connectPair } from '../support/pair.js';

const MESSAGE = 32;
const COUNT = 6;

test('receives posted to an SRQ take the messages of the QP created after it', { timeout: 60_000 }, async () => {
  let srq!: SharedReceiveQueue;
  let inbox!: MemoryRegion;
  const pair = await connectPair({
    // recvWr also sizes the receive CQ librdmacm makes, which the SRQ's completions land on.
    qp: { sendWr: COUNT, recvWr: COUNT },
    beforeQp: (id, side) => {
      if (side === 'server') srq = id.createSrq({ maxWr: COUNT, maxSge: 1 });
    },
    beforeConnect: (id, side) => {
      if (side !== 'server') return;
      inbox = id.regMsgs(Buffer.alloc(COUNT * MESSAGE));
      for (let i = 0; i < COUNT; i++) srq.postRecv(inbox, { offset: i * MESSAGE, length: MESSAGE, context: `slot ${i}` });
    },
  });
  const { client, server } = pair;
  try {
    assert.equal(server.srq, srq);
    assert.ok(srq.maxWr >= COUNT);
    assert.throws(() => server.postRecv(inbox), (error: unknown) => error instanceof RdmaArgumentError && /shared receive queue/.test(error.message));

    const payload = client.regMsgs(Buffer.alloc(MESSAGE));
    for (let i = 0; i < COUNT; i++) {
      payload.buffer.fill(0x41 + i);
      client.postSend(payload);
      await client.queuePair.nextSendCompletion();
    }
    const seen = new Set<unknown>();
    for (let i = 0; i < COUNT; i++) {
      const completion = await server.queuePair.nextRecvCompletion();
      assert.equal(completion.byteLen, MESSAGE);
      seen.add(completion.context);
    }
    assert.equal(seen.size, COUNT, 'every SRQ receive completed once, with its own context');
    const letters = new Set<number>();
    for (let i = 0; i < COUNT; i++) {
      const slot = inbox.buffer.subarray(i * MESSAGE, (i + 1) * MESSAGE);
      assert.ok(slot.every((byte) => byte === slot[0]), `slot ${i} holds one whole message`);
      letters.add(slot[0]!);
    }
    assert.equal(letters.size, COUNT, 'each message landed exactly once');
  } finally {
    await pair.hangUp();
  }
});
