// rdmacm/net stands in for node:net: every public name node:net exports is
// exported (named and on the default export), its sockets and servers are
// this module's and carry every public member of node:net's, and its
// utilities are node:net's own.
import { EventEmitter, once } from 'node:events';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import nodeNetDefault, * as nodeNet from 'node:net';
import rdmaNetDefault, * as rdmaNet from '../../src/net/index.js';

/** node:net's public names: its own internals (_normalizeArgs…) and Node 24's BoundSocket (a bind() for outgoing TCP sockets) aside. */
const PUBLIC = Object.keys(nodeNetDefault).filter((name) => !name.startsWith('_') && name !== 'BoundSocket');

test('every public name of node:net is exported, by name and on the default export', () => {
  const named = rdmaNet as unknown as Record<string, unknown>;
  const byDefault = rdmaNetDefault as unknown as Record<string, unknown>;
  const missing = PUBLIC.filter((name) => named[name] === undefined || byDefault[name] === undefined);
  assert.deepEqual(missing, []);
  assert.ok(PUBLIC.length >= 15, PUBLIC.join(' '));
});

test("sockets and servers are this module's, the utilities node:net's own", () => {
  assert.equal(rdmaNet.Socket, rdmaNet.RdmaSocket);
  assert.equal(rdmaNet.Stream, rdmaNet.RdmaSocket);
  assert.equal(rdmaNet.Server, rdmaNet.RdmaServer);
  assert.equal(rdmaNetDefault.createConnection, rdmaNet.connect);
  for (const name of ['BlockList', 'SocketAddress', 'isIP', 'isIPv4', 'isIPv6', 'getDefaultAutoSelectFamily', 'setDefaultAutoSelectFamilyAttemptTimeout'] as const) {
    assert.equal(rdmaNet[name], nodeNet[name], name);
  }
  const socket = new rdmaNetDefault.Socket();
  assert.ok(socket instanceof rdmaNet.RdmaSocket);
  assert.equal(socket.connecting, false);
  socket.destroy();
  const server = rdmaNetDefault.createServer();
  assert.ok(server instanceof rdmaNet.RdmaServer);
  assert.equal(server.listening, false);
});

/** The public members of a class and its ancestors below Object: names without node:net's `_` for its internals, and EventEmitter's rejection hook. */
function publicMembers(constructor: { prototype: object }): string[] {
  const names = new Set<string>();
  for (let proto = constructor.prototype; proto && proto !== Object.prototype; proto = Object.getPrototypeOf(proto)) {
    for (const key of Reflect.ownKeys(proto)) {
      if (typeof key === 'string' ? !key.startsWith('_') : key === EventEmitter.captureRejectionSymbol) names.add(String(key));
    }
  }
  return [...names];
}

test("every public member of node:net's Socket and Server is here too", () => {
  const socketMembers = new Set(publicMembers(rdmaNet.RdmaSocket));
  const serverMembers = new Set(publicMembers(rdmaNet.RdmaServer));
  assert.deepEqual(publicMembers(nodeNet.Socket).filter((name) => !socketMembers.has(name)), []);
  assert.deepEqual(publicMembers(nodeNet.Server).filter((name) => !serverMembers.has(name)), []);
  assert.ok(serverMembers.has(String(EventEmitter.captureRejectionSymbol)));
});

test('with captureRejections, a rejected connection listener destroys its socket, any other the server errors, as node:net', async () => {
  const before = EventEmitter.captureRejections;
  EventEmitter.captureRejections = true;
  let server: rdmaNet.RdmaServer;
  try {
    server = rdmaNet.createServer();
  } finally {
    EventEmitter.captureRejections = before;
  }
  const inConnection = new Error('from an async connection listener');
  const inListening = new Error('from an async listening listener');
  server.on('connection', async () => {
    throw inConnection;
  });
  server.on('listening', async () => {
    throw inListening;
  });
  const socket = new rdmaNet.RdmaSocket();
  const socketError = once(socket, 'error');
  const serverError = once(server, 'error');
  server.emit('connection', socket);
  assert.deepEqual(await socketError, [inConnection]);
  assert.equal(socket.destroyed, true);
  server.emit('listening');
  assert.deepEqual(await serverError, [inListening]);
});

test('bufferSize is undefined until a socket connects, as node:net', () => {
  const socket = new rdmaNet.RdmaSocket();
  assert.equal(socket.bufferSize, undefined);
  assert.equal(new nodeNet.Socket().bufferSize, undefined);
  socket.destroy();
});
