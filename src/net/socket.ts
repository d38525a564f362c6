// RdmaSocket: a node:net-shaped stream.Duplex over one rsockets connection.
// _read pulls bytes out of the receive ring (returning space and credits to
// the peer as it goes), _write copies into the registered send buffer, _final
// sends rsockets' SHUTDOWN, _destroy its DISCONNECT. Everything the socket
// reports (connecting, pending, readyState) is derived from the stream's and
// the connection's state.
import { Buffer } from 'node:buffer';
import { EventEmitter } from 'node:events';
import process from 'node:process';
import { Duplex } from 'node:stream';
import { getDefaultAutoSelectFamily, getDefaultAutoSelectFamilyAttemptTimeout } from 'node:net';
import { isUint8Array } from 'node:util/types';
import { createId, type CmId } from '../api/cm/cm-id.js';
import type { SocketAddress } from '../api/cm/socket-address.js';
import {
  abortSignal, argumentError, bytes, isHonestBytes, isHonestView, isResizable, parseArgument, registrableBytes, timeoutMs, type Holds, type InputIs,
} from '../api/core/validate.js';
import { abortError, InvalidThisError, asObject } from '../api/core/errors.js';
import { guardInherited } from './inherited-guard.js';
import { ChannelHold } from './shared-channel.js';
import { connectInTurn } from './connect-attempts.js';
import { blockedError, lookupDestinations, type Destination } from './destinations.js';
import { StreamConnection, type StreamEvents } from './stream-connection.js';
import { RingQueue } from './ring-queue.js';
import { ProtocolError, decodeConnData, type ConnData } from './wire.js';
import { RdmaNetCodeError, RdmaNetError, connectFailure, rethrow } from './errors.js';
import {
  DEFAULT_SIZES, normalizeConnectArgs, onreadSchema, optionalCallback, parseOptions, sizesSchema, typeOfService,
  type RdmaConnectOptions, type RdmaOnread, type RdmaSocketSizes, type ResolvedConnect, type ResolvedOnread, type ResolvedSizes,
} from './options.js';
import { z } from 'zod';

/** Bytes handed to 'data' at most per chunk. */
const READ_CHUNK = 64 * 1024;
/** rsockets' (and TCP's) keepalive period when none is given: 7200 s. */
const DEFAULT_KEEPALIVE_MS = 7_200_000;
/** An offset in the peer's remote address space (rsockets' iomap offsets). */
const iomapOffset = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
const mapOptionsSchema = z.strictObject({ offset: iomapOffset.default(0) });
const EMPTY = Buffer.alloc(0);

type WriteCallback = (error?: Error | null) => void;

/** What node:net's own connect() uses of a stream's internals to reconnect (Node 20 to 26 have both). */
interface StreamInternals {
  _readableState: { closeEmitted: boolean };
  _undestroy(): void;
}

/**
 * Bytes the socket may hold until they are staged. A detached view, or one a
 * shrunk resizable buffer left out of bounds, holds nothing (and throws where
 * it is read); a view of a resizable buffer is copied, so a resize cannot
 * change what was written.
 */
function heldBytes(view: ArrayBufferView): Uint8Array {
  if (view.byteLength === 0) return EMPTY;
  // isUint8Array, not instanceof: a Uint16Array given Buffer.prototype passes instanceof, and indexes by element.
  const bytes = isUint8Array(view) ? view : new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
  return isResizable(view.buffer) ? Buffer.from(bytes) : bytes;
}

/**
 * write()'s and end()'s (chunk, encoding, callback), checked where Node's
 * Writable is not: a byte chunk must not lie about its length (a Proxy, a
 * redefined length getter: Node throws a bare TypeError or RangeError, or
 * reads other memory), an encoding is a name Buffer knows (Node's end()
 * ignores any when it has no chunk), a callback a function. Strings and other
 * chunks are Node's to check (ERR_INVALID_ARG_TYPE, ERR_STREAM_NULL_VALUES).
 */
function writeArguments(operation: string, chunk: unknown, encoding: unknown, callback: unknown): [unknown, BufferEncoding | undefined, WriteCallback | undefined] {
  if (typeof encoding === 'function') {
    if (callback !== undefined && callback !== null) throw argumentError(operation, 'callback', 'already given as the second argument', 'ERR_INVALID_ARG_VALUE');
    [encoding, callback] = [undefined, encoding];
  }
  // Node's own http passes null for an absent encoding or callback; '' is Node's default too.
  if (encoding !== undefined && encoding !== null && !(typeof encoding === 'string' && (encoding === '' || encoding === 'buffer' || Buffer.isEncoding(encoding)))) {
    throw argumentError(operation, 'encoding', 'expected an encoding name (utf8, hex, base64, latin1, …)', 'ERR_UNKNOWN_ENCODING');
  }
  if (encoding === 'buffer' && typeof chunk === 'string') throw argumentError(operation, 'encoding', "'buffer' names no encoding of a string", 'ERR_INVALID_ARG_VALUE');
  const checkedCallback = optionalCallback<WriteCallback>(operation, 'callback', callback ?? undefined);
  // Node's Writable takes any typed array or DataView, as the bytes it views.
  if (ArrayBuffer.isView(chunk) || chunk instanceof Uint8Array) {
    if (!isHonestView(chunk)) throw argumentError(operation, 'chunk', 'expected a Buffer, typed array or DataView (not a Proxy, nor one that redefines its length, byteLength, byteOffset or buffer)', 'ERR_INVALID_ARG_TYPE');
    chunk = heldBytes(chunk);
  }
  return [chunk, (encoding ?? undefined) as BufferEncoding | undefined, checkedCallback];
}

/** What `new RdmaSocket()` takes. */
export interface RdmaSocketOptions {
  /** Whether the socket stays writable after the peer ends. @defaultValue false */
  readonly allowHalfOpen?: boolean;
  /** Stream highWaterMark (both sides), in bytes, 1 or more. @defaultValue Node's default */
  readonly highWaterMark?: number;
  /** Aborting destroys the socket with an AbortError. @defaultValue none */
  readonly signal?: AbortSignal;
  /** Reads go to this buffer and callback instead of 'data' events. @defaultValue none: 'data' events */
  readonly onread?: RdmaOnread;
  /** RDMA-specific sizes (see each one's default). @defaultValue rsockets' sizes */
  readonly rdma?: RdmaSocketSizes;
  /** As setNoDelay() (kept only to report: there is no Nagle here). @defaultValue true */
  readonly noDelay?: boolean;
  /** As setKeepAlive(true, keepAliveInitialDelay), once connected. @defaultValue false */
  readonly keepAlive?: boolean;
  /** ms before the first keepalive probe, 0–2147483647. @defaultValue 0 (7200 s, as TCP's default) */
  readonly keepAliveInitialDelay?: number;
  /** As setTypeOfService() (Node 26's option): the type of service the socket connects with, 0–255. @defaultValue the device's (default_roce_tos, 0 unless set) */
  readonly typeOfService?: number;
}

const socketSchema = z.strictObject({
  noDelay: z.boolean().default(true),
  keepAlive: z.boolean().default(false),
  keepAliveInitialDelay: timeoutMs.default(0),
  typeOfService: typeOfService.optional(),
  allowHalfOpen: z.boolean().default(false),
  highWaterMark: z.number().int().min(1).optional(),
  signal: abortSignal.optional(),
  onread: onreadSchema.optional(),
  rdma: sizesSchema.optional(),
});
type SocketOptionsTied = Holds<InputIs<typeof socketSchema, RdmaSocketOptions>>;

/** Writes waiting for staging room: the chunks, where in them, and the stream's callback. */
interface PendingWrite {
  readonly chunks: readonly Uint8Array[];
  index: number;
  offset: number;
  readonly callback: (error?: Error | null) => void;
}

/** Bytes waiting for staging room on their way into the peer's mapped memory (writeToRemote). */
interface PendingDirect {
  readonly data: Uint8Array;
  offset: number;
  readonly remoteOffset: number;
  readonly resolve: () => void;
  readonly reject: (error: Error) => void;
}

/** A buffer this socket lets the peer RDMA-write into (rsockets' riomap), until unmap(). */
export interface RdmaMapping {
  /** Where the buffer sits in this socket's remote address space (the peer's writeToRemote offsets). */
  readonly offset: number;
  readonly length: number;
  /** Stops offering it (nothing is sent: the peer may still hold the entry) and deregisters it. */
  unmap(): void;
}

/** Set by RdmaSocket's static block: only this module reaches a socket's private state. */
let attachAccepted: (socket: RdmaSocket, hold: ChannelHold, id: CmId, conn: StreamConnection, peer: ConnData) => void;
let eventsOf: (socket: RdmaSocket) => StreamEvents;
let isSocket: (value: unknown) => boolean;

export class RdmaSocket extends Duplex {
  /** The brand every member checks first (`#brand in asObject(this)`): only the instances this package made have it. */
  readonly #brand = true;
  #sizes: ResolvedSizes | undefined;
  #hold: ChannelHold | undefined;
  #id: CmId | undefined;
  #conn: StreamConnection | undefined;
  #connecting = false;
  #wantsRead = false;
  #eofPushed = false;
  /** node:net's onread: where reads go instead of push(). */
  #onread: ResolvedOnread | undefined;
  #pendingWrite: PendingWrite | undefined;
  #pendingFinal: ((error?: Error | null) => void) | undefined;
  readonly #pendingDirect = new RingQueue<PendingDirect>();
  #reset = false;
  #keepProcessAlive = true;
  #keepaliveMs: number | undefined;
  #idleMs = 0;
  #idleTimer: NodeJS.Timeout | undefined;
  #remote: SocketAddress | undefined;
  #local: SocketAddress | undefined;
  #bytesRead = 0;
  #bytesWritten = 0;
  #attemptedAddresses: string[] | undefined;
  /** The type of service asked for (setTypeOfService, the typeOfService option), applied when the route is resolved. */
  #typeOfService: number | undefined;
  /** The route is resolved (or came with an accepted connection): its traffic class is fixed. */
  #routeFixed = false;
  /** node:net's noDelay: there is no Nagle here (writes wait only while a message's worth is in flight), so it is kept only to report. */
  noDelay = true;

  constructor(options: RdmaSocketOptions = {}) {
    const o = parseOptions('RdmaSocket', socketSchema, options);
    super({ allowHalfOpen: o.allowHalfOpen, ...(o.highWaterMark ? { highWaterMark: o.highWaterMark } : {}) });
    this.#sizes = o.rdma;
    this.#onread = o.onread;
    this.noDelay = o.noDelay;
    if (o.keepAlive) this.#keepaliveMs = o.keepAliveInitialDelay || DEFAULT_KEEPALIVE_MS;
    this.#typeOfService = o.typeOfService;
    if (o.signal) this.#watchSignal(o.signal);
  }

  #watchSignal(signal: AbortSignal): void {
    if (signal.aborted) {
      process.nextTick(() => this.destroy(abortError(signal)));
      return;
    }
    const onAbort = () => this.destroy(abortError(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    this.once('close', () => signal.removeEventListener('abort', onAbort));
  }

  // ---- node:net's state ------------------------------------------------------

  /** True from connect() until 'connect' (or failure). */
  get connecting(): boolean {
    if (!(#brand in asObject(this))) throw new InvalidThisError('RdmaSocket');
    return this.#connecting;
  }

  /** True until the socket is connected. */
  get pending(): boolean {
    if (!(#brand in asObject(this))) throw new InvalidThisError('RdmaSocket');
    return this.#conn === undefined || this.#connecting;
  }

  get readyState(): 'opening' | 'open' | 'readOnly' | 'writeOnly' | 'closed' {
    if (!(#brand in asObject(this))) throw new InvalidThisError('RdmaSocket');
    if (this.#connecting) return 'opening';
    if (this.readable && this.writable) return 'open';
    if (this.readable) return 'readOnly';
    if (this.writable) return 'writeOnly';
    return 'closed';
  }

  /** Bytes written and not yet handed to the device (writableLength), once connected: node:net's older name for it. */
  get bufferSize(): number | undefined {
    if (!(#brand in asObject(this))) throw new InvalidThisError('RdmaSocket');
    return this.#conn ? this.writableLength : undefined;
  }

  get bytesRead(): number {
    if (!(#brand in asObject(this))) throw new InvalidThisError('RdmaSocket');
    return this.#conn?.bytesRead ?? this.#bytesRead;
  }

  /** Bytes handed to the device (posted), as node:net counts what reached the kernel. */
  get bytesWritten(): number {
    if (!(#brand in asObject(this))) throw new InvalidThisError('RdmaSocket');
    return this.#conn?.bytesWritten ?? this.#bytesWritten;
  }

  get remoteAddress(): string | undefined {
    if (!(#brand in asObject(this))) throw new InvalidThisError('RdmaSocket');
    return this.#remote?.address;
  }
  get remotePort(): number | undefined {
    if (!(#brand in asObject(this))) throw new InvalidThisError('RdmaSocket');
    return this.#remote?.port;
  }
  get remoteFamily(): string | undefined {
    if (!(#brand in asObject(this))) throw new InvalidThisError('RdmaSocket');
    return this.#remote?.family;
  }
  get localAddress(): string | undefined {
    if (!(#brand in asObject(this))) throw new InvalidThisError('RdmaSocket');
    return this.#local?.address;
  }
  get localPort(): number | undefined {
    if (!(#brand in asObject(this))) throw new InvalidThisError('RdmaSocket');
    return this.#local?.port;
  }
  get localFamily(): string | undefined {
    if (!(#brand in asObject(this))) throw new InvalidThisError('RdmaSocket');
    return this.#local?.family;
  }

  /** The local end, as node:net's socket.address(): {} before the connection. */
  address(): { address: string; family: string; port: number } | Record<string, never> {
    if (!(#brand in asObject(this))) throw new InvalidThisError('RdmaSocket');
    return this.#local ? { address: this.#local.address, family: this.#local.family, port: this.#local.port } : {};
  }

  /** The idle timeout set by setTimeout() or the `timeout` option, in ms (0: none). */
  get timeout(): number {
    if (!(#brand in asObject(this))) throw new InvalidThisError('RdmaSocket');
    return this.#idleMs;
  }

  /** The RDMA sizes of this connection (the defaults until it connects). */
  get rdma(): ResolvedSizes {
    if (!(#brand in asObject(this))) throw new InvalidThisError('RdmaSocket');
    return this.#conn?.sizes ?? this.#sizes ?? DEFAULT_SIZES;
  }

  // ---- connecting --------------------------------------------------------------

  /** connect(options[, listener]) or connect(port[, host][, listener]), as node:net's. */
  connect(options: RdmaConnectOptions, connectListener?: () => void): this;
  connect(port: number, host?: string, connectListener?: () => void): this;
  connect(port: number, connectListener?: () => void): this;
  connect(...args: unknown[]): this {
    if (!(#brand in asObject(this))) throw new InvalidThisError('RdmaSocket');
    const { options, callback } = normalizeConnectArgs(args);
    if (this.#connecting || this.#conn) throw new RdmaNetCodeError('ERR_SOCKET_CONNECTING', 'the socket is already connecting or connected');
    if (this.destroyed) this.#reopen();
    if (callback) this.once('connect', callback as () => void);
    if (options.signal) this.#watchSignal(options.signal);
    this.#sizes = options.rdma;
    if (options.onread) this.#onread = options.onread;
    if (options.timeout > 0) this.setTimeout(options.timeout);
    if (options.keepAlive) this.#keepaliveMs = options.keepAliveInitialDelay || DEFAULT_KEEPALIVE_MS;
    if (options.noDelay !== undefined) this.noDelay = options.noDelay;
    if (options.typeOfService !== undefined) this.#typeOfService = options.typeOfService;
    this.#connecting = true;
    // As node:net: the attempt starts on the next tick, so the socket is connecting when connect() returns, never already failed.
    process.nextTick(() => void this.#connect(options));
    return this;
  }

  /**
   * node:net's reconnect: a socket whose 'close' has been emitted may
   * connect() again, as a fresh one (node:net's docs allow it only then).
   * Before that, its native resources may still be on their way out.
   */
  #reopen(): void {
    const stream = this as unknown as StreamInternals;
    if (!stream._readableState.closeEmitted) {
      throw new RdmaNetCodeError('ERR_SOCKET_CLOSED', "the socket is closing: connect() it again once 'close' has been emitted");
    }
    this.#eofPushed = false;
    this.#reset = false;
    this.#remote = this.#local = undefined;
    this.#attemptedAddresses = undefined;
    this.#routeFixed = false;
    this.#bytesRead = this.#bytesWritten = 0;
    // node:net's own way back (its connect() does the same): the stream's states as a new socket's.
    stream._undestroy();
    // A socket that flows (a 'data' listener, a pipe) reads again from the new connection at once.
    this.#wantsRead = this.readableFlowing === true;
  }

  async #connect(o: ResolvedConnect): Promise<void> {
    if (this.destroyed) return;
    try {
      // node:net's autoSelectFamily: every address of a name, unless the family or the local address is fixed.
      const all = (o.autoSelectFamily ?? getDefaultAutoSelectFamily()) && o.family === 0 && o.localAddress === undefined;
      const destinations = await lookupDestinations(this, { host: o.host, port: o.port, family: o.family, hints: o.hints, lookup: o.lookup, all });
      if (this.destroyed) return;
      let peer: ConnData | undefined;
      if (destinations.length === 1) {
        const blocked = blockedError(o.blockList, destinations[0]!);
        if (blocked) throw blocked;
        peer = await this.#attempt(destinations[0]!, o, undefined);
      } else {
        const attempted = (this.#attemptedAddresses = []);
        const attemptTimeoutMs = Math.max(10, o.autoSelectFamilyAttemptTimeout ?? getDefaultAutoSelectFamilyAttemptTimeout());
        const plan = { port: o.port, attemptTimeoutMs, blockList: o.blockList, attempted };
        peer = await connectInTurn(this, destinations, plan, (destination, abandoned) => this.#attempt(destination, o, abandoned), () => this.destroyed);
      }
      if (this.destroyed || !peer) return;
      this.#start(this.#conn!, peer);
      this.#connecting = false;
      this.emit('connect');
      this.emit('ready');
      // What #start's first completions brought while the socket still counted as connecting: the peer's
      // first credits or bytes can land before its ESTABLISHED is read, and no later completion need come.
      if (!this.destroyed) this.#caughtUp();
    } catch (error) {
      this.#connecting = false;
      if (this.destroyed) return;
      this.destroy(error as Error);
    }
  }

  /**
   * One connection attempt to `destination`: the peer's connection data, or
   * undefined if the socket was destroyed meanwhile (its _destroy releases
   * what was made). A failure is node:net's error for it, and an attempt
   * that may give way to another (`abandoned` given) releases what it made
   * first.
   */
  async #attempt(destination: Destination, o: ResolvedConnect, abandoned: AbortSignal | undefined): Promise<ConnData | undefined> {
    const { address } = destination;
    const signal = abandoned && o.signal ? AbortSignal.any([o.signal, abandoned]) : abandoned ?? o.signal;
    try {
      const hold = (this.#hold = new ChannelHold());
      hold.setKeepAlive(this.#keepProcessAlive);
      const id = (this.#id = createId(hold.channel, { portSpace: 'TCP' }));
      const wait = { timeoutMs: o.connectTimeout, ...(signal ? { signal } : {}) };
      const source = o.localAddress ? { source: { address: o.localAddress, port: o.localPort ?? 0 } } : {};
      await id.resolveAddr({ address, port: o.port }, { ...wait, ...source });
      // rdma_cm takes a type of service only until the route is resolved: from here on it is fixed.
      if (this.#typeOfService !== undefined) id.setOption({ option: 'TOS', value: this.#typeOfService });
      this.#routeFixed = true;
      await id.resolveRoute(wait);
      if (this.destroyed) return undefined;
      const conn = new StreamConnection(id, o.rdma, this.#events);
      this.#conn = conn;
      // rsockets' active side: flow control, retries forever on RNR, no RDMA reads.
      const established = await id.connect(
        { privateData: conn.connData(), responderResources: 0, initiatorDepth: 0, flowControl: 1, retryCount: 7, rnrRetryCount: 7 }, wait,
      );
      if (this.destroyed) return undefined;
      return decodeConnData(established.privateData);
    } catch (error) {
      if (this.destroyed) return undefined;
      if (abandoned) this.#releaseAttempt();
      throw error instanceof ProtocolError ? error : connectFailure(error, address, o.port);
    }
  }

  /** Releases a failed attempt's id, connection and channel, so the next attempt starts clean. */
  #releaseAttempt(): void {
    const conn = this.#conn;
    const id = this.#id;
    const hold = this.#hold;
    this.#conn = this.#id = this.#hold = undefined;
    this.#routeFixed = false;
    try {
      if (conn) conn.release();
      else id?.close();
    } catch {
      // an id the peer or the abort already took down: nothing more to release
    }
    hold?.release();
  }

  /**
   * node:net's autoSelectFamilyAttemptedAddresses: `address:port` of each
   * address tried, when the host's name resolved to more than one.
   */
  get autoSelectFamilyAttemptedAddresses(): string[] | undefined {
    if (!(#brand in asObject(this))) throw new InvalidThisError('RdmaSocket');
    return this.#attemptedAddresses;
  }

  static {
    isSocket = (value) => #brand in asObject(value);
    eventsOf = (socket) => socket.#events;
    attachAccepted = (socket, hold, id, conn, peer) => {
      socket.#hold = hold;
      socket.#id = id;
      socket.#conn = conn;
      socket.#routeFixed = true;
      socket.#start(conn, peer);
      socket.#caughtUp();
    };
  }

  #start(conn: StreamConnection, peer: ConnData): void {
    const id = this.#id!;
    this.#remote = id.peerAddress && { ...id.peerAddress, port: id.peerPort };
    this.#local = id.localAddress && { ...id.localAddress, port: id.localPort };
    conn.setKeepProcessAlive(this.#keepProcessAlive);
    conn.start(peer);
    if (this.#keepaliveMs !== undefined) conn.setKeepalive(this.#keepaliveMs);
    id.waitForDisconnect().then(() => conn.peerDisconnected(), () => undefined);
    this.#refreshIdle();
  }

  /** Reads what is waiting and writes what was queued: once connected, as a completion would. */
  #caughtUp(): void {
    this.#onReadable();
    this.#continueWrite();
  }

  // ---- what the connection tells the socket ------------------------------------------

  /**
   * Handed to the connection instead of the socket, so the socket's public
   * type shows none of it. The connection calls these from its completions;
   * what they run of the user's ('data' listeners, write callbacks, onread)
   * may throw, and that reaches the process, as from a node:net socket,
   * instead of failing the connection as if the peer had reset it.
   */
  readonly #events: StreamEvents = {
    onReadable: () => {
      try {
        this.#onReadable();
      } catch (error) {
        process.nextTick(rethrow, error);
      }
    },
    onWritable: () => {
      try {
        this.#continueDirect();
        this.#continueWrite();
      } catch (error) {
        process.nextTick(rethrow, error);
      }
    },
    onFailure: (error) => this.#onFailure(error),
  };

  #onReadable(): void {
    if (this.#wantsRead || this.#onread) this.#pull();
    // Nobody is reading (a socket only written to): as node:net, push the end anyway so 'end' comes and the socket can close.
    else if (this.#conn?.readEnded && !this.#eofPushed) this.#pushEnd();
  }

  /** push(null), then read(0) so that 'end' comes even to a socket nobody reads with push()'s stream. */
  #pushEnd(): void {
    this.#eofPushed = true;
    this.push(null);
    this.read(0);
  }

  #onFailure(error: Error): void {
    this.destroy(error instanceof ProtocolError ? error : new RdmaNetError('read', (error as { code?: string }).code ?? 'ECONNRESET', {
      address: this.#remote?.address, port: this.#remote?.port, cause: error,
    }));
  }

  // ---- the stream ------------------------------------------------------------------

  override _read(): void {
    if (!(#brand in asObject(this))) throw new InvalidThisError('RdmaSocket');
    this.#wantsRead = true;
    this.#pull();
  }

  #pull(): void {
    const conn = this.#conn;
    if (!conn || this.#connecting || this.#eofPushed) return;
    if (this.#onread) return this.#deliver(conn, this.#onread);
    while (this.#wantsRead) {
      const chunk = conn.read(READ_CHUNK);
      if (!chunk) {
        if (conn.readEnded) {
          this.#wantsRead = false;
          this.#eofPushed = true;
          this.push(null);
        }
        return;
      }
      this.#refreshIdle();
      if (!this.push(chunk)) this.#wantsRead = false;
    }
  }

  /**
   * onread: waiting bytes go into the caller's buffer, one run of the ring per
   * callback, until none wait or the socket is paused (node:net's reads stop
   * while paused, and so does its end).
   */
  #deliver(conn: StreamConnection, onread: ResolvedOnread): void {
    while (!this.isPaused() && !this.destroyed) {
      if (conn.readableLength === 0) {
        if (conn.readEnded) this.#pushEnd();
        return;
      }
      const target = typeof onread.buffer === 'function' ? onread.buffer() : onread.buffer;
      if (!isHonestBytes(target) || target.byteLength === 0) {
        const what = typeof onread.buffer === 'function' ? 'onread.buffer() returned' : 'onread.buffer is now';
        this.destroy(new RdmaNetCodeError('ERR_INVALID_RETURN_VALUE', `${what} no Buffer or Uint8Array of 1 byte or more (a detached buffer has 0)`));
        return;
      }
      const length = conn.readInto(target);
      if (length === 0) return; // released under us: nothing more to read
      this.#refreshIdle();
      if (onread.callback.call(this, length, target) === false) this.pause();
    }
  }

  /** As a stream's; with onread, reading goes on from where pause() or the callback's false stopped it. */
  override resume(): this {
    if (!(#brand in asObject(this))) throw new InvalidThisError('RdmaSocket');
    super.resume();
    // Not within resume(): node:net's reads come from the loop too.
    if (this.#onread) process.nextTick(() => this.#pull());
    return this;
  }

  /** write(chunk[, encoding][, callback]), as a stream's, with its arguments checked (writeArguments). */
  override write(chunk: unknown, encoding?: BufferEncoding | ((error?: Error | null) => void) | null, callback?: ((error?: Error | null) => void) | null): boolean {
    if (!(#brand in asObject(this))) throw new InvalidThisError('RdmaSocket');
    const [data, checkedEncoding, checkedCallback] = writeArguments('write', chunk, encoding, callback);
    return super.write(data, checkedEncoding as BufferEncoding, checkedCallback);
  }

  /** end([chunk][, encoding][, callback]), as a stream's, with its arguments checked (writeArguments). */
  override end(chunk?: unknown, encoding?: BufferEncoding | ((error?: Error | null) => void) | null, callback?: ((error?: Error | null) => void) | null): this {
    if (!(#brand in asObject(this))) throw new InvalidThisError('RdmaSocket');
    if (typeof chunk === 'function') {
      if (encoding !== undefined || callback !== undefined) throw argumentError('end', 'callback', 'already given as the first argument', 'ERR_INVALID_ARG_VALUE');
      [chunk, encoding] = [undefined, chunk as WriteCallback];
    }
    const [data, checkedEncoding, checkedCallback] = writeArguments('end', chunk, encoding, callback);
    if (this.destroyed && !this.writableEnded && checkedCallback) {
      // Node's Writable keeps an end callback after a plain destroy() for a 'finish' that never comes (node:net's sockets too):
      // answered as Node answers it after destroy(error).
      process.nextTick(() => checkedCallback(new RdmaNetCodeError('ERR_STREAM_DESTROYED', 'Cannot call end after a stream was destroyed')));
      return super.end(data, checkedEncoding as BufferEncoding);
    }
    return super.end(data, checkedEncoding as BufferEncoding, checkedCallback);
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    if (!(#brand in asObject(this))) throw new InvalidThisError('RdmaSocket');
    // Most writes fit the staging ring at once: they complete here, with no record of a pending write made.
    const conn = this.#conn;
    let taken = 0;
    if (conn && !this.#connecting && conn.writable) {
      taken = conn.write(chunk, 0);
      if (taken === chunk.byteLength) {
        this.#refreshIdle();
        return callback();
      }
    }
    this.#queueWrite([chunk], callback, taken);
  }

  override _writev(chunks: { chunk: Buffer }[], callback: (error?: Error | null) => void): void {
    if (!(#brand in asObject(this))) throw new InvalidThisError('RdmaSocket');
    this.#queueWrite(chunks.map((c) => c.chunk), callback);
  }

  /** Queues `chunks` to be written, the first `taken` bytes of the first already in the staging ring. */
  #queueWrite(chunks: readonly Uint8Array[], callback: (error?: Error | null) => void, taken = 0): void {
    // As node:net: a socket neither connecting nor connected has nowhere to write to (it would wait for ever).
    if (!this.#conn && !this.#connecting) return callback(new RdmaNetCodeError('ERR_SOCKET_CLOSED', 'write: the socket is not connected'));
    this.#pendingWrite = { chunks, index: 0, offset: taken, callback };
    this.#continueWrite();
  }

  /** Copies the pending write into the staging ring as room allows; its callback runs when all of it is in. */
  #continueWrite(): void {
    const pending = this.#pendingWrite;
    const conn = this.#conn;
    if (pending && conn && !this.#connecting) {
      if (!conn.writable) {
        this.#pendingWrite = undefined;
        pending.callback(new RdmaNetError('write', 'EPIPE', { address: this.#remote?.address, port: this.#remote?.port, message: 'the peer ended the connection' }));
        return;
      }
      while (pending.index < pending.chunks.length) {
        const chunk = pending.chunks[pending.index]!;
        pending.offset += conn.write(chunk, pending.offset);
        if (pending.offset < chunk.byteLength) return;
        pending.index++;
        pending.offset = 0;
      }
      this.#pendingWrite = undefined;
      this.#refreshIdle();
      pending.callback();
    }
    if (!this.#pendingWrite && this.#pendingFinal && conn && !this.#connecting) {
      const final = this.#pendingFinal;
      this.#pendingFinal = undefined;
      conn.end().then(() => final(), final);
    }
  }

  override _final(callback: (error?: Error | null) => void): void {
    if (!(#brand in asObject(this))) throw new InvalidThisError('RdmaSocket');
    if (!this.#conn && !this.#connecting) return callback();
    this.#pendingFinal = callback;
    this.#continueWrite();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    if (!(#brand in asObject(this))) throw new InvalidThisError('RdmaSocket');
    clearTimeout(this.#idleTimer);
    // Made only for something still waiting: an error and its stack cost a socket's close about half a millisecond in the soft-RoCE guest.
    let closed = error;
    const closedError = (): Error => (closed ??= new RdmaNetCodeError('ERR_SOCKET_CLOSED', 'the socket was destroyed'));
    for (const pending of this.#pendingDirect.takeAll()) pending.reject(closedError());
    // A write or an end still waiting for room or for the connection is answered now: nothing else would answer it.
    const write = this.#pendingWrite;
    const final = this.#pendingFinal;
    this.#pendingWrite = undefined;
    this.#pendingFinal = undefined;
    write?.callback(closedError());
    final?.(closedError());
    this.#connecting = false;
    const conn = this.#conn;
    const finish = () => {
      this.#bytesRead = conn?.bytesRead ?? 0;
      this.#bytesWritten = conn?.bytesWritten ?? 0;
      this.#conn = undefined;
      try {
        if (!conn) this.#id?.close();
      } catch {
        // closing a half-made id: nothing more to release
      }
      this.#hold?.release();
      this.#hold = undefined;
      callback(error);
    };
    if (!conn || conn.released) return finish();
    if (error || this.#reset) {
      try {
        conn.release();
      } catch {
        // the release error is secondary to the one being reported
      }
      return finish();
    }
    conn.close().then(finish, (closeError: Error) => {
      error ??= closeError;
      finish();
    });
  }

  // ---- RDMA extension: the peer's memory (rsockets' iomap) --------------------------------

  /**
   * Lets the peer RDMA-write straight into `buffer` (rsockets' riomap with
   * PROT_WRITE): the buffer is registered for remote writes and its entry
   * {offset, address, key, length} goes to the peer before this socket's next
   * message. The peer's writes raise no event: read the buffer (riostream
   * polls a marker byte). Needs the peer to offer iomap entries (its
   * `rdma.iomapEntries`, riostream's 1); fails with ENOMEM when none is free.
   */
  mapForRemoteWrite(buffer: Uint8Array, options: { offset?: number } = {}): RdmaMapping {
    if (!(#brand in asObject(this))) throw new InvalidThisError('RdmaSocket');
    const operation = 'mapForRemoteWrite';
    parseArgument(operation, 'buffer', registrableBytes, buffer);
    const { offset } = parseArgument(operation, 'options', mapOptionsSchema, options);
    const conn = this.#connected(operation);
    const mapping = conn.map(buffer, offset);
    let mapped = true;
    return {
      offset, length: buffer.byteLength,
      unmap: () => {
        if (mapped) conn.unmap(mapping);
        mapped = false;
      },
    };
  }

  /**
   * RDMA-writes `data` into the peer's mapped memory at `remoteOffset` of its
   * remote address space (rsockets' riowrite): no credit, no notification to
   * the peer, ordered after every byte already accepted by write(). Resolves
   * once every byte is handed to the device; rejects with EINVAL where no
   * mapping of the peer's covers the range, and rejects (never throws) for a
   * bad argument or a socket not connected.
   */
  writeToRemote(data: Uint8Array, remoteOffset: number): Promise<void> {
    // Its failures reject, a forged `this` too.
    if (!(#brand in asObject(this))) return Promise.reject(new InvalidThisError('RdmaSocket'));
    const operation = 'writeToRemote';
    let held: Uint8Array;
    try {
      parseArgument(operation, 'data', bytes, data);
      parseArgument(operation, 'remoteOffset', iomapOffset, remoteOffset);
      this.#connected(operation);
      held = heldBytes(data);
    } catch (error) {
      return Promise.reject(error as Error); // a promise's method fails through its promise
    }
    return new Promise((resolve, reject) => {
      this.#pendingDirect.push({ data: held, offset: 0, remoteOffset, resolve, reject });
      if (this.#pendingDirect.length === 1) this.#continueDirect();
    });
  }

  #continueDirect(): void {
    const conn = this.#conn;
    while (conn && this.#pendingDirect.length > 0) {
      const pending = this.#pendingDirect.peek()!;
      const taken = conn.writable ? conn.writeDirect(pending.data, pending.offset, pending.remoteOffset + pending.offset) : -2;
      if (taken < 0) {
        this.#pendingDirect.shift();
        pending.reject(taken === -1
          ? new RdmaNetError('write', 'EINVAL', { address: this.#remote?.address, port: this.#remote?.port, message: `the peer has mapped nothing at offset ${pending.remoteOffset + pending.offset}` })
          : new RdmaNetError('write', 'EPIPE', { address: this.#remote?.address, port: this.#remote?.port, message: 'the connection is over' }));
        continue;
      }
      pending.offset += taken;
      if (pending.offset < pending.data.byteLength) return;
      this.#pendingDirect.shift();
      this.#refreshIdle();
      pending.resolve();
    }
  }

  /** The connection, or ERR_SOCKET_CLOSED / not-yet-connected errors. */
  #connected(operation: string): StreamConnection {
    if (this.destroyed) throw new RdmaNetCodeError('ERR_SOCKET_CLOSED', `${operation}: the socket is closed`);
    if (!this.#conn || this.#connecting) throw new RdmaNetCodeError('ERR_SOCKET_NOT_CONNECTED', `${operation}: the socket is not connected yet`);
    return this.#conn;
  }

  // ---- node:net's methods ----------------------------------------------------------

  /** Ends the writing side, then destroys once everything is written. */
  destroySoon(): void {
    if (!(#brand in asObject(this))) throw new InvalidThisError('RdmaSocket');
    if (this.writable) this.end();
    if (this.writableFinished) this.destroy();
    else this.once('finish', () => this.destroy());
  }

  /** Destroys at once without rsockets' DISCONNECT: the peer sees the connection reset. */
  resetAndDestroy(): this {
    if (!(#brand in asObject(this))) throw new InvalidThisError('RdmaSocket');
    this.#reset = true;
    return this.destroy();
  }

  /** Emits 'timeout' after `ms` without reads or writes (0 turns it off); the socket stays open. */
  setTimeout(ms: number, callback?: () => void): this {
    if (!(#brand in asObject(this))) throw new InvalidThisError('RdmaSocket');
    const timeout = parseArgument('setTimeout', 'msecs', timeoutMs, ms);
    optionalCallback('setTimeout', 'callback', callback);
    this.#idleMs = timeout;
    clearTimeout(this.#idleTimer);
    this.#idleTimer = undefined;
    if (callback) {
      if (timeout === 0) this.removeListener('timeout', callback);
      else this.once('timeout', callback);
    }
    this.#refreshIdle();
    return this;
  }

  #refreshIdle(): void {
    if (this.#idleMs === 0 || this.destroyed) return;
    if (this.#idleTimer) this.#idleTimer.refresh();
    else {
      this.#idleTimer = setTimeout(() => {
        this.#idleTimer = undefined;
        this.emit('timeout');
      }, this.#idleMs);
      this.#idleTimer.unref();
    }
  }

  /** Kept for node:net compatibility: there is no Nagle to turn off (autocorking, as in Linux's TCP, stays either way). */
  setNoDelay(noDelay = true): this {
    if (!(#brand in asObject(this))) throw new InvalidThisError('RdmaSocket');
    // node:net's coercion: any value, taken for its truth.
    this.noDelay = Boolean(noDelay);
    return this;
  }

  /**
   * Keepalive: a zero-length RDMA write every `initialDelay` ms (7200 s when 0),
   * as rsockets' SO_KEEPALIVE; a dead peer then fails the socket with ECONNRESET.
   */
  setKeepAlive(enable = false, initialDelay = 0): this {
    if (!(#brand in asObject(this))) throw new InvalidThisError('RdmaSocket');
    const delay = parseArgument('setKeepAlive', 'initialDelay', timeoutMs, initialDelay);
    this.#keepaliveMs = enable ? delay || DEFAULT_KEEPALIVE_MS : undefined;
    if (this.#conn && !this.#connecting) this.#conn.setKeepalive(this.#keepaliveMs);
    return this;
  }

  /**
   * Node 26's IP type of service: on RoCE, the traffic class the connection
   * is made with. rdma_cm fixes it when the route is resolved, so set it
   * before connect() (or with the typeOfService option): a different value
   * once the route is resolved cannot be applied, and throws EISCONN, where
   * node:net would call setsockopt on a live socket.
   */
  setTypeOfService(tos: number): this {
    if (!(#brand in asObject(this))) throw new InvalidThisError('RdmaSocket');
    // As node:net: NaN is the wrong type here, where the option's rule calls it out of range.
    if (Number.isNaN(tos)) throw argumentError('setTypeOfService', 'tos', 'expected an integer from 0 to 255', 'ERR_INVALID_ARG_TYPE');
    const value = parseArgument('setTypeOfService', 'tos', typeOfService, tos);
    if (!this.#liveRoute()) {
      this.#typeOfService = value;
      return this;
    }
    const current = this.getTypeOfService();
    if (value === current) return this;
    throw new RdmaNetError('setTypeOfService', 'EISCONN', {
      message: `this connection's type of service is ${current}, fixed when its route was resolved: set it before connect()`,
    });
  }

  /**
   * The type of service: once the route is resolved, the traffic class of its
   * path (on an accepted socket, the one the client connected with); before,
   * what setTypeOfService() asked for, or 0.
   */
  getTypeOfService(): number {
    if (!(#brand in asObject(this))) throw new InvalidThisError('RdmaSocket');
    const path = this.#liveRoute()?.pathRecords[0];
    return path ? path.trafficClass : this.#typeOfService ?? 0;
  }

  /** The id whose route is resolved, while it is open. */
  #liveRoute(): CmId | undefined {
    const id = this.#id;
    return this.#routeFixed && id && !id.closed ? id : undefined;
  }

  /** Whether keepalive is on. */
  get keepAlive(): boolean {
    if (!(#brand in asObject(this))) throw new InvalidThisError('RdmaSocket');
    return this.#keepaliveMs !== undefined;
  }

  ref(): this {
    if (!(#brand in asObject(this))) throw new InvalidThisError('RdmaSocket');
    this.#setKeepProcessAlive(true);
    return this;
  }

  unref(): this {
    if (!(#brand in asObject(this))) throw new InvalidThisError('RdmaSocket');
    this.#setKeepProcessAlive(false);
    return this;
  }

  #setKeepProcessAlive(keepAlive: boolean): void {
    this.#keepProcessAlive = keepAlive;
    this.#hold?.setKeepAlive(keepAlive);
    if (this.#conn && !this.#connecting) this.#conn.setKeepProcessAlive(keepAlive);
    this.#idleTimer?.unref();
  }

  /** `await using socket = …`: destroys it and waits for 'close'. */
  override async [Symbol.asyncDispose](): Promise<void> {
    if (!(#brand in asObject(this))) throw new InvalidThisError('RdmaSocket');
    if (this.closed) return;
    // One promise: whatever throws here (called on something not a socket) rejects what the caller awaits, never a promise nobody awaits.
    await new Promise<void>((resolve) => {
      this.once('close', () => resolve());
      this.destroy();
    });
  }
}

/**
 * For the server: a socket made for an incoming connection (its StreamConnection's
 * events go to it) takes over that connection once accepted. Not exported by the package.
 */
export function attachAcceptedSocket(socket: RdmaSocket, hold: ChannelHold, id: CmId, conn: StreamConnection, peer: ConnData): void {
  attachAccepted(socket, hold, id, conn, peer);
}

// What RdmaSocket inherits from Duplex (pipe, read, destroy, the readable*
// getters…) checks its receiver as RdmaSocket's own members do.
guardInherited(RdmaSocket.prototype, EventEmitter.prototype, 'RdmaSocket', isSocket);

/** For the server: where an incoming connection's events go, to the socket made for it. Not exported by the package. */
export function socketEvents(socket: RdmaSocket): StreamEvents {
  return eventsOf(socket);
}

/** node:net's connect()/createConnection(): a new socket, connecting. */
export function connect(options: RdmaConnectOptions, connectListener?: () => void): RdmaSocket;
export function connect(port: number, host?: string, connectListener?: () => void): RdmaSocket;
export function connect(port: number, connectListener?: () => void): RdmaSocket;
export function connect(...args: unknown[]): RdmaSocket {
  const { options } = normalizeConnectArgs(args);
  const socket = new RdmaSocket({
    allowHalfOpen: options.allowHalfOpen,
    ...(options.highWaterMark ? { highWaterMark: options.highWaterMark } : {}),
  });
  return (socket.connect as (...a: unknown[]) => RdmaSocket)(...args);
}
