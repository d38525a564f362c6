// Hostile fuzzing of the public entry points that need no device (issue 32):
// forged instances where a library object is expected, buffers that lie about
// their length or cannot be trusted (Proxies, detached, resizable, growable),
// numbers that are not or are out of range, and enum names outside their set.
// Contract: every call returns, or throws/rejects a typed error (an Error with
// a string code from this package); a forged instance or a lying buffer is
// refused with an RdmaArgumentError naming its parameter, and a member called
// on a forged `this` with an InvalidThisError (ERR_INVALID_THIS). Calls that
// pass validation reach librdmacm, which fails with RdmaError (ENODEV) here.
//
// The ledger is tests/support/fuzz.ts's (shared with tests/host/fuzz.test.ts and
// tests/device/fuzz-hostile.test.ts). RDMACM_FUZZ_SEED replays a run.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  AddrInfo, AddrInfoFlag, AddressHandle, CmId, CompletionChannel, CompletionQueue, DeviceContext, EventChannel, MemoryRegion,
  PortSpace, PreparedRecv, PreparedRecvChain, PreparedSend, PreparedSendChain, ProtectionDomain, QpType, QueuePair,
  RdmaArgumentError, SharedReceiveQueue, connParamSchema, createEndpoint, createId, decodeRemoteRegion, decodeUdMessage,
  encodeRemoteRegion, getAddrInfo, getAddrInfoAsync, setBoundCalls,
} from '../../src/index.js';
import { hostRdmaDevices } from '../support/device.js';
import {
  badEnum, FuzzLedger, forged, honestCopy, hostile, hostileNumber, intrinsic, lyingBuffer, maybe, membersOf, primitiveReceivers, refused, refusedAs, refusedAsAsync, refusedAsInvalidThis, show,
  type Verdict,
} from '../support/fuzz.js';

const devices = hostRdmaDevices();
const skipNative = devices.length > 0 && `this host has RDMA devices (${devices.join(', ')}): valid calls would open real resources`;

/** Functions that throw untyped exceptions for some hostile input (src/ bugs, reported): what was seen. */
const KNOWN_UNTYPED: Record<string, string> = {};
/** Functions that return a result for hostile input they should refuse (src/ bugs, reported). */
const KNOWN_ACCEPTED: Record<string, string> = {};

const ledger = new FuzzLedger({ untyped: KNOWN_UNTYPED, accepted: KNOWN_ACCEPTED });

const RUNS = {
  forgedParameters: 4_000,
  lyingBuffers: 6_000,
  numbers: 8_000,
  enums: 4_000,
  asyncSignal: 300,
  memo: 200,
  forgedThis: 3_000,
} as const;
const PARAMS = { seed: Number(process.env.RDMACM_FUZZ_SEED ?? Date.now() % 2 ** 31), verbose: 1 } as const;
const started = performance.now();

test('forged instances where a library object is expected: an argument error naming the parameter', { skip: skipNative }, () => {
  const cases = fc.oneof(
    forged(EventChannel).map((f) => ['createId', 'channel', () => createId(f as never)] as const),
    forged(ProtectionDomain).map((f) => ['createEndpoint', 'options.pd', () => createEndpoint({ host: '127.0.0.1', port: 7471 }, { pd: f as never })] as const),
    forged(AddrInfo).map((f) => ['createEndpoint', 'target', () => createEndpoint(f as never)] as const),
  );
  fc.assert(fc.property(cases, ([name, parameter, fn]) =>
    ledger.call(`forged ${parameter} → ${name}`, refusedAs(parameter, fn), refused)), { ...PARAMS, numRuns: RUNS.forgedParameters });
});

/** Whether `value` is a real AbortSignal (its own getter accepts it), not one forged from the prototype; not src's check, for the same reason as validPort's. */
function realAbortSignal(value: unknown): boolean {
  try {
    return typeof Object.getOwnPropertyDescriptor(AbortSignal.prototype, 'aborted')!.get!.call(value) === 'boolean';
  } catch {
    return false;
  }
}

test('getAddrInfoAsync with a forged or hostile signal rejects with an argument error naming it, never hangs', { skip: skipNative }, async () => {
  // No signal, or a real one (junk holds one), is valid: it would reach librdmacm.
  const signals = fc.oneof(forged(AbortSignal), hostile(fc.constant(undefined)).filter((v) => v !== undefined && !realAbortSignal(v)));
  await fc.assert(fc.asyncProperty(signals, async (signal) =>
    ledger.callAsync('getAddrInfoAsync(options.signal)', refusedAsAsync('options.signal', () => getAddrInfoAsync('127.0.0.1', '7471', {}, { signal: signal as never })),
      () => 'accepted-junk', () => show(signal))), { ...PARAMS, numRuns: RUNS.asyncSignal });
});

test('a forged AbortSignal right after a real one (the parse memo keeps instances by prototype) is still refused by name', { skip: skipNative }, async () => {
  await fc.assert(fc.asyncProperty(forged(AbortSignal), async (signal) => {
    await getAddrInfoAsync('127.0.0.1', '7471', {}, { signal: new AbortController().signal }).catch(() => undefined);
    return ledger.callAsync('getAddrInfoAsync(options.signal) after a real one', refusedAsAsync('options.signal', () => getAddrInfoAsync('127.0.0.1', '7471', {}, { signal: signal as never })),
      () => 'accepted-junk', () => show(signal));
  }), { ...PARAMS, numRuns: RUNS.memo });
});

test('lying, proxied, detached, resizable and growable buffers: typed errors, or (views that tell the truth) exactly what the view holds', () => {
  const offset = maybe(fc.oneof(fc.integer({ min: 0, max: 64 }), hostileNumber));
  fc.assert(fc.property(lyingBuffer, offset, fc.integer({ min: 0, max: 400 }), (buffer, at, len) => {
    const view = buffer as Uint8Array;
    const copy = honestCopy(buffer);
    const input = () => `${show(buffer)} (length ${String(intrinsic('length', ArrayBuffer.isView(buffer) ? buffer : new Uint8Array(0)))}), ${show(at)}, ${len}`;
    const ok = [
      ledger.call('decodeRemoteRegion(lying data)', () => decodeRemoteRegion(view, at as never), (r): Verdict => {
        if (!copy || !Number.isInteger(at ?? 0)) return 'accepted-junk';
        const d = new DataView(copy.buffer, (at as number | undefined) ?? 0);
        return r.address === d.getBigUint64(0) && r.rkey === d.getUint32(8) && r.length === d.getUint32(12);
      }, input),
      // encodeRemoteRegion writes into its target: only a real Buffer (and these all lie or are not Buffers of fixed length) … or refuses.
      ledger.call('encodeRemoteRegion(lying target)', () => encodeRemoteRegion({ address: 1n, rkey: 2, length: 3 }, view as Buffer, at as never),
        (b): Verdict => (copy && Buffer.isBuffer(b) && b === view ? true : 'accepted-junk'), input),
      ledger.call('decodeUdMessage(lying receive)', () => decodeUdMessage(view, len),
        (m): Verdict => (copy && len >= 40 && len <= copy.length ? m.payload.equals(copy.subarray(40, len)) : 'accepted-junk'), input),
      ledger.call('connParamSchema.safeParse(lying privateData)', () => connParamSchema.safeParse({ privateData: view }),
        (r): Verdict => (r.success ? (copy ? r.data.privateData === view : 'accepted-junk') : r.error.issues.length > 0), input),
    ];
    return ok.every(Boolean);
  }), { ...PARAMS, numRuns: RUNS.lyingBuffers });
});

/** 2 ** 31 is hostile for a count but a valid u32. */
const u32 = (v: unknown): boolean => Number.isInteger(v) && (v as number) >= 0 && (v as number) <= 0xffffffff;
/**
 * What the parameters that reach librdmacm take: a value they take would fail
 * there (ENODEV), so only the rest are thrown at them. Written from the API's
 * documented ranges, not taken from src's schemas: a schema that let junk in
 * must not also filter it out here.
 */
const validPort = (v: unknown): boolean => (Number.isInteger(v) && (v as number) >= 0 && (v as number) <= 65535) || (typeof v === 'string' && /^\d+$/.test(v) && Number(v) <= 65535);
const validQpField = (key: string, v: unknown): boolean => (key === 'inlineData' ? u32(v) : Number.isInteger(v) && (v as number) >= 1 && (v as number) <= 0x7fffffff);
const validService = (v: unknown): boolean => v === null || (typeof v === 'string' && v.length > 0 && !v.includes('\0'));

test('hostile numbers for every count, size, offset, port and field: refused, never accepted', { skip: skipNative }, () => {
  const n = hostileNumber;
  const cases = fc.oneof(
    n.map((v) => ['decodeRemoteRegion(offset)', () => decodeRemoteRegion(Buffer.alloc(64), v as never)] as const),
    n.map((v) => ['decodeUdMessage(byteLen)', () => decodeUdMessage(Buffer.alloc(64), v as never)] as const),
    // A bigint of 0–2^64-1 is a valid address.
    fc.tuple(n, fc.constantFrom('rkey', 'length', 'address')).filter(([v, key]) => !(key === 'address' ? typeof v === 'bigint' && v >= 0n && v < 2n ** 64n : u32(v))).map(([v, key]) =>
      ['encodeRemoteRegion(remote)', () => encodeRemoteRegion({ address: 1n, rkey: 1, length: 1, [key]: v } as never)] as const),
    n.map((v) => ['encodeRemoteRegion(offset)', () => encodeRemoteRegion({ address: 1n, rkey: 1, length: 1 }, Buffer.alloc(64), v as never)] as const),
    // pageAligned: only values that must be refused (a valid 2 ** 32 would allocate 4 GiB).
    n.filter((v) => !(Number.isInteger(v) && (v as number) > 0)).map((v) => ['MemoryRegion.pageAligned(size)', () => MemoryRegion.pageAligned(v as never)] as const),
    fc.tuple(n, fc.constantFrom('responderResources', 'initiatorDepth', 'flowControl', 'retryCount', 'rnrRetryCount', 'qpNum')).filter(([v, key]) => !(key === 'qpNum' && u32(v))).map(([v, key]) =>
      ['connParamSchema(field)', () => {
        const r = connParamSchema.safeParse({ [key]: v });
        if (r.success) return r;
        throw RdmaArgumentError.fromZod('connParamSchema', 'param', r.error);
      }] as const),
    // These three reach librdmacm when valid: each must be refused by name, not by ENODEV from there.
    n.filter((v) => !validPort(v)).map((v) => ['createEndpoint(target.port)', refusedAs('target.port', () => createEndpoint({ host: '127.0.0.1', port: v as never }))] as const),
    fc.tuple(n, fc.constantFrom('sendWr', 'recvWr', 'sendSge', 'recvSge', 'inlineData')).filter(([v, key]) => !validQpField(key, v)).map(([v, key]) =>
      ['createEndpoint(options.qp)', refusedAs(`options.qp.${key}`, () => createEndpoint({ host: '127.0.0.1', port: 7471 }, { qp: { [key]: v } }))] as const),
    n.filter((v) => !validService(v)).map((v) => ['getAddrInfo(service)', refusedAs('service', () => getAddrInfo('127.0.0.1', v as never))] as const),
  );
  fc.assert(fc.property(cases, ([name, fn]) => ledger.call<unknown>(name, fn, refused)), { ...PARAMS, numRuns: RUNS.numbers });
});

test('enum names outside their set: an argument error', { skip: skipNative }, () => {
  const cases = fc.oneof(
    badEnum(PortSpace.names).map((v) => ['createId(options.portSpace)', 'options.portSpace', () => createId(null, { portSpace: v as never })] as const),
    badEnum(PortSpace.names).map((v) => ['createEndpoint(target.portSpace)', 'target.portSpace', () => createEndpoint({ host: '127.0.0.1', port: 1, portSpace: v as never })] as const),
    badEnum(QpType.names).map((v) => ['createEndpoint(options.qp.qpType)', 'options.qp.qpType', () => createEndpoint({ host: '127.0.0.1', port: 1 }, { qp: { qpType: v as never } })] as const),
    badEnum(QpType.names).map((v) => ['getAddrInfo(hints.qpType)', 'hints.qpType', () => getAddrInfo('127.0.0.1', '1', { qpType: v as never })] as const),
    badEnum(PortSpace.names).map((v) => ['getAddrInfo(hints.portSpace)', 'hints.portSpace', () => getAddrInfo('127.0.0.1', '1', { portSpace: v as never })] as const),
    badEnum(['IPv4', 'IPv6', 'IB']).map((v) => ['getAddrInfo(hints.family)', 'hints.family', () => getAddrInfo('127.0.0.1', '1', { family: v as never })] as const),
    badEnum(AddrInfoFlag.names).map((v) => ['getAddrInfo(hints.flags)', 'hints.flags', () => getAddrInfo('127.0.0.1', '1', { flags: [v as never] })] as const),
    hostile(forged(EventChannel)).filter((v) => typeof v !== 'boolean').map((v) => ['setBoundCalls(enabled)', 'enabled', () => setBoundCalls(v as never)] as const),
  );
  fc.assert(fc.property(cases, ([name, parameter, fn]) => ledger.call<unknown>(name, refusedAs(parameter, fn as () => unknown), refused)), { ...PARAMS, numRuns: RUNS.enums });
});

// Every method, getter and setter of every resource class, called on a forged
// `this` (its prototype without private fields, or a shaped object given it).
const CLASSES = {
  AddrInfo, AddressHandle, CmId, CompletionChannel, CompletionQueue, DeviceContext, EventChannel, MemoryRegion, ProtectionDomain,
  QueuePair, SharedReceiveQueue, PreparedSend, PreparedRecv, PreparedSendChain, PreparedRecvChain,
} as const;
/**
 * The TypeScript-protected members too (release, reparent, use, ensureOpen,
 * handle, check, writeSge, kind, eachRequest, postAll): callable at run time,
 * they check their receiver as the public ones do. release() called on a
 * shaped object given the prototype once read its own `handle` and freed
 * pointer 1 (SIGSEGV); tests/host/invalid-this.test.ts replays that in a child.
 */
const MEMBERS = Object.entries(CLASSES).flatMap(([type, c]) => membersOf(type, c.prototype as object, new Set()));

test('methods, getters and setters called on a forged `this`: InvalidThisError (sync, or the rejection of an async one), never a result, never a crash', async () => {
  const member = fc.constantFrom(...MEMBERS);
  await fc.assert(fc.asyncProperty(member, fc.nat(5), primitiveReceivers, hostile(fc.constant(undefined)), async (m, kind, primitive, arg) => {
    const type = CLASSES[m.type as keyof typeof CLASSES];
    const self = [
      () => Object.create(type.prototype) as object,
      () => Object.setPrototypeOf({ handle: 1n, closed: false }, type.prototype) as object,
      () => new Proxy(Object.create(type.prototype) as object, {}),
      () => Object.create(type.prototype) as object,
      () => Object.setPrototypeOf({}, type.prototype) as object,
      () => primitive as object,
    ][kind]!();
    // A class's own name, so KNOWN_UNTYPED can list the class once.
    return ledger.callAsync(`forged this: ${m.type}`, refusedAsInvalidThis(() => m.invoke(self, arg)), refused, () => `${m.name}(${show(arg)})`, 1000);
  }), { ...PARAMS, numRuns: RUNS.forgedThis });
});

after(() => {
  for (const line of ledger.report('fuzz-hostile', (performance.now() - started) / 1000, PARAMS.seed)) console.log(line);
});

test('the hostile fuzzing made its calls, none slow enough to be a hang, none untyped or accepted outside the KNOWN tables', () => {
  const planned = Object.values(RUNS).reduce((a, b) => a + b, 0);
  const skipped = skipNative ? RUNS.forgedParameters + RUNS.asyncSignal + RUNS.memo + RUNS.numbers + RUNS.enums : 0;
  // The lying-buffer property makes four calls a run.
  assert.equal(ledger.totalCalls, planned - skipped + 3 * RUNS.lyingBuffers);
  assert.deepEqual(ledger.problems(2000), []);
});
