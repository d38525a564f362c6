// Completion queues of one's own (device.createCq), shared by several queue
// pairs: where completions land, how they are told apart, and who closes first.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  createId, EventChannel, RdmaArgumentError, RdmaError, ResourceClosedError, type CmId, type CompletionQueue,
} from '../../src/index.js';
import { connectPair } from '../support/pair.js';
import { deviceAddress, freshPort } from '../support/device.js';
import { openFds, rdmaEntries } from '../support/resources.js';

const MESSAGE = 64;

/** The CQs the kernel lists for this process, and its open fds (a CQ's channel is one). */
const holdings = () => ({ cqs: rdmaEntries('cq').length, fds: openFds() });

test('two queue pairs on one CQ: the sends and receives of both complete there, told apart by qpNum', { timeout: 60_000 }, async () => {
  const before = holdings();
  let cq: CompletionQueue | undefined;
  const clientQp = (id: CmId) => {
    cq ??= id.device!.createCq({ entries: 32 });
    return { sendWr: 4, recvWr: 4, inlineData: MESSAGE, sendCq: cq, recvCq: cq };
  };
  const first = await connectPair({ clientQp });
  const second = await connectPair({ clientQp });
  try {
    const shared = cq!;
    const pairs = [first, second];
    const qps = pairs.map((pair) => pair.client.queuePair);
    assert.ok(shared.owned);
    for (const qp of qps) {
      assert.equal(qp.sendCq, shared);
      assert.equal(qp.recvCq, shared);
    }

    const inboxes = pairs.map((pair, i) => {
      const inbox = pair.client.regMsgs(Buffer.alloc(MESSAGE));
      pair.client.postRecv(inbox, { context: `receive ${i}` });
      return inbox;
    });
    pairs.forEach((pair, i) => pair.server.postSend(Buffer.from(`to client ${i}`), { inline: true }));
    const received = [await shared.next(), await shared.next()];
    assert.deepEqual(
      new Map(received.map((completion) => [completion.qpNum, [completion.opcode, completion.context]])),
      new Map(qps.map((qp, i) => [qp.qpNum, ['RECV', `receive ${i}`]])),
    );
    inboxes.forEach((inbox, i) => assert.equal(inbox.buffer.toString('latin1', 0, 11), `to client ${i}`));

    const serverInboxes = pairs.map((pair) => {
      const inbox = pair.server.regMsgs(Buffer.alloc(MESSAGE));
      pair.server.postRecv(inbox);
      return inbox;
    });
    pairs.forEach((pair, i) => pair.client.postSend(Buffer.from(`from client ${i}`), { inline: true, context: `send ${i}` }));
    const sent = [await shared.next(), await shared.next()];
    assert.deepEqual(
      new Map(sent.map((completion) => [completion.qpNum, [completion.opcode, completion.context]])),
      new Map(qps.map((qp, i) => [qp.qpNum, ['SEND', `send ${i}`]])),
    );
    for (const [i, pair] of pairs.entries()) {
      await pair.server.queuePair.nextRecvCompletion();
      assert.equal(serverInboxes[i]!.buffer.toString('latin1', 0, 13), `from client ${i}`);
    }
    assert.equal(shared.poll(), 0, 'nothing else landed on the shared CQ');
  } finally {
    await first.hangUp();
    await second.hangUp();
    assert.equal(cq!.closed, false, 'a CQ of ones own outlives the queue pairs that used it');
    cq!.close();
  }
  // Fds are compared in the next test: this one may be the first to open the device, which librdmacm keeps open.
  assert.equal(holdings().cqs, before.cqs, 'every CQ is gone: the shared one, and the ones librdmacm made for the servers');
});

test('closing a shared CQ closes its queue pairs first; a closed or foreign CQ never reaches rdma_create_qp', { timeout: 60_000 }, async () => {
  const before = holdings();
  let cq: CompletionQueue | undefined;
  const pair = await connectPair({
    clientQp: (id) => {
      cq = id.device!.createCq({ entries: 16 });
      return { sendCq: cq };
    },
  });
  try {
    const qp = pair.client.queuePair;
    assert.equal(qp.sendCq, cq);
    assert.notEqual(qp.recvCq, cq, 'the CQ left out is librdmacm\'s');
    const pending = cq!.next();
    cq!.close();
    await assert.rejects(pending, ResourceClosedError);
    assert.ok(qp.closed && qp.recvCq.closed, 'the queue pair (and the CQ librdmacm made for it) closed before the shared CQ');
    assert.throws(() => qp.postSend(Buffer.from('x'), { inline: true }), ResourceClosedError);
    cq!.close();

    using channel = new EventChannel();
    using id = createId(channel);
    await id.resolveAddr({ address: deviceAddress(), port: freshPort() });
    await id.resolveRoute();
    assert.throws(() => id.createQp({ sendCq: cq }), (error: unknown) => error instanceof ResourceClosedError && error.parameter === 'attr.sendCq');
    assert.throws(() => id.createQp({ recvCq: {} as CompletionQueue }), (error: unknown) => error instanceof RdmaArgumentError && /CompletionQueue/.test(error.message));
    // librdmacm would make a send CQ here and never free it.
    using receives = id.device!.createCq({ entries: 16 });
    assert.throws(() => id.createQp({ recvCq: receives }), (error: unknown) => error instanceof RdmaArgumentError && /sendCq too/.test(error.message));
    assert.throws(() => id.queuePair, RdmaArgumentError, 'no queue pair was made');

    // A queue pair closed by its CQ leaves the id free for a new one, and for a shared receive queue before it.
    const sends = id.device!.createCq({ entries: 16 });
    const first = id.createQp({ sendCq: sends });
    assert.throws(() => id.createSrq(), (error: unknown) => error instanceof RdmaArgumentError && /before the queue pair/.test(error.message));
    sends.close();
    assert.ok(first.closed);
    assert.equal(id.qp, undefined, 'a closed queue pair is the id\'s no more');
    assert.throws(() => id.queuePair, (error: unknown) => error instanceof ResourceClosedError && /call createQp\(\) for a new one/.test(error.message));
    assert.throws(() => id.postSend(Buffer.from('x'), { inline: true }), (error: unknown) => error instanceof ResourceClosedError && /^postSend: the queue pair is closed/.test(error.message));
    const srq = id.createSrq({ maxWr: 4 });
    const second = id.createQp();
    assert.notEqual(second, first);
    assert.equal(id.queuePair, second);
    assert.equal(id.srq, srq);
    using inbox = id.regMsgs(Buffer.alloc(16));
    assert.throws(() => second.postRecv(inbox), (error: unknown) => error instanceof RdmaArgumentError && /shared receive queue/.test(error.message), 'the new queue pair takes its receives from the shared receive queue');
  } finally {
    pair.close();
  }
  assert.deepEqual(holdings(), before, 'the shared CQ and the receive CQ librdmacm made are both gone');
});

test('createCq checks its options against the device; a CQ without a channel can be polled but not waited on', { timeout: 60_000 }, async () => {
  using channel = new EventChannel();
  const id = createId(channel);
  try {
    await id.resolveAddr({ address: deviceAddress(), port: freshPort() });
    const device = id.device!;
    const { maxCqe } = device.limits;
    assert.throws(() => device.createCq({ entries: 0 }), RdmaArgumentError);
    assert.throws(() => device.createCq({ entries: maxCqe + 1 }), (error: unknown) => error instanceof RdmaArgumentError && error.message.includes(String(maxCqe)));
    assert.throws(() => device.createCq({ compVector: 1 << 20 }), (error: unknown) => error instanceof RdmaArgumentError && /completion vector/.test(error.message));
    assert.throws(() => device.createCq({ entries: 8, extra: 1 } as never), RdmaArgumentError);

    using quiet = device.createCq({ entries: 8, channel: false });
    assert.equal(quiet.poll(), 0);
    assert.throws(() => quiet.waitOne(), (error: unknown) => error instanceof RdmaError && error.code === 'EINVAL');
    await assert.rejects(quiet.next(), (error: unknown) => error instanceof RdmaError && /busy-poll/.test(error.message));
  } finally {
    id.close();
  }
});

test('an id with no device yet: createQp and createSrq refuse before librdmacm would dereference its NULL context', () => {
  using channel = new EventChannel();
  using id = createId(channel);
  assert.throws(() => id.createQp(), (error: unknown) => error instanceof RdmaArgumentError && /no device yet/.test(error.message));
  assert.throws(() => id.createSrq(), (error: unknown) => error instanceof RdmaArgumentError && /no device yet/.test(error.message));
});
