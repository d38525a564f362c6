// Members called on a `this` that is not an instance of their class (a
// forged one, another class's, a primitive): an InvalidThisError (Node's
// ERR_INVALID_THIS) before anything of `this` is read, for every class of the
// safe API and of rdmacm/net, and for what RdmaSocket inherits from Duplex;
// release() frees only when close() runs it. The fuzzers
// (tests/host/fuzz-hostile.test.ts, tests/host/fuzz-net.test.ts) call every
// member on forged receivers; this file pins the error's shape, which calls
// reject rather than throw, and, in child processes (a crash there fails the
// test, not the runner), the calls that used to reach native code with a
// pointer the package did not make.
import { EventEmitter } from 'node:events';
import { Duplex } from 'node:stream';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  AddrInfo, AddressHandle, CmId, CompletionChannel, CompletionQueue, DeviceContext, EventChannel, InvalidThisError, MemoryRegion,
  PreparedRecv, PreparedRecvChain, PreparedSend, PreparedSendChain, ProtectionDomain, QueuePair, SharedReceiveQueue,
} from '../../src/index.js';
import { InvalidThisError as NetInvalidThisError, RdmaAgent, RdmaHttpsAgent, RdmaServer, RdmaSocket } from '../../src/net/index.js';
import { childJson } from '../support/child-module.js';

/** The receivers a caller can forge: the prototype alone, a shaped object given it, a Proxy of either, a function given it. */
function forgeries(prototype: object): object[] {
  const shaped = () => Object.setPrototypeOf({ handle: 1n, closed: false, owned: true, kind: 'queue pair', ensureOpen() {}, check() {} }, prototype) as object;
  const callable = Object.setPrototypeOf(function forged() {}, prototype) as object;
  return [Object.create(prototype) as object, shaped(), new Proxy(Object.create(prototype) as object, {}), new Proxy(shaped(), {}), callable];
}
/** The `this` of a method detached from its object and called alone, and what `call` can give it. */
const PRIMITIVES: unknown[] = [undefined, null, 0, 'x', true, 1n, Symbol('forged')];

const isInvalidThis = (type: string) => (error: unknown): boolean => {
  assert.ok(error instanceof InvalidThisError, `expected an InvalidThisError, got ${String(error)}`);
  assert.equal(error.code, 'ERR_INVALID_THIS');
  assert.equal(error.message, `Value of "this" must be of type ${type}`);
  return true;
};

test('errors: InvalidThisError has the shape of Node\'s ERR_INVALID_THIS (URLSearchParams.prototype.get.call({}))', () => {
  let nodes: (Error & { code?: unknown }) | undefined;
  try {
    URLSearchParams.prototype.get.call({} as URLSearchParams, 'a');
  } catch (error) {
    nodes = error as Error & { code?: unknown };
  }
  assert.ok(nodes);
  const ours = new InvalidThisError('QueuePair');
  const shape = (error: Error & { code?: unknown }) => ({
    typeError: error instanceof TypeError, name: error.name, code: error.code, message: error.message.replace(/type \w+$/, 'type X'), keys: Object.keys(error).sort(),
  });
  assert.deepEqual(shape(ours), shape(nodes));
  assert.equal(ours.message, 'Value of "this" must be of type QueuePair');
  assert.equal(NetInvalidThisError, InvalidThisError, 'rdmacm/net exports the same class');
});

/** The getter `key` of `prototype` or the first prototype above it that has one. */
function getterOf(prototype: object, key: string): () => unknown {
  for (let p: object | null = prototype; p; p = Object.getPrototypeOf(p) as object | null) {
    const getter = Object.getOwnPropertyDescriptor(p, key)?.get;
    if (getter) return getter;
  }
  throw new Error(`no getter ${key}`);
}

// One member of each class, and the classes above them (Resource's, the prepared requests' shared ones), each naming its class.
const rows: { name: string; call: (self: object) => unknown; prototype: object; type: string }[] = [
  { name: 'AddrInfo[Symbol.iterator]', call: (s) => (s as AddrInfo)[Symbol.iterator](), prototype: AddrInfo.prototype, type: 'AddrInfo' },
  { name: 'AddressHandle.pointer', call: (s) => (s as AddressHandle).pointer, prototype: AddressHandle.prototype, type: 'AddressHandle' },
  { name: 'CmId.bindAddr', call: (s) => (s as CmId).bindAddr({ address: '127.0.0.1', port: 1 }), prototype: CmId.prototype, type: 'CmId' },
  { name: 'CompletionChannel.queues', call: (s) => (s as CompletionChannel).queues, prototype: CompletionChannel.prototype, type: 'CompletionChannel' },
  { name: 'CompletionQueue.poll', call: (s) => (s as CompletionQueue).poll(), prototype: CompletionQueue.prototype, type: 'CompletionQueue' },
  { name: 'CompletionQueue.statusAt', call: (s) => (s as CompletionQueue).statusAt(0), prototype: CompletionQueue.prototype, type: 'CompletionQueue' },
  { name: 'set CompletionQueue.mode', call: (s) => { (s as CompletionQueue).mode = 'events'; }, prototype: CompletionQueue.prototype, type: 'CompletionQueue' },
  { name: 'DeviceContext.allocPd', call: (s) => (s as DeviceContext).allocPd(), prototype: DeviceContext.prototype, type: 'DeviceContext' },
  { name: 'EventChannel.setRef', call: (s) => (s as EventChannel).setRef(false), prototype: EventChannel.prototype, type: 'EventChannel' },
  { name: 'MemoryRegion.remote', call: (s) => (s as MemoryRegion).remote, prototype: MemoryRegion.prototype, type: 'MemoryRegion' },
  { name: 'ProtectionDomain.register', call: (s) => (s as ProtectionDomain).register(Buffer.alloc(8)), prototype: ProtectionDomain.prototype, type: 'ProtectionDomain' },
  { name: 'QueuePair.postSend', call: (s) => (s as QueuePair).postSend(Buffer.alloc(8)), prototype: QueuePair.prototype, type: 'QueuePair' },
  { name: 'SharedReceiveQueue.postRecv', call: (s) => (s as SharedReceiveQueue).postRecv(undefined as never), prototype: SharedReceiveQueue.prototype, type: 'SharedReceiveQueue' },
  { name: 'PreparedSend.post', call: (s) => (s as PreparedSend).post(), prototype: PreparedSend.prototype, type: 'PreparedSend' },
  { name: 'PreparedRecv.post', call: (s) => (s as PreparedRecv).post(), prototype: PreparedRecv.prototype, type: 'PreparedRecv' },
  { name: 'PreparedSendChain.post', call: (s) => (s as PreparedSendChain).post(), prototype: PreparedSendChain.prototype, type: 'PreparedSendChain' },
  { name: 'PreparedRecvChain.post', call: (s) => (s as PreparedRecvChain).post(), prototype: PreparedRecvChain.prototype, type: 'PreparedRecvChain' },
  { name: 'RdmaSocket.write', call: (s) => (s as RdmaSocket).write('x'), prototype: RdmaSocket.prototype, type: 'RdmaSocket' },
  { name: 'RdmaServer.listen', call: (s) => (s as RdmaServer).listen(0), prototype: RdmaServer.prototype, type: 'RdmaServer' },
  { name: 'RdmaAgent.createConnection', call: (s) => (s as RdmaAgent).createConnection({ host: '192.0.2.1', port: 1 }), prototype: RdmaAgent.prototype, type: 'RdmaAgent' },
  {
    name: 'RdmaHttpsAgent.createConnection', call: (s) => (s as RdmaHttpsAgent).createConnection({ host: '192.0.2.1', port: 1 }),
    prototype: RdmaHttpsAgent.prototype, type: 'RdmaHttpsAgent',
  },
  // Inherited members name the class that defines them, as Node's do (EventTarget's on a forged AbortSignal).
  { name: 'QueuePair.close (Resource\'s)', call: (s) => (s as QueuePair).close(), prototype: QueuePair.prototype, type: 'Resource' },
  // The getter itself: a shaped object's own `closed` would shadow it.
  { name: 'MemoryRegion.closed (Resource\'s)', call: (s) => getterOf(MemoryRegion.prototype, 'closed').call(s), prototype: MemoryRegion.prototype, type: 'Resource' },
  {
    name: 'PreparedSend.close (shared by the prepared requests)', call: (s) => (s as PreparedSend).close(), prototype: PreparedSend.prototype,
    type: 'PreparedSend, PreparedRecv, PreparedSendChain or PreparedRecvChain',
  },
  { name: 'PreparedRecv.setLength', call: (s) => (s as PreparedRecv).setLength(1), prototype: PreparedRecv.prototype, type: 'PreparedSend or PreparedRecv' },
  { name: 'PreparedRecvChain.slotOf', call: (s) => (s as PreparedRecvChain).slotOf(1), prototype: PreparedRecvChain.prototype, type: 'PreparedSendChain or PreparedRecvChain' },
];
for (const row of rows) {
  test(`${row.name} on a forged \`this\` (the prototype alone, shaped, proxied) throws InvalidThisError naming ${row.type}`, () => {
    for (const self of forgeries(row.prototype)) assert.throws(() => row.call(self), isInvalidThis(row.type));
  });
}

/**
 * Calls every method, getter and setter `prototype` defines on each of
 * `receivers`: each must throw InvalidThisError, or return a promise that
 * rejects with one (async members, an async generator's first next()).
 * `type` names the class, or null where members name the classes that define
 * them. Returns how many calls it made.
 */
async function refuseEach(prototype: object, receivers: unknown[], type: string | null): Promise<number> {
  const isRefusal = (error: unknown) => (type ? isInvalidThis(type)(error) : error instanceof InvalidThisError);
  let calls = 0;
  for (const key of Reflect.ownKeys(prototype)) {
    if (key === 'constructor') continue;
    const own = Object.getOwnPropertyDescriptor(prototype, key)!;
    for (const member of [own.value, own.get, own.set] as unknown[]) {
      if (typeof member !== 'function') continue;
      for (const self of receivers) {
        calls++;
        let outcome: unknown;
        try {
          outcome = (member as (this: unknown, a: unknown) => unknown).call(self, 'x');
        } catch (error) {
          assert.ok(isRefusal(error), `${String(key)}: ${String(error)}`);
          continue;
        }
        // An async generator refuses at its first next(), as its other failures come.
        if (outcome !== null && typeof outcome === 'object' && Symbol.asyncIterator in outcome) outcome = (outcome as unknown as AsyncIterator<unknown>).next();
        assert.ok(outcome instanceof Promise, `${String(key)} answered instead of refusing`);
        await assert.rejects(outcome, isRefusal, String(key));
      }
    }
  }
  return calls;
}

test('what RdmaSocket inherits from Duplex (pipe, read, destroy, the readable* getters, the async helpers) refuses a forged `this` as its own members do', async () => {
  const inherited = new Set<PropertyKey>();
  for (let p = Object.getPrototypeOf(RdmaSocket.prototype) as object; p !== EventEmitter.prototype; p = Object.getPrototypeOf(p) as object) {
    for (const key of Reflect.ownKeys(p)) if (key !== 'constructor') inherited.add(key);
  }
  for (const name of ['pipe', 'read', 'destroy', 'pause', 'resume', 'setEncoding', 'cork', 'uncork', 'push', 'unshift', 'toArray', 'readableFlowing', 'eventNames']) {
    assert.ok(inherited.has(name), `Duplex still gives RdmaSocket ${name}`);
  }
  for (const key of inherited) assert.ok(Object.getOwnPropertyDescriptor(RdmaSocket.prototype, key), `RdmaSocket.prototype has its own ${String(key)}`);
  const calls = await refuseEach(RdmaSocket.prototype, [...forgeries(RdmaSocket.prototype), ...PRIMITIVES], 'RdmaSocket');
  assert.ok(calls > 500, `${calls} calls`);
});

test('every member of every class, called on a primitive `this` (a method detached and called alone gets undefined): InvalidThisError, never the `in` operator\'s own TypeError', async () => {
  const classes = [AddrInfo, AddressHandle, CmId, CompletionChannel, CompletionQueue, DeviceContext, EventChannel, MemoryRegion, PreparedRecv, PreparedRecvChain,
    PreparedSend, PreparedSendChain, ProtectionDomain, QueuePair, SharedReceiveQueue, RdmaServer, RdmaSocket];
  let calls = 0;
  for (const c of classes) {
    // The package's prototypes (Resource's, the prepared requests' shared ones), not Node's.
    const nodes: object[] = [Object.prototype, EventEmitter.prototype, Duplex.prototype];
    for (let p = c.prototype as object; !nodes.includes(p); p = Object.getPrototypeOf(p) as object) calls += await refuseEach(p, PRIMITIVES, null);
  }
  assert.ok(calls > 2000, `${calls} calls`);
});

test('a member called on an instance of another class is refused too: RdmaSocket.write on an RdmaServer, RdmaServer.close on an RdmaSocket', () => {
  const server = new RdmaServer();
  const socket = new RdmaSocket();
  try {
    assert.throws(() => RdmaSocket.prototype.write.call(server as never, 'x'), isInvalidThis('RdmaSocket'));
    assert.throws(() => RdmaServer.prototype.close.call(socket as never), isInvalidThis('RdmaServer'));
  } finally {
    socket.destroy();
  }
});

test('async methods reject on a forged `this`, as their own failures do; an async generator at its first next(); methods whose failures throw throw', async () => {
  const id = Object.create(CmId.prototype) as CmId;
  const waits: [string, () => Promise<unknown>][] = [
    ['resolveAddr', () => id.resolveAddr({ address: '127.0.0.1', port: 1 })], ['resolveRoute', () => id.resolveRoute()],
    ['connect', () => id.connect()], ['accept', () => id.accept()], ['nextRequest', () => id.nextRequest()], ['disconnect', () => id.disconnect()],
    ['waitForDisconnect', () => id.waitForDisconnect()], ['joinMulticast', () => id.joinMulticast({ address: '239.0.0.1' })],
  ];
  for (const [name, call] of waits) {
    let pending: Promise<unknown> | undefined;
    assert.doesNotThrow(() => { pending = call(); }, `CmId.${name} rejects, never throws`);
    await assert.rejects(pending!, isInvalidThis('CmId'), name);
  }
  await assert.rejects((RdmaSocket.prototype[Symbol.asyncDispose] as (this: unknown) => Promise<void>).call({}), isInvalidThis('RdmaSocket'));
  await assert.rejects((RdmaServer.prototype[Symbol.asyncDispose] as (this: unknown) => Promise<void>).call({}), isInvalidThis('RdmaServer'));
  let written: Promise<void> | undefined;
  assert.doesNotThrow(() => { written = RdmaSocket.prototype.writeToRemote.call({} as never, new Uint8Array(1), 0); }, 'writeToRemote rejects, never throws');
  await assert.rejects(written!, isInvalidThis('RdmaSocket'));
  const iterator = CompletionQueue.prototype[Symbol.asyncIterator].call(Object.create(CompletionQueue.prototype) as CompletionQueue);
  await assert.rejects(iterator.next(), isInvalidThis('CompletionQueue'));
  // next() throws ResourceClosedError at once on a closed queue: a forged one is refused the same way.
  assert.throws(() => CompletionQueue.prototype.next.call(Object.create(CompletionQueue.prototype) as CompletionQueue), isInvalidThis('CompletionQueue'));
  assert.throws(() => QueuePair.prototype.nextRecvCompletion.call(Object.create(QueuePair.prototype) as QueuePair), isInvalidThis('QueuePair'));
});

interface Outcomes {
  readonly [call: string]: string;
}

/** What each call did in the child: 'returned …', or the error's name and code. */
const OUTCOME = `
const outcome = (call) => {
  try {
    const result = call();
    return 'returned ' + String(result);
  } catch (error) {
    return error.name + ' ' + String(error.code);
  }
};`;

test('release() called on a shaped object given the prototype (it freed pointer 1: SIGSEGV) throws InvalidThisError, in a child so a crash fails this test', () => {
  const seen = childJson<Outcomes>(`
    import * as rdmacm from './src/index.js';
    ${OUTCOME}
    const seen = {};
    // The exact case the fuzzer found.
    seen.exact = outcome(() => rdmacm.AddrInfo.prototype.release.call(Object.setPrototypeOf({ handle: 1n }, rdmacm.AddrInfo.prototype)));
    for (const type of ['AddrInfo', 'AddressHandle', 'CmId', 'CompletionChannel', 'CompletionQueue', 'DeviceContext', 'EventChannel', 'MemoryRegion',
      'ProtectionDomain', 'QueuePair', 'SharedReceiveQueue']) {
      const prototype = rdmacm[type].prototype;
      const shaped = Object.setPrototypeOf({ handle: 1n, owned: true, destroy() {}, closed: false, ensureOpen() {} }, prototype);
      seen[type + '.release'] = outcome(() => prototype.release.call(shaped));
      // close() is Resource's: it refuses the shaped object before it calls release().
      seen[type + '.close'] = outcome(() => prototype.close.call(shaped));
    }
    console.log(JSON.stringify(seen));
  `);
  assert.equal(seen.exact, 'TypeError ERR_INVALID_THIS');
  for (const [call, outcome] of Object.entries(seen)) assert.equal(outcome, 'TypeError ERR_INVALID_THIS', call);
  assert.equal(Object.keys(seen).length, 23);
});

test('own properties never stand in for the private state: allocPd, createCq, post, poll on a shaped `this` with its own handle and ensureOpen, in a child', () => {
  const seen = childJson<Outcomes>(`
    import * as rdmacm from './src/index.js';
    ${OUTCOME}
    const shaped = (type) => Object.setPrototypeOf({
      handle: 1n, owned: true, closed: false, kind: 'forged', ensureOpen() {}, check() {},
      target: { owner: { closed: false }, pd: {}, ops: {} }, region: undefined, postCall: { call: () => 0 },
    }, rdmacm[type].prototype);
    const seen = {
      allocPd: outcome(() => shaped('DeviceContext').allocPd()),
      createCq: outcome(() => shaped('DeviceContext').createCq()),
      limits: outcome(() => shaped('DeviceContext').limits),
      register: outcome(() => shaped('ProtectionDomain').register(Buffer.alloc(8))),
      setMinRnrTimer: outcome(() => shaped('QueuePair').setMinRnrTimer(1)),
      localPort: outcome(() => shaped('CmId').localPort),
      listen: outcome(() => shaped('CmId').listen()),
      poll: outcome(() => shaped('CompletionQueue').poll()),
      post: outcome(() => shaped('PreparedSend').post()),
      chainPost: outcome(() => shaped('PreparedRecvChain').post()),
      unsafeHandle: outcome(() => shaped('AddressHandle').unsafeHandle),
    };
    console.log(JSON.stringify(seen));
  `);
  for (const [call, outcome] of Object.entries(seen)) assert.equal(outcome, 'TypeError ERR_INVALID_THIS', call);
  assert.equal(Object.keys(seen).length, 11);
});

test('release() runs only from close(): called on a real resource it is refused (before and after close), and a member of one class refuses another class\'s instance, in a child', () => {
  // Real objects over stand-in pointers (no device here): a borrowed context and CQ free nothing in close(); the region is never closed.
  const seen = childJson<Outcomes>(`
    import koffi from 'koffi';
    import * as rdmacm from './src/index.js';
    import { internal } from './src/api/core/internal.js';
    ${OUTCOME}
    const context = rdmacm.DeviceContext.borrow(internal, 16n);
    const queue = rdmacm.CompletionQueue.borrow(internal, 32n, context, {});
    // MemoryRegion's constructor (private to TypeScript) reads lkey and rkey from its handle: a zeroed stand-in struct ibv_mr.
    const mr = Buffer.alloc(64);
    const memory = Buffer.alloc(8);
    const region = Reflect.construct(rdmacm.MemoryRegion, [koffi.address(mr), context, memory, koffi.address(memory), ['LOCAL_WRITE']]);
    const seen = {
      contextRelease: outcome(() => rdmacm.DeviceContext.prototype.release.call(context)),
      queueRelease: outcome(() => rdmacm.CompletionQueue.prototype.release.call(queue)),
      // ibv_dereg_mr of a stand-in pointer would crash: refused before it.
      regionRelease: outcome(() => rdmacm.MemoryRegion.prototype.release.call(region)),
      // ibv_alloc_pd and ibv_close_device of a CQ's pointer would crash: the CQ is not a DeviceContext.
      allocPdOnQueue: outcome(() => rdmacm.DeviceContext.prototype.allocPd.call(queue)),
      contextReleaseOnQueue: outcome(() => rdmacm.DeviceContext.prototype.release.call(queue)),
      regionDeregisterOnQueue: outcome(() => rdmacm.MemoryRegion.prototype.deregister.call(queue)),
    };
    // The region stays open (its pointer is not ibv_dereg_mr's to free); the borrowed queue's close() frees nothing.
    queue.close();
    seen.queueClosed = String(queue.closed);
    seen.queueReleaseAfterClose = outcome(() => rdmacm.CompletionQueue.prototype.release.call(queue));
    console.log(JSON.stringify(seen));
  `);
  assert.deepEqual(seen, {
    contextRelease: 'RdmaArgumentError ERR_INVALID_ARG_VALUE',
    queueRelease: 'RdmaArgumentError ERR_INVALID_ARG_VALUE',
    regionRelease: 'RdmaArgumentError ERR_INVALID_ARG_VALUE',
    allocPdOnQueue: 'TypeError ERR_INVALID_THIS',
    contextReleaseOnQueue: 'TypeError ERR_INVALID_THIS',
    regionDeregisterOnQueue: 'TypeError ERR_INVALID_THIS',
    queueClosed: 'true',
    queueReleaseAfterClose: 'RdmaArgumentError ERR_INVALID_ARG_VALUE',
  });
});
