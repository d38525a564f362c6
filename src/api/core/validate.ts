// Argument checking at the API boundary: zod schemas in, RdmaArgumentError out.
// Called when an operation is prepared, never inside post/poll loops.
import { Buffer } from 'node:buffer';
import { isIPv4, isIPv6 } from 'node:net';
import { isDataView, isProxy } from 'node:util/types';
import { z } from 'zod';
import { RdmaArgumentError, type ArgumentErrorCode } from './errors.js';
import { interfaceIndex } from './interfaces.js';
import { Resource } from './resource.js';

/**
 * Parses `value` as the parameter `parameter` of `operation`, or throws RdmaArgumentError.
 * The last few successful parses of each schema are remembered for flat inputs
 * (a primitive, a plain array of primitives, like access rights, or a plain
 * object of primitive data properties, of plain objects of primitives, like
 * a send's `remote`, and of class instances that
 * zod passed through as they are, like a CompletionQueue or an AbortSignal):
 * an equal input gets a frozen output without running zod again. Calls
 * repeat their options far more often than they change them, and until V8
 * has optimized zod a parse costs many times the comparison (in
 * the rxe guest 50–400 µs against about 30). A few, not one: a connection's
 * connect, disconnect and waits take the same schema with their own timeouts.
 * Schemas are pure, and this package checks class instances by prototype only
 * (instanceof, never their state), so inputs equal in their primitives and in
 * their instances' prototypes always parse alike: a QP's own new CQ, or a
 * send's other address handle, costs no parse. The memos hold their inputs'
 * instances.
 */
export function parseArgument<S extends z.ZodType>(operation: string, parameter: string, schema: S, value: unknown): z.output<S> {
  // An instance check passes its input through: its own test decides, and zod runs only to word a refusal.
  const test = instanceTests.get(schema);
  if (test !== undefined && passes(test, value)) return value as z.output<S>;
  const remembered = memos.get(schema);
  if (remembered !== undefined) {
    for (let i = 0; i < remembered.length; i++) {
      const memo = remembered[i]!.answering(value);
      if (memo === undefined) continue;
      remembered[i] = memo;
      return memo.output as z.output<S>;
    }
  }
  const result = safeParse(operation, parameter, schema, value);
  if (!result.success) throw RdmaArgumentError.fromZod(operation, parameter, result.error);
  const memo = ParseMemo.of(value, result.data);
  if (memo !== undefined) {
    if (remembered === undefined) memos.set(schema, [memo]);
    else if (remembered.unshift(memo) > MEMOS_PER_SCHEMA) remembered.pop();
  }
  return result.data;
}

/**
 * zod's safeParse, which can throw: a length check (a string's or an array's
 * min/max) reads `length` of whatever it is given, even after the type check
 * failed, and a Proxy of a typed array throws a bare TypeError there. Such a
 * value is refused at the parameter, never thrown through.
 */
function safeParse<S extends z.ZodType>(operation: string, parameter: string, schema: S, value: unknown): z.ZodSafeParseResult<z.output<S>> {
  try {
    // The input in each issue tells a fraction or NaN (out of range) from a string (wrong type).
    return schema.safeParse(value, { reportInput: true });
  } catch (error) {
    throw argumentError(operation, parameter, `could not be read: ${error instanceof Error ? error.message : String(error)}`, 'ERR_INVALID_ARG_TYPE');
  }
}

/** Each schema's latest memos, the newest first. */
const memos = new WeakMap<z.ZodType, ParseMemo[]>();
const MEMOS_PER_SCHEMA = 4;

const isPrimitive = (value: unknown): boolean => value === null || (typeof value !== 'object' && typeof value !== 'function');

/** An object literal's kind: its prototype Object.prototype or null. */
export const isPlainObject = (value: unknown): value is Record<string, unknown> => {
  if (value === null || typeof value !== 'object') return false;
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
};

/** A class instance whose validity cannot change while it keeps its identity (not an array or a byte view, whose contents could). */
const isInstance = (value: unknown): boolean =>
  typeof value === 'object' && value !== null && !isPlainObject(value) && !Array.isArray(value) && !ArrayBuffer.isView(value);

/**
 * Whether an instance is what its prototype says: a resource or an AbortSignal
 * given only the prototype (Object.create) has none of the private state the
 * schemas' brand checks look for, so it must not reuse a real one's memo.
 */
const isGenuine = (value: unknown): boolean =>
  value instanceof Resource ? Resource.isA(value, Resource) : value instanceof AbortSignal ? abortSignal.safeParse(value).success : true;

/** A plain object of primitive data properties, copied: its keys in order and their values. */
class RecordCopy {
  private constructor(
    private readonly keys: readonly string[],
    private readonly values: readonly unknown[],
  ) {}

  /** A copy of `value` if it is a plain object of primitive data properties; else undefined. */
  static of(value: unknown): RecordCopy | undefined {
    if (!isPlainObject(value)) return undefined;
    const keys: string[] = [];
    const values: unknown[] = [];
    for (const key in value) {
      const property = Object.getOwnPropertyDescriptor(value, key);
      if (!property || !('value' in property) || !isPrimitive(property.value)) return undefined;
      keys.push(key);
      values.push(property.value);
    }
    return new RecordCopy(keys, values);
  }

  /** Whether `value` is a plain object with the same keys in the same order and the same primitives (Object.is). */
  matches(value: unknown): boolean {
    if (!isPlainObject(value)) return false;
    let index = 0;
    for (const key in value) {
      if (index === this.keys.length || key !== this.keys[index] || !Object.is(value[key], this.values[index])) return false;
      index++;
    }
    return index === this.keys.length;
  }
}

/**
 * An array of primitives, copied (an options list such as access rights).
 * Each element is read once, as zod reads it; a Proxy is never remembered,
 * so no trap runs here.
 */
class ListCopy {
  private constructor(private readonly values: readonly unknown[]) {}

  /** A copy of `value` if it is a plain array (no Proxy, no subclass) of at most 16 primitives; else undefined. */
  static of(value: unknown): ListCopy | undefined {
    if (!ListCopy.#isPlainArray(value) || value.length > 16) return undefined;
    const values: unknown[] = [];
    for (let i = 0; i < value.length; i++) {
      const element: unknown = value[i];
      if (!isPrimitive(element)) return undefined;
      values.push(element);
    }
    return new ListCopy(values);
  }

  /** Whether `value` is a plain array of the same primitives (Object.is) in the same order. */
  matches(value: unknown): boolean {
    if (!ListCopy.#isPlainArray(value) || value.length !== this.values.length) return false;
    for (let i = 0; i < value.length; i++) if (!Object.is(value[i], this.values[i])) return false;
    return true;
  }

  static #isPlainArray(value: unknown): value is readonly unknown[] {
    return Array.isArray(value) && !isProxy(value) && Object.getPrototypeOf(value) === Array.prototype;
  }
}

/** One flat input, copied, and what zod made of it. */
class ParseMemo {
  private constructor(
    /** The input's keys in order, or null when the input was a primitive or a ListCopy (values[0]). */
    private readonly keys: readonly string[] | null,
    /** Per key: the primitive or instance it held, or a RecordCopy of the plain object it held. */
    private readonly values: readonly unknown[],
    /** Per key: the prototype of the class instance it held and zod passed through, else null (matched with Object.is). */
    private readonly prototypes: readonly (object | null)[],
    readonly output: unknown,
  ) {}

  /** A memo for a flat input whose output is flat too (so freezing it, and its records, fixes what it says); else undefined. */
  static of(input: unknown, output: unknown): ParseMemo | undefined {
    const list = ListCopy.of(input);
    if (isPrimitive(input) || list !== undefined) {
      // A list of names in, or a default list out (access rights): the list out is frozen.
      if (!isPrimitive(output) && ListCopy.of(output) === undefined) return undefined;
      return new ParseMemo(null, [list ?? input], [null], isPrimitive(output) ? output : Object.freeze(output));
    }
    if (!isPlainObject(input) || !isPlainObject(output)) return undefined;
    const keys: string[] = [];
    const values: unknown[] = [];
    const prototypes: (object | null)[] = [];
    for (const key in input) {
      const property = Object.getOwnPropertyDescriptor(input, key);
      if (!property || !('value' in property)) return undefined;
      const value: unknown = property.value;
      const record = RecordCopy.of(value);
      if (!isPrimitive(value) && !isInstance(value) && record === undefined) return undefined;
      // Only an instance zod passed through may be swapped for another of its kind; the rest must stay the same.
      const passedThrough = record === undefined && !isPrimitive(value) && (output as Record<string, unknown>)[key] === value;
      prototypes.push(passedThrough ? (Object.getPrototypeOf(value) as object) : null);
      keys.push(key);
      values.push(record ?? value);
    }
    // An instance must come out as it went in, and what zod built must be a record of primitives (freezing it fixes what it says).
    const built: object[] = [];
    for (const key in output) {
      const value = output[key];
      if (isPrimitive(value) || (isInstance(value) && value === input[key])) continue;
      if (value === input[key] || RecordCopy.of(value) === undefined) return undefined;
      built.push(value as object);
    }
    for (const record of built) Object.freeze(record);
    return new ParseMemo(keys, values, prototypes, Object.freeze(output));
  }

  /**
   * This memo, or a new one like it, if `input` has the same keys in the same
   * order, the same primitives (Object.is), records equal to the copies and
   * instances of the same prototypes; else undefined. Other instances than
   * the remembered ones make the new memo, and its output carries them.
   */
  answering(input: unknown): ParseMemo | undefined {
    const keys = this.keys;
    if (keys === null) {
      const only = this.values[0];
      return (only instanceof ListCopy ? only.matches(input) : Object.is(input, only)) ? this : undefined;
    }
    if (!isPlainObject(input)) return undefined;
    let index = 0;
    /** The values to remember, kept from the first instance that differs from the remembered one (each read once; records stay copies). */
    let fresh: unknown[] | undefined;
    for (const key in input) {
      if (index === keys.length || key !== keys[index]) return undefined;
      const value = input[key];
      const remembered = this.values[index];
      if (remembered instanceof RecordCopy) {
        if (!remembered.matches(value)) return undefined;
      } else if (!Object.is(value, remembered)) {
        const prototype = this.prototypes[index];
        if (prototype === null || isPrimitive(value) || Object.getPrototypeOf(value) !== prototype || !isGenuine(value)) return undefined;
        fresh ??= this.values.slice(0, index);
      }
      fresh?.push(remembered instanceof RecordCopy ? remembered : value);
      index++;
    }
    if (index !== keys.length) return undefined;
    if (fresh === undefined) return this;
    // zod passed the remembered instances through, so it would pass these the same way (see above).
    const output: Record<string, unknown> = { ...(this.output as Record<string, unknown>) };
    for (let i = 0; i < keys.length; i++) if (this.prototypes[i] !== null) output[keys[i]!] = fresh[i];
    return new ParseMemo(keys, fresh, this.prototypes, Object.freeze(output));
  }
}

/**
 * True when a schema takes exactly `Options`: the same fields, each accepting
 * the same values. `satisfies` alone lets a field go missing on one side.
 */
export type InputIs<Schema extends z.ZodType, Options> =
  [z.input<Schema>, keyof z.input<Schema>] extends [Options, keyof Options]
    ? ([Options, keyof Options] extends [z.input<Schema>, keyof z.input<Schema>] ? true : false)
    : false;
/** Compiles only for true: `type Tied = Holds<InputIs<typeof schema, Options>>` keeps a schema and its public interface from drifting apart. */
export type Holds<T extends true> = T;

/** RdmaArgumentError for a rule zod cannot see (limits known only at run time), with Node's code for it. */
export function argumentError(operation: string, path: string, rule: string, code: ArgumentErrorCode): RdmaArgumentError {
  return new RdmaArgumentError(operation, [{ path, rule, code }]);
}

/** Node's code for a number rule's failure: a number outside it is out of range, anything else the wrong type. */
export const numberIssue = (value: unknown): ArgumentErrorCode => (typeof value === 'number' ? 'ERR_OUT_OF_RANGE' : 'ERR_INVALID_ARG_TYPE');

/** A check that the value is an instance of a kind (a class, a Buffer): zod's custom issue, with Node's code for the wrong type. */
export function instanceCheck<T>(test: (value: unknown) => boolean, message: string): z.ZodCustom<T, T> {
  const schema = z.custom<T>(test, { message, params: { code: 'ERR_INVALID_ARG_TYPE' } });
  instanceTests.set(schema, test);
  return schema;
}

/**
 * Each instanceCheck schema's test. Its objects are not memoized (a Buffer's
 * contents and own properties can change between calls), and zod's parse of
 * one costs more than the test: a 64 B riowrite spent a quarter of its time
 * in zod checking its Buffer. Schemas derived from one (refine, optional)
 * are other objects and parse through zod, unless they are given a test of
 * their own (registrableBytes).
 */
const instanceTests = new WeakMap<z.ZodType, (value: unknown) => boolean>();

/** A test that throws (a Proxy's trap can) is a refusal, which zod then words. */
function passes(test: (value: unknown) => boolean, value: unknown): boolean {
  try {
    return test(value);
  } catch {
    return false;
  }
}

export const u8 = z.number().int().min(0).max(0xff);
export const u16 = z.number().int().min(0).max(0xffff);
export const u32 = z.number().int().min(0).max(0xffffffff);
export const port = z.number().int().min(0, 'a port is 0–65535').max(65535, 'a port is 0–65535');
/** A count of work requests or SGEs: at least 1. */
export const count = z.number().int().min(1, 'must be at least 1').max(0x7fffffff);
export const timeoutMs = z.number().int().min(0).max(0x7fffffff);
export const u64 = z.union([
  z.bigint().min(0n).max(0xffffffffffffffffn),
  z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
]);
/**
 * An IPv4 or IPv6 address; an IPv6 one may name its zone, as node:net takes
 * it: `fe80::1%eth0` (an interface of this host) or `fe80::1%2` (its index).
 * The one check that reads the system: an interface removed after a parse
 * the memo keeps goes out as scope 0, as an address without a zone does.
 */
export const ipAddress = z.string({ error: 'expected an IPv4 or IPv6 address' }).refine(
  (text) => {
    if (isIPv4(text)) return true;
    const [host, zone, ...more] = text.split('%');
    return more.length === 0 && isIPv6(host!) && (zone === undefined || interfaceIndex(zone) !== undefined);
  },
  { error: 'expected an IPv4 or IPv6 address (an IPv6 zone must be an interface of this host or its index, as fe80::1%eth0)' },
);
/** A non-empty C string: C would silently cut it at an embedded NUL. */
export const cString = z.string().min(1).refine((s) => !s.includes('\0'), 'must not contain a NUL character');

const typedArrayPrototype = Object.getPrototypeOf(Uint8Array.prototype) as object;
/** What native code trusts a view for; the intrinsic getters on %TypedArray%.prototype (DataView.prototype has all but length). */
const VIEW_GETTERS = ['length', 'byteLength', 'byteOffset', 'buffer'];

/**
 * An ArrayBuffer view, or anything that passes for one by its prototype (a
 * Proxy of one, whose intrinsic getters throw when read through the Proxy).
 */
export function isViewOrProxyOfOne(value: unknown): boolean {
  return ArrayBuffer.isView(value) || (typeof value === 'object' && value !== null && (typedArrayPrototype.isPrototypeOf(value) || DataView.prototype.isPrototypeOf(value)));
}

/**
 * A real ArrayBuffer view, a typed array or a DataView (not a Proxy, which
 * ArrayBuffer.isView refuses), whose length, byteLength, byteOffset and buffer
 * are the intrinsic getters of its kind: a subclass or an own property that
 * redefines one could report more memory than the view has, and native code
 * would read or register past its end (Node's streams read other memory).
 */
export function isHonestView(value: unknown): value is ArrayBufferView {
  if (!ArrayBuffer.isView(value)) return false;
  const intrinsic = isDataView(value) ? DataView.prototype : typedArrayPrototype;
  for (let o: object | null = value; o !== intrinsic; o = Object.getPrototypeOf(o) as object | null) {
    if (o === null) return false;
    // Node's and the language's own prototypes are taken as they are: a program
    // that redefines Buffer.prototype's getters has broken every Buffer already.
    // Stopping here keeps a write's check to the view's own keys.
    if (o !== value && BUILT_IN_VIEW_PROTOTYPES.has(o)) return true;
    for (const key of VIEW_GETTERS) if (Object.hasOwn(o, key)) return false;
  }
  return true;
}

/** The prototypes of Buffer and of each typed array, whose chains to the intrinsic getters are the language's (a DataView's chain ends at DataView.prototype itself). */
const BUILT_IN_VIEW_PROTOTYPES: ReadonlySet<object> = new Set<object>([
  Buffer.prototype, Uint8Array.prototype, Uint8ClampedArray.prototype, Int8Array.prototype, Uint16Array.prototype, Int16Array.prototype,
  Uint32Array.prototype, Int32Array.prototype, Float32Array.prototype, Float64Array.prototype, BigInt64Array.prototype, BigUint64Array.prototype,
]);

/** A real Uint8Array with honest length getters (isHonestView). */
export function isHonestBytes(value: unknown): value is Uint8Array {
  return value instanceof Uint8Array && isHonestView(value);
}

/** A Buffer or any Uint8Array (zod's instanceof would narrow it to an ArrayBuffer-backed one), with honest length getters. */
export const bytes = instanceCheck<Uint8Array>((value) => isHonestBytes(value), 'expected a Buffer or Uint8Array (not a Proxy, nor one that redefines its length, byteLength, byteOffset or buffer)');

const abortedGetter = Object.getOwnPropertyDescriptor(AbortSignal.prototype, 'aborted')!.get!;
/**
 * A real AbortSignal: instanceof passes Object.create(AbortSignal.prototype),
 * whose `aborted` and addEventListener then throw Node's untyped TypeErrors;
 * the intrinsic getter is the brand check.
 */
export const abortSignal = instanceCheck<AbortSignal>((value) => {
  if (!(value instanceof AbortSignal)) return false;
  try {
    abortedGetter.call(value);
    return true;
  } catch {
    return false;
  }
}, 'expected AbortSignal (a real one, not an object given its prototype)');

/** True for a resizable ArrayBuffer or a growable SharedArrayBuffer (ES2024 properties, absent from the ES2022 lib types). */
export const isResizable = (memory: unknown): boolean =>
  typeof memory === 'object' && memory !== null &&
  ((memory as { resizable?: unknown }).resizable === true || (memory as { growable?: unknown }).growable === true);

/** Bytes to register: a resize can shrink or unmap the memory under the device, so the backing store must have a fixed length. */
const fixedLength = (view: Uint8Array): boolean => !isResizable(view.buffer);
export const registrableBytes = bytes.refine(
  fixedLength,
  'must not be a view of a resizable ArrayBuffer or growable SharedArrayBuffer: a resize could unmap registered memory',
);
instanceTests.set(registrableBytes, (value) => isHonestBytes(value) && fixedLength(value));

/**
 * union ibv_gid as the API takes it: 16 raw bytes. Not strict: a union koffi
 * decoded (an event's dgid) also shows its other member, `global`, the same bytes.
 */
const gid = z.object({
  raw: bytes.refine((raw) => raw.byteLength === 16, 'a GID is 16 bytes'),
});

/**
 * struct ibv_ah_attr (with its struct ibv_global_route), every field required
 * and in its C type's range: koffi.encode aborts the process on a non-number
 * and truncates an out-of-range one. `established.ud.ahAttr` passes as it is.
 */
export const ahAttrSchema = z.strictObject({
  grh: z.strictObject({
    dgid: gid,
    flow_label: z.number().int().min(0).max(0xfffff, 'a flow label is 20 bits'),
    sgid_index: u8,
    hop_limit: u8,
    traffic_class: u8,
  }),
  dlid: u16,
  sl: u8,
  src_path_bits: u8,
  static_rate: u8,
  is_global: u8,
  port_num: u8,
});
