// The safe API's surface on the device, and the ways it fails where C fails.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  boundCallStatus, createId, getAddrInfo, ConnectionError, EventChannel, RdmaArgumentError, RdmaError, WorkCompletionError, type CmId,
  type MemoryRegion, type PreparedRecvChain, raw,
} from '../../src/index.js';
import koffi from 'koffi';
import { deviceAddress, freshPort } from '../support/device.js';
import { connectPair } from '../support/pair.js';
import { assertAbortedWith } from '../support/errors.js';
import { within } from '../support/within.js';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { packageRoot } from '../../src/package-info.js';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

/** Fails instead of hanging when a completion never comes. */
const withTimeout = <T>(promise: Promise<T>, ms = 10_000): Promise<T> => within(promise, ms, 'no completion');

const connect = () => connectPair({ qp: { sendWr: 4, recvWr: 4 } });

test('getAddrInfo decodes entries and frees them once', () => {
  const address = deviceAddress();
  const info = getAddrInfo(address, '7471', { flags: ['NUMERICHOST'] });
  const entries = [...info];
  assert.ok(entries.length >= 1);
  assert.equal(entries[0]!.destination?.address, address);
  assert.equal(entries[0]!.destination?.port, 7471);
  assert.equal(entries[0]!.portSpace, 'TCP');
  assert.equal(entries[0]!.qpType, 'RC');
  info.close();
  info.close();
  assert.throws(() => [...info], { name: 'ResourceClosedError' });

  using passive = getAddrInfo(null, '7471', { flags: ['PASSIVE'] });
  assert.ok(passive.entries[0]!.flags.includes('PASSIVE'));
  assert.equal(passive.entries[0]!.source?.port, 7471);
});

test('getAddrInfo turns getaddrinfo\'s own error codes into typed errors', () => {
  // Neither call needs DNS: NUMERICHOST refuses a name, and a numeric host looks its service up in /etc/services.
  assert.throws(() => getAddrInfo('not-an-address', '7471', { flags: ['NUMERICHOST'] }), {
    name: 'RdmaError', code: 'EAI_NONAME', errno: -2, syscall: 'rdma_getaddrinfo',
  });
  assert.throws(() => getAddrInfo(deviceAddress(), 'no-such-service'), { name: 'RdmaError', code: 'EAI_SERVICE', syscall: 'rdma_getaddrinfo' });
});

/** A synchronous server in its own process: rejects one request, then closes the listener while the request id is still open. */
function rejectingListenerScript(address: string, port: number): string {
  const entry = pathToFileURL(join(packageRoot(), 'dist', 'src', 'index.js')).href;
  return `
    const { createEndpoint } = await import(${JSON.stringify(entry)});
    const listener = createEndpoint({ host: ${JSON.stringify(address)}, port: ${port}, passive: true }, { qp: { sendWr: 1, recvWr: 1 } });
    listener.listen();
    console.log('listening');
    const request = listener.getRequest();
    request.reject();
    listener.close();
    console.log('listener closed');
    request.close();
    console.log('request closed');`;
}

test('a synchronous listener closes while a request it rejected is still open', { timeout: 60_000 }, async () => {
  // rdma_destroy_id(listener) waits for every event of the listener to be acked,
  // the request's included; a blocked close cannot be timed out in-process.
  const address = deviceAddress();
  const port = freshPort();
  const server = spawn(process.execPath, ['--input-type=module', '-e', rejectingListenerScript(address, port)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  server.stderr.on('data', (chunk: Buffer) => (stderr += chunk));
  const listening = new Promise<void>((resolve) => {
    server.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk;
      if (stdout.includes('listening')) resolve();
    });
  });
  const exited = once(server, 'exit');
  const timer = setTimeout(() => server.kill('SIGKILL'), 45_000);
  try {
    await Promise.race([listening, exited]);
    using channel = new EventChannel();
    using client = createId(channel);
    await client.resolveAddr({ address, port });
    await client.resolveRoute();
    client.createQp();
    await assert.rejects(client.connect(undefined, { timeoutMs: 20_000 }), { name: 'ConnectionError', code: 'ERR_RDMACM_REJECTED' });
    const [code, signal] = await exited;
    assert.deepEqual({ code, signal }, { code: 0, signal: null }, `the server exited (stdout: ${stdout}; stderr: ${stderr})`);
    assert.match(stdout, /listener closed\nrequest closed/);
  } finally {
    clearTimeout(timer);
    server.kill('SIGKILL');
  }
});

test('ids report addresses and ports, take options, and migrate between channels', async () => {
  const pair = await connect();
  try {
    assert.deepEqual(pair.client.peerAddress, { family: 'IPv4', address: pair.address, port: pair.port });
    assert.equal(pair.client.localAddress?.address, pair.address);
    assert.equal(pair.server.localPort, pair.port);
    assert.equal(pair.server.peerPort, pair.client.localPort);
    // The route's path: this RoCE device's GIDs, mirrored at the passive end, and a path MTU.
    const [clientPath] = pair.client.pathRecords;
    const [serverPath] = pair.server.pathRecords;
    assert.ok(clientPath && serverPath, 'both ends have a path once connected');
    assert.equal(clientPath.sgid, serverPath.dgid);
    assert.equal(clientPath.dgid, serverPath.sgid);
    assert.ok([256, 512, 1024, 2048, 4096].includes(clientPath.mtu), `path MTU ${clientPath.mtu}`);
    assert.equal(serverPath.trafficClass, clientPath.trafficClass);
    pair.client.setOption({ option: 'TOS', value: 32 });
    pair.client.setOption({ option: 'ACK_TIMEOUT', value: 14 });
    using other = new EventChannel();
    pair.client.migrateId(other);
    assert.equal(pair.client.channel, other);
    const disconnected = pair.server.disconnect();
    await pair.client.disconnect();
    await disconnected;
    pair.client.migrateId(null);
    assert.equal(pair.client.channel, null);
  } finally {
    pair.close();
  }
});

test('notify and establish reach librdmacm, which refuses them on a connected id with typed errors', async () => {
  const pair = await connect();
  try {
    // COMM_EST only matters before ESTABLISHED; rdma_establish only for ids whose QP the caller manages.
    assert.throws(() => pair.server.notify('COMM_EST'), { name: 'RdmaError', code: 'EISCONN', syscall: 'rdma_notify' });
    assert.throws(() => pair.client.establish(), { name: 'RdmaError', code: 'EINVAL', syscall: 'rdma_establish' });
    assert.throws(() => pair.server.notify('NOT_AN_EVENT' as never), { name: 'RdmaArgumentError' });
  } finally {
    pair.close();
  }
});

test('reject with private data reaches the client', { timeout: 30_000 }, async () => {
  const address = deviceAddress();
  const port = freshPort();
  using serverChannel = new EventChannel();
  using clientChannel = new EventChannel();
  using listener = createId(serverChannel);
  listener.bindAddr({ address, port });
  listener.listen();
  using client = createId(clientChannel);
  await client.resolveAddr({ address, port });
  await client.resolveRoute();
  client.createQp();
  const request = listener.nextRequest();
  const connecting = client.connect({ privateData: Buffer.from('may I?') });
  using server = await request;
  server.reject(Buffer.from('no, sorry'));
  await assert.rejects(connecting, (error: unknown) => {
    assert.ok(error instanceof ConnectionError);
    assert.equal(error.code, 'ERR_RDMACM_REJECTED');
    assert.equal(error.privateData?.subarray(0, 9).toString(), 'no, sorry');
    return true;
  });
});

test('resolving an address that no device owns fails', { timeout: 30_000 }, async () => {
  using channel = new EventChannel();
  using id = createId(channel);
  // 192.0.2.0/24 is TEST-NET-1: no route, no device.
  await assert.rejects(id.resolveAddr({ address: '192.0.2.1', port: 7471 }, { timeoutMs: 1000 }), (error: unknown) => {
    assert.ok(error instanceof ConnectionError || error instanceof RdmaError, String(error));
    return true;
  });
});

test('a receive buffer too small for the message completes with LOC_LEN_ERR', { timeout: 30_000 }, async () => {
  const pair = await connect();
  try {
    const small = pair.server.regMsgs(Buffer.alloc(8));
    pair.server.postRecv(small);
    pair.client.postSend(pair.client.regMsgs(Buffer.alloc(64, 1)));
    // The IB spec says LOC_LEN_ERR; rxe before Linux 6.2 reports a too-short receive as LOC_QP_OP_ERR.
    await assert.rejects(withTimeout(pair.server.queuePair.nextRecvCompletion()), (error: unknown) => {
      assert.ok(error instanceof WorkCompletionError, String(error));
      assert.match(error.completion.status, /^(LOC_LEN_ERR|LOC_QP_OP_ERR)$/);
      assert.equal(error.code, `ERR_RDMACM_WC_${error.completion.status}`);
      return true;
    });
  } finally {
    pair.close();
  }
});

test('a post after disconnect completes with flush errors, surfaced as typed errors', { timeout: 30_000 }, async () => {
  const pair = await connect();
  try {
    const disconnected = pair.server.disconnect();
    await pair.client.disconnect();
    await disconnected;
    // rdma_disconnect moved the QP to the error state: new work is flushed.
    pair.client.postSend(pair.client.regMsgs(Buffer.alloc(64)));
    await assert.rejects(withTimeout(pair.client.queuePair.nextSendCompletion()), (error: unknown) => {
      assert.ok(error instanceof WorkCompletionError, String(error));
      assert.equal(error.completion.status, 'WR_FLUSH_ERR');
      assert.equal(error.code, 'ERR_RDMACM_WC_WR_FLUSH_ERR');
      return true;
    });
  } finally {
    pair.close();
  }
});

test('a deregistered region is refused before native code; destroyQp then close are ordered', async () => {
  const pair = await connect();
  try {
    const region = pair.client.regMsgs(Buffer.alloc(64));
    const prepared = pair.client.queuePair.prepareRecv(region);
    region.deregister();
    region.deregister();
    assert.throws(() => prepared.post(), { name: 'ResourceClosedError', message: /memory region is closed; it was deregistered/ });
    assert.throws(() => pair.client.postRecv(region), { name: 'ResourceClosedError', message: /memory region passed as region is closed; it was deregistered/ });
    const qp = pair.client.queuePair;
    const send = qp.prepareSend(Buffer.from('x'), { inline: true });
    const { recvCq } = qp;
    pair.client.destroyQp();
    assert.equal(qp.closed, true);
    assert.equal(pair.client.qp, undefined);
    // The post and poll paths read the closed state their own way (Lifetime): the same errors as every other member.
    assert.throws(() => send.post(), { name: 'ResourceClosedError', message: /queue pair is closed/ });
    assert.equal(recvCq.closed, true);
    assert.throws(() => recvCq.poll(), { name: 'ResourceClosedError', message: /^poll: the completion queue is closed/ });
    assert.throws(() => recvCq.next(), { name: 'ResourceClosedError', message: /^next: the completion queue is closed/ });
  } finally {
    pair.close();
  }
});

test('an AbortSignal stops a connect that nobody answers', { timeout: 30_000 }, async () => {
  using channel = new EventChannel();
  const id: CmId = createId(channel);
  await id.resolveAddr({ address: deviceAddress(), port: freshPort() });
  await id.resolveRoute();
  id.createQp();
  const controller = new AbortController();
  const connecting = id.connect(undefined, { signal: controller.signal, timeoutMs: 20_000 });
  controller.abort();
  await assert.rejects(connecting, (error) => {
    assertAbortedWith(error, controller.signal.reason);
    return true;
  });
  id.close();
  assert.equal(id.closed, true);
});

test('a signal aborted before the call rejects with AbortError, its reason as cause, and issues nothing', { timeout: 30_000 }, async () => {
  using channel = new EventChannel();
  using id = createId(channel);
  const reason = new Error('changed my mind');
  const early = AbortSignal.abort(reason);
  await assert.rejects(id.resolveAddr({ address: deviceAddress(), port: freshPort() }, { signal: early }), (error) => {
    assertAbortedWith(error, reason);
    return true;
  });
  assert.equal(id.peerAddress, undefined, 'rdma_resolve_addr was not called');
  // A wait with no call before it (waitForDisconnect) refuses the same way.
  await assert.rejects(id.waitForDisconnect({ signal: AbortSignal.abort('no') }), (error) => {
    assertAbortedWith(error, 'no');
    return true;
  });
  // The id is untouched: it resolves as usual afterwards.
  await id.resolveAddr({ address: deviceAddress(), port: freshPort() }, { timeoutMs: 5000 });
  const resolved: CmId = id; // the assertion above narrowed id.peerAddress to undefined
  assert.equal(resolved.peerAddress?.address, deviceAddress());
});

test('the longest timeout an operation takes arms no timer beyond setTimeout\'s limit', { timeout: 30_000 }, async () => {
  // The channel's timer waits a second past the operation's timeout; past 2^31-1 ms
  // setTimeout fires at once, and the timer would spin.
  const warnings: string[] = [];
  const onWarning = (warning: Error) => warnings.push(warning.name);
  process.on('warning', onWarning);
  try {
    using channel = new EventChannel();
    using id = createId(channel);
    await id.resolveAddr({ address: deviceAddress(), port: freshPort() }, { timeoutMs: 0x7fffffff });
    await id.resolveRoute({ timeoutMs: 0x7fffffff });
    await new Promise((resolve) => setImmediate(resolve));
  } finally {
    process.off('warning', onWarning);
  }
  assert.deepEqual(warnings.filter((name) => name === 'TimeoutOverflowWarning'), []);
});

/** An id on the device, with a route, and no QP yet. */
async function routedId(channel: EventChannel): Promise<CmId> {
  const id = createId(channel);
  await id.resolveAddr({ address: deviceAddress(), port: freshPort() });
  await id.resolveRoute();
  return id;
}

test('a QP on your own PD or SRQ closes before them, and a closed PD of yours is never reused', { timeout: 30_000 }, async () => {
  using channel = new EventChannel();

  // Your own PD: closing it closes the QP on it first (ibv_dealloc_pd would fail with EBUSY and leak the PD).
  using onOwnPd = await routedId(channel);
  const pd = onOwnPd.device!.allocPd();
  const qp = onOwnPd.createQp({ sendWr: 1, recvWr: 1 }, pd);
  assert.equal(onOwnPd.pd, pd);
  const region = pd.regMsgs(Buffer.alloc(64));
  pd.close();
  assert.equal(qp.closed, true);
  assert.equal(region.closed, true);

  // Given no PD, librdmacm puts a QP on id->pd, the PD of the id's last QP: that is your PD again.
  assert.throws(() => onOwnPd.createQp({ sendWr: 1, recvWr: 1 }), { name: 'ResourceClosedError', resource: 'protection domain', message: /closed since/ });
  const ownPd = onOwnPd.device!.allocPd();
  onOwnPd.createQp({ sendWr: 1, recvWr: 1 }, ownPd);
  onOwnPd.destroyQp();
  const second = onOwnPd.createQp({ sendWr: 1, recvWr: 1 });
  assert.equal(second.protectionDomain, ownPd);
  assert.equal(onOwnPd.pd, ownPd);
  second.postRecv(onOwnPd.regMsgs(Buffer.alloc(64)));
  ownPd.close();
  assert.equal(second.closed, true);
  assert.throws(() => onOwnPd.pd, { name: 'ResourceClosedError', resource: 'protection domain', message: /closed since/ });

  // The id's SRQ: closing it closes the QP that takes its receives first.
  using onSrq = await routedId(channel);
  const srq = onSrq.createSrq({ maxWr: 2, maxSge: 1 });
  const srqQp = onSrq.createQp({ sendWr: 1, recvWr: 1 });
  srq.close();
  assert.equal(srqQp.closed, true);
  assert.equal(onSrq.qp, undefined);
});

test('a receive chain posts its receives in one call, each into its own slot', async () => {
  const slots = 4;
  const stride = 32;
  let chain: PreparedRecvChain | undefined;
  let inbox: MemoryRegion | undefined;
  const pair = await connectPair({
    qp: { sendWr: 8, recvWr: 8, inlineData: 64 },
    beforeConnect: (id, side) => {
      if (side !== 'server') return;
      inbox = id.regMsgs(Buffer.alloc(8 + slots * stride));
      // Validation comes first: a chain that leaves the region, or has no receives, never reaches C.
      assert.throws(() => id.queuePair.prepareRecvChain(inbox!, { count: slots, offset: 9, stride }), { name: 'RdmaArgumentError', message: /leaves the/ });
      assert.throws(() => id.queuePair.prepareRecvChain(inbox!, { count: 0 }), { name: 'RdmaArgumentError' });
      chain = id.queuePair.prepareRecvChain(inbox, { count: slots, offset: 8, stride, context: 'ring' });
      chain.post();
    },
  });
  try {
    const outbox = pair.client.regMsgs(Buffer.alloc(stride));
    for (let i = 0; i < slots; i++) {
      outbox.buffer.fill(0x41 + i);
      pair.client.postSend(outbox, { length: stride - i });
      await withTimeout(pair.client.queuePair.nextSendCompletion());
    }
    const seen: number[] = [];
    for (let i = 0; i < slots; i++) {
      const completion = await withTimeout(pair.server.queuePair.nextRecvCompletion());
      const slot = chain!.slotOf(completion.wrId);
      seen.push(slot);
      assert.equal(completion.context, 'ring');
      assert.equal(completion.byteLen, stride - i);
      const bytes = inbox!.buffer.subarray(8 + slot * stride, 8 + slot * stride + completion.byteLen);
      assert.ok(bytes.every((b) => b === 0x41 + i), `slot ${slot} holds message ${i}`);
    }
    // Receives are taken in posting order, so message i lands in slot i.
    assert.deepEqual(seen, [0, 1, 2, 3]);
    assert.equal(chain!.slotOf(chain!.firstWrId + slots), -1);

    // More receives than the queue holds: the provider refuses the rest, and
    // the error says how many of that post went in (rxe's queue may hold more
    // than the granted max_recv_wr, so keep posting until it is full).
    const granted = pair.server.queuePair.caps.maxRecvWr;
    const tooLong = pair.server.queuePair.prepareRecvChain(inbox!, { count: granted + 1, offset: 8, stride: 0, length: stride });
    let refusal: unknown;
    for (let attempt = 0; attempt < 16 && refusal === undefined; attempt++) {
      try {
        tooLong.post();
      } catch (error) {
        refusal = error;
      }
    }
    assert.ok(refusal instanceof RdmaError, `a full receive queue refuses the chain (${String(refusal)})`);
    assert.equal(refusal.syscall, 'ibv_post_recv');
    const [, posted] = /(\d+) of the chain's (\d+) receives were posted/.exec(refusal.message) ?? [];
    assert.ok(posted !== undefined && Number(posted) <= granted, refusal.message);
  } finally {
    pair.close();
  }
});

test('a send chain posts its sends in one call, each from its own slot; only the last completes by default', async () => {
  const slots = 4;
  const stride = 32;
  let inbox: MemoryRegion | undefined;
  let receives: PreparedRecvChain | undefined;
  const pair = await connectPair({
    qp: { sendWr: 8, recvWr: 8, inlineData: 64 },
    beforeConnect: (id, side) => {
      if (side !== 'server') return;
      inbox = id.regMsgs(Buffer.alloc(slots * stride));
      receives = id.queuePair.prepareRecvChain(inbox, { count: slots, stride });
      receives.post();
    },
  });
  try {
    const qp = pair.client.queuePair;
    const outbox = pair.client.regMsgs(Buffer.alloc(slots * stride));
    for (let i = 0; i < slots; i++) outbox.buffer.fill(0x61 + i, i * stride, (i + 1) * stride);
    // Validation first: a chain that leaves the region, a plain buffer not inline, inline past the QP's limit.
    assert.throws(() => qp.prepareSendChain(outbox, { count: slots + 1, stride }), { name: 'RdmaArgumentError', message: /leaves the/ });
    assert.throws(() => qp.prepareSendChain(Buffer.alloc(8), { count: 1 }), { name: 'RdmaArgumentError', message: /inline/ });
    assert.throws(() => qp.prepareSendChain(outbox.buffer, { count: 1, inline: true }), { name: 'RdmaArgumentError', message: /max_inline_data/ });

    const chain = qp.prepareSendChain(outbox, { count: slots, stride, context: 'batch' });
    chain.post();
    const completion = await withTimeout(qp.nextSendCompletion());
    assert.equal(completion.context, 'batch');
    assert.equal(chain.slotOf(completion.wrId), slots - 1, 'the last send of the chain is the signaled one');
    assert.equal(qp.sendCq.poll(), 0, 'the sends before it completed silently');
    for (let i = 0; i < slots; i++) {
      const received = await withTimeout(pair.server.queuePair.nextRecvCompletion());
      const slot = receives!.slotOf(received.wrId);
      assert.equal(slot, i, 'receives are taken in posting order');
      assert.equal(received.byteLen, stride);
      assert.ok(inbox!.buffer.subarray(i * stride, (i + 1) * stride).every((b) => b === 0x61 + i), `slot ${i} holds send ${i}'s bytes`);
    }

    // More sends than the send queue holds: the error says how many went in.
    const tooLong = qp.prepareSendChain(outbox, { count: qp.caps.maxSendWr + 64, stride: 0, length: 8, signaled: 'none' });
    assert.throws(() => tooLong.post(), (error: unknown) => error instanceof RdmaError && error.syscall === 'ibv_post_send' && /\d+ of the chain's \d+ sends were posted/.test(error.message));
  } finally {
    pair.close();
  }
});

test('a prepared post is bound exactly when bound calls are asked for and work (CI runs the tier both ways)', async () => {
  const status = boundCallStatus();
  assert.equal(status.enabled, process.env.RDMACM_BOUND_CALLS === '1', 'bound calls are opt-in');
  if (status.enabled && process.arch === 'x64') assert.equal(status.active, true, status.reason);
  let inbox!: MemoryRegion;
  const pair = await connectPair({
    qp: { sendWr: 4, recvWr: 4 },
    beforeConnect: (id, side) => {
      if (side !== 'server') return;
      inbox = id.regMsgs(Buffer.alloc(16));
      id.postRecv(inbox);
    },
  });
  try {
    const outbox = pair.client.regMsgs(Buffer.from('bound or plain!!'));
    const send = pair.client.queuePair.prepareSend(outbox);
    assert.equal((send as unknown as { postCall: { bound: boolean } }).postCall.bound, status.active);
    send.post();
    await withTimeout(pair.client.queuePair.nextSendCompletion());
    const received = await withTimeout(pair.server.queuePair.nextRecvCompletion());
    assert.equal(inbox.buffer.subarray(0, received.byteLen).toString(), 'bound or plain!!');
  } finally {
    pair.close();
  }
});

test('setLength keeps the rules checked when the request was prepared (offset, inline limit, remote region, atomics); a valid one sends that many bytes', async () => {
  let inbox!: MemoryRegion;
  const pair = await connectPair({
    qp: { sendWr: 8, recvWr: 8, inlineData: 64 },
    beforeConnect: (id, side) => {
      if (side !== 'server') return;
      inbox = id.regMsgs(Buffer.alloc(256));
      id.postRecv(inbox);
    },
  });
  /** The call throws an argument error about 'length' whose rule matches `rule`. */
  const refusesLength = (call: () => void, rule: RegExp) =>
    assert.throws(call, (error: unknown) => error instanceof RdmaArgumentError && error.issues[0]?.path === 'length' && rule.test(error.issues[0].rule), String(rule));
  try {
    const { client, server } = pair;
    const qp = client.queuePair;
    const maxInline = qp.caps.maxInlineData;
    assert.ok(maxInline >= 50, `the QP grants at least the 50 inline bytes this test sends (${maxInline})`);

    // The review's example: 150 + 200 would read 150 bytes past the 200-byte buffer.
    const message = Buffer.alloc(200);
    for (let i = 0; i < message.length; i++) message[i] = i;
    const tail = qp.prepareSend(message, { inline: true, offset: 150, length: 50, context: 'tail' });
    refusesLength(() => tail.setLength(200), /offset 150 \+ length must stay within the 200-byte region/);
    refusesLength(() => tail.setLength(51), /offset 150/);
    refusesLength(() => tail.setLength(-1), /non-negative integer/);
    refusesLength(() => tail.setLength(1.5), /non-negative integer/);

    // Inline: the QP's max_inline_data binds before the buffer's end does.
    const large = qp.prepareSend(Buffer.alloc(maxInline + 100), { inline: true, length: 8 });
    refusesLength(() => large.setLength(maxInline + 1), /max_inline_data/);
    large.setLength(maxInline);
    large.close();

    // RDMA write: no more than the remote region the request was prepared with.
    const exposed = server.pd.allocate(64, ['LOCAL_WRITE', 'REMOTE_WRITE']);
    const local = client.pd.allocate(256, ['LOCAL_WRITE']);
    local.buffer.fill(0x5a);
    const write = qp.prepareSend(local, { opcode: 'RDMA_WRITE', length: 16, remote: { address: exposed.address, rkey: exposed.rkey, length: 32 } });
    refusesLength(() => write.setLength(33), /32-byte remote region/);

    // An atomic works on 8 bytes, whatever is asked.
    const atomic = qp.prepareSend(client.pd.allocate(8, ['LOCAL_WRITE']), {
      opcode: 'ATOMIC_FETCH_AND_ADD', remote: { address: exposed.address, rkey: exposed.rkey }, compareAdd: 1n,
    });
    refusesLength(() => atomic.setLength(8), /fixed/);
    atomic.close();

    // Valid lengths go end to end.
    tail.setLength(20);
    tail.post();
    assert.equal((await withTimeout(qp.nextSendCompletion())).context, 'tail');
    const received = await withTimeout(server.queuePair.nextRecvCompletion());
    assert.equal(received.byteLen, 20);
    assert.deepEqual(inbox.buffer.subarray(0, 20), message.subarray(150, 170));
    tail.close();

    write.setLength(32);
    write.post();
    await withTimeout(qp.nextSendCompletion());
    assert.ok(exposed.buffer.subarray(0, 32).every((byte) => byte === 0x5a), 'the 32 bytes were written');
    assert.ok(exposed.buffer.subarray(32).every((byte) => byte === 0), 'nothing past them');
    write.close();
  } finally {
    await pair.hangUp();
  }
});

test('setMinRnrTimer lowers the RNR back-off rdma_cm leaves at 655 ms, once the QP is connected', async () => {
  const IBV_QP_MIN_RNR_TIMER = 1 << 15;
  const timerOf = (id: CmId): number => {
    const attr = Buffer.alloc(raw.structs.ibv_qp_attr.size);
    const ret = raw.libibverbs.ibv_query_qp(id.queuePair.unsafeHandle, attr, IBV_QP_MIN_RNR_TIMER, Buffer.alloc(raw.structs.ibv_qp_init_attr.size));
    assert.equal(ret, 0);
    return attr.readUInt8(koffi.offsetof(raw.structs.ibv_qp_attr, 'min_rnr_timer'));
  };
  let beforeConnect: unknown;
  const pair = await connectPair({
    beforeConnect: (id, side) => {
      // Still in INIT: the transition to RTR overwrites it either way. Linux 6.1's rxe
      // refuses it here (EINVAL); 6.12's takes it.
      if (side === 'server') {
        try {
          id.queuePair.setMinRnrTimer(12);
        } catch (error) {
          beforeConnect = error;
        }
      }
    },
  });
  try {
    assert.ok(beforeConnect === undefined || (beforeConnect instanceof RdmaError && beforeConnect.syscall === 'ibv_modify_qp'), String(beforeConnect));
    assert.equal(timerOf(pair.server), 0, 'rdma_cm leaves the IB code 0 (655.36 ms), whatever was set in INIT');
    pair.server.queuePair.setMinRnrTimer(1);
    assert.equal(timerOf(pair.server), 1);
    assert.throws(() => pair.server.queuePair.setMinRnrTimer(32), { name: 'RdmaArgumentError', message: /0–31/ });
    assert.throws(() => pair.server.queuePair.setMinRnrTimer(1.5), { name: 'RdmaArgumentError' });
    assert.equal(timerOf(pair.server), 1, 'a refused value changed nothing');
  } finally {
    pair.close();
  }
});
