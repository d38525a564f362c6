// rdmacm/net's errors in node:net's terms: a resolver failure keeps its own
// code, an RDMA failure gets the node:net code closest to it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lookup } from 'node:dns/promises';
import { once } from 'node:events';
import { RdmaError } from '../../src/api/core/errors.js';
import { connectFailure } from '../../src/net/errors.js';
import { RdmaSocket, connect, createServer } from '../../src/net/index.js';
import { hostRdmaDevices } from '../support/device.js';

const devices = hostRdmaDevices();
const skipNative = devices.length > 0 && `this host has RDMA devices (${devices.join(', ')}): the calls would succeed`;

test('a resolver error is passed on as node:net does (ENOTFOUND, syscall getaddrinfo)', async () => {
  // A name with a character no resolver accepts fails at once, without the network.
  const resolverError = await lookup('bad..name', { family: 4 }).then(() => undefined, (error: unknown) => error);
  assert.ok(resolverError instanceof Error);
  assert.equal(connectFailure(resolverError, 'bad..name', 7471), resolverError);
});

test('an RDMA failure becomes a connect error with a node:net code, the RDMA error as its cause', () => {
  const cause = new RdmaError('rdma_resolve_addr', 113);
  const error = connectFailure(cause, '10.0.0.9', 7471) as Error & { code: string; syscall: string; address: string; port: number };
  assert.equal(error.code, 'EHOSTUNREACH');
  assert.equal(error.syscall, 'connect');
  assert.equal(error.address, '10.0.0.9');
  assert.equal(error.port, 7471);
  assert.equal(error.cause, cause);
  assert.equal((connectFailure(new Error('no code'), 'h', 1) as Error & { code: string }).code, 'ECONNREFUSED');
});

test('without a device, listen() fails with an error event (ENODEV), as any listen failure: never a throw', { skip: skipNative }, async () => {
  const server = createServer();
  const listening = () => assert.fail('no listening without a device');
  assert.equal(server.listen(0, '127.0.0.1', listening), server);
  const [error] = (await once(server, 'error')) as [Error & { code: string; syscall: string }];
  assert.equal(error.code, 'ENODEV');
  assert.equal(error.syscall, 'listen');
  assert.ok(error.cause instanceof RdmaError);
  assert.equal(server.listening, false);
  assert.equal(server.address(), null);
  const closeError = await new Promise<Error | undefined>((resolve) => server.close(resolve));
  assert.equal((closeError as Error & { code: string }).code, 'ERR_SERVER_NOT_RUNNING');
});

test('connect() returns a connecting socket (the attempt starts on the next tick, as node:net); writes and an end waiting for it are answered with its failure', { skip: skipNative }, async () => {
  const socket = connect(7471, '127.0.0.1');
  assert.equal(socket.connecting, true);
  assert.equal(socket.readyState, 'opening');
  const answers: (Error | null | undefined)[] = [];
  socket.write('a', (error) => answers.push(error));
  socket.end('b', (error?: Error | null) => answers.push(error));
  // 'close' follows 'error' in the same tick (and events.once would reject on the 'error').
  const closed = new Promise((resolve) => socket.once('close', resolve));
  const [error] = (await once(socket, 'error')) as [Error & { code: string }];
  assert.equal(error.code, 'ENODEV');
  await closed;
  assert.equal(answers.length, 2, 'the write and the end were answered');
  for (const answer of answers) assert.equal((answer as Error & { code: string }).code, 'ENODEV');
});

test('a socket connects again once \'close\' has come (node:net\'s reconnect): a fresh attempt with its own events; before \'close\', connect() is refused', { skip: skipNative }, async () => {
  // events.once would reject on the 'error' that comes before each 'close'.
  const closed = (socket: RdmaSocket) => new Promise((resolve) => socket.once('close', resolve));
  const socket = connect(7471, '127.0.0.1');
  const errors: string[] = [];
  socket.on('error', (error: Error & { code: string }) => errors.push(error.code));
  await closed(socket);
  assert.equal(socket.destroyed, true);
  assert.equal(socket.connect(7471, '127.0.0.1'), socket);
  assert.equal(socket.destroyed, false);
  assert.equal(socket.connecting, true);
  assert.equal(socket.readyState, 'opening');
  assert.equal(socket.writable, true);
  await closed(socket);
  assert.deepEqual(errors, ['ENODEV', 'ENODEV']);

  const closing = new RdmaSocket();
  closing.destroy();
  assert.throws(() => closing.connect(7471, '127.0.0.1'), { code: 'ERR_SOCKET_CLOSED', message: /once 'close' has been emitted/ });
  await closed(closing);
  closing.on('error', () => undefined);
  closing.connect(7471, '127.0.0.1');
  assert.equal(closing.connecting, true);
  await closed(closing);
});

test('a write to a socket that is neither connecting nor connected fails at once (ERR_SOCKET_CLOSED, as node:net), never waits', async () => {
  const socket = new RdmaSocket();
  const answered = new Promise<Error | null | undefined>((resolve) => socket.write('x', resolve));
  const [error] = (await once(socket, 'error')) as [Error & { code: string }];
  assert.equal(error.code, 'ERR_SOCKET_CLOSED');
  assert.equal(await answered, error);
});

test('end(cb) after destroy() is called back (ERR_STREAM_DESTROYED): Node\'s Writable, and node:net\'s sockets, never call it', async () => {
  const socket = new RdmaSocket();
  socket.destroy();
  const error = await new Promise<Error | null | undefined>((resolve) => socket.end(resolve));
  assert.equal((error as Error & { code: string }).code, 'ERR_STREAM_DESTROYED');
});

test('[Symbol.asyncDispose] called on something that is not a socket rejects what the caller awaits, leaving no promise unawaited', async () => {
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => void unhandled.push(reason);
  process.on('unhandledRejection', onUnhandled);
  try {
    await assert.rejects((RdmaSocket.prototype[Symbol.asyncDispose] as (this: unknown) => Promise<void>).call({}), TypeError);
    await new Promise((resolve) => setTimeout(resolve, 20));
  } finally {
    process.off('unhandledRejection', onUnhandled);
  }
  assert.deepEqual(unhandled, []);
});
