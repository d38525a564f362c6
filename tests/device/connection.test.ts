// The safe API end to end on the device: an asynchronous server and client in
// one process, over one event channel each.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createId, EventChannel, ConnectionError, type CmId } from '../../src/index.js';
import { deviceAddress, freshPort } from '../support/device.js';
import { connectPair } from '../support/pair.js';

test('connect, exchange private data, send and receive both ways, disconnect', { timeout: 60_000 }, async () => {
  const pair = await connectPair({ clientParam: { privateData: Buffer.from('hello from client') }, serverParam: { privateData: Buffer.from('welcome') } });
  try {
    const { client, server } = pair;
    // RC private data arrives at the transport's full size (56 on connect, 196 on accept), zero-padded.
    assert.equal(server.request?.privateData.length, 56);
    assert.equal(server.request?.privateData.subarray(0, 17).toString(), 'hello from client');
    assert.equal(pair.established.privateData.length, 196);
    assert.equal(pair.established.privateData.subarray(0, 7).toString(), 'welcome');
    assert.equal(client.peerAddress?.address, pair.address);
    assert.equal(client.peerPort, pair.port);
    assert.equal(server.localPort, pair.port);
    assert.equal(client.qp!.type, 'RC');
    assert.ok(client.qp!.caps.maxInlineData >= 64);

    const serverRecv = server.regMsgs(Buffer.alloc(64));
    const clientRecv = client.regMsgs(Buffer.alloc(64));
    const clientSend = client.regMsgs(Buffer.from('ping'.padEnd(64, '.')));
    server.postRecv(serverRecv, { context: 'server-recv' });
    client.postRecv(clientRecv, { context: 'client-recv' });

    client.postSend(clientSend, { length: 4, context: 'client-send' });
    const sent = await client.queuePair.nextSendCompletion();
    assert.equal(sent.status, 'SUCCESS');
    assert.equal(sent.opcode, 'SEND');
    assert.equal(sent.context, 'client-send');
    const received = await server.queuePair.nextRecvCompletion();
    assert.equal(received.opcode, 'RECV');
    assert.equal(received.byteLen, 4);
    assert.equal(received.context, 'server-recv');
    assert.equal(serverRecv.buffer.subarray(0, 4).toString(), 'ping');

    server.postSend(Buffer.from('pong'), { inline: true, immediate: 0xdeadbeef });
    const reply = await client.queuePair.nextRecvCompletion();
    assert.equal(reply.byteLen, 4);
    assert.equal(reply.immData, 0xdeadbeef);
    assert.ok(reply.flags.includes('WITH_IMM'));
    assert.equal(clientRecv.buffer.subarray(0, 4).toString(), 'pong');
    assert.equal((await server.queuePair.nextSendCompletion()).status, 'SUCCESS');

    const disconnected = server.disconnect({ timeoutMs: 5000 });
    await client.disconnect({ timeoutMs: 5000 });
    await disconnected;
  } finally {
    pair.close();
  }
});

test('connect to a port with no listener is rejected or unreachable', { timeout: 30_000 }, async () => {
  using channel = new EventChannel();
  using client = createId(channel);
  await client.resolveAddr({ address: deviceAddress(), port: freshPort() });
  await client.resolveRoute();
  client.createQp();
  await assert.rejects(client.connect(undefined, { timeoutMs: 10_000 }), (error: unknown) => {
    assert.ok(error instanceof ConnectionError);
    assert.match(error.code, /ERR_RDMACM_(REJECTED|UNREACHABLE)/);
    return true;
  });
});

test('a second close is a no-op and use after close throws', async () => {
  const channel = new EventChannel();
  const id: CmId = createId(channel);
  id.close();
  id.close();
  assert.throws(() => id.listen(), { name: 'ResourceClosedError' });
  channel.close();
  channel.close();
});
