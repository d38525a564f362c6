// The options of rdmacm/net, validated with zod before anything native, and
// node:net's argument overloads normalised in one place. node:net options that
// mean nothing over RDMA are refused by name, never silently ignored.
import dns from 'node:dns';
import { BlockList, isIP } from 'node:net';
import { z } from 'zod';
import { RdmaArgumentError } from '../api/core/errors.js';
import { COMPLETION_MODES, DEFAULT_MAX_SPIN_BUDGET_US, DEFAULT_SPIN_BUDGET_US, MAX_SPIN_BUDGET_US, type CompletionMode } from '../api/work/completion-queue.js';
import { abortSignal, argumentError, bytes, instanceCheck, isViewOrProxyOfOne, parseArgument, timeoutMs, type Holds, type InputIs } from '../api/core/validate.js';
import type { LookupFunction } from './destinations.js';
import { DEFAULTS } from './wire.js';

/** RDMA-specific sizes of one connection (the defaults are rsockets' own), and how it waits for completions. */
export interface RdmaSocketSizes {
  /**
   * Bytes of the receive ring the peer writes into (offered in halves):
   * 4096 to 2^30, a power of two or a multiple of 4096.
   * @defaultValue 131072 (rsockets' default; rstream uses 1 MiB)
   */
  readonly recvBufferSize?: number;
  /**
   * Bytes of the registered send buffer that write() copies into: 4096 to
   * 2^30, a power of two or a multiple of 4096.
   * @defaultValue 131072
   */
  readonly sendBufferSize?: number;
  /**
   * Send queue depth, 16–65534 (and at most the device's limit).
   * @defaultValue 384
   */
  readonly sendQueueDepth?: number;
  /**
   * Receive queue depth, 16–65534 (and at most the device's limit): also the
   * credits (messages) offered to the peer.
   * @defaultValue 384
   */
  readonly recvQueueDepth?: number;
  /**
   * Bytes sent inline (copied into the work request) up to this size, 0–1024.
   * @defaultValue 64
   */
  readonly inlineSize?: number;
  /**
   * Iomap entries the peer may write (riostream asks for 1), 0–32512.
   * @defaultValue 0
   */
  readonly iomapEntries?: number;
  /**
   * The largest data message this side sends, in bytes (1 to 8 MiB, rxe's
   * largest message): a write is sent in messages of up to this size, each
   * also within the peer's current buffer half. rsockets sends at most 64 KiB
   * a message; its receivers take any length, and fewer, larger messages cost
   * less CPU per byte. Set 65536 for rsockets' own chunking.
   * @defaultValue 262144
   */
  readonly maxMessageSize?: number;
  /**
   * How the connection's completion queue waits (CompletionQueue.mode):
   * 'adaptive' polls for its spin budget (spinBudgetUs, learned up to
   * maxSpinBudgetUs) after a completion before it sleeps,
   * 'events' sleeps at once, 'busy-poll' never sleeps (a core stays busy).
   * @defaultValue 'adaptive'
   */
  readonly completionMode?: CompletionMode;
  /**
   * Adaptive mode's spin budget in µs (0–1,000,000), the least it spins:
   * rsockets spins 10 µs.
   * @defaultValue 50
   */
  readonly spinBudgetUs?: number;
  /**
   * The longest spin budget adaptive mode learns, in µs (0–1,000,000; at or
   * under spinBudgetUs the budget is fixed): CompletionQueue.maxSpinBudgetUs.
   * @defaultValue 5000
   */
  readonly maxSpinBudgetUs?: number;
}

/** The largest message rxe carries (RXE_MAX_MSG_SZ); InfiniBand allows 2 GiB. */
const MAX_MESSAGE_SIZE = 1 << 23;
/** Four times rsockets' RS_MAX_TRANSFER: with rstream's 1 MiB rings, two messages to a half. */
const DEFAULT_MAX_MESSAGE_SIZE = DEFAULTS.maxTransfer * 4;

const power2Size = (min: number, max: number) =>
  z.number().int().min(min).max(max).refine((n) => (n & (n - 1)) === 0 || n % 4096 === 0, 'a power of two or a multiple of 4096');

export const sizesSchema = z.strictObject({
  recvBufferSize: power2Size(4096, 1 << 30).default(DEFAULTS.recvBufferSize),
  sendBufferSize: power2Size(4096, 1 << 30).default(DEFAULTS.sendBufferSize),
  sendQueueDepth: z.number().int().min(DEFAULTS.minQueueDepth).max(DEFAULTS.maxQueueDepth).default(DEFAULTS.sendQueueDepth),
  recvQueueDepth: z.number().int().min(DEFAULTS.minQueueDepth).max(DEFAULTS.maxQueueDepth).default(DEFAULTS.recvQueueDepth),
  inlineSize: z.number().int().min(0).max(1024).default(DEFAULTS.inlineSize),
  iomapEntries: z.number().int().min(0).max(0x7f00).default(DEFAULTS.iomapEntries),
  maxMessageSize: z.number().int().min(1).max(MAX_MESSAGE_SIZE).default(DEFAULT_MAX_MESSAGE_SIZE),
  completionMode: z.enum(COMPLETION_MODES as [CompletionMode, ...CompletionMode[]]).default('adaptive'),
  spinBudgetUs: z.number().int().min(0).max(MAX_SPIN_BUDGET_US).default(DEFAULT_SPIN_BUDGET_US),
  maxSpinBudgetUs: z.number().int().min(0).max(MAX_SPIN_BUDGET_US).default(DEFAULT_MAX_SPIN_BUDGET_US),
}) satisfies z.ZodType<Required<RdmaSocketSizes>, RdmaSocketSizes>;
type SizesTied = Holds<InputIs<typeof sizesSchema, RdmaSocketSizes>>;
export type ResolvedSizes = z.output<typeof sizesSchema>;
/** rsockets' sizes, resolved once. */
export const DEFAULT_SIZES: ResolvedSizes = Object.freeze(sizesSchema.parse({}));

/** A port given as a string of digits, as node:net takes one (from argv, a URL, http's options). */
const DIGITS = /^\d+$/;

/**
 * node:net's rule and code for a port: any value but an integer 0–65535 (or,
 * where `digits` allows, a string of its digits) is ERR_SOCKET_BAD_PORT;
 * where `missing` is given, an absent port breaks that rule instead, as
 * node:net's listen(options) without a port does (ERR_INVALID_ARG_VALUE).
 */
const portRule = <Input extends number | string>(missing?: string, digits = true) => z.custom<Input>().superRefine((value, context) => {
  const number = digits && typeof value === 'string' && DIGITS.test(value) ? Number(value) : value;
  if (Number.isInteger(number) && (number as number) >= 0 && (number as number) <= 65535) return;
  const absent = value === undefined && missing !== undefined;
  context.addIssue({
    code: 'custom',
    message: absent ? missing : digits ? 'a port is an integer 0–65535, or a string of its digits' : 'a port is an integer 0–65535',
    params: { code: absent ? 'ERR_INVALID_ARG_VALUE' : 'ERR_SOCKET_BAD_PORT' },
  });
}).transform((value) => Number(value));
const port = portRule<number | string>();
/** node:net takes a local port as a number only. */
const localPort = portRule<number>(undefined, false);
// A refinement, not min/max: zod's length checks read the length of a non-string too (parseArgument catches what that throws, but names only 'options').
// A NUL byte is refused here on every Node, as Node ≥ 22 refuses it (Node 20 hands it to getaddrinfo).
const host = z
  .string()
  .refine((name) => name.length >= 1 && name.length <= 255, 'a name or an address of 1–255 characters')
  .refine((name) => !name.includes('\0'), 'a host name has no NUL byte');

/** An IP type of service, as Node 26 takes it: an integer 0–255 (on RoCE, the connection's traffic class). */
export const typeOfService = z.number().int().min(0).max(255);

/** node:net options with no meaning over RDMA, and why. */
const REFUSED: Record<string, string> = {
  fd: 'an RDMA socket has no file descriptor to adopt',
  path: 'IPC paths are not RDMA: use host and port',
  readable: 'readable and writable come with fd, which an RDMA socket has none of',
  writable: 'readable and writable come with fd, which an RDMA socket has none of',
  readableAll: 'IPC permissions do not apply',
  writableAll: 'IPC permissions do not apply',
};

/** Refuses the node:net options that do not apply, naming each. */
function refuseUnsupported(operation: string, options: object): void {
  const issues = Object.keys(options)
    .filter((key) => Object.hasOwn(REFUSED, key) && (options as Record<string, unknown>)[key] !== undefined)
    .map((key) => ({ path: `options.${key}`, rule: REFUSED[key]!, code: 'ERR_INVALID_ARG_VALUE' as const }));
  if (issues.length > 0) throw new RdmaArgumentError(operation, issues);
}

/**
 * node:net's onread: each read lands in one buffer of the caller's and is
 * handed to `callback`, instead of a fresh Buffer per 'data' event.
 */
export interface RdmaOnread {
  /** The buffer every read fills (1 byte or more), or a function that returns one for each read. */
  readonly buffer: Uint8Array | (() => Uint8Array);
  /** Called with the bytes read and the buffer they are in (`this` is the socket); returning false pauses the socket, as pause() does. */
  readonly callback: (bytesRead: number, buffer: Uint8Array) => unknown;
}

const aFunction = <T>() => instanceCheck<T>((value) => typeof value === 'function', 'expected a function');
/** An object that is no view, nor a Proxy of one (whose buffer getter would throw when read as a key); its keys are checked next. */
const anObjectNotAView = instanceCheck<RdmaOnread>(
  (value) => typeof value === 'object' && value !== null && !isViewOrProxyOfOne(value),
  'expected { buffer, callback }',
);
export const onreadSchema = anObjectNotAView.pipe(z.strictObject({
  buffer: z.union([bytes.refine((view) => view.byteLength > 0, 'a buffer of 1 byte or more'), aFunction<() => Uint8Array>()], {
    error: 'expected a Buffer or Uint8Array of 1 byte or more, or a function that returns one',
  }),
  callback: aFunction<(bytesRead: number, buffer: Uint8Array) => unknown>(),
})) satisfies z.ZodType<unknown, RdmaOnread>;
type OnreadTied = Holds<InputIs<typeof onreadSchema, RdmaOnread>>;
export type ResolvedOnread = z.output<typeof onreadSchema>;

/** The hints dns.lookup takes. */
const LOOKUP_HINTS = dns.ADDRCONFIG | dns.V4MAPPED | dns.ALL;
const blockList = instanceCheck<BlockList>((value) => value instanceof BlockList, 'expected a net.BlockList');

/** What connect() and createConnection() take. */
export interface RdmaConnectOptions {
  /** The peer's port, 0–65535, or a string of its digits as node:net takes it (rdma_cm's TCP port space: rsockets' tools use 7471 and 7427). */
  readonly port: number | string;
  /**
   * The peer's host name or address, 1–255 characters, no NUL byte.
   * @defaultValue 'localhost' (which no RDMA device serves: give the peer's address)
   */
  readonly host?: string;
  /**
   * The numeric IP address to connect from (its RDMA device is used).
   * @defaultValue none: the route to the peer chooses
   */
  readonly localAddress?: string;
  /**
   * The port to connect from, 0–65535; only with localAddress.
   * @defaultValue 0 (rdma_cm picks one)
   */
  readonly localPort?: number;
  /** 0 (any family), or 4 or 6 (node:net's 'IPv4', 'IPv6' too) to restrict name resolution. @defaultValue 0 */
  readonly family?: 0 | 4 | 6 | 'IPv4' | 'IPv6';
  /** dns.lookup's hints: dns.ADDRCONFIG, dns.V4MAPPED and dns.ALL or'd. @defaultValue 0 (dns.ADDRCONFIG when family is 0 too, as node:net) */
  readonly hints?: number;
  /** Resolves a host name, with dns.lookup's signature (it is called with `all: true` under autoSelectFamily). @defaultValue dns.lookup */
  readonly lookup?: LookupFunction;
  /**
   * Tries every address a name resolves to, one at a time, the families
   * alternating (node:net's autoSelectFamily), with 'connectionAttempt',
   * 'connectionAttemptFailed' and 'connectionAttemptTimeout' events; not with
   * localAddress or a family.
   * @defaultValue net.getDefaultAutoSelectFamily() (true unless Node was told otherwise)
   */
  readonly autoSelectFamily?: boolean;
  /** ms before an attempt that is not the last gives way to the next, 1–2147483647 (below 10 counts as 10, as node:net). @defaultValue net.getDefaultAutoSelectFamilyAttemptTimeout() (250) */
  readonly autoSelectFamilyAttemptTimeout?: number;
  /** Addresses never to connect to: a blocked one fails with ERR_IP_BLOCKED before anything native. @defaultValue none */
  readonly blockList?: BlockList;
  /** Idle timeout in ms, 0–2147483647, as setTimeout(). @defaultValue 0 (none) */
  readonly timeout?: number;
  /** Bound on address and route resolution and the connection handshake, in ms, 1–2147483647. @defaultValue 10000 */
  readonly connectTimeout?: number;
  /** Whether the socket stays writable after the peer ends. @defaultValue false: the socket ends its writable side when the peer ends */
  readonly allowHalfOpen?: boolean;
  /** Aborts the connection attempt, or destroys the socket. @defaultValue none */
  readonly signal?: AbortSignal;
  /** Accepted for node:net compatibility; rsockets sends at once anyway. @defaultValue the socket's (true) */
  readonly noDelay?: boolean;
  /** Whether keepalive probes are sent. @defaultValue false */
  readonly keepAlive?: boolean;
  /** ms before the first keepalive probe, 0–2147483647. @defaultValue 0 (7200 s, as TCP's default) */
  readonly keepAliveInitialDelay?: number;
  /** As setTypeOfService() before connecting (Node 26's option): the connection's type of service, 0–255. @defaultValue the device's (default_roce_tos, 0 unless set) */
  readonly typeOfService?: number;
  /** Stream highWaterMark (both sides), in bytes, 1 or more. @defaultValue Node's default */
  readonly highWaterMark?: number;
  /** Reads go to this buffer and callback instead of 'data' events. @defaultValue none: 'data' events */
  readonly onread?: RdmaOnread;
  /** RDMA-specific sizes (see each one's default). @defaultValue rsockets' sizes */
  readonly rdma?: RdmaSocketSizes;
}

export const connectSchema = z.strictObject({
  port,
  host: host.default('localhost'),
  localAddress: z.string().refine((a) => isIP(a) !== 0, 'a numeric IP address').optional(),
  localPort: localPort.optional(),
  family: z.union([z.literal(0), z.literal(4), z.literal(6), z.literal('IPv4').transform(() => 4 as const), z.literal('IPv6').transform(() => 6 as const)]).default(0),
  hints: z.number().int().refine((hints) => hints >= 0 && hints <= LOOKUP_HINTS && (hints & ~LOOKUP_HINTS) === 0, 'dns.ADDRCONFIG, dns.V4MAPPED and dns.ALL, or\'d').default(0),
  lookup: aFunction<LookupFunction>().optional(),
  autoSelectFamily: z.boolean().optional(),
  autoSelectFamilyAttemptTimeout: timeoutMs.min(1).optional(),
  blockList: blockList.optional(),
  timeout: timeoutMs.default(0),
  connectTimeout: timeoutMs.min(1).default(10_000),
  allowHalfOpen: z.boolean().default(false),
  signal: abortSignal.optional(),
  noDelay: z.boolean().optional(),
  keepAlive: z.boolean().default(false),
  keepAliveInitialDelay: timeoutMs.default(0),
  typeOfService: typeOfService.optional(),
  highWaterMark: z.number().int().min(1).optional(),
  onread: onreadSchema.optional(),
  rdma: sizesSchema.default(DEFAULT_SIZES),
}) satisfies z.ZodType<unknown, RdmaConnectOptions>;
type ConnectTied = Holds<InputIs<typeof connectSchema, RdmaConnectOptions>>;
export type ResolvedConnect = z.output<typeof connectSchema>;

/** What createServer() takes. */
export interface RdmaServerOptions {
  /** Whether accepted sockets stay writable after their peer ends. @defaultValue false */
  readonly allowHalfOpen?: boolean;
  /** Accepted sockets start paused. @defaultValue false */
  readonly pauseOnConnect?: boolean;
  /** As RdmaConnectOptions.noDelay, for accepted sockets. @defaultValue true */
  readonly noDelay?: boolean;
  /** Whether accepted sockets send keepalive probes. @defaultValue false */
  readonly keepAlive?: boolean;
  /** ms before the first keepalive probe, 0–2147483647. @defaultValue 0 (7200 s, as TCP's default) */
  readonly keepAliveInitialDelay?: number;
  /** Stream highWaterMark of accepted sockets, in bytes, 1 or more. @defaultValue Node's default */
  readonly highWaterMark?: number;
  /**
   * Reads of every accepted socket go to this buffer and callback instead of
   * 'data' events (an extension: node:net's servers take no onread). One
   * static buffer may serve them all: each callback has it to itself.
   * @defaultValue none: 'data' events
   */
  readonly onread?: RdmaOnread;
  /** Sizes of every accepted connection. @defaultValue rsockets' sizes */
  readonly rdma?: RdmaSocketSizes;
  /** Clients never to accept: a request from a blocked address is rejected before anything is built for it, and 'drop' says why (ERR_IP_BLOCKED). @defaultValue none */
  readonly blockList?: BlockList;
}

export const serverSchema = z.strictObject({
  blockList: blockList.optional(),
  allowHalfOpen: z.boolean().default(false),
  pauseOnConnect: z.boolean().default(false),
  noDelay: z.boolean().default(true),
  keepAlive: z.boolean().default(false),
  keepAliveInitialDelay: timeoutMs.default(0),
  highWaterMark: z.number().int().min(1).optional(),
  onread: onreadSchema.optional(),
  rdma: sizesSchema.default(DEFAULT_SIZES),
}) satisfies z.ZodType<unknown, RdmaServerOptions>;
type ServerTied = Holds<InputIs<typeof serverSchema, RdmaServerOptions>>;
export type ResolvedServer = z.output<typeof serverSchema>;

/** What listen() takes. */
export interface RdmaListenOptions {
  /** The port to listen on, 0–65535 or a string of its digits (0: rdma_cm picks one). Required, as node:net's listen(options) requires port (or path). */
  readonly port: number | string;
  /**
   * The address to listen on, or a name (looked up as node:net looks it up:
   * its first address), 1–255 characters, no NUL byte.
   * @defaultValue '::', every RDMA device's IPv4 and IPv6 addresses, as node:net's (or '0.0.0.0' where '::' cannot be bound)
   */
  readonly host?: string;
  /** Connection requests queued before accept, 0–2147483647. @defaultValue 511, as node:net */
  readonly backlog?: number;
  /** Closes the server when aborted. @defaultValue none */
  readonly signal?: AbortSignal;
  /**
   * On an IPv6 host (or none: `::`), IPv6 clients only, as node:net's: no
   * dual stack, and no fallback to `0.0.0.0` (rdma_cm's AFONLY option).
   * @defaultValue false
   */
  readonly ipv6Only?: boolean;
  /**
   * Taken as node:net takes it, and true either way: an RDMA listener is
   * never shared with cluster workers (node:net's exclusive: false shares
   * the handle only there).
   * @defaultValue false
   */
  readonly exclusive?: boolean;
  /** false only (true is refused): rdma_cm has no SO_REUSEPORT, so one listener holds an address and port. @defaultValue false */
  readonly reusePort?: boolean;
}

export const listenSchema = z.strictObject({
  port: portRule<number | string>("listen(options) needs a port (node:net's needs a port or a path; 0 lets rdma_cm pick one)"),
  host: host.optional(),
  backlog: z.number().int().min(0).max(0x7fffffff).default(511),
  signal: abortSignal.optional(),
  ipv6Only: z.boolean().default(false),
  exclusive: z.boolean().optional(),
  reusePort: z.boolean().refine((reuse) => !reuse, 'rdma_cm has no SO_REUSEPORT: one listener holds an address and port').optional(),
}) satisfies z.ZodType<unknown, RdmaListenOptions>;
type ListenTied = Holds<InputIs<typeof listenSchema, RdmaListenOptions>>;
export type ResolvedListen = z.output<typeof listenSchema>;

export function parseOptions<S extends z.ZodType>(operation: string, schema: S, options: unknown): z.output<S> {
  if (options !== null && typeof options === 'object') refuseUnsupported(operation, options);
  return parseArgument(operation, 'options', schema, options);
}

type Callback = (...args: never[]) => void;

/**
 * A callback parameter: a function. Anything else is refused by name, where
 * node:net would ignore it or fail later, outside the call.
 */
export function requiredCallback<T extends Callback>(operation: string, parameter: string, value: unknown): T {
  if (typeof value === 'function') return value as T;
  throw argumentError(operation, parameter, 'expected a function', 'ERR_INVALID_ARG_TYPE');
}

/** A callback parameter that may be absent (undefined). */
export function optionalCallback<T extends Callback>(operation: string, parameter: string, value: unknown): T | undefined {
  return value === undefined ? undefined : requiredCallback<T>(operation, parameter, value);
}

/** An overload's positional arguments, and the callback taken off the end. */
function splitCallback(args: readonly unknown[]): { rest: readonly unknown[]; callback: Callback | undefined } {
  const last = args[args.length - 1];
  return typeof last === 'function' ? { rest: args.slice(0, -1), callback: last as Callback } : { rest: args, callback: undefined };
}

/** Arguments past an overload's `taken` positions must be absent: junk there is refused, never ignored. */
function refuseExtra(operation: string, rest: readonly unknown[], taken: number, callbackName: string): void {
  if (rest.slice(taken).some((value) => value !== undefined)) throw argumentError(operation, callbackName, 'expected a function (the last argument)', 'ERR_INVALID_ARG_TYPE');
}

/** connect()'s overloads, node:net's way: (options[, cb]) or (port[, host][, cb]). */
export function normalizeConnectArgs(args: readonly unknown[]): { options: ResolvedConnect; callback: Callback | undefined } {
  const { rest, callback } = splitCallback(args);
  const first = rest[0];
  // connect() and connect(undefined, host) are the positional overload without a port, refused at options.port.
  const positional = typeof first === 'number' || typeof first === 'string' || first === undefined;
  const raw = positional ? { port: first, ...(rest[1] !== undefined ? { host: rest[1] } : {}) } : first;
  const options = parseOptions('connect', connectSchema, raw);
  refuseExtra('connect', rest, positional ? 2 : 1, 'connectListener');
  return { options, callback };
}

/** listen()'s overloads: (options[, cb]), (port[, host][, backlog][, cb]), (port, backlog[, cb]), () with cb. */
export function normalizeListenArgs(args: readonly unknown[]): { options: ResolvedListen; callback: Callback | undefined } {
  const { rest, callback } = splitCallback(args);
  const first = rest[0];
  const positional = typeof first === 'number' || typeof first === 'string' || first === null || first === undefined;
  // A number second is the backlog: node:net's listen(port, backlog).
  const backlogSecond = positional && typeof rest[1] === 'number';
  const hostArg = backlogSecond ? undefined : rest[1];
  const backlogArg = backlogSecond ? rest[1] : rest[2];
  const raw = positional
    ? { port: first == null ? 0 : first, ...(hostArg !== undefined ? { host: hostArg } : {}), ...(backlogArg !== undefined ? { backlog: backlogArg } : {}) }
    : first;
  const options = parseOptions('listen', listenSchema, raw);
  refuseExtra('listen', rest, !positional ? 1 : backlogSecond ? 2 : 3, 'listeningListener');
  return { options, callback };
}
