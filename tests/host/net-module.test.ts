// rdmacm/net stands in for node:net: every public name node:net exports is
// exported (named and on the default export), its sockets and servers are
// this module's, and its utilities are node:net's own.
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
