// rdmacm/net over IPv6 on the test device: a unique local address (the VM
// gives veth0 fd77::1), a link-local one with its zone (by name and by
// index), and a listener on :: that takes IPv4 and IPv6 clients alike, as
// node:net's does. rstream over IPv6 is in net-interop.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { networkInterfaces } from 'node:os';
import { connect, createServer, type RdmaServer, type RdmaSocket } from '../../src/net/index.js';
import { RdmaArgumentError } from '../../src/index.js';
import { deviceAddress, deviceAddress6, deviceLinkLocal, testDevice } from '../support/device.js';
import { within } from '../support/within.js';

const address6 = deviceAddress6();
const linkLocal = deviceLinkLocal();
const noIpv6 = !address6 && `the test netdev ${testDevice().netdev ?? '(none)'} has no IPv6 address that is not link-local (set RDMACM_TEST_ADDR6)`;
const noLinkLocal = !linkLocal && `the test netdev ${testDevice().netdev ?? '(none)'} has no link-local IPv6 address`;

/** An echo server on `host` (none: the default), listening. */
async function echoServer(host: string | undefined): Promise<RdmaServer> {
  const server = createServer((socket) => socket.pipe(socket));
  if (host === undefined) server.listen(0);
  else server.listen(0, host);
  await within(once(server, 'listening'), 10_000, `listen on ${host ?? 'the default host'}`);
  return server;
}

/** Connects to `host`, sends a message, reads its echo and ends; the socket as it was once connected. */
async function echoOnce(host: string, port: number): Promise<{ remoteAddress?: string; remoteFamily?: string; localAddress?: string; local: unknown }> {
  const socket: RdmaSocket = connect({ host, port });
  await within(once(socket, 'connect'), 20_000, `connect to ${host} port ${port}`);
  const seen = { remoteAddress: socket.remoteAddress, remoteFamily: socket.remoteFamily, localAddress: socket.localAddress, local: socket.address() };
  const message = `over ${host}`;
  socket.write(message);
  const [echo] = (await within(once(socket, 'data'), 20_000, 'the echo')) as [Buffer];
  assert.equal(echo.toString(), message);
  socket.end();
  await within(once(socket, 'close'), 20_000, 'the close');
  return seen;
}

const close = (server: RdmaServer) => new Promise<void>((resolve) => server.close(() => resolve()));

test('over a unique local IPv6 address: the server, the client and their addresses say IPv6', { skip: noIpv6 }, async () => {
  const server = await echoServer(address6!);
  try {
    const listening = server.address()!;
    assert.equal(listening.address, address6);
    assert.equal(listening.family, 'IPv6');
    const accepted = once(server, 'connection') as Promise<[RdmaSocket]>;
    const seen = await echoOnce(address6!, listening.port);
    assert.equal(seen.remoteAddress, address6);
    assert.equal(seen.remoteFamily, 'IPv6');
    assert.equal(seen.localAddress, address6);
    assert.equal((seen.local as { family: string }).family, 'IPv6');
    const [peer] = await accepted;
    assert.equal(peer.remoteFamily, 'IPv6');
    assert.equal(peer.remoteAddress, address6);
  } finally {
    await close(server);
  }
});

test('over a link-local IPv6 address, its zone named by interface and by index; the addresses come back with the name, as node:net gives them', { skip: noLinkLocal }, async () => {
  const [bare, netdev] = linkLocal!.split('%') as [string, string];
  const index = networkInterfaces()[netdev]!.find((a) => a.address === bare)!.scopeid!;
  const server = await echoServer(linkLocal!);
  try {
    assert.equal(server.address()!.address, linkLocal, 'the listening address keeps its zone');
    for (const host of [linkLocal!, `${bare}%${index}`]) {
      const seen = await echoOnce(host, server.address()!.port);
      assert.equal(seen.remoteAddress, linkLocal, `${host}: the peer's address, its zone by name`);
      assert.equal(seen.localAddress, linkLocal);
      assert.equal(seen.remoteFamily, 'IPv6');
    }
  } finally {
    await close(server);
  }
});

for (const host of ['::', undefined]) {
  test(`a listener on ${host ?? 'no host (node:net listens on ::)'} takes an IPv4 client and an IPv6 client, each seen in its own family`, { skip: noIpv6 }, async () => {
    const server = await echoServer(host);
    try {
      assert.deepEqual({ ...server.address(), port: 0 }, { address: '::', family: 'IPv6', port: 0 });
      const peers: RdmaSocket[] = [];
      server.on('connection', (socket) => peers.push(socket));
      const v4 = await echoOnce(deviceAddress(), server.address()!.port);
      assert.equal(v4.remoteFamily, 'IPv4');
      assert.equal(v4.remoteAddress, deviceAddress());
      const v6 = await echoOnce(address6!, server.address()!.port);
      assert.equal(v6.remoteFamily, 'IPv6');
      assert.equal(v6.remoteAddress, address6);
      assert.deepEqual(peers.map((p) => p.remoteFamily), ['IPv4', 'IPv6'], 'the server side sees the same');
    } finally {
      await close(server);
    }
  });
}

test('listen({ ipv6Only: true }) on :: takes IPv6 clients and refuses IPv4 ones, as node:net\'s', { skip: noIpv6 }, async () => {
  const server = createServer((socket) => socket.pipe(socket));
  server.listen({ port: 0, host: '::', ipv6Only: true });
  await within(once(server, 'listening'), 10_000, 'listen');
  try {
    const v6 = await echoOnce(address6!, server.address()!.port);
    assert.equal(v6.remoteFamily, 'IPv6');
    const v4 = connect({ host: deviceAddress(), port: server.address()!.port });
    const [error] = (await within(once(v4, 'error'), 20_000, "the IPv4 client's error")) as [Error & { code: string }];
    assert.equal(error.code, 'ECONNREFUSED', String(error));
  } finally {
    await close(server);
  }
});

test('a zone naming no interface here is an argument error, before any native call (never ECONNREFUSED)', async () => {
  const socket = connect({ host: 'fe80::1%nosuchif0', port: 7 });
  const [error] = (await within(once(socket, 'error').catch((e: unknown) => [e]), 10_000, "the socket's error")) as [RdmaArgumentError];
  assert.ok(error instanceof RdmaArgumentError, `an RdmaArgumentError, not ${String(error)}`);
  assert.equal(error.code, 'ERR_INVALID_ARG_VALUE');
  assert.match(error.message, /zone must be an interface of this host/);
  const server = createServer();
  server.listen(0, 'fe80::1%nosuchif0');
  const [listenError] = (await within(once(server, 'error').catch((e: unknown) => [e]), 10_000, "the server's error")) as [RdmaArgumentError];
  assert.ok(listenError instanceof RdmaArgumentError);
  assert.equal(listenError.code, 'ERR_INVALID_ARG_VALUE');
});
