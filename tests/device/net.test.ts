// rdmacm/net end to end on the device: a TypeScript server and client in one
// process over rsockets' protocol (the interop with rdma-core's own rsocket
// tools is in net-interop.test.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import { connect, createServer, type RdmaServer, type RdmaSocket } from '../../src/net/index.js';
import { deviceAddress, freshPort } from '../support/device.js';

/** A listening echo server (pipes each socket back to itself). */
async function echoServer(options: Parameters<typeof createServer>[0] = {}): Promise<{ server: RdmaServer; port: number }> {
  const server = createServer(options as object, (socket) => {
    socket.pipe(socket);
    socket.on('error', () => undefined);
  });
  server.listen(0, deviceAddress());
  await once(server, 'listening');
  return { server, port: server.address()!.port };
}

async function closeServer(server: RdmaServer): Promise<void> {
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

/** Everything a readable side delivers until its end. */
async function collect(socket: RdmaSocket): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of socket) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

const sha256 = (data: Uint8Array) => createHash('sha256').update(data).digest('hex');

test('echo: a client writes, ends, and reads back every byte; both sockets close', { timeout: 60_000 }, async () => {
  const { server, port } = await echoServer();
  try {
    const client = connect({ port, host: deviceAddress() });
    assert.equal(client.connecting, true);
    assert.equal(client.readyState, 'opening');
    await once(client, 'connect');
    assert.equal(client.connecting, false);
    assert.equal(client.pending, false);
    assert.equal(client.readyState, 'open');
    assert.equal(client.remoteAddress, deviceAddress());
    assert.equal(client.remotePort, port);
    assert.equal(client.remoteFamily, 'IPv4');
    assert.equal(client.localAddress, deviceAddress());
    client.end('hello over rsockets');
    const echoed = await collect(client);
    assert.equal(echoed.toString(), 'hello over rsockets');
    assert.equal(client.bytesWritten, 19);
    assert.equal(client.bytesRead, 19);
    await once(client, 'close');
    assert.equal(client.readyState, 'closed');
  } finally {
    await closeServer(server);
  }
});

test('stream.pipeline of 8 MiB through an echo keeps every byte (sha256), with small buffers', { timeout: 120_000 }, async () => {
  const { server, port } = await echoServer({ rdma: { recvBufferSize: 65536, sendBufferSize: 65536 } });
  try {
    const payload = randomBytes(8 << 20);
    const client = connect({ port, host: deviceAddress(), rdma: { recvBufferSize: 65536, sendBufferSize: 65536 } });
    await once(client, 'connect');
    const received = collect(client);
    await pipeline(Readable.from([payload.subarray(0, 3 << 20), payload.subarray(3 << 20)]), client);
    const echoed = await received;
    assert.equal(echoed.length, payload.length);
    assert.equal(sha256(echoed), sha256(payload));
  } finally {
    await closeServer(server);
  }
});

test('half-close: end() sends shutdown, the peer sees end and may go on writing', { timeout: 60_000 }, async () => {
  const server = createServer({ allowHalfOpen: true });
  const serverSide = new Promise<string>((resolve, reject) => {
    server.on('connection', (socket) => {
      socket.on('error', reject);
      const chunks: Buffer[] = [];
      socket.on('data', (chunk: Buffer) => chunks.push(chunk));
      socket.on('end', () => {
        // The client's writing side is over; this side still writes.
        socket.end(`got ${Buffer.concat(chunks).toString()}`);
        resolve('ended');
      });
    });
  });
  server.listen({ port: 0, host: deviceAddress() });
  await once(server, 'listening');
  try {
    const client = connect({ port: server.address()!.port, host: deviceAddress(), allowHalfOpen: true });
    await once(client, 'connect');
    client.end('question');
    await once(client, 'finish');
    assert.equal(client.writable, false);
    assert.equal(client.readyState, 'readOnly');
    const answer = await collect(client);
    assert.equal(await serverSide, 'ended');
    assert.equal(answer.toString(), 'got question');
    await once(client, 'close');
  } finally {
    await closeServer(server);
  }
});

test('connecting where nothing listens fails with ECONNREFUSED, the librdmacm cause attached', { timeout: 60_000 }, async () => {
  const client = connect(freshPort(), deviceAddress());
  // 'error' and 'close' come in one tick: listen for both first.
  const closed = new Promise((resolve) => client.once('close', resolve));
  const [error] = (await once(client, 'error')) as [Error & { code: string; syscall: string; address: string; port: number; cause: unknown }];
  assert.equal(error.code, 'ECONNREFUSED');
  assert.equal(error.syscall, 'connect');
  assert.equal(error.address, deviceAddress());
  assert.ok(error.cause instanceof Error);
  await closed;
});

test('listening on a port in use emits EADDRINUSE', { timeout: 30_000 }, async () => {
  const { server, port } = await echoServer();
  try {
    const second = createServer();
    second.listen(port, deviceAddress());
    const [error] = (await once(second, 'error')) as [Error & { code: string; syscall: string }];
    assert.equal(error.code, 'EADDRINUSE');
    assert.equal(error.syscall, 'listen');
  } finally {
    await closeServer(server);
  }
});

test('for await over a socket, and server.getConnections / maxConnections', { timeout: 60_000 }, async () => {
  const { server, port } = await echoServer();
  try {
    const a = connect(port, deviceAddress());
    // The client's ESTABLISHED can come before the server's own.
    await Promise.all([once(a, 'connect'), once(server, 'connection')]);
    const count = await new Promise<number>((resolve) => server.getConnections((_e, n) => resolve(n)));
    assert.equal(count, 1);
    server.maxConnections = 1;
    const b = connect(port, deviceAddress());
    const [dropped] = await once(server, 'drop');
    assert.equal((dropped as { remoteAddress: string }).remoteAddress, deviceAddress());
    const [error] = (await once(b, 'error')) as [Error & { code: string }];
    assert.equal(error.code, 'ECONNREFUSED');
    a.end('x');
    assert.equal((await collect(a)).toString(), 'x');
  } finally {
    await closeServer(server);
  }
});
