// rdmacm/net's options: node:net's overloads normalised in one place, and
// every bad or meaningless option refused before anything native runs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as nodeNet from 'node:net';
import { normalizeConnectArgs, normalizeListenArgs } from '../../src/net/options.js';
import { RdmaArgumentError, RdmaSocket, createServer } from '../../src/index.js';

/** The call throws RdmaArgumentError naming `path`, with node:net's `code` for it where one is given. */
function assertRefusedAs(call: () => unknown, path: string, code?: string): void {
  assert.throws(call, (error: unknown) => {
    assert.ok(error instanceof RdmaArgumentError, String(error));
    assert.ok(error.issues.some((issue) => issue.path.startsWith(path)), `${JSON.stringify(error.issues)} names ${path}`);
    if (code !== undefined) assert.equal(error.code, code, `${path}: ${error.message}`);
    return true;
  });
}

test('connect() overloads: (port, host, cb), (port, cb), (options, cb)', () => {
  const cb = () => undefined;
  const positional = normalizeConnectArgs([7471, '10.0.0.2', cb]);
  assert.equal(positional.options.port, 7471);
  assert.equal(positional.options.host, '10.0.0.2');
  assert.equal(positional.callback, cb);
  assert.equal(normalizeConnectArgs([7471, cb]).options.host, 'localhost');
  // As node:net: a port may be a string of digits, in the options too (http hands an agent the port of a URL or argv so).
  assert.equal(normalizeConnectArgs([{ port: '8080', host: 'peer' }]).options.port, 8080);
  assert.equal(normalizeListenArgs([{ port: '8080' }]).options.port, 8080);
  assertRefusedAs(() => normalizeConnectArgs([{ port: 1, host: 'peer', localAddress: '10.0.0.1', localPort: '8080' }]), 'options.localPort', 'ERR_SOCKET_BAD_PORT');
  const fromOptions = normalizeConnectArgs([{ port: 7471, host: 'peer', rdma: { recvBufferSize: 1 << 20 } }]);
  assert.equal(fromOptions.options.rdma.recvBufferSize, 1 << 20);
  assert.equal(fromOptions.options.rdma.sendBufferSize, 131072, 'rsockets\' default');
  assert.equal(fromOptions.options.rdma.recvQueueDepth, 384);
  assert.equal(fromOptions.options.rdma.inlineSize, 64);
  assert.equal(fromOptions.options.rdma.completionMode, 'adaptive');
  assert.equal(fromOptions.options.rdma.spinBudgetUs, 50);
  assert.equal(fromOptions.options.rdma.maxSpinBudgetUs, 5000);
  assert.equal(fromOptions.options.rdma.maxMessageSize, 262144, 'four times rsockets\' 64 KiB');
});

test('listen() overloads: (port, host, backlog, cb), (port, cb), (options), ()', () => {
  const cb = () => undefined;
  assert.deepEqual(normalizeListenArgs([7471, '10.0.0.1', 16, cb]).options, { port: 7471, host: '10.0.0.1', backlog: 16, ipv6Only: false });
  assert.deepEqual(normalizeListenArgs([7471, cb]).options, { port: 7471, backlog: 511, ipv6Only: false });
  assert.deepEqual(normalizeListenArgs([{ port: 1, backlog: 2 }]).options, { port: 1, backlog: 2, ipv6Only: false });
  assert.deepEqual(normalizeListenArgs([{ port: 1, host: '::', ipv6Only: true }]).options, { port: 1, host: '::', backlog: 511, ipv6Only: true });
  assertRefusedAs(() => normalizeListenArgs([{ port: 1, ipv6Only: 'yes' }]), 'options.ipv6Only', 'ERR_INVALID_ARG_TYPE');
  assert.equal(normalizeListenArgs([cb]).callback, cb);
});

test('bad and meaningless options are refused with the parameter named', () => {
  const cases: [unknown[], string, string][] = [
    [[{ port: 70000, host: 'a' }], 'options.port', 'ERR_SOCKET_BAD_PORT'],
    [[{ port: -1 }], 'options.port', 'ERR_SOCKET_BAD_PORT'],
    [[{ port: 1.5 }], 'options.port', 'ERR_SOCKET_BAD_PORT'],
    [[{ port: '7471x' }], 'options.port', 'ERR_SOCKET_BAD_PORT'],
    [[{ port: 1, path: '/tmp/socket' }], 'options.path', 'ERR_INVALID_ARG_VALUE'],
    [[{ port: 1, fd: 3 }], 'options.fd', 'ERR_INVALID_ARG_VALUE'],
    [[{ port: 1, lookup: 'dns' }], 'options.lookup', 'ERR_INVALID_ARG_TYPE'],
    [[{ port: 1, hints: 999 }], 'options.hints', 'ERR_INVALID_ARG_VALUE'],
    [[{ port: 1, autoSelectFamilyAttemptTimeout: 0 }], 'options.autoSelectFamilyAttemptTimeout', 'ERR_OUT_OF_RANGE'],
    [[{ port: 1, blockList: {} }], 'options.blockList', 'ERR_INVALID_ARG_TYPE'],
    // Not one of node:net's connect options: an unknown key.
    [[{ port: 1, exclusive: true }], 'options', 'ERR_INVALID_ARG_VALUE'],
    [[{ port: 1, rdma: { recvBufferSize: 1000 } }], 'options.rdma.recvBufferSize', 'ERR_OUT_OF_RANGE'],
    [[{ port: 1, rdma: { recvBufferSize: 5000 } }], 'options.rdma.recvBufferSize', 'ERR_INVALID_ARG_VALUE'],
    [[{ port: 1, rdma: { sendQueueDepth: 8 } }], 'options.rdma.sendQueueDepth', 'ERR_OUT_OF_RANGE'],
    [[{ port: 1, rdma: { bogus: 1 } }], 'options.rdma', 'ERR_INVALID_ARG_VALUE'],
    [[{ port: 1, rdma: { completionMode: 'spin' } }], 'options.rdma.completionMode', 'ERR_INVALID_ARG_VALUE'],
    [[{ port: 1, rdma: { spinBudgetUs: -1 } }], 'options.rdma.spinBudgetUs', 'ERR_OUT_OF_RANGE'],
    [[{ port: 1, rdma: { spinBudgetUs: '5' } }], 'options.rdma.spinBudgetUs', 'ERR_INVALID_ARG_TYPE'],
    [[{ port: 1, rdma: { maxSpinBudgetUs: 1_000_001 } }], 'options.rdma.maxSpinBudgetUs', 'ERR_OUT_OF_RANGE'],
    [[{ port: 1, rdma: { maxMessageSize: 0 } }], 'options.rdma.maxMessageSize', 'ERR_OUT_OF_RANGE'],
    [[{ port: 1, rdma: { maxMessageSize: (8 << 20) + 1 } }], 'options.rdma.maxMessageSize', 'ERR_OUT_OF_RANGE'],
    [[{ port: 1, rdma: { maxMessageSize: 4096.5 } }], 'options.rdma.maxMessageSize', 'ERR_OUT_OF_RANGE'],
    [[{ port: 1, family: 5 }], 'options.family', 'ERR_INVALID_ARG_VALUE'],
    [[{ port: 1, localAddress: 'not-an-ip' }], 'options.localAddress', 'ERR_INVALID_ARG_VALUE'],
    // Node 22's connect refuses it so; Node 20's fails later, in getaddrinfo.
    [[{ port: 1, host: 'a\0b' }], 'options.host', 'ERR_INVALID_ARG_VALUE'],
    [[1, '\0'], 'options.host', 'ERR_INVALID_ARG_VALUE'],
  ];
  for (const [args, path, code] of cases) assertRefusedAs(() => normalizeConnectArgs(args), path, code);
  // listen's exclusive is taken either way (no cluster sharing here); reusePort only as false.
  for (const exclusive of [true, false]) assert.equal(normalizeListenArgs([{ port: 1, exclusive }]).options.port, 1);
  assert.equal(normalizeListenArgs([{ port: 1, reusePort: false }]).options.port, 1);
  assert.throws(() => normalizeListenArgs([{ port: 1, reusePort: true }]), (error: unknown) =>
    error instanceof RdmaArgumentError && error.code === 'ERR_INVALID_ARG_VALUE' && /SO_REUSEPORT/.test(error.message));
  assertRefusedAs(() => normalizeListenArgs([{ port: 1, exclusive: 'yes' }]), 'options.exclusive', 'ERR_INVALID_ARG_TYPE');
  // node:net's listen(options) needs a port (or a path); listen() alone takes port 0.
  assertRefusedAs(() => normalizeListenArgs([{}]), 'options.port', 'ERR_INVALID_ARG_VALUE');
  assertRefusedAs(() => normalizeListenArgs([{ host: '10.0.0.1' }]), 'options.port', 'ERR_INVALID_ARG_VALUE');
  // Node 22's listen throws so from its lookup (the fuzzer's seed 613526987 found it); Node 20's emits 'error'.
  assertRefusedAs(() => normalizeListenArgs([{ port: 0, host: '\0' }]), 'options.host', 'ERR_INVALID_ARG_VALUE');
  assert.equal(normalizeListenArgs([]).options.port, 0);
  // An Object.prototype name is an unknown key, not a refused node:net option (whose rule was then Object.prototype's function).
  assert.throws(() => normalizeConnectArgs([{ port: 1, toString: 5 }]), (error: unknown) =>
    error instanceof RdmaArgumentError && error.issues.length === 1 && error.issues[0]!.path === 'options' && typeof error.issues[0]!.rule === 'string');
  assert.throws(() => createServer({ rdma: { inlineSize: -1 } }), RdmaArgumentError);
});

test('onread: { buffer, callback } as node:net\'s, on connect, new RdmaSocket and (an extension) createServer; anything else refused by name', () => {
  const callback = () => undefined;
  const buffer = Buffer.alloc(16);
  assert.equal(normalizeConnectArgs([{ port: 1, onread: { buffer, callback } }]).options.onread?.buffer, buffer);
  const make = () => buffer;
  assert.equal(normalizeConnectArgs([{ port: 1, onread: { buffer: make, callback } }]).options.onread?.buffer, make);
  assert.equal(new RdmaSocket({ onread: { buffer: new Uint8Array(1), callback } }).readableFlowing, null, 'reading starts at the connection, as node:net\'s');
  createServer({ onread: { buffer, callback } });
  const cases: [() => unknown, string, string][] = [
    [() => normalizeConnectArgs([{ port: 1, onread: { buffer: Buffer.alloc(0), callback } }]), 'options.onread.buffer', 'ERR_INVALID_ARG_VALUE'],
    [() => normalizeConnectArgs([{ port: 1, onread: { buffer: 'abc', callback } }]), 'options.onread.buffer', 'ERR_INVALID_ARG_TYPE'],
    [() => normalizeConnectArgs([{ port: 1, onread: { buffer: new Proxy(Buffer.alloc(4), {}), callback } }]), 'options.onread.buffer', 'ERR_INVALID_ARG_TYPE'],
    [() => normalizeConnectArgs([{ port: 1, onread: { buffer } }]), 'options.onread.callback', 'ERR_INVALID_ARG_TYPE'],
    [() => new RdmaSocket({ onread: { buffer, callback, size: 3 } as never }), 'options.onread', 'ERR_INVALID_ARG_VALUE'],
    // A view, or a Proxy of one, is not the { buffer, callback } object (node:net ignores either).
    [() => createServer({ onread: buffer as never }), 'options.onread', 'ERR_INVALID_ARG_TYPE'],
    [() => createServer({ onread: new Proxy(Buffer.alloc(4), {}) as never }), 'options.onread', 'ERR_INVALID_ARG_TYPE'],
  ];
  for (const [call, path, code] of cases) assertRefusedAs(call, path, code);
});

test('junk in a positional or callback slot is refused by name, never ignored (node:net ignores it, or calls it later and crashes)', () => {
  const cases: [() => unknown, string][] = [
    [() => normalizeConnectArgs([7471, 5]), 'options.host'],
    [() => normalizeConnectArgs([undefined, '10.0.0.2']), 'options.port'],
    [() => normalizeListenArgs([0, new Proxy(new Uint8Array(2), {})]), 'options.host'],
    [() => normalizeConnectArgs([7471, '10.0.0.2', 5]), 'connectListener'],
    [() => normalizeConnectArgs([{ port: 7471 }, 'x']), 'connectListener'],
    [() => normalizeListenArgs([7471, '10.0.0.1', 16, 5]), 'listeningListener'],
    [() => normalizeListenArgs([7471, 16, 'x']), 'listeningListener'],
    [() => normalizeListenArgs([7471, '10.0.0.1', 'x']), 'options.backlog'],
    [() => normalizeListenArgs([7471, {}]), 'options.host'],
    [() => createServer({}, 5 as never), 'connectionListener'],
    [() => createServer(() => undefined, (() => undefined) as never), 'connectionListener'],
    [() => createServer().close(5 as never), 'callback'],
    [() => createServer().getConnections(undefined as never), 'callback'],
    [() => { createServer().maxConnections = -1; }, 'maxConnections'],
    [() => { createServer().maxConnections = '10' as never; }, 'maxConnections'],
  ];
  for (const [call, path] of cases) assertRefusedAs(call, path);
  assert.deepEqual(normalizeListenArgs([null, '10.0.0.1']).options, { port: 0, host: '10.0.0.1', backlog: 511, ipv6Only: false });
  assert.deepEqual(normalizeListenArgs([7471, 16]).options, { port: 7471, backlog: 16, ipv6Only: false });
  const server = createServer();
  server.maxConnections = 3;
  assert.equal(server.maxConnections, 3);
  server.maxConnections = undefined;
  assert.equal(server.maxConnections, undefined);
});

test('socket methods check their arguments before anything changes', async () => {
  const socket = new RdmaSocket();
  class Lying extends Uint8Array {
    override get length(): number {
      return 1 << 30;
    }
  }
  const resizable = new (ArrayBuffer as unknown as new (n: number, o: { maxByteLength: number }) => ArrayBuffer)(8, { maxByteLength: 16 });
  const cases: [() => unknown, string, string?][] = [
    [() => socket.setTimeout(1, 5 as never), 'callback', 'ERR_INVALID_ARG_TYPE'],
    [() => socket.setTimeout(-1), 'msecs', 'ERR_OUT_OF_RANGE'],
    [() => socket.setKeepAlive(true, -1), 'initialDelay'],
    // Node's Writable throws a bare RangeError for these, or reads memory the view does not cover.
    [() => socket.write(new Lying(4)), 'chunk', 'ERR_INVALID_ARG_TYPE'],
    [() => socket.write(new Proxy(Buffer.alloc(4), {})), 'chunk'],
    // Node's Writable takes any view: a DataView or Uint16Array that lies is refused too.
    [() => socket.write(Object.defineProperty(new DataView(new ArrayBuffer(4)), 'byteLength', { get: () => 1 << 20 })), 'chunk'],
    [() => socket.write(Object.defineProperty(new Uint16Array(2), 'buffer', { get: () => new ArrayBuffer(64) })), 'chunk'],
    [() => socket.end(new Lying(4)), 'chunk'],
    [() => socket.write('x', 5 as never), 'encoding', 'ERR_UNKNOWN_ENCODING'],
    [() => socket.end(undefined, 'utf-9' as never), 'encoding', 'ERR_UNKNOWN_ENCODING'],
    [() => socket.write('ab', 'buffer' as never), 'encoding'],
    [() => socket.write('x', 'utf8', 5 as never), 'callback'],
    [() => socket.end('x', () => undefined, 5 as never), 'callback'],
    [() => socket.mapForRemoteWrite(new Uint8Array(resizable)), 'buffer'],
    [() => socket.mapForRemoteWrite(Buffer.alloc(8), { offset: -1 }), 'options.offset'],
  ];
  for (const [call, path, code] of cases) assertRefusedAs(call, path, code);
  assert.equal(socket.timeout, 0, 'a refused setTimeout changed nothing');
  // writeToRemote returns a promise: it rejects, never throws, for a bad argument or a socket not connected.
  const rejections: [() => Promise<void>, string, string][] = [
    [() => socket.writeToRemote(new Proxy(Buffer.alloc(4), {}), 0), 'data', 'ERR_INVALID_ARG_TYPE'],
    [() => socket.writeToRemote(Buffer.alloc(4), 0.5), 'remoteOffset', 'ERR_OUT_OF_RANGE'],
  ];
  for (const [call, path, code] of rejections) {
    let promise: Promise<void> | undefined;
    assert.doesNotThrow(() => (promise = call()));
    await assert.rejects(promise!, (error: unknown) => error instanceof RdmaArgumentError && error.code === code && error.issues[0]!.path === path);
  }
  await assert.rejects(socket.writeToRemote(Buffer.alloc(4), 0), { code: 'ERR_SOCKET_NOT_CONNECTED' });
  // A view of another kind given Buffer.prototype is written as the bytes it views, never indexed by its elements as a Buffer.
  const masquerade = Object.setPrototypeOf(new Uint16Array([0x0201, 0x0403]), Buffer.prototype) as Uint8Array;
  const stream = new RdmaSocket();
  const written: Buffer[] = [];
  Object.defineProperty(stream, '_write', { value: (chunk: Buffer, _encoding: string, callback: () => void) => void (written.push(chunk), callback()) });
  stream.write(masquerade);
  assert.deepEqual([...written[0]!], [1, 2, 3, 4]);
  assert.equal(socket.listenerCount('timeout'), 0);
  // node:net's constructor takes noDelay and keepAlive; readable and writable only with an fd.
  const configured = new RdmaSocket({ noDelay: false, keepAlive: true, keepAliveInitialDelay: 5000 });
  assert.equal(configured.noDelay, false);
  assert.equal(configured.keepAlive, true);
  assert.throws(() => new RdmaSocket({ readable: true } as never), { code: 'ERR_INVALID_ARG_VALUE' });
  configured.destroy();
  // node:net's coercion: setNoDelay takes any value for its truth.
  assert.equal(socket.setNoDelay('yes' as never).noDelay, true);
  assert.equal(socket.setNoDelay(0 as never).noDelay, false);
  assert.equal(socket.setNoDelay().noDelay, true);
  socket.destroy();
});

test("type of service before connecting: kept for the connection, refused as Node 26's when not an integer 0-255", () => {
  const socket = new RdmaSocket();
  assert.equal(socket.getTypeOfService(), 0);
  assert.equal(socket.setTypeOfService(0x48), socket);
  assert.equal(socket.getTypeOfService(), 0x48);
  assert.equal(new RdmaSocket({ typeOfService: 0x20 }).getTypeOfService(), 0x20);
  const bad: [unknown, string][] = [[NaN, 'ERR_INVALID_ARG_TYPE'], ['16', 'ERR_INVALID_ARG_TYPE'], [undefined, 'ERR_INVALID_ARG_TYPE'], [256, 'ERR_OUT_OF_RANGE'], [-1, 'ERR_OUT_OF_RANGE'], [1.5, 'ERR_OUT_OF_RANGE']];
  // Node 26's own socket, where there is one, gives the same codes.
  const reference = (nodeNet.Socket.prototype as { setTypeOfService?: (tos: unknown) => unknown }).setTypeOfService ? new nodeNet.Socket() : undefined;
  for (const [tos, code] of bad) {
    assertRefusedAs(() => socket.setTypeOfService(tos as number), 'tos', code);
    if (reference) assert.throws(() => (reference as unknown as { setTypeOfService(tos: unknown): void }).setTypeOfService(tos), { code });
  }
  assert.equal(socket.getTypeOfService(), 0x48, 'a refused value changed nothing');
  assertRefusedAs(() => new RdmaSocket({ typeOfService: 300 }), 'options.typeOfService', 'ERR_OUT_OF_RANGE');
  assertRefusedAs(() => normalizeConnectArgs([{ port: 1, typeOfService: '8' }]), 'options.typeOfService', 'ERR_INVALID_ARG_TYPE');
  assert.equal(normalizeConnectArgs([{ port: 1, typeOfService: 8 }]).options.typeOfService, 8);
  reference?.destroy();
});
