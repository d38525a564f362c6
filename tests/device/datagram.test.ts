// Datagrams (UD over the UDP port space): address handles from the connection
// manager's UD parameters, the GRH at the head of every receive, and rdma-core's
// udaddy as a peer in both directions.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createId, decodeUdMessage, EventChannel, GRH_SIZE, RdmaArgumentError } from '../../src/index.js';
import { deviceAddress, freshPort, isRoce } from '../support/device.js';
import { retrying, start } from '../support/processes.js';
import { assertClosedResource } from '../support/errors.js';

const COUNT = 10;
const SIZE = 100;
/** udaddy has no port option: it always uses 7174. */
const UDADDY_PORT = 7174;

/** A UD client: resolved, with a UD QP and `COUNT` receives posted, then "connected" (SIDR). */
async function udClient(channel: EventChannel, address: string, port: number, privateData?: Buffer) {
  const id = createId(channel, { portSpace: 'UDP' });
  await id.resolveAddr({ address, port });
  await id.resolveRoute();
  id.createQp({ qpType: 'UD', sendWr: COUNT, recvWr: COUNT });
  const inbox = id.regMsgs(Buffer.alloc(COUNT * (GRH_SIZE + SIZE)));
  for (let i = 0; i < COUNT; i++) id.postRecv(inbox, { offset: i * (GRH_SIZE + SIZE), length: GRH_SIZE + SIZE, context: i });
  const established = await id.connect(privateData ? { privateData } : undefined);
  assert.ok(established.ud, 'a UD connect reports the peer\'s QP through ud parameters');
  return { id, inbox, ud: established.ud };
}

/**
 * A UD listener's accepted id, with one receive of GRH_SIZE + SIZE posted,
 * and a udClient connected to it; disposing closes everything, newest first.
 */
async function udConnection(privateData?: Buffer) {
  const address = deviceAddress();
  const port = freshPort();
  const opened: { close(): void }[] = [];
  const keep = <T extends { close(): void }>(resource: T): T => (opened.push(resource), resource);
  const closeAll = () => {
    for (const resource of opened.reverse()) resource.close();
  };
  try {
    const serverChannel = keep(new EventChannel());
    const clientChannel = keep(new EventChannel());
    const listener = keep(createId(serverChannel, { portSpace: 'UDP' }));
    listener.bindAddr({ address, port });
    listener.listen();
    const request = listener.nextRequest();
    const client = udClient(clientChannel, address, port, privateData);
    const server = keep(await request);
    server.createQp({ qpType: 'UD', sendWr: COUNT, recvWr: COUNT });
    const serverInbox = server.regMsgs(Buffer.alloc(GRH_SIZE + SIZE));
    server.postRecv(serverInbox);
    await server.accept();
    const { id, ud } = await client;
    return { address, server, client: keep(id), ud, serverInbox, [Symbol.dispose]: closeAll };
  } catch (error) {
    closeAll();
    throw error;
  }
}

test('UD between two ids: address handle from the UD parameters, GRH stripped, source decoded', { timeout: 60_000 }, async () => {
  using connection = await udConnection(Buffer.from('ud hello'));
  const { address, server, client: clientId, ud, serverInbox } = connection;
  // A UDP request carries UD parameters, not an RC request's, and the client's private data.
  assert.ok(server.request && 'qkey' in server.request, `a UDP request id has UD parameters: ${JSON.stringify(server.request)}`);
  assert.equal(server.request.privateData.subarray(0, 8).toString(), 'ud hello');
  assert.equal(ud.qpNum, server.queuePair.qpNum);
  assert.equal(ud.qkey, 0x01234567, 'RDMA_UDP_QKEY');

  using ah = clientId.addressHandleTo(ud);
  const message = clientId.regMsgs(randomBytes(SIZE));
  clientId.postSend(message, { ud: { ah, remoteQpn: ud.qpNum }, immediate: clientId.queuePair.qpNum });
  const received = await server.queuePair.nextRecvCompletion();
  assert.equal(received.byteLen, GRH_SIZE + SIZE, 'byte_len counts the GRH');
  assert.equal(received.immData, clientId.queuePair.qpNum);
  assert.equal(received.srcQp, clientId.queuePair.qpNum);
  const decoded = decodeUdMessage(serverInbox.buffer, received.byteLen);
  assert.ok(decoded.payload.equals(message.buffer));
  if (isRoce()) {
    assert.equal(decoded.source, address, 'RoCE v2 over IPv4: the source comes from the IPv4 header');
    assert.equal(decoded.destination, address);
  }

  // Answer the sender with an address handle built from the receive itself.
  using back = server.addressHandleFrom(received, serverInbox.buffer);
  server.postSend(server.regMsgs(Buffer.from('reply'.padEnd(SIZE, '!'))), { ud: { ah: back, remoteQpn: received.srcQp } });
  const reply = await clientId.queuePair.nextRecvCompletion();
  assert.equal(reply.byteLen, GRH_SIZE + SIZE);
  assert.equal(clientId.qp!.type, 'UD');
  assert.throws(() => clientId.postSend(message), { name: 'RdmaArgumentError', message: /options\.ud/ });

  // A closed address handle is a closed resource, both when it is passed and at each post of a request that keeps it.
  const prepared = clientId.queuePair.prepareSend(message, { ud: { ah, remoteQpn: ud.qpNum } });
  ah.close();
  assertClosedResource(() => clientId.postSend(message, { ud: { ah, remoteQpn: ud.qpNum } }), 'address handle', 'options.ud.ah');
  assertClosedResource(() => prepared.post(), 'address handle', 'options.ud.ah');
  prepared.close();
});

/** The call throws RdmaArgumentError of `operation` whose first issue is at `path`. */
function assertArgumentError(call: () => unknown, operation: string, path: string): void {
  assert.throws(call, (error: unknown) => {
    assert.ok(error instanceof RdmaArgumentError, `expected RdmaArgumentError, got ${String(error)}`);
    assert.equal(error.operation, operation);
    assert.equal(error.issues[0]!.path, path, error.message);
    return true;
  });
}

test('address handles: ill-typed or out-of-range attributes, completions and receive buffers are argument errors, and the process carries on', { timeout: 60_000 }, async () => {
  using connection = await udConnection();
  const { server, client: clientId, ud, serverInbox } = connection;
  const attr = ud.ahAttr;

  // Each of these aborted the process inside koffi.encode, or was truncated into another address.
  const badAttrs: [Record<string, unknown>, string][] = [
    [{ ...attr, sl: '0' }, 'attr.sl'],
    [{ ...attr, is_global: true }, 'attr.is_global'],
    [{ ...attr, port_num: null }, 'attr.port_num'],
    [{ ...attr, static_rate: {} }, 'attr.static_rate'],
    [{ ...attr, port_num: 300 }, 'attr.port_num'],
    [{ ...attr, dlid: -1 }, 'attr.dlid'],
    [{ ...attr, grh: { ...attr.grh, hop_limit: '64' } }, 'attr.grh.hop_limit'],
    [{ ...attr, grh: { ...attr.grh, dgid: { raw: new Uint8Array(4) } } }, 'attr.grh.dgid.raw'],
  ];
  for (const [bad, path] of badAttrs) {
    assertArgumentError(() => clientId.pd.createAh(bad as never), 'createAh', path);
    assertArgumentError(() => clientId.addressHandleTo({ ...ud, ahAttr: bad as never }), 'createAh', path);
  }

  // The event's own attr, and a copy of it, still make working address handles.
  using copied = clientId.pd.createAh({ ...attr, grh: { ...attr.grh } });
  const message = clientId.regMsgs(randomBytes(SIZE));
  clientId.postSend(message, { ud: { ah: copied, remoteQpn: ud.qpNum } });
  const received = await server.queuePair.nextRecvCompletion();
  assert.equal(received.byteLen, GRH_SIZE + SIZE);
  assert.ok(decodeUdMessage(serverInbox.buffer, received.byteLen).payload.equals(message.buffer));

  const receive = serverInbox.buffer.subarray(0, GRH_SIZE + SIZE);
  assertArgumentError(() => server.addressHandleFrom(null as never, receive), 'addressHandleFrom', 'completion');
  assertArgumentError(() => server.addressHandleFrom({ ...received, sl: '0' } as never, receive), 'addressHandleFrom', 'completion.sl');
  assertArgumentError(() => server.addressHandleFrom({ ...received, flags: 'GRH' } as never, receive), 'addressHandleFrom', 'completion.flags');
  assertArgumentError(() => server.addressHandleFrom({ ...received, wrId: 1n } as never, receive), 'addressHandleFrom', 'completion.wrId');
  assertArgumentError(() => server.addressHandleFrom({ ...received, status: 'WR_FLUSH_ERR' }, receive), 'addressHandleFrom', 'completion.status');
  assertArgumentError(() => server.addressHandleFrom(received, undefined as never), 'addressHandleFrom', 'receive');
  assertArgumentError(() => server.addressHandleFrom(received, 'receive' as never), 'addressHandleFrom', 'receive');
  assertArgumentError(() => server.addressHandleFrom(received, receive.subarray(0, GRH_SIZE - 1)), 'addressHandleFrom', 'receive');

  using back = server.addressHandleFrom(received, receive);
  server.postSend(server.regMsgs(Buffer.from('reply'.padEnd(SIZE, '!'))), { ud: { ah: back, remoteQpn: received.srcQp } });
  assert.equal((await clientId.queuePair.nextRecvCompletion()).byteLen, GRH_SIZE + SIZE);
});

test('udaddy server (C) with a TypeScript UD client', { timeout: 120_000 }, async () => {
  const address = deviceAddress();
  const server = start('udaddy', ['-b', address, '-C', String(COUNT), '-S', String(SIZE)]);
  try {
    using channel = new EventChannel();
    let client: Awaited<ReturnType<typeof udClient>> | undefined;
    for (let attempt = 1; attempt <= 40 && !client; attempt++) {
      try {
        client = await udClient(channel, address, UDADDY_PORT);
      } catch (error) {
        if (attempt === 40) throw error;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    }
    const { id, inbox, ud } = client!;
    using clientId = id;
    using ah = clientId.addressHandleTo(ud);
    const message = clientId.regMsgs(Buffer.alloc(SIZE));
    for (let i = 0; i < SIZE; i++) message.buffer[i] = i;
    // As udaddy's client: SEND_WITH_IMM carrying our QP number, so the server can answer.
    for (let i = 0; i < COUNT; i++) clientId.postSend(message, { ud: { ah, remoteQpn: ud.qpNum, remoteQkey: ud.qkey }, immediate: clientId.queuePair.qpNum, signaled: false });
    for (let i = 0; i < COUNT; i++) {
      const reply = await clientId.queuePair.nextRecvCompletion();
      assert.equal(reply.byteLen, GRH_SIZE + SIZE);
      const slot = (reply.context as number) * (GRH_SIZE + SIZE);
      const { payload } = decodeUdMessage(inbox.buffer.subarray(slot, slot + GRH_SIZE + SIZE), reply.byteLen);
      // udaddy echoes its receive buffer: its GRH, then the first bytes of our message.
      assert.ok(payload.subarray(GRH_SIZE).equals(message.buffer.subarray(0, SIZE - GRH_SIZE)), 'udaddy echoed our message');
    }
    const finished = await server.finished;
    assert.equal(finished.code, 0, finished.stdout + finished.stderr);
    assert.match(finished.stdout, /data transfers complete/);
    assert.match(finished.stdout, /return status 0/);
  } finally {
    server.kill();
  }
});

test('a TypeScript UD server with udaddy -s (C)', { timeout: 120_000 }, async () => {
  const address = deviceAddress();
  using channel = new EventChannel();
  using listener = createId(channel, { portSpace: 'UDP' });
  listener.bindAddr({ address, port: UDADDY_PORT });
  listener.listen();
  const client = retrying('udaddy', ['-s', address, '-C', String(COUNT), '-S', String(SIZE)]);
  using server = await listener.nextRequest({ timeoutMs: 60_000 });
  server.createQp({ qpType: 'UD', sendWr: COUNT, recvWr: COUNT });
  const inbox = server.regMsgs(Buffer.alloc(COUNT * (GRH_SIZE + SIZE)));
  for (let i = 0; i < COUNT; i++) server.postRecv(inbox, { offset: i * (GRH_SIZE + SIZE), length: GRH_SIZE + SIZE, context: i });
  await server.accept();

  const messages = [];
  for (let i = 0; i < COUNT; i++) messages.push(await server.queuePair.nextRecvCompletion());
  const first = messages[0]!;
  assert.ok(messages.every((m) => m.byteLen === GRH_SIZE + SIZE && m.immData === first.srcQp), 'each message carries the sender\'s QP number');
  const slot = (first.context as number) * (GRH_SIZE + SIZE);
  using back = server.addressHandleFrom(first, inbox.buffer.subarray(slot, slot + GRH_SIZE + SIZE));
  const reply = server.regMsgs(randomBytes(SIZE));
  for (let i = 0; i < COUNT; i++) {
    server.postSend(reply, { ud: { ah: back, remoteQpn: first.immData! } });
    await server.queuePair.nextSendCompletion();
  }
  const finished = await client.finished;
  assert.equal(finished.code, 0, finished.stdout + finished.stderr);
  assert.match(finished.stdout, /data transfers complete/);
  assert.match(finished.stdout, /return status 0/);
});
