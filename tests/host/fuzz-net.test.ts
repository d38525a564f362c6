// Hostile fuzzing of rdmacm/net (issue 32): createServer and new RdmaServer,
// listen in each overload, close, getConnections, maxConnections, connect and
// createConnection in each overload, new RdmaSocket and every RdmaSocket
// method, with tests/support/fuzz.ts's hostile values (forged signals, lying
// buffers, hostile numbers, names outside their set, junk) in every argument
// position, on sockets fresh, connecting, failed, ended and destroyed, and
// every member of both classes on a forged `this`. Contract: a call returns, or throws a typed error (an Error with a string
// code): an RdmaArgumentError naming the parameter for a value outside its
// documented range, or Node's own coded error where a stream's checks answer
// as they do for node:net (ERR_INVALID_ARG_TYPE, ERR_STREAM_DESTROYED). What
// fails later arrives as an 'error' event or a callback's error, typed, and it
// arrives (every wait is bounded: a hang fails); a callback is called once;
// valid input is never refused and junk never accepted. Without a device a
// connect or listen that passes validation fails with ENODEV (ENOTFOUND for a
// name of another family, ABORT_ERR for an aborted signal).
//
// The ranges below are the documented ones (src/net/options.ts's TSDoc and
// docs/net.md), written out as the oracle the refusals are checked against.
// 17 500 calls in all (counted and asserted); 12–15 s on a 2-core host. The
// ledger is tests/support/fuzz.ts's. RDMACM_FUZZ_SEED replays a run.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { Duplex } from 'node:stream';
import dns from 'node:dns';
import { BlockList, isIP } from 'node:net';
import { setImmediate as nextTurn } from 'node:timers/promises';
import fc from 'fast-check';
import { RdmaServer, RdmaSocket, connect, createConnection, createServer } from '../../src/net/index.js';
import { COMPLETION_MODES } from '../../src/api/work/completion-queue.js';
import { hostRdmaDevices } from '../support/device.js';
import {
  badEnum, FuzzLedger, forged, honestCopy, hostile, hostileNumber, isTruthfulView, junk, lyingBuffer, maybe, membersOf, mustAccept, primitiveReceivers, refused, refusedAs, refusedAsInvalidThis,
  rejectedAs, show, type Verdict,
} from '../support/fuzz.js';

const devices = hostRdmaDevices();
const skipNative = devices.length > 0 && `this host has RDMA devices (${devices.join(', ')}): valid connects and listens would open real connections`;

/** Functions that throw untyped exceptions for some hostile input (src/ bugs, reported): what was seen. */
const KNOWN_UNTYPED: Record<string, string> = {};
/** Functions that return a result for hostile input they should refuse (src/ bugs, reported). */
const KNOWN_ACCEPTED: Record<string, string> = {};

const ledger = new FuzzLedger({ untyped: KNOWN_UNTYPED, accepted: KNOWN_ACCEPTED }, { nodeErrors: true });

const RUNS = {
  createServer: 3_000,
  listen: 1_000,
  serverMethods: 1_000,
  connect: 1_500,
  newSocket: 1_500,
  socketMethods: 4_000,
  forgedThis: 1_500,
} as const;
const PARAMS = { seed: Number(process.env.RDMACM_FUZZ_SEED ?? Date.now() % 2 ** 31), verbose: 1 } as const;
/** How long a failure may take to arrive before it counts as a hang (they take a few ms here). */
const WAIT_MS = 2000;
const started = performance.now();

// ------------------------------------------------------------------ the oracle: each option's documented range
type Rule = (value: unknown) => boolean;
type Rules = Readonly<Record<string, Rule>>;

const MAX_MS = 2 ** 31 - 1;
const LOOKUP_HINTS = dns.ADDRCONFIG | dns.V4MAPPED | dns.ALL;
const isInt = (value: unknown, min: number, max: number): value is number => typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max;
const isBool: Rule = (value) => typeof value === 'boolean';
const isMs: Rule = (value) => isInt(value, 0, MAX_MS);
const isPort: Rule = (value) => isInt(value, 0, 65535);
/** A port as node:net takes one outside localPort: 0–65535, as a number or a string of digits. */
const isPositionalPort: Rule = (value) => isPort(value) || (typeof value === 'string' && /^\d+$/.test(value) && Number(value) <= 65535);
const isHost: Rule = (value) => typeof value === 'string' && value.length >= 1 && value.length <= 255 && !value.includes('\0');
const abortedGetter = Object.getOwnPropertyDescriptor(AbortSignal.prototype, 'aborted')!.get!;
const isSignal: Rule = (value) => {
  try {
    abortedGetter.call(value);
    return true;
  } catch {
    return false;
  }
};
const isBufferSize: Rule = (value) => isInt(value, 4096, 2 ** 30) && ((value & (value - 1)) === 0 || value % 4096 === 0);
/** A plain options object (zod reads any non-array object) whose keys keep `rules`. */
const keeps = (rules: Rules): Rule => (value) => brokenAt(value, rules, '') === undefined;

const SIZE_RULES: Rules = {
  recvBufferSize: isBufferSize, sendBufferSize: isBufferSize, sendQueueDepth: (v) => isInt(v, 16, 65534), recvQueueDepth: (v) => isInt(v, 16, 65534),
  inlineSize: (v) => isInt(v, 0, 1024), iomapEntries: (v) => isInt(v, 0, 0x7f00), completionMode: (v) => (COMPLETION_MODES as readonly unknown[]).includes(v),
  spinBudgetUs: (v) => isInt(v, 0, 1_000_000), maxSpinBudgetUs: (v) => isInt(v, 0, 1_000_000), maxMessageSize: (v) => isInt(v, 1, 1 << 23),
};
const ONREAD_RULES: Rules = {
  buffer: (v) => typeof v === 'function' || (v instanceof Uint8Array && isTruthfulView(v) && v.byteLength > 0), callback: (v) => typeof v === 'function',
};
const TypedArray = Object.getPrototypeOf(Uint8Array) as abstract new () => ArrayBufferView;
/** onread is { buffer, callback }: never a view, nor a Proxy of one (whose getters throw on the Proxy). */
const isOnread: Rule = (value) => !(ArrayBuffer.isView(value) || value instanceof TypedArray || value instanceof DataView)
  && brokenAt(value, ONREAD_RULES, '', ['buffer', 'callback']) === undefined;
const STREAM_RULES: Rules = { allowHalfOpen: isBool, highWaterMark: (v) => isInt(v, 1, Number.MAX_SAFE_INTEGER), onread: isOnread, rdma: keeps(SIZE_RULES) };
const ACCEPTED_RULES: Rules = { ...STREAM_RULES, noDelay: isBool, keepAlive: isBool, keepAliveInitialDelay: isMs };
const SERVER_RULES: Rules = { ...ACCEPTED_RULES, pauseOnConnect: isBool, blockList: (v) => v instanceof BlockList };
const CONNECT_RULES: Rules = {
  ...ACCEPTED_RULES, port: isPositionalPort, host: isHost, localAddress: (v) => typeof v === 'string' && isIP(v) !== 0, localPort: isPort,
  family: (v) => v === 0 || v === 4 || v === 6 || v === 'IPv4' || v === 'IPv6', timeout: isMs, connectTimeout: (v) => isInt(v, 1, MAX_MS), signal: isSignal,
  hints: (v) => isInt(v, 0, LOOKUP_HINTS) && (v & ~LOOKUP_HINTS) === 0, lookup: (v) => typeof v === 'function',
  autoSelectFamily: isBool, autoSelectFamilyAttemptTimeout: (v) => isInt(v, 1, MAX_MS), blockList: (v) => v instanceof BlockList,
  typeOfService: (v) => isInt(v, 0, 255),
};
const LISTEN_RULES: Rules = { port: isPositionalPort, host: isHost, backlog: isMs, signal: isSignal, ipv6Only: isBool, exclusive: isBool, reusePort: (v) => v === false };
const SOCKET_RULES: Rules = { ...STREAM_RULES, signal: isSignal, noDelay: isBool, keepAlive: isBool, keepAliveInitialDelay: isMs, typeOfService: (v) => isInt(v, 0, 255) };
/** node:net's options that mean nothing over RDMA, refused by name (docs/net.md). */
const REFUSED = ['fd', 'path', 'readable', 'writable', 'readableAll', 'writableAll'];

/**
 * Where an options object breaks its rules: the path its refusal must name
 * (a refused node:net option first, as it is refused before the rest; the
 * object itself for an unknown key), or undefined when it keeps them.
 */
function brokenAt(value: unknown, rules: Rules, root: string, required: readonly string[] = []): string | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return root;
  const record = value as Record<string, unknown>;
  // zod reads inherited enumerable keys too (an AbortSignal's aborted, reason, onabort); the refused names are looked up among own keys.
  const keys: string[] = [];
  for (const key in record) keys.push(key);
  const at = (key: string) => (root ? `${root}.${key}` : key);
  const refusedKey = root ? Object.keys(record).find((key) => REFUSED.includes(key) && record[key] !== undefined) : undefined;
  if (refusedKey !== undefined) return at(refusedKey);
  const missing = required.find((key) => record[key] === undefined);
  if (missing !== undefined) return at(missing);
  const broken = keys.find((key) => Object.hasOwn(rules, key) && record[key] !== undefined && !rules[key]!(record[key]));
  if (broken !== undefined) return at(broken);
  return keys.some((key) => !Object.hasOwn(rules, key)) ? root : undefined;
}

// ------------------------------------------------------------------ arbitraries
const HOSTS = ['127.0.0.1', '10.0.0.2', '::1', 'fe80::1', '0.0.0.0', 'localhost'];
const anyHostile = hostile(forged(AbortSignal));
/** A value the rule refuses (never undefined: that is an absent argument). */
const breaking = (rule: Rule, extra?: fc.Arbitrary<unknown>) =>
  (extra ? fc.oneof(anyHostile, extra) : anyHostile).filter((value) => value !== undefined && !rule(value));
const signals = fc.constantFrom('live', 'aborted').map((kind) => (kind === 'aborted' ? AbortSignal.abort('fuzz') : new AbortController().signal));
const ms = fc.integer({ min: 0, max: MAX_MS });

const VALID_SIZES: Record<string, fc.Arbitrary<unknown>> = {
  recvBufferSize: fc.oneof(fc.integer({ min: 12, max: 30 }).map((n) => 2 ** n), fc.integer({ min: 1, max: 2 ** 18 }).map((n) => n * 4096)),
  sendBufferSize: fc.integer({ min: 12, max: 20 }).map((n) => 2 ** n),
  sendQueueDepth: fc.integer({ min: 16, max: 65534 }), recvQueueDepth: fc.integer({ min: 16, max: 65534 }),
  inlineSize: fc.integer({ min: 0, max: 1024 }), iomapEntries: fc.integer({ min: 0, max: 0x7f00 }),
  completionMode: fc.constantFrom(...COMPLETION_MODES), spinBudgetUs: fc.integer({ min: 0, max: 1_000_000 }),
  maxSpinBudgetUs: fc.integer({ min: 0, max: 1_000_000 }),
  maxMessageSize: fc.integer({ min: 1, max: 1 << 23 }),
};
/** Values of each key that break it, beyond the general hostile ones: names outside the set. */
const EXTRA_HOSTILE: Record<string, fc.Arbitrary<unknown>> = { completionMode: badEnum(COMPLETION_MODES), family: fc.constantFrom(1, 5, '4', 'ipv4'), hints: fc.constantFrom(999, -1, 1.5) };

/**
 * An options object: each key absent, valid, or (a fifth of the time) hostile,
 * at times with a refused node:net option or an unknown key besides.
 */
function optionsObject(valid: Record<string, fc.Arbitrary<unknown>>): fc.Arbitrary<Record<string, unknown>> {
  const fields = Object.fromEntries(Object.entries(valid).map(([key, arbitrary]) =>
    [key, fc.oneof({ arbitrary, weight: 4 }, { arbitrary: EXTRA_HOSTILE[key] ? fc.oneof(anyHostile, EXTRA_HOSTILE[key]) : anyHostile, weight: 1 })]));
  const extra = fc.option(fc.tuple(fc.constantFrom(...REFUSED, 'bogus', 'toString', 'constructor', 'Port'), junk), { freq: 6 });
  return fc.tuple(fc.record(fields, { requiredKeys: [] }), extra).map(([record, more]) => {
    // defineProperty: a key named __proto__ or constructor becomes an own key, as a caller's literal would make it.
    if (more) Object.defineProperty(record, more[0], { value: more[1], enumerable: true, writable: true, configurable: true });
    return record;
  });
}
const rdmaObject = optionsObject(VALID_SIZES);
const VALID_ONREAD = {
  buffer: fc.oneof(fc.integer({ min: 1, max: 256 }).map((n) => Buffer.alloc(n)), fc.integer({ min: 1, max: 256 }).map((n) => new Uint8Array(n)), fc.constant(() => Buffer.alloc(64))),
  callback: fc.constant(() => undefined),
};
// Mostly whole and valid, else with keys absent, hostile or unknown: the filters that keep valid options reject little more than before.
const onreadObject = fc.oneof({ arbitrary: fc.record(VALID_ONREAD), weight: 5 }, { arbitrary: optionsObject(VALID_ONREAD), weight: 1 });
const VALID_STREAM = { allowHalfOpen: fc.boolean(), highWaterMark: fc.integer({ min: 1, max: 2 ** 31 }), onread: onreadObject, rdma: rdmaObject };
const VALID_ACCEPTED = { ...VALID_STREAM, noDelay: fc.boolean(), keepAlive: fc.boolean(), keepAliveInitialDelay: ms };
const blockLists = fc.constantFrom('127.0.0.1', '10.0.0.2', '::1').map((address) => {
  const list = new BlockList();
  list.addAddress(address, address.includes(':') ? 'ipv6' : 'ipv4');
  return list;
});
/** Custom lookups: an answer in node:net's shape (one address, or all of them), an address that is none, a resolver's error, an answer twice. */
const lookups = fc.constantFrom<((host: string, options: { all?: boolean }, cb: (...a: unknown[]) => void) => void)[]>(
  (_host, options, cb) => (options.all ? cb(null, [{ address: '10.0.0.2', family: 4 }, { address: 'fe80::1', family: 6 }]) : cb(null, '10.0.0.2', 4)),
  (_host, _options, cb) => cb(null, '127.0.0.1', 4),
  (_host, _options, cb) => cb(null, 'no address', 4),
  (_host, _options, cb) => cb(Object.assign(new Error('getaddrinfo ENOTFOUND fuzz'), { code: 'ENOTFOUND', syscall: 'getaddrinfo' })),
  (_host, _options, cb) => {
    cb(null, '::1', 6);
    cb(null, '::1', 6);
  },
);
const SERVER_FIELDS = { ...VALID_ACCEPTED, pauseOnConnect: fc.boolean(), blockList: blockLists };
const serverOptions = optionsObject(SERVER_FIELDS);
const CONNECT_FIELDS = {
  ...VALID_ACCEPTED, port: fc.integer({ min: 0, max: 65535 }), host: fc.constantFrom(...HOSTS), localAddress: fc.constantFrom('127.0.0.1', '::1'),
  localPort: fc.integer({ min: 0, max: 65535 }), family: fc.constantFrom(0, 4, 6, 'IPv4', 'IPv6'), timeout: ms,
  hints: fc.constantFrom(0, dns.ADDRCONFIG, dns.V4MAPPED | dns.ALL), lookup: lookups, autoSelectFamily: fc.boolean(),
  autoSelectFamilyAttemptTimeout: fc.integer({ min: 1, max: MAX_MS }), blockList: blockLists, connectTimeout: fc.integer({ min: 1, max: MAX_MS }), signal: signals,
  typeOfService: fc.integer({ min: 0, max: 255 }),
};
const connectOptions = optionsObject(CONNECT_FIELDS);
/**
 * Options with every value in range and every key known, for a call that must
 * be refused for another argument. A filter on the objects above would take a
 * thousand draws or so for each: each of their 30-odd values is hostile one
 * time in five.
 */
function acceptedObject(valid: Record<string, fc.Arbitrary<unknown>>, rules: Rules, required: readonly string[] = []): fc.Arbitrary<Record<string, unknown>> {
  const nested = { onread: fc.record(VALID_ONREAD), rdma: fc.record(VALID_SIZES, { requiredKeys: [] }) };
  return fc.record({ ...valid, ...nested }, { requiredKeys: [] }).filter((o) => brokenAt(o, rules, 'options', required) === undefined);
}
const listenOptions = optionsObject({ port: fc.integer({ min: 0, max: 65535 }), host: fc.constantFrom(...HOSTS), backlog: ms, signal: signals, ipv6Only: fc.boolean(), exclusive: fc.boolean(), reusePort: fc.constant(false) });
const socketOptions = optionsObject({ ...VALID_STREAM, signal: signals, noDelay: fc.boolean(), keepAlive: fc.boolean(), keepAliveInitialDelay: ms, typeOfService: fc.integer({ min: 0, max: 255 }) });

/** A function the test watches: each call's arguments. */
interface Watched {
  (...args: unknown[]): void;
  readonly calls: unknown[][];
}
function watched(): Watched {
  const calls: unknown[][] = [];
  return Object.assign((...args: unknown[]) => void calls.push(args), { calls });
}
const callback = fc.constant(null).map(watched);
/** Anything but a function or undefined, for a callback's slot. */
const notCallback = anyHostile.filter((value) => value !== undefined && typeof value !== 'function');

/** One call's arguments and, when a value is outside its range, the parameter the refusal must name. */
interface Args {
  readonly args: readonly unknown[];
  readonly refusedAt: string | undefined;
}
const args = (list: readonly unknown[], refusedAt: string | undefined): Args => ({ args: list, refusedAt });

const positionalPort = fc.oneof(fc.integer({ min: 0, max: 65535 }), fc.integer({ min: 0, max: 65535 }).map(String));
/** What is not a port in the port's slot; objects and functions are left out: they choose the options and callback overloads. */
const notPositionalPort = breaking(isPositionalPort).filter((value) => typeof value !== 'object' && typeof value !== 'function');

/** connect()'s overloads, (port[, host][, cb]) and (options[, cb]): all valid, or one slot hostile. */
const connectArgs: fc.Arbitrary<Args> = fc.oneof(
  { arbitrary: fc.tuple(positionalPort, maybe(fc.constantFrom(...HOSTS)), maybe(callback)).map(([port, host, cb]) => args([port, host, cb], undefined)), weight: 2 },
  fc.tuple(fc.integer({ min: 0, max: 65535 }), fc.constantFrom(...HOSTS), signals).map(([port, host, signal]) => args([{ port, host, signal }], undefined)),
  // undefined in the port's slot is the positional overload without a port.
  fc.tuple(fc.oneof(notPositionalPort, fc.constant(undefined)), fc.constantFrom(...HOSTS)).map(([port, host]) =>
    args([port, host], typeof port === 'number' || typeof port === 'string' || port === undefined ? 'options.port' : 'options')),
  fc.tuple(positionalPort, breaking(isHost).filter((value) => typeof value !== 'function')).map(([port, host]) => args([port, host], 'options.host')),
  fc.tuple(positionalPort, fc.constantFrom(...HOSTS), notCallback).map(([port, host, cb]) => args([port, host, cb], 'connectListener')),
  fc.tuple(connectOptions, maybe(callback)).map(([options, cb]) => args([options, cb], brokenAt(options, CONNECT_RULES, 'options', ['port']))),
  fc.tuple(acceptedObject(CONNECT_FIELDS, CONNECT_RULES, ['port']), notCallback)
    .map(([options, cb]) => args([options, cb], 'connectListener')),
);

/** listen()'s overloads: (port[, host][, backlog][, cb]), (port, backlog[, cb]), (options[, cb]), ([cb]). */
const listenArgs: fc.Arbitrary<Args> = fc.oneof(
  fc.tuple(maybe(positionalPort), maybe(fc.constantFrom(...HOSTS)), maybe(ms), maybe(callback)).map(([port, host, backlog, cb]) => args([port, host, backlog, cb], undefined)),
  fc.tuple(positionalPort, ms, maybe(callback)).map(([port, backlog, cb]) => args([port, backlog, cb], undefined)),
  maybe(callback).map((cb) => args([cb], undefined)),
  fc.tuple(notPositionalPort, fc.constantFrom(...HOSTS)).map(([port, host]) => args([port, host], typeof port === 'number' || typeof port === 'string' ? 'options.port' : 'options')),
  // A number in the host's slot is the backlog (node:net's overload); functions are the callback.
  fc.tuple(positionalPort, breaking(isHost).filter((value) => typeof value !== 'function' && !isMs(value))).map(([port, host]) =>
    args([port, host], typeof host === 'number' ? 'options.backlog' : 'options.host')),
  fc.tuple(positionalPort, fc.constantFrom(...HOSTS), breaking(isMs).filter((value) => typeof value !== 'function')).map(([port, host, backlog]) =>
    args([port, host, backlog], 'options.backlog')),
  fc.tuple(positionalPort, fc.constantFrom(...HOSTS), ms, notCallback).map(([port, host, backlog, cb]) => args([port, host, backlog, cb], 'listeningListener')),
  fc.tuple(positionalPort, ms, notCallback).map(([port, backlog, cb]) => args([port, backlog, cb], 'listeningListener')),
  fc.tuple(listenOptions, maybe(callback)).map(([options, cb]) => args([options, cb], brokenAt(options, LISTEN_RULES, 'options', ['port']))),
  fc.tuple(listenOptions.filter((o) => brokenAt(o, LISTEN_RULES, 'options', ['port']) === undefined), notCallback).map(([options, cb]) => args([options, cb], 'listeningListener')),
);

// ------------------------------------------------------------------ what follows a call: events and callbacks, bounded
/** What an emitter emitted: every 'error', and whether it closed. */
interface Watch {
  readonly errors: unknown[];
  closed: boolean;
}
function watch(emitter: EventEmitter): Watch {
  const seen: Watch = { errors: [], closed: false };
  emitter.on('error', (error: unknown) => void seen.errors.push(error));
  emitter.on('close', () => void (seen.closed = true));
  return seen;
}

/** Waits, at most WAIT_MS, for `done`; false when it never came (a hang). */
async function until(done: () => boolean): Promise<boolean> {
  const deadline = performance.now() + WAIT_MS;
  for (;;) {
    if (done()) return true;
    if (performance.now() > deadline) return false;
    // A turn of the loop: callbacks on the next tick and the failed lookups' and connects' promises settle.
    await nextTurn();
  }
}

const hasCode = (error: unknown): boolean => error instanceof Error && typeof (error as { code?: unknown }).code === 'string';

/**
 * The verdict on what followed a call, as one ledger outcome: throws a hang
 * (untyped), or the first error without a string code, or a callback called
 * more than once, or else the first typed error seen; returns when there was none.
 * `own` is the caller's own value handed to destroy(), which is emitted as it is.
 */
function judge(errors: readonly unknown[], callbacks: readonly Watched[], own?: unknown): void {
  const twice = callbacks.find((cb) => cb.calls.length > 1);
  if (twice) throw new Error(`a callback was called ${twice.calls.length} times: ${show(twice.calls)}`);
  const answers = callbacks.flatMap((cb) => cb.calls.map((call) => call[0])).filter((error) => error !== undefined && error !== null);
  const all = [...errors.filter((error) => !Object.is(error, own)), ...answers];
  if (errors.length > 1) throw new Error(`${errors.length} 'error' events: ${all.map(show).join(', ')}`);
  const untyped = all.find((error) => !hasCode(error));
  if (untyped !== undefined) throw untyped;
  if (all.length > 0) throw all[0];
}

/** Destroys the socket if the call left it alive, then waits for 'close' and for every callback; their verdict (judge). */
async function settleSocket(socket: RdmaSocket, seen: Watch, callbacks: readonly Watched[], own?: unknown): Promise<void> {
  socket.destroy();
  if (!(await until(() => seen.closed && callbacks.every((cb) => cb.calls.length > 0)))) {
    const uncalled = callbacks.filter((cb) => cb.calls.length === 0).length;
    throw new Error(`a hang: ${seen.closed ? '' : `no 'close' in ${WAIT_MS} ms; `}${uncalled} of ${callbacks.length} callbacks never called`);
  }
  // Anything due on the next tick after 'close' (a second callback, a late 'error').
  await nextTurn();
  judge(seen.errors, callbacks, own);
}

/** The watched callbacks among a call's arguments. */
const watchedIn = (list: readonly unknown[]): Watched[] => list.filter((value): value is Watched => typeof value === 'function' && 'calls' in value);

/** For input outside its range: the refusal, and whatever was wrongly made is put away. */
const refusal = (parameter: string, call: () => unknown) => [refusedAs(parameter, call), (made: unknown): Verdict => {
  if (made instanceof RdmaSocket) {
    made.on('error', () => undefined);
    made.destroy();
  }
  return refused();
}] as const;

// ------------------------------------------------------------------ the properties
test('createServer and new RdmaServer: hostile options and listeners are refused by name, valid ones make a server that is not listening', () => {
  const cases = fc.tuple(fc.constantFrom('createServer', 'new RdmaServer'), fc.oneof(
    fc.tuple(maybe(serverOptions), maybe(callback)).map(([options, listener]) =>
      ({ position: 'options', list: [options, listener], refusedAt: options === undefined ? undefined : brokenAt(options, SERVER_RULES, 'options') })),
    // null too: zod's object (node:net's createServer takes null for no options).
    breaking((v) => (typeof v === 'object' && v !== null) || typeof v === 'function').map((options) => ({ position: 'options', list: [options], refusedAt: 'options' })),
    fc.tuple(maybe(acceptedObject(SERVER_FIELDS, SERVER_RULES)), notCallback).map(([options, listener]) =>
      ({ position: 'connectionListener', list: [options, listener], refusedAt: 'connectionListener' })),
    fc.tuple(callback, anyHostile.filter((v) => v !== undefined)).map(([listener, second]) =>
      ({ position: 'connectionListener', list: [listener, second], refusedAt: 'connectionListener' })),
  ));
  fc.assert(fc.property(cases, ([entry, { position, list, refusedAt }]) => {
    const make = () => (entry === 'createServer'
      ? (createServer as (...a: unknown[]) => RdmaServer)(...list)
      : new (RdmaServer as new (...a: unknown[]) => RdmaServer)(...list));
    const name = `${entry}(${position})`;
    const input = () => show(list);
    if (refusedAt !== undefined) return ledger.call(name, ...refusal(refusedAt, make), input);
    return ledger.call(name, mustAccept(make), (server) =>
      server instanceof RdmaServer && !server.listening && server.address() === null && server.maxConnections === undefined
      && server.listenerCount('connection') === (typeof list[0] === 'function' || typeof list[1] === 'function' ? 1 : 0), input);
  }), { ...PARAMS, numRuns: RUNS.createServer });
});

test('server.listen in every overload: hostile slots are refused by name; a valid listen fails with an error event (no device), never a throw', { skip: skipNative }, async () => {
  await fc.assert(fc.asyncProperty(listenArgs, async ({ args: list, refusedAt }) => {
    const server = createServer();
    const seen = watch(server);
    const input = () => show(list);
    const listen = () => (server.listen as (...a: unknown[]) => RdmaServer)(...list);
    if (refusedAt !== undefined) return ledger.call('RdmaServer.listen (refused)', ...refusal(refusedAt, listen), input);
    return ledger.callAsync('RdmaServer.listen', async () => {
      if (mustAccept(listen)() !== server) throw new Error('listen() did not return the server');
      if (!(await until(() => seen.errors.length > 0))) throw new Error(`a hang: no 'error' in ${WAIT_MS} ms`);
      await nextTurn();
      if (server.listening || server.address() !== null) throw new Error('listening without a device');
      const closed = watched();
      server.close(closed);
      if (!(await until(() => closed.calls.length > 0))) throw new Error('close(cb) never called back');
      if ((closed.calls[0]![0] as { code?: unknown } | undefined)?.code !== 'ERR_SERVER_NOT_RUNNING') throw new Error(`close(cb) got ${show(closed.calls[0])}`);
      // The listening callback is never called: it may only count as a callback that was not called twice.
      judge(seen.errors, watchedIn(list));
      return server;
    }, undefined, input, WAIT_MS * 3);
  }), { ...PARAMS, numRuns: RUNS.listen });
});

/** The server's methods and setters, with hostile arguments, and what a valid call must do. */
const SERVER_METHODS: fc.Arbitrary<{ name: string; refusedAt: string | undefined; list: unknown[]; call: (server: RdmaServer) => unknown; check?: (server: RdmaServer, result: unknown) => boolean }> = fc.oneof(
  fc.oneof(maybe(callback).map((cb) => ({ cb, refusedAt: undefined })), notCallback.map((cb) => ({ cb, refusedAt: 'callback' }))).map(({ cb, refusedAt }) =>
    ({ name: 'close', refusedAt, list: [cb], call: (s: RdmaServer) => s.close(cb as never) })),
  fc.oneof(callback.map((cb) => ({ cb, refusedAt: undefined })), anyHostile.filter((v) => typeof v !== 'function').map((cb) => ({ cb, refusedAt: 'callback' }))).map(({ cb, refusedAt }) =>
    ({ name: 'getConnections', refusedAt, list: [cb], call: (s: RdmaServer) => s.getConnections(cb as never) })),
  fc.oneof(maybe(fc.integer({ min: 0, max: MAX_MS })), breaking((v) => isMs(v))).map((limit) =>
    ({
      name: 'set maxConnections', refusedAt: limit === undefined || isMs(limit) ? undefined : 'maxConnections', list: [limit],
      call: (s: RdmaServer) => { s.maxConnections = limit as never; }, check: (s: RdmaServer) => s.maxConnections === limit,
    })),
  fc.constantFrom('address', 'ref', 'unref').chain((name) => fc.array(junk, { maxLength: 2 }).map((list) =>
    ({
      name, refusedAt: undefined, list, call: (s: RdmaServer) => (s[name as 'ref'] as (...a: unknown[]) => unknown)(...list),
      check: (s: RdmaServer, result: unknown) => (name === 'address' ? result === null : result === s),
    }))),
  listenArgs.map(({ args: list, refusedAt }) => ({ name: 'listen', refusedAt, list: [...list], call: (s: RdmaServer) => (s.listen as (...a: unknown[]) => unknown)(...list) })),
  fc.constant(null).map(() => ({ name: 'asyncDispose', refusedAt: undefined, list: [], call: (s: RdmaServer) => s[Symbol.asyncDispose]() })),
);

test('a server\'s methods, fresh and after a failed listen: hostile arguments refused by name, callbacks called once and typed, nothing hangs', { skip: skipNative }, async () => {
  await fc.assert(fc.asyncProperty(fc.boolean(), SERVER_METHODS, async (failedFirst, m) => {
    const server = createServer();
    const seen = watch(server);
    if (failedFirst) {
      server.listen(0, '127.0.0.1');
      await until(() => seen.errors.length > 0);
    }
    const name = `RdmaServer.${m.name}`;
    const input = () => `${failedFirst ? 'after a failed listen: ' : ''}${show(m.list)}`;
    if (m.refusedAt !== undefined) return ledger.call(`${name} (refused)`, ...refusal(m.refusedAt, () => m.call(server)), input);
    // The listening callback is never called here: it counts only if called twice.
    const callbacks = m.name === 'listen' ? [] : watchedIn(m.list);
    return ledger.callAsync(name, async () => {
      const errorsBefore = seen.errors.length;
      const result = await mustAccept(() => m.call(server))();
      if (m.check && !m.check(server, result)) throw new Error(`${m.name} answered ${show(result)}`);
      const expected = errorsBefore + (m.name === 'listen' ? 1 : 0);
      if (!(await until(() => seen.errors.length >= expected && callbacks.every((cb) => cb.calls.length > 0)))) {
        throw new Error('a hang: a callback or the listen error never came');
      }
      await nextTurn();
      judge(seen.errors.slice(errorsBefore), [...callbacks, ...watchedIn(m.list).filter((cb) => cb.calls.length > 1)]);
      return result;
    }, undefined, input, WAIT_MS * 2);
  }), { ...PARAMS, numRuns: RUNS.serverMethods });
});

test('connect and createConnection in every overload: hostile slots refused by name; a valid connect returns a connecting socket that fails typed', { skip: skipNative }, async () => {
  await fc.assert(fc.asyncProperty(fc.constantFrom('connect', 'createConnection', 'new RdmaSocket().connect'), connectArgs, async (entry, { args: list, refusedAt }) => {
    const input = () => show(list);
    const make = (): RdmaSocket => {
      if (entry === 'connect') return (connect as (...a: unknown[]) => RdmaSocket)(...list);
      if (entry === 'createConnection') return (createConnection as (...a: unknown[]) => RdmaSocket)(...list);
      return (new RdmaSocket().connect as (...a: unknown[]) => RdmaSocket)(...list);
    };
    if (refusedAt !== undefined) return ledger.call(`${entry} (refused)`, ...refusal(refusedAt, make), input);
    return ledger.callAsync(entry, async () => {
      const socket = mustAccept(make)();
      const seen = watch(socket);
      if (!(socket instanceof RdmaSocket) || !socket.connecting || socket.readyState !== 'opening') throw new Error('connect() did not return a connecting socket');
      // Not destroyed by the test: the connection must fail by itself, and the connect callback never be called.
      if (!(await until(() => seen.closed))) throw new Error(`a hang: the connection neither failed nor closed in ${WAIT_MS} ms`);
      if (watchedIn(list).some((cb) => cb.calls.length > 0)) throw new Error('the connect callback was called without a connection');
      await settleSocket(socket, seen, []);
      return socket;
    }, undefined, input, WAIT_MS * 3);
  }), { ...PARAMS, numRuns: RUNS.connect });
});

test('new RdmaSocket(options): hostile options refused by name; valid ones make a socket that is neither connecting nor connected', () => {
  const options = fc.oneof(
    maybe(socketOptions).map((o) => ({ o, refusedAt: o === undefined ? undefined : brokenAt(o, SOCKET_RULES, 'options') })),
    breaking((v) => typeof v === 'object').map((o) => ({ o, refusedAt: 'options' })),
  );
  fc.assert(fc.property(options, ({ o, refusedAt }) => {
    const make = () => new RdmaSocket(o as never);
    const input = () => show(o);
    if (refusedAt !== undefined) return ledger.call('new RdmaSocket (refused)', ...refusal(refusedAt, make), input);
    return ledger.call('new RdmaSocket', mustAccept(make), (socket) => {
      // An aborted signal destroys it on the next tick.
      socket.on('error', () => undefined);
      const fresh = !socket.connecting && socket.pending && socket.readyState === 'open' && socket.remoteAddress === undefined;
      socket.destroy();
      return fresh;
    }, input);
  }), { ...PARAMS, numRuns: RUNS.newSocket });
});

// ------------------------------------------------------------------ a socket's methods, in each state
type SocketState = 'fresh' | 'connecting' | 'failed' | 'ended' | 'destroyed';

async function socketIn(state: SocketState): Promise<{ socket: RdmaSocket; seen: Watch }> {
  const socket = state === 'connecting' || state === 'failed' ? connect(7471, '127.0.0.1') : new RdmaSocket();
  const seen = watch(socket);
  if (state === 'failed') await until(() => seen.closed);
  if (state === 'ended') socket.end();
  if (state === 'destroyed') socket.destroy();
  return { socket, seen };
}

interface Method {
  readonly name: string;
  readonly list: readonly unknown[];
  /** The parameter a refusal must name; true where Node's own checks refuse (any typed error); undefined for valid arguments. */
  readonly refusedAt: string | true | undefined;
  readonly call: (socket: RdmaSocket) => unknown;
  /** What a valid call must have done (false: a wrong answer). */
  readonly check?: (socket: RdmaSocket, result: unknown) => boolean;
  /** The caller's own value that destroy() emits as it is. */
  readonly own?: unknown;
}

const isResizableView = (view: Uint8Array): boolean => {
  const memory = view.buffer as ArrayBuffer & { resizable?: boolean; growable?: boolean };
  return memory.resizable === true || memory.growable === true;
};
/** Views of other kinds, which Node's Writable also takes, honest or with a lying getter (lyingBuffer's are all Uint8Arrays). */
const otherViews = fc.tuple(fc.constantFrom('Uint16Array', 'DataView'), fc.integer({ min: 0, max: 32 }), fc.constantFrom('none', 'byteLength', 'byteOffset', 'buffer'))
  .map(([kind, n, lie]) => {
    const view = kind === 'DataView' ? new DataView(new ArrayBuffer(n * 2)) : new Uint16Array(n);
    const lies: Record<string, unknown> = { byteLength: 1 << 20, byteOffset: 1 << 20, buffer: new ArrayBuffer(1 << 16) };
    if (lie !== 'none') Object.defineProperty(view, lie, { get: () => lies[lie] });
    return view;
  });
const chunks = fc.oneof(
  { arbitrary: fc.oneof(fc.string(), fc.uint8Array({ maxLength: 64 }).map((a) => Buffer.from(a)), fc.uint8Array({ maxLength: 64 })), weight: 3 },
  lyingBuffer, otherViews, junk, fc.constantFrom(null, undefined),
);
const encodings = fc.oneof(
  { arbitrary: maybe(fc.constantFrom('utf8', 'hex', 'base64', 'latin1', 'buffer', '', null)), weight: 4 },
  { arbitrary: badEnum(['utf8', 'hex', 'base64', 'latin1']), weight: 1 }, { arbitrary: junk, weight: 1 }, { arbitrary: callback, weight: 2 },
);
const callbackSlot = fc.oneof({ arbitrary: maybe(callback), weight: 4 }, fc.constant(null), notCallback);
const isSlotCallback = (value: unknown) => value === undefined || value === null || typeof value === 'function';

/** Where write()'s or end()'s (chunk, encoding, callback) must be refused: the order src/net/socket.ts checks them in, then Node's Writable's. */
function writeRefusal(chunk: unknown, encoding: unknown, cb: unknown, chunkOptional: boolean): string | true | undefined {
  if (typeof encoding === 'function') {
    if (cb !== undefined && cb !== null) return 'callback';
    [encoding, cb] = [undefined, encoding];
  }
  const isName = typeof encoding === 'string' && (encoding === '' || encoding === 'buffer' || Buffer.isEncoding(encoding));
  if (encoding !== undefined && encoding !== null && !isName) return 'encoding';
  if (encoding === 'buffer' && typeof chunk === 'string') return 'encoding';
  if (!isSlotCallback(cb)) return 'callback';
  // Node's Writable takes any typed array or DataView (a Proxy of one is not a view: Node refuses it itself).
  if (ArrayBuffer.isView(chunk) && !isTruthfulView(chunk)) return 'chunk';
  if (chunk instanceof Uint8Array && !ArrayBuffer.isView(chunk)) return 'chunk';
  if (chunkOptional && (chunk === undefined || chunk === null)) return undefined;
  return typeof chunk === 'string' || ArrayBuffer.isView(chunk) ? undefined : true;
}

const SOCKET_METHODS: fc.Arbitrary<Method> = fc.oneof(
  fc.tuple(chunks, encodings, callbackSlot).map(([chunk, encoding, cb]) => ({
    name: 'write', list: [chunk, encoding, cb], refusedAt: writeRefusal(chunk, encoding, cb, false),
    call: (s: RdmaSocket) => s.write(chunk, encoding as never, cb as never), check: (_s: RdmaSocket, result: unknown) => typeof result === 'boolean',
  })),
  fc.tuple(fc.oneof(chunks, callback), encodings, callbackSlot).map(([chunk, encoding, cb]) => ({
    name: 'end', list: [chunk, encoding, cb],
    refusedAt: typeof chunk === 'function' ? (encoding !== undefined || cb !== undefined ? 'callback' : undefined) : writeRefusal(chunk, encoding, cb, true),
    call: (s: RdmaSocket) => s.end(chunk, encoding as never, cb as never), check: (s: RdmaSocket, result: unknown) => result === s,
  })),
  fc.tuple(fc.oneof({ arbitrary: ms, weight: 3 }, hostileNumber, junk), fc.oneof({ arbitrary: maybe(fc.constant(() => undefined)), weight: 3 }, notCallback)).map(([timeout, cb]) => ({
    name: 'setTimeout', list: [timeout, cb], refusedAt: !isMs(timeout) ? 'msecs' : cb !== undefined && typeof cb !== 'function' ? 'callback' : undefined,
    call: (s: RdmaSocket) => s.setTimeout(timeout as never, cb as never), check: (s: RdmaSocket, result: unknown) => result === s && s.timeout === timeout,
  })),
  maybe(junk).map((value) => ({
    name: 'setNoDelay', list: [value], refusedAt: undefined,
    call: (s: RdmaSocket) => s.setNoDelay(value as never), check: (s: RdmaSocket, result: unknown) => result === s && s.noDelay === (value === undefined ? true : Boolean(value)),
  })),
  fc.tuple(maybe(junk), maybe(fc.oneof({ arbitrary: ms, weight: 2 }, hostileNumber, junk))).map(([enable, delay]) => ({
    name: 'setKeepAlive', list: [enable, delay], refusedAt: delay !== undefined && !isMs(delay) ? 'initialDelay' : undefined,
    call: (s: RdmaSocket) => s.setKeepAlive(enable as never, delay as never), check: (s: RdmaSocket, result: unknown) => result === s && s.keepAlive === Boolean(enable),
  })),
  fc.oneof(maybe(junk), fc.constant(null).map(() => Object.assign(new Error('own'), { code: 'OWN' }))).map((error) => ({
    name: 'destroy', list: [error], refusedAt: undefined, own: error,
    call: (s: RdmaSocket) => s.destroy(error as never), check: (s: RdmaSocket, result: unknown) => result === s && s.destroyed,
  })),
  fc.constantFrom('destroySoon', 'resetAndDestroy', 'ref', 'unref', 'address').chain((name) => fc.array(junk, { maxLength: 2 }).map((list) => ({
    name, list, refusedAt: undefined, call: (s: RdmaSocket) => (s[name as 'ref'] as (...a: unknown[]) => unknown)(...list),
    check: (s: RdmaSocket, result: unknown) => (name === 'address' ? show(result) === '{}' : name === 'destroySoon' ? result === undefined : result === s),
  }))),
  connectArgs.map(({ args: list, refusedAt }) => ({ name: 'connect', list, refusedAt, call: (s: RdmaSocket) => (s.connect as (...a: unknown[]) => unknown)(...list) })),
  fc.tuple(fc.oneof(fc.uint8Array({ maxLength: 64 }).map((a) => Buffer.from(a)), lyingBuffer, junk), maybe(fc.oneof(fc.record({ offset: fc.oneof(fc.nat(), hostileNumber) }), junk)))
    .map(([buffer, options]) => ({
      name: 'mapForRemoteWrite', list: [buffer, options],
      refusedAt: !(buffer instanceof Uint8Array && honestCopy(buffer) && !isResizableView(buffer)) ? 'buffer'
        : options !== undefined && brokenAt(options, { offset: (v) => isInt(v, 0, Number.MAX_SAFE_INTEGER) }, 'options') !== undefined ? 'options' : undefined,
      // Not connected: it can only throw (ERR_SOCKET_NOT_CONNECTED, ERR_SOCKET_CLOSED).
      call: (s: RdmaSocket) => s.mapForRemoteWrite(buffer as never, options as never), check: () => false,
    })),
  fc.tuple(fc.oneof(fc.uint8Array({ maxLength: 64 }), lyingBuffer, junk), fc.oneof(fc.nat(), hostileNumber, junk)).map(([data, offset]) => ({
    name: 'writeToRemote', list: [data, offset],
    refusedAt: !(data instanceof Uint8Array && honestCopy(data)) ? 'data' : !isInt(offset, 0, Number.MAX_SAFE_INTEGER) ? 'remoteOffset' : undefined,
    // A promise's method: it rejects, never throws.
    call: (s: RdmaSocket) => s.writeToRemote(data as never, offset as never), check: () => false, rejects: true,
  })),
  fc.constant(null).map(() => ({ name: 'asyncDispose', list: [], refusedAt: undefined, call: (s: RdmaSocket) => s[Symbol.asyncDispose](), check: (s: RdmaSocket) => s.destroyed })),
  fc.constant(null).map(() => ({
    name: 'getters', list: [], refusedAt: undefined,
    call: (s: RdmaSocket) => [s.connecting, s.pending, s.readyState, s.bytesRead, s.bytesWritten, s.remoteAddress, s.remotePort, s.remoteFamily,
      s.localAddress, s.localPort, s.localFamily, s.timeout, s.rdma, s.keepAlive, s.noDelay],
    check: (_s: RdmaSocket, result: unknown) => {
      const [connecting, pending, readyState, bytesRead, bytesWritten] = result as unknown[];
      return typeof connecting === 'boolean' && pending === true && ['opening', 'open', 'readOnly', 'writeOnly', 'closed'].includes(readyState as string)
        && bytesRead === 0 && bytesWritten === 0;
    },
  })),
);

test('a socket\'s methods, fresh, connecting, failed, ended and destroyed: hostile arguments refused by name, callbacks called once and typed, errors typed, nothing hangs', { skip: skipNative }, async () => {
  const states = fc.constantFrom<SocketState>('fresh', 'connecting', 'failed', 'ended', 'destroyed');
  await fc.assert(fc.asyncProperty(states, SOCKET_METHODS, async (state, m) => {
    const { socket, seen } = await socketIn(state);
    const name = `RdmaSocket.${m.name}`;
    const input = () => `${state}: ${show(m.list)}`;
    const callbacks = watchedIn(m.list);
    const before = callbacks.map((cb) => cb.calls.length);
    let ok: boolean;
    // Valid arguments may still meet a typed refusal of the state (ERR_SOCKET_CLOSED, ERR_SOCKET_CONNECTING): then nothing is called back.
    let threw = m.refusedAt !== undefined;
    if (m.refusedAt === true) ok = ledger.call(`${name} (refused by Node's Writable)`, () => m.call(socket), refused, input);
    else if (m.refusedAt !== undefined && 'rejects' in m) ok = await ledger.callAsync(`${name} (refused)`, rejectedAs(m.refusedAt, () => m.call(socket) as Promise<unknown>), refused, input, WAIT_MS);
    else if (m.refusedAt !== undefined) ok = ledger.call(`${name} (refused)`, ...refusal(m.refusedAt, () => m.call(socket)), input);
    else {
      ok = await ledger.callAsync(name, async () => {
        threw = true;
        const result = m.call(socket);
        threw = false;
        const settled = await result;
        if (m.check && !m.check(socket, settled)) throw new Error(`${m.name} answered ${show(settled)}`);
        return settled;
      }, undefined, input, WAIT_MS);
    }
    const calledAfterThrow = threw && callbacks.some((cb, i) => cb.calls.length !== before[i]);
    // setTimeout's callback is a 'timeout' listener and connect's waits for a connection: called at most once, not always.
    const expected = threw ? [] : callbacks.filter((cb) => (m.name !== 'setTimeout' && m.name !== 'connect') || cb.calls.length > 0);
    const followed = await ledger.callAsync(`${name}: what followed`, () => settleSocket(socket, seen, expected, m.own), undefined, input, WAIT_MS * 2);
    return ok && followed && !calledAfterThrow;
  }), { ...PARAMS, numRuns: RUNS.socketMethods });
});

// ------------------------------------------------------------------ a forged `this`
/**
 * Every member rdmacm/net's classes define (not those Node's Duplex and
 * EventEmitter give them), the stream's hooks (_read, _write, _writev,
 * _final, _destroy) too: only the stream calls them, but they check their
 * receiver as the rest do.
 */
const NET_MEMBERS = [
  ...membersOf('RdmaSocket', RdmaSocket.prototype, new Set(), Duplex.prototype),
  ...membersOf('RdmaServer', RdmaServer.prototype, new Set(), EventEmitter.prototype),
];

test('methods, getters and setters called on a forged `this` (no private fields, a Proxy, the other class, a primitive): InvalidThisError (sync, or the rejection of an async one), never a result, a crash or a hang', async () => {
  // The other class's instances collect the listeners some members add (destroySoon's 'finish', asyncDispose's 'close').
  const others = [createServer(), new RdmaSocket()].map((instance) => instance.setMaxListeners(0));
  const forgeries = { RdmaSocket: fc.oneof(forged(RdmaSocket, [others[0]!]), primitiveReceivers), RdmaServer: fc.oneof(forged(RdmaServer, [others[1]!]), primitiveReceivers) };
  const cases = fc.constantFrom(...NET_MEMBERS).chain((m) => fc.tuple(fc.constant(m), forgeries[m.type as keyof typeof forgeries], anyHostile));
  await fc.assert(fc.asyncProperty(cases, async ([m, self, arg]) =>
    // What it returns is dropped (any return is junk accepted): the ledger would close() a returned `this`, forged as it is.
    ledger.callAsync(`forged this: ${m.type}`, refusedAsInvalidThis(async () => void (await m.invoke(self as object, arg))), refused, () => `${m.name}(${show(arg)})`, WAIT_MS)),
  { ...PARAMS, numRuns: RUNS.forgedThis });
});

after(() => {
  for (const line of ledger.report('fuzz-net', (performance.now() - started) / 1000, PARAMS.seed)) console.log(line);
});

test('the net fuzzing made its calls, none slow enough to be a hang, none untyped or accepted outside the KNOWN tables', () => {
  // The socket methods' property makes two calls a run (the call, and what followed it).
  const planned = skipNative ? RUNS.createServer + RUNS.newSocket + RUNS.forgedThis : Object.values(RUNS).reduce((a, b) => a + b, 0) + RUNS.socketMethods;
  assert.equal(ledger.totalCalls, planned);
  assert.deepEqual(ledger.problems(WAIT_MS), []);
});
