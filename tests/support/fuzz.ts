// The bookkeeping and the arbitraries shared by the fuzzing files (host and device).
// Contract (issue 32): every call returns, or throws one of the API's typed errors
// (RdmaArgumentError, RdmaError, ResourceClosedError, UnsupportedError, AbortError,
// InvalidThisError for a member called on a `this` not of its class;
// for rdmacm/net also its node:net-shaped errors and, where the ledger is told so,
// Node's own coded errors), never another exception, a crash or a hang. A ledger counts each call's outcome
// per function; untyped exceptions and accepted junk fail the property unless the
// function is in the file's KNOWN_* tables (src/ bugs found and reported).
import { isDataView } from 'node:util/types';
import fc from 'fast-check';
import {
  AbortError, InvalidThisError, RdmaArgumentError, RdmaError, RdmaNetCodeError, RdmaNetError, RdmaProtocolError, ResourceClosedError, UnsupportedError,
} from '../../src/index.js';

export type Outcome = 'returned' | 'accepted' | 'argument' | 'native' | 'closed' | 'unsupported' | 'aborted' | 'invalidThis' | 'net' | 'node' | 'untyped';
/** What a check says of a returned value: right, wrong, or a result for input that should have been refused. */
export type Verdict = boolean | 'accepted-junk';

export interface Tally {
  calls: number;
  outcomes: Record<Outcome, number>;
  acceptedExamples: string[];
  untypedExamples: Map<string, string>;
  slowestMs: number;
}

export interface KnownBugs {
  /** Functions that throw untyped exceptions for some junk: what was seen. */
  readonly untyped: Record<string, string>;
  /** Functions that return a result for input they should refuse: what was seen. */
  readonly accepted: Record<string, string>;
}

export interface LedgerOptions {
  /**
   * Counts Node's own coded errors as typed: where the code under test is a
   * stream.Duplex or an EventEmitter, Node's checks (ERR_INVALID_ARG_TYPE,
   * ERR_STREAM_WRITE_AFTER_END, …) answer as they do for node:net.
   */
  readonly nodeErrors?: boolean;
}

/** Closes whatever a call returned that owns native resources (only where a device exists). */
function dispose(value: unknown): void {
  if (value && typeof value === 'object' && 'close' in value && typeof value.close === 'function') (value as { close(): void }).close();
}

export function describeError(error: unknown): string {
  if (error instanceof Error) return `${error.constructor.name}${'code' in error && error.code ? ` ${String(error.code)}` : ''}: ${error.message.slice(0, 120)}`;
  return `a thrown ${typeof error}: ${String(error).slice(0, 80)}`;
}

/** A short rendering of an input for the report. */
export function show(value: unknown): string {
  try {
    return fc.stringify(value).slice(0, 160);
  } catch {
    return `<${typeof value}>`;
  }
}

/**
 * Node's own errors carry a string code: its ERR_* (ERR_INVALID_ARG_TYPE,
 * ERR_STREAM_DESTROYED), ABORT_ERR, and a system error's errno name with its
 * syscall (a resolver's ENOTFOUND, syscall getaddrinfo, which node:net passes
 * on as it is). A bare TypeError or RangeError has none.
 */
function isNodeCoded(error: unknown): boolean {
  const { code, syscall } = error instanceof Error ? (error as { code?: unknown; syscall?: unknown }) : {};
  if (typeof code !== 'string') return false;
  return /^(ERR_[A-Z0-9_]+|ABORT_ERR)$/.test(code) || (/^E[A-Z0-9_]+$/.test(code) && typeof syscall === 'string');
}

/** Node's codes an argument error may carry. */
const ARGUMENT_CODES = new Set(['ERR_INVALID_ARG_TYPE', 'ERR_INVALID_ARG_VALUE', 'ERR_OUT_OF_RANGE', 'ERR_SOCKET_BAD_PORT', 'ERR_UNKNOWN_ENCODING']);

/** Classifies one thrown value; ok is false for a typed error whose shape is wrong. */
function classify(error: unknown, nodeErrors: boolean): { outcome: Outcome; ok: boolean } {
  if (error instanceof RdmaArgumentError) {
    const shaped = error.issues.length > 0 && error.issues.every((i) => typeof i.path === 'string' && typeof i.rule === 'string');
    return { outcome: 'argument', ok: ARGUMENT_CODES.has(error.code) && error.code === error.issues[0]!.code && shaped && error.message.startsWith(`${error.operation}: `) };
  }
  if (error instanceof UnsupportedError) return { outcome: 'unsupported', ok: true };
  if (error instanceof RdmaError) {
    return { outcome: 'native', ok: typeof error.code === 'string' && typeof error.errno === 'number' && typeof error.syscall === 'string' };
  }
  if (error instanceof ResourceClosedError) return { outcome: 'closed', ok: error.code === 'ERR_RDMACM_CLOSED' };
  if (error instanceof AbortError) return { outcome: 'aborted', ok: error.code === 'ABORT_ERR' };
  if (error instanceof InvalidThisError) {
    return { outcome: 'invalidThis', ok: error.code === 'ERR_INVALID_THIS' && /^Value of "this" must be of type [A-Z]/.test(error.message) };
  }
  if (error instanceof RdmaNetError || error instanceof RdmaNetCodeError || error instanceof RdmaProtocolError) {
    return { outcome: 'net', ok: typeof error.code === 'string' && error.code !== '' };
  }
  if (nodeErrors && isNodeCoded(error)) return { outcome: 'node', ok: true };
  return { outcome: 'untyped', ok: false };
}

export class FuzzLedger {
  readonly tallies = new Map<string, Tally>();
  totalCalls = 0;
  readonly #nodeErrors: boolean;
  constructor(readonly known: KnownBugs, options: LedgerOptions = {}) {
    this.#nodeErrors = options.nodeErrors ?? false;
  }

  tally(name: string): Tally {
    let t = this.tallies.get(name);
    if (!t) {
      t = {
        calls: 0, outcomes: { returned: 0, accepted: 0, argument: 0, native: 0, closed: 0, unsupported: 0, aborted: 0, invalidThis: 0, net: 0, node: 0, untyped: 0 },
        acceptedExamples: [], untypedExamples: new Map(), slowestMs: 0,
      };
      this.tallies.set(name, t);
    }
    return t;
  }

  #thrown(name: string, t: Tally, error: unknown, input?: () => string): { outcome: Outcome; ok: boolean } {
    const c = classify(error, this.#nodeErrors);
    if (c.outcome === 'untyped') {
      const text = describeError(error);
      const kind = text.split(':')[0]!;
      if (!t.untypedExamples.has(kind)) t.untypedExamples.set(kind, input ? `${text} <- ${input()}` : text);
      c.ok = name in this.known.untyped;
    }
    return c;
  }

  #returned<T>(name: string, t: Tally, value: T, check?: (value: T) => Verdict, input?: () => string): { outcome: Outcome; ok: boolean } {
    // The check runs outside the call's try: an exception from it is a failure of the test, not of the call.
    const verdict = check ? check(value) : true;
    let outcome: Outcome = 'returned';
    let ok: boolean;
    if (verdict === 'accepted-junk') {
      outcome = 'accepted';
      if (t.acceptedExamples.length < 3 && input) t.acceptedExamples.push(input());
      ok = name in this.known.accepted;
    } else ok = verdict;
    dispose(value);
    return { outcome, ok };
  }

  /**
   * Makes one call and classifies it. Returns false (the property fails, fast-check
   * shrinks and reports the input) for an untyped exception not in known.untyped,
   * or for a returned value `check` rejects.
   */
  call<T>(name: string, fn: () => T, check?: (value: T) => Verdict, input?: () => string): boolean {
    const t = this.tally(name);
    t.calls++;
    this.totalCalls++;
    const started = performance.now();
    let result: { outcome: Outcome; ok: boolean };
    let returned: { value: T } | undefined;
    try {
      returned = { value: fn() };
    } catch (error) {
      result = this.#thrown(name, t, error, input);
    }
    t.slowestMs = Math.max(t.slowestMs, performance.now() - started);
    if (returned) result = this.#returned(name, t, returned.value, check, input);
    t.outcomes[result!.outcome]++;
    return result!.ok;
  }

  /** call() for a function that may return a promise: its settlement is classified (within timeoutMs, else a hang). */
  async callAsync<T>(name: string, fn: () => T | Promise<T>, check?: (value: T) => Verdict, input?: () => string, timeoutMs = 2000): Promise<boolean> {
    const t = this.tally(name);
    t.calls++;
    this.totalCalls++;
    const started = performance.now();
    let result: { outcome: Outcome; ok: boolean };
    let returned: { value: T } | undefined;
    let timer: NodeJS.Timeout | undefined;
    try {
      const hang = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${name}: no settlement in ${timeoutMs} ms (a hang)`)), timeoutMs);
      });
      returned = { value: await Promise.race([Promise.resolve().then(fn), hang]) };
    } catch (error) {
      result = this.#thrown(name, t, error, input);
    } finally {
      clearTimeout(timer);
    }
    t.slowestMs = Math.max(t.slowestMs, performance.now() - started);
    if (returned) result = this.#returned(name, t, returned.value, check, input);
    t.outcomes[result!.outcome]++;
    return result!.ok;
  }

  sum(outcome: Outcome): number {
    return [...this.tallies.values()].reduce((n, t) => n + t.outcomes[outcome], 0);
  }

  /** The report lines, each starting with `label:`. */
  report(label: string, elapsedS: number, seed: number): string[] {
    const lines = [`${label}: ${this.totalCalls} calls in ${elapsedS.toFixed(1)} s (seed ${seed}), ${this.sum('returned')} returned, `
      + `${this.sum('argument')} argument errors, ${this.sum('native')} native errors, ${this.sum('closed')} closed, `
      + `${this.sum('unsupported')} unsupported, ${this.sum('aborted')} aborted, ${this.sum('invalidThis')} invalid this, ${this.sum('net')} net, ${this.sum('node')} node, ${this.sum('untyped')} untyped and ${this.sum('accepted')} junk accepted (known src bugs)`];
    for (const [name, t] of this.tallies) {
      const o = t.outcomes;
      lines.push(`${label}:   ${name}: ${t.calls} calls, ${o.returned} returned, ${o.argument} argument, ${o.native} native, ${o.closed} closed, `
        + `${o.aborted} aborted, ${o.invalidThis} invalid this, ${o.net} net, ${o.node} node, ${o.untyped} untyped, ${o.accepted} junk accepted, slowest ${t.slowestMs.toFixed(1)} ms`);
      for (const example of t.acceptedExamples) lines.push(`${label}:     junk accepted (known bug): ${example}`);
      for (const example of t.untypedExamples.values()) lines.push(`${label}:     untyped (known bug): ${example}`);
    }
    return lines;
  }

  /** Failures for the closing assertion: slow calls, and untyped or accepted outcomes not in the known tables. */
  problems(slowMs: number): string[] {
    const found: string[] = [];
    for (const [name, t] of this.tallies) {
      if (t.slowestMs >= slowMs) found.push(`${name}: one call took ${t.slowestMs.toFixed(0)} ms`);
      if (t.outcomes.accepted > 0 && !(name in this.known.accepted)) found.push(`${name}: accepted junk: ${t.acceptedExamples.join(' | ')}`);
      if (t.outcomes.untyped > 0 && !(name in this.known.untyped)) found.push(`${name}: untyped exceptions: ${[...t.untypedExamples.values()].join(' | ')}`);
    }
    return found;
  }
}

// ------------------------------------------------------------------ arbitraries (values of every kind)
export const nastyNumber = fc.oneof(
  fc.constantFrom(
    Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, -0, 0, -1, 0.5, 1.5, 2 ** 31, 2 ** 32, 2 ** 53, -(2 ** 53),
    2 ** 64, Number.MAX_VALUE, Number.MIN_VALUE, Number.MAX_SAFE_INTEGER, 65535, 65536, 255, 256,
  ),
  fc.integer(),
  fc.double(),
);
export const nastyString = fc.oneof(
  fc.string(),
  fc.string({ unit: 'binary' }),
  fc.tuple(fc.string(), fc.string()).map(([a, b]) => `${a}\0${b}`),
  fc.constantFrom(
    '', '\0', '127.0.0.1', '::1', '10.0.0.1\0', '7471', '65536', '-1', '0x10', '1e3', ' 7471', 'TCP', 'UDP', 'RC', 'UD',
    'PASSIVE', 'IPv4', '__proto__', 'constructor', 'toString', 'rxe0', 'a'.repeat(4096),
  ),
);
export const bytesLike = fc.oneof(
  fc.uint8Array({ maxLength: 300 }).map((a) => Buffer.from(a)),
  fc.uint8Array({ maxLength: 300 }),
  fc.integer({ min: 0, max: 300 }).map((n) => new Uint16Array(n)),
  fc.integer({ min: 0, max: 64 }).map((n) => new ArrayBuffer(n)),
  fc.integer({ min: 0, max: 64 }).map((n) => new DataView(new ArrayBuffer(n))),
  fc.tuple(fc.uint8Array({ minLength: 1, maxLength: 64 }), fc.nat(63)).map(([a, at]) => Buffer.from(a).subarray(Math.min(at, a.length))),
);
/** Anything at all, weighted toward values that break naive validation. */
export const junk: fc.Arbitrary<unknown> = fc.oneof(
  fc.anything({
    withBigInt: true, withBoxedValues: true, withDate: true, withMap: true, withSet: true, withNullPrototype: true,
    withObjectString: true, withSparseArray: true, withTypedArray: true, withUnicodeString: true, maxDepth: 3,
  }),
  nastyNumber,
  nastyString,
  fc.bigInt(),
  bytesLike,
  fc.constantFrom(null, undefined, true, false, Symbol('junk'), () => 1, [], {}, Object.create(null), new AbortController().signal, Promise.resolve()),
);
/** A record whose known keys get valid or junk values, some missing, plus sometimes extra keys. */
export function junkRecord(fields: Record<string, fc.Arbitrary<unknown>>, values: fc.Arbitrary<unknown> = junk): fc.Arbitrary<unknown> {
  const mixed = Object.fromEntries(Object.entries(fields).map(([key, valid]) => [key, fc.oneof(valid, values)]));
  return fc.oneof(
    fc.record(mixed, { requiredKeys: [] }),
    fc.tuple(fc.record(mixed, { requiredKeys: [] }), fc.dictionary(nastyString, values, { maxKeys: 3 })).map(([a, b]) => ({ ...b, ...a })),
    values,
  );
}
export const maybe = <T>(a: fc.Arbitrary<T>) => fc.oneof(fc.constant(undefined), a);

// ------------------------------------------------------------------ hostile arbitraries (issue 32)
type Resizable = new (length: number, options: { maxByteLength: number }) => ArrayBuffer;

/**
 * Forged instances of `type`: its prototype with no private fields, a plain
 * object shaped like a resource, that object given the prototype, a Proxy over
 * it, and `others` (real instances of other classes, where a device exists).
 */
export function forged(type: { prototype: object; name: string }, others: readonly object[] = []): fc.Arbitrary<unknown> {
  const shaped = () => ({
    handle: 1n, unsafeHandle: 1n, pointer: 1n, closed: false, kind: type.name, address: 4096n, length: 64, lkey: 1, rkey: 1,
    buffer: Buffer.alloc(64), fd: 0, protectionDomain: {}, context: {}, close() {}, [Symbol.dispose]() {},
  });
  const kinds: fc.Arbitrary<unknown>[] = [
    fc.constant(null).map(() => Object.create(type.prototype) as unknown),
    fc.constant(null).map(shaped),
    fc.constant(null).map(() => Object.setPrototypeOf(shaped(), type.prototype) as unknown),
    fc.constant(null).map(() => new Proxy(Object.create(type.prototype) as object, {})),
    fc.constant(null).map(() => new Proxy(shaped(), { getPrototypeOf: () => type.prototype })),
  ];
  if (others.length > 0) {
    kinds.push(fc.constantFrom(...others));
    kinds.push(fc.constantFrom(...others).map((real) => new Proxy(real, {})));
  }
  return fc.oneof(...kinds);
}

/** The `this` of a method detached from its object and called alone (undefined), and what `call` can give it. */
export const primitiveReceivers: fc.Arbitrary<unknown> = fc.constantFrom<unknown>(undefined, null, 0, 'x', true, 1n, Symbol('forged'));

const lie = fc.constantFrom(1 << 30, 2 ** 53, -1, Number.NaN, 0.5, '64', 64n, undefined);
/** Typed-array subclasses and own properties whose length getters lie (the truth is `n` bytes). */
function lyingView(n: number, key: string, value: unknown, how: 'subclass' | 'own' | 'flip'): Uint8Array {
  if (how === 'own') {
    const view = Buffer.alloc(n);
    Object.defineProperty(view, key, { get: () => value });
    return view;
  }
  let reads = 0;
  class Lying extends Uint8Array {}
  // 'flip': honest on the first read, lying after (a check reads once, the use reads again).
  Object.defineProperty(Lying.prototype, key, {
    get(this: Uint8Array) {
      const truth = Reflect.get(Object.getPrototypeOf(Uint8Array.prototype) as object, key, this) as unknown;
      return how === 'flip' && reads++ === 0 ? truth : value;
    },
  });
  return new Lying(n);
}

/** Buffers that lie or cannot be trusted: lying getters, Proxies, detached, resizable, growable. */
export const lyingBuffer: fc.Arbitrary<unknown> = fc.oneof(
  fc.tuple(fc.integer({ min: 0, max: 256 }), fc.constantFrom('length', 'byteLength', 'byteOffset'), lie, fc.constantFrom('subclass', 'own', 'flip') as fc.Arbitrary<'subclass' | 'own' | 'flip'>)
    .map(([n, key, value, how]) => lyingView(n, key, value, how)),
  fc.integer({ min: 0, max: 256 }).map((n) => lyingView(n, 'buffer', new ArrayBuffer(1 << 16), 'subclass')),
  fc.integer({ min: 0, max: 256 }).map((n) => new Proxy(Buffer.alloc(n), {})),
  fc.integer({ min: 0, max: 256 }).map((n) => new Proxy(new Uint8Array(n), { get: (t, k) => (k === 'length' || k === 'byteLength' ? 1 << 30 : Reflect.get(t, k)) })),
  fc.integer({ min: 1, max: 256 }).map((n) => {
    const memory = new ArrayBuffer(n);
    const view = new Uint8Array(memory);
    structuredClone(memory, { transfer: [memory] });
    return view;
  }),
  fc.integer({ min: 1, max: 256 }).map((n) => {
    const memory = new ArrayBuffer(n);
    const view = Buffer.from(memory);
    // ArrayBuffer.prototype.transfer is Node 22's; Node 20 detaches with structuredClone.
    const transfer = (memory as ArrayBuffer & { transfer?: () => ArrayBuffer }).transfer;
    if (transfer) transfer.call(memory);
    else structuredClone(memory, { transfer: [memory] });
    return view;
  }),
  fc.tuple(fc.integer({ min: 1, max: 256 }), fc.boolean(), fc.boolean()).map(([n, tracking, shrink]) => {
    const memory = new (ArrayBuffer as unknown as Resizable)(n, { maxByteLength: n * 2 });
    const view = tracking ? new Uint8Array(memory) : new Uint8Array(memory, 0, n);
    if (shrink) (memory as ArrayBuffer & { resize(n: number): void }).resize(n >> 1);
    return view;
  }),
  fc.integer({ min: 1, max: 256 }).map((n) => new Uint8Array(new (SharedArrayBuffer as unknown as Resizable)(n, { maxByteLength: n * 2 }))),
);

/** Test-side: a real view (a typed array or a DataView, not a Proxy) with its kind's intrinsic length getters. */
export function isTruthfulView(value: unknown): value is ArrayBufferView {
  if (!ArrayBuffer.isView(value)) return false;
  const own = isDataView(value) ? DataView.prototype : typedArrayPrototype;
  for (let o: object | null = value; o !== own; o = Object.getPrototypeOf(o) as object | null) {
    if (o === null || ['length', 'byteLength', 'byteOffset', 'buffer'].some((key) => Object.hasOwn(o!, key))) return false;
  }
  return true;
}

/**
 * Test-side: a view whose length getters are the intrinsic ones (so what it says
 * is what it holds), and its bytes read through them.
 */
export const typedArrayPrototype = Object.getPrototypeOf(Uint8Array.prototype) as object;
export const intrinsic = (key: string, view: unknown): unknown => Reflect.apply(Object.getOwnPropertyDescriptor(typedArrayPrototype, key)!.get!, view, []);
export function honestCopy(value: unknown): Uint8Array | undefined {
  if (!(value instanceof Uint8Array) || !isTruthfulView(value)) return undefined;
  // A detached view reads as empty (its intrinsic length is 0); slice would throw.
  return intrinsic('byteLength', value) === 0 ? new Uint8Array(0) : Uint8Array.prototype.slice.call(value);
}

/** Numbers that are not, or not in range: every count, index, size, depth, timeout and port gets them. */
export const hostileNumber: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(
    '1', '16', '', ' 1', '0x10', Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 0.5, 1.5, -0.5, -1, -(2 ** 31),
    2 ** 31, 2 ** 32, 2 ** 53, 2 ** 53 + 2, -(2 ** 53), Number.MAX_VALUE, 1n, 16n, -1n, 2n ** 64n, null, true,
  ),
  fc.constant(null).map(() => new Number(1)),
  fc.constant(null).map(() => ({ valueOf: () => 1 })),
  fc.integer({ min: -1000, max: -1 }),
  fc.double({ noInteger: true }),
  fc.bigInt(),
);

/** Names outside an enum's set: near misses, other enums' names, inherited keys, non-strings. */
export function badEnum(valid: readonly string[]): fc.Arbitrary<unknown> {
  return fc.oneof(
    // The other case (a filter that can never pass would make fast-check loop forever: the modes are all lowercase).
    fc.constantFrom(...valid).map((name) => (name.toLowerCase() === name ? name.toUpperCase() : name.toLowerCase())),
    fc.constantFrom(...valid).map((name) => ` ${name}`),
    fc.constantFrom(...valid).map((name) => `${name}\0`),
    fc.constantFrom('__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf', '', 'UNKNOWN', 'RC ', 'busy_poll', 'EVENTS'),
    fc.integer({ min: -1, max: 300 }),
    fc.constant(null).map(() => new String(valid[0])),
    fc.constantFrom(...valid).map((name) => [name]),
  ).filter((value) => !(typeof value === 'string' && valid.includes(value)));
}

/** Any of the classes at once: a value for a parameter that is none of them. */
export const hostile = (forgeries: fc.Arbitrary<unknown>): fc.Arbitrary<unknown> => fc.oneof(forgeries, lyingBuffer, hostileNumber, junk);

/** A method, getter or setter of a class, to call on any `this`. */
export interface Member {
  readonly type: string;
  readonly name: string;
  readonly invoke: (self: object, arg: unknown) => unknown;
}

/** The symbols a class's public members are named by. */
const PUBLIC_SYMBOLS: readonly symbol[] = [Symbol.dispose, Symbol.asyncDispose, Symbol.iterator, Symbol.asyncIterator];

/**
 * Every method, getter and setter on `prototype` and the prototypes above it
 * up to `stop` (not included): not the constructor, nor the names in `skip`,
 * nor symbols other than the dispose and iterator ones. For calling them on a
 * forged `this`.
 */
export function membersOf(type: string, prototype: object, skip: ReadonlySet<string>, stop: object = Object.prototype): Member[] {
  const members: Member[] = [];
  for (let p: object | null = prototype; p && p !== stop; p = Object.getPrototypeOf(p) as object | null) {
    for (const key of Reflect.ownKeys(p)) {
      if (key === 'constructor' || skip.has(String(key)) || (typeof key === 'symbol' && !PUBLIC_SYMBOLS.includes(key))) continue;
      const d = Object.getOwnPropertyDescriptor(p, key)!;
      const name = `${type}.${String(key)}`;
      if (members.some((m) => m.name === name || m.name === `get ${name}` || m.name === `set ${name}`)) continue;
      if (typeof d.value === 'function') members.push({ type, name, invoke: (self, arg) => (d.value as (a: unknown) => unknown).call(self, arg) });
      if (d.get) members.push({ type, name: `get ${name}`, invoke: (self) => d.get!.call(self) });
      if (d.set) members.push({ type, name: `set ${name}`, invoke: (self, arg) => d.set!.call(self, arg) });
    }
  }
  return members;
}

/** Thrown by refusedAs and mustAccept for a wrong answer (a refusal naming the wrong parameter, or one of valid input): untyped, so the ledger fails it. */
class WrongRefusal extends Error {}

/** Runs fn; an exception must be an RdmaArgumentError naming `parameter` (a path starting with it). */
export function refusedAs<T>(parameter: string, fn: () => T): () => T {
  return () => {
    try {
      return fn();
    } catch (error) {
      throw refusalNaming(parameter, error);
    }
  };
}

/** refusedAs for a call that may reject: the rejection must be an RdmaArgumentError naming `parameter`. */
export function refusedAsAsync<T>(parameter: string, fn: () => Promise<T>): () => Promise<T> {
  return async () => {
    try {
      return await fn();
    } catch (error) {
      throw refusalNaming(parameter, error);
    }
  };
}

/** `error` itself if it is an RdmaArgumentError naming `parameter` (a path starting with it), else the WrongRefusal that says what came. */
function refusalNaming(parameter: string, error: unknown): unknown {
  if (error instanceof RdmaArgumentError && error.issues.some((i) => i.path === parameter || i.path.startsWith(`${parameter}.`))) return error;
  return new WrongRefusal(`expected an RdmaArgumentError naming ${parameter}, got ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`);
}

/** refusedAs for a method that returns a promise: it must reject (not throw) with an RdmaArgumentError naming `parameter`. */
export function rejectedAs<T>(parameter: string, fn: () => Promise<T>): () => Promise<T> {
  return async () => {
    let promise: Promise<T>;
    try {
      promise = fn();
    } catch (error) {
      throw new WrongRefusal(`expected a rejection naming ${parameter}, but it threw ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`);
    }
    return promise.catch((error: unknown) => {
      throw refusalNaming(parameter, error);
    });
  };
}

/**
 * Runs fn, a member called on a forged `this`, and takes what an async
 * generator it returns does at its first next() (its body runs only then):
 * any exception or rejection must be InvalidThisError, the receiver check
 * that comes before anything else.
 */
export function refusedAsInvalidThis(fn: () => unknown): () => Promise<unknown> {
  return async () => {
    try {
      const result = await fn();
      const next = result !== null && typeof result === 'object' && Symbol.asyncIterator in result ? (result as { next?: unknown }).next : undefined;
      return typeof next === 'function' ? await (next as () => unknown).call(result) : result;
    } catch (error) {
      if (error instanceof InvalidThisError) throw error;
      throw new WrongRefusal(`expected an InvalidThisError, got ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`);
    }
  };
}

/** Runs fn, for input that is valid: any exception is the failure (untyped, so the ledger fails it), never a typed refusal. */
export function mustAccept<T>(fn: () => T): () => T {
  return () => {
    try {
      return fn();
    } catch (error) {
      throw new WrongRefusal(`valid input refused: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`);
    }
  };
}

/** A check for a call that should have been refused: whatever it returned is junk accepted. */
export const refused = (): Verdict => 'accepted-junk';
