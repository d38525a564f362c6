// Misuse gives typed errors, never native memory corruption. A forced GC runs
// between steps, so a freed-too-early object would show up as a crash here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { once } from 'node:events';
import { MessageChannel } from 'node:worker_threads';
import {
  createEndpoint, createId, DeviceContext, EventChannel, getAddrInfo, RdmaArgumentError, ResourceClosedError, WorkCompletionError,
  type MemoryRegion, type PreparedRecvChain, type SharedReceiveQueue,
} from '../../src/index.js';
import { contextOf } from '../../src/api/work/work-request-ids.js';
import { libibverbs, librdmacm, type Pointer } from '../../src/raw.js';
import { deviceAddress, deviceName, freshPort } from '../support/device.js';
import { connectPair } from '../support/pair.js';
import { assertClosedResource } from '../support/errors.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

test('a post after the queue pair is destroyed is refused before native code', { timeout: 60_000 }, async () => {
  const pair = await connectPair();
  try {
    const region = pair.client.regMsgs(Buffer.alloc(64));
    const send = pair.client.queuePair.prepareSend(region);
    const qp = pair.client.queuePair;
    pair.client.destroyQp();
    gc();
    assertClosedResource(() => send.post(), 'queue pair');
    assertClosedResource(() => qp.postSend(region), 'queue pair');
    assert.throws(() => pair.client.postSend(region), RdmaArgumentError, 'the id says it has no queue pair');
  } finally {
    await pair.hangUp();
  }
});

test('deregistering with a receive outstanding: allowed; the device can no longer touch the memory, the receive fails', { timeout: 60_000 }, async () => {
  const pair = await connectPair();
  try {
    const inbox = pair.server.regMsgs(Buffer.alloc(64, 7));
    pair.server.postRecv(inbox);
    inbox.deregister();
    gc();
    pair.client.postSend(pair.client.regMsgs(Buffer.alloc(64, 1)));
    const outcome = await Promise.race([
      pair.server.queuePair.nextRecvCompletion().then(() => 'completed', (error: unknown) => error),
      new Promise((resolve) => setTimeout(() => resolve('no completion'), 5000).unref()),
    ]);
    if (outcome instanceof WorkCompletionError) assert.notEqual(outcome.completion.status, 'SUCCESS');
    else assert.equal(outcome, 'no completion', 'the receive never succeeded into deregistered memory');
    assert.ok(inbox.buffer.every((byte) => byte === 7), 'the deregistered memory is unchanged');
  } finally {
    await pair.hangUp();
  }
});

test('registering a view of a resizable ArrayBuffer or a growable SharedArrayBuffer is refused, naming the buffer', () => {
  type Resizable = new (length: number, options: { maxByteLength: number }) => ArrayBuffer;
  using context = DeviceContext.open(deviceName());
  using pd = context.allocPd();
  const resizable = new (ArrayBuffer as unknown as Resizable)(4096, { maxByteLength: 8192 });
  const growable = new (SharedArrayBuffer as unknown as Resizable)(4096, { maxByteLength: 8192 });
  const refusals = [
    () => pd.register(new Uint8Array(resizable)),
    () => pd.regMsgs(Buffer.from(resizable, 0, 1024)),
    () => pd.regWrite(new Uint8Array(growable)),
  ];
  for (const register of refusals) {
    assert.throws(register, (error: unknown) =>
      error instanceof RdmaArgumentError && error.issues[0]!.path === 'buffer' && /resizable ArrayBuffer or growable SharedArrayBuffer/.test(error.message));
  }
  // A fixed SharedArrayBuffer cannot shrink: it registers.
  using shared = pd.regMsgs(new Uint8Array(new SharedArrayBuffer(4096)));
  assert.equal(shared.length, 4096);
});

/** Node 20 copies a marked buffer in a transfer; from Node 21 the transfer throws DataCloneError (nodejs/node#47604). */
const copiesOnTransfer = Number(process.versions.node.split('.')[0]) < 21;

test('a registered buffer cannot be transferred away: the transfer copies it (Node 20) or throws DataCloneError (Node 21 on), the original keeps its bytes, and its receive still lands', { timeout: 60_000 }, async () => {
  const pair = await connectPair();
  const { port1, port2 } = new MessageChannel();
  try {
    const inbox = pair.server.regMsgs(new Uint8Array(4096).fill(7));
    pair.server.postRecv(inbox, { length: 64 });
    const memory = inbox.buffer.buffer as ArrayBuffer;

    let sent: ArrayBuffer | undefined;
    if (copiesOnTransfer) {
      const cloned = structuredClone(inbox.buffer, { transfer: [memory] });
      assert.notEqual(cloned.buffer, memory);
      assert.ok(cloned.every((byte) => byte === 7));
      const posted = once(port2, 'message');
      port1.postMessage(memory, [memory]);
      [sent] = (await posted) as [ArrayBuffer];
      assert.equal(sent.byteLength, 4096);
    } else {
      assert.throws(() => structuredClone(inbox.buffer, { transfer: [memory] }), { name: 'DataCloneError' });
      assert.throws(() => port1.postMessage(memory, [memory]), { name: 'DataCloneError' });
    }
    assert.equal(memory.byteLength, 4096, 'the registered ArrayBuffer is not detached');
    assert.equal(inbox.buffer.byteLength, 4096);
    assert.ok(inbox.buffer.every((byte) => byte === 7), 'the original still has its bytes');
    gc();

    pair.client.postSend(pair.client.regMsgs(Buffer.alloc(64, 1)));
    const completion = await pair.server.queuePair.nextRecvCompletion();
    assert.equal(completion.byteLen, 64);
    assert.ok(inbox.buffer.subarray(0, 64).every((byte) => byte === 1), 'the receive landed in the registered memory');
    assert.ok(inbox.buffer.subarray(64).every((byte) => byte === 7));
    if (sent) assert.ok(new Uint8Array(sent).every((byte) => byte === 7), 'the transferred copy is a copy');
  } finally {
    port1.close();
    port2.close();
    await pair.hangUp();
  }
});

test('closing a protection domain with live regions deregisters them first (no EBUSY); their use then throws', async () => {
  const pair = await connectPair();
  try {
    const context = pair.client.device!;
    const pd = context.allocPd();
    const regions = [pd.register(Buffer.alloc(4096)), pd.allocate(8192, ['LOCAL_WRITE', 'REMOTE_READ'])];
    pd.close();
    gc();
    assert.ok(regions.every((region) => region.closed));
    assert.throws(() => regions[1]!.remote, ResourceClosedError);
    assert.throws(() => pd.register(Buffer.alloc(8)), ResourceClosedError);
  } finally {
    await pair.hangUp();
  }
});

test('an id whose channel closed throws ResourceClosedError; a pending operation is rejected, not left hanging', { timeout: 60_000 }, async () => {
  const channel = new EventChannel();
  const id = createId(channel);
  await id.resolveAddr({ address: deviceAddress(), port: freshPort() });
  await id.resolveRoute();
  id.createQp();
  const connecting = id.connect(undefined, { timeoutMs: 30_000 });
  channel.close();
  gc();
  await assert.rejects(connecting, ResourceClosedError);
  assert.equal(id.closed, true, 'the channel closed its ids first');
  await assert.rejects(id.resolveRoute(), ResourceClosedError);
  assert.throws(() => id.queuePair, ResourceClosedError);
  assertClosedResource(() => createId(channel), 'event channel', 'channel');
});

test('a closed resource passed as an argument throws ResourceClosedError naming the parameter, before native code', { timeout: 60_000 }, async () => {
  const pair = await connectPair();
  try {
    const { client } = pair;
    const device = client.device!;
    const closedPd = device.allocPd();
    closedPd.close();
    const closedCq = device.createCq({ entries: 4 });
    closedCq.close();
    const closedChannel = new EventChannel();
    closedChannel.close();
    const region = client.regMsgs(Buffer.alloc(64));
    region.deregister();
    const info = getAddrInfo(deviceAddress(), String(freshPort()));
    info.close();
    using channel = new EventChannel();
    using fresh = createId(channel);
    await fresh.resolveAddr({ address: deviceAddress(), port: freshPort() });
    await fresh.resolveRoute();
    const rows: [call: () => unknown, resource: string, parameter: string][] = [
      [() => createId(closedChannel), 'event channel', 'channel'],
      [() => fresh.migrateId(closedChannel), 'event channel', 'channel'],
      [() => fresh.createQp({}, closedPd), 'protection domain', 'pd'],
      [() => fresh.createSrq({}, closedPd), 'protection domain', 'pd'],
      [() => fresh.createQp({ sendCq: closedCq }), 'completion queue', 'attr.sendCq'],
      [() => createEndpoint(info), 'address info', 'target'],
      [() => createEndpoint({ host: deviceAddress(), port: freshPort() }, { pd: closedPd }), 'protection domain', 'options.pd'],
      [() => client.queuePair.postRecv(region), 'memory region', 'region'],
      [() => client.queuePair.postSend(region), 'memory region', 'region'],
      [() => client.queuePair.prepareRecv(region), 'memory region', 'region'],
    ];
    for (const [call, resource, parameter] of rows) assertClosedResource(call, resource, parameter);
    gc();
    assert.equal(fresh.qp, undefined, 'no queue pair was made');
    assert.equal(fresh.channel, channel, 'the id was not moved');
  } finally {
    await pair.hangUp();
  }
});

test('closing a parent while its children are in use: the whole tree closes, children first, every later use throws', { timeout: 60_000 }, async () => {
  const pair = await connectPair();
  const { client } = pair;
  const qp = client.queuePair;
  const region = client.regMsgs(Buffer.alloc(64));
  const pending = qp.nextRecvCompletion();
  client.postRecv(region);
  client.close();
  gc();
  await assert.rejects(pending, ResourceClosedError);
  assert.ok(qp.closed && qp.recvCq.closed && region.closed, 'queue pair, CQs and regions closed with their id');
  assert.throws(() => qp.postRecv(region), ResourceClosedError);
  assert.throws(() => region.remote, ResourceClosedError);
  client.close();
  pair.close();
});

test('resources with no parent that reports them (made on an id\'s device, or an id moved off its channel) warn when collected without close(); their children do not warn again', { timeout: 60_000 }, async () => {
  const leaks: string[] = [];
  const onWarning = (warning: Error & { code?: string }) => {
    if (warning.code === 'RDMACM_LEAK') leaks.push(warning.message);
  };
  process.on('warning', onWarning);
  // Only handles outlive this block: the objects become garbage once the id and channel are closed and dropped.
  const leaked = await (async (): Promise<{ cq: Pointer; pd: Pointer; mr: Pointer; id: Pointer }> => {
    const channel = new EventChannel();
    const id = createId(channel);
    await id.resolveAddr({ address: deviceAddress(), port: freshPort() });
    const cq = id.device!.createCq({ entries: 4, channel: false });
    const pd = id.device!.allocPd();
    const region = pd.register(Buffer.alloc(64));
    // Moved off its channel, an id has no parent left to report it.
    const wanderer = createId(channel);
    wanderer.migrateId(null);
    const handles = { cq: cq.unsafeHandle, pd: pd.unsafeHandle, mr: region.unsafeHandle, id: wanderer.unsafeHandle };
    id.close();
    channel.close();
    return handles;
  })();
  try {
    for (let attempt = 0; attempt < 50 && leaks.length < 3; attempt++) {
      gc();
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    assert.deepEqual(leaks.sort(), [
      'an rdmacm completion queue was garbage-collected without close(); its native resources leaked',
      'an rdmacm connection id was garbage-collected without close(); its native resources leaked',
      'an rdmacm protection domain was garbage-collected without close(); its native resources leaked',
    ], 'one warning each for the CQ, the PD and the migrated id; none for the region the PD covers, nor for the closed id and channel');
  } finally {
    process.off('warning', onWarning);
    // The test's own leaks, freed through the raw layer (children first).
    assert.equal(libibverbs.ibv_dereg_mr(leaked.mr), 0);
    assert.equal(libibverbs.ibv_dealloc_pd(leaked.pd), 0);
    assert.equal(libibverbs.ibv_destroy_cq(leaked.cq), 0);
    assert.equal(librdmacm.rdma_destroy_id(leaked.id), 0);
  }
});

test('an inline send that keeps a plain buffer refuses a resizable or growable one, and a detached one at post', { timeout: 60_000 }, async () => {
  const pair = await connectPair();
  try {
    const qp = pair.client.queuePair;
    // lib ES2022 does not know the maxByteLength option.
    const resizable = new Uint8Array(new (ArrayBuffer as new (length: number, options: object) => ArrayBuffer)(32, { maxByteLength: 64 }));
    const growable = new Uint8Array(new (SharedArrayBuffer as new (length: number, options: object) => SharedArrayBuffer)(32, { maxByteLength: 64 }));
    for (const source of [resizable, growable]) {
      assert.throws(() => qp.prepareSend(source, { inline: true }), (error: unknown) => error instanceof RdmaArgumentError && error.issues[0]?.path === 'region' && /resizable/.test(error.message));
      assert.throws(() => qp.prepareSendChain(source, { count: 2, stride: 16, inline: true }), (error: unknown) => error instanceof RdmaArgumentError && /resizable/.test(error.message));
    }

    // WebAssembly memory that grows detaches its old buffer (the memory may move): the post is refused, not read.
    const wasm = (globalThis as unknown as { WebAssembly: { Memory: new (size: { initial: number }) => { buffer: ArrayBuffer; grow(pages: number): number } } }).WebAssembly;
    const memory = new wasm.Memory({ initial: 1 });
    const send = qp.prepareSend(new Uint8Array(memory.buffer, 0, 16), { inline: true });
    const chain = qp.prepareSendChain(new Uint8Array(memory.buffer, 0, 16), { count: 2, stride: 8, inline: true });
    memory.grow(1);
    gc();
    assert.throws(() => send.post(), (error: unknown) => error instanceof RdmaArgumentError && /detached/.test(error.message));
    assert.throws(() => chain.post(), (error: unknown) => error instanceof RdmaArgumentError && /detached/.test(error.message));
  } finally {
    await pair.hangUp();
  }
});

test('a prepared inline send\'s buffer cannot be transferred away (copied on Node 20, DataCloneError from Node 21): the request still sends its bytes', { timeout: 60_000 }, async () => {
  let inbox!: MemoryRegion;
  const pair = await connectPair({
    beforeConnect: (id, side) => {
      if (side !== 'server') return;
      inbox = id.regMsgs(Buffer.alloc(64));
      id.postRecv(inbox);
      id.postRecv(inbox);
    },
  });
  try {
    const qp = pair.client.queuePair;
    const message = new Uint8Array(32).map((_, i) => 0x40 + i);
    const send = qp.prepareSend(message, { inline: true });
    const { port1, port2 } = new MessageChannel();
    try {
      if (copiesOnTransfer) {
        const copy = structuredClone(message.buffer, { transfer: [message.buffer] });
        assert.equal(copy.byteLength, 32);
        port1.postMessage(message, [message.buffer]);
      } else {
        assert.throws(() => structuredClone(message.buffer, { transfer: [message.buffer] }), { name: 'DataCloneError' });
        assert.throws(() => port1.postMessage(message, [message.buffer]), { name: 'DataCloneError' });
      }
    } finally {
      port1.close();
      port2.close();
    }
    assert.equal(message.byteLength, 32, 'the buffer was not detached');
    gc();
    for (let round = 0; round < 2; round++) {
      inbox.buffer.fill(0);
      send.post();
      await pair.client.queuePair.nextSendCompletion();
      const received = await pair.server.queuePair.nextRecvCompletion();
      assert.equal(received.byteLen, 32);
      assert.deepEqual(new Uint8Array(inbox.buffer.subarray(0, 32)), message);
    }
    send.close();
  } finally {
    await pair.hangUp();
  }
});

test('a closed prepared request throws ResourceClosedError on post; closing its queue pair or SRQ closes every prepared request and forgets their contexts', { timeout: 60_000 }, async () => {
  let srq!: SharedReceiveQueue;
  const pair = await connectPair({ beforeQp: (id, side) => {
    if (side === 'server') srq = id.createSrq({ maxWr: 8, maxSge: 1 });
  } });
  try {
    const { client, server } = pair;
    const qp = client.queuePair;
    const region = client.regMsgs(Buffer.alloc(64));
    const send = qp.prepareSend(region, { context: 'send' });
    send.close();
    send[Symbol.dispose]();
    assert.equal(send.closed, true);
    assert.equal(contextOf(send.wrId), undefined, 'its context is forgotten');
    assert.throws(() => send.post(), (error: unknown) => error instanceof ResourceClosedError && /prepared send is closed/.test(error.message));
    assert.throws(() => send.setLength(8), ResourceClosedError);

    const prepared = [
      qp.prepareSend(region, { context: 'send' }),
      qp.prepareRecv(region, { context: 'recv' }),
      qp.prepareSendChain(region, { count: 2, stride: 32, context: 'send chain' }),
      qp.prepareRecvChain(region, { count: 2, stride: 32, context: 'recv chain' }),
    ];
    const wrIds = prepared.map((request) => ('firstWrId' in request ? request.firstWrId : request.wrId));
    assert.deepEqual(wrIds.map(contextOf), ['send', 'recv', 'send chain', 'recv chain']);
    const chain = prepared[3] as PreparedRecvChain;
    assert.equal(contextOf(chain.firstWrId + 1), 'recv chain');
    client.destroyQp();
    gc();
    assert.ok(prepared.every((request) => request.closed), 'the queue pair closed its prepared requests');
    assert.deepEqual(wrIds.map(contextOf), [undefined, undefined, undefined, undefined]);
    assert.equal(contextOf(chain.firstWrId + 1), undefined);
    for (const request of prepared) assertClosedResource(() => request.post(), 'queue pair');

    const inbox = server.regMsgs(Buffer.alloc(64));
    const receive = srq.prepareRecv(inbox, { context: 'srq' });
    const receives = srq.prepareRecvChain(inbox, { count: 2, stride: 32 });
    server.close();
    assert.ok(receive.closed && receives.closed, 'the SRQ closed its prepared receives');
    assert.equal(contextOf(receive.wrId), undefined);
  } finally {
    pair.close();
  }
});
