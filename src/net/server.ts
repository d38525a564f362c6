// RdmaServer: node:net's Server over rdma_cm. It listens in the TCP port
// space (where rsockets' tools connect), checks each request's rsockets
// connection data, builds the connection's memory and queues before it
// accepts (as rsockets does), and hands out an RdmaSocket per connection.
import { Buffer } from 'node:buffer';
import { EventEmitter } from 'node:events';
import dns from 'node:dns';
import { isIP, isIPv4 } from 'node:net';
import process from 'node:process';
import { createId, type CmId } from '../api/cm/cm-id.js';
import type { EventConnParam } from '../api/cm/cm-event.js';
import { InvalidThisError, ResourceClosedError, asObject } from '../api/core/errors.js';
import { blockedError } from './destinations.js';
import { ChannelHold } from './shared-channel.js';
import { RdmaSocket, attachAcceptedSocket, socketEvents } from './socket.js';
import { StreamConnection } from './stream-connection.js';
import { decodeConnData, type ConnData } from './wire.js';
import { RdmaNetCodeError, RdmaNetError, listenFailure } from './errors.js';
import { z } from 'zod';
import { argumentError, parseArgument } from '../api/core/validate.js';
import {
  normalizeListenArgs, optionalCallback, parseOptions, requiredCallback, serverSchema, type RdmaListenOptions, type RdmaServerOptions, type ResolvedListen, type ResolvedServer,
} from './options.js';

const maxConnectionsSchema = z.number().int().min(0).max(0x7fffffff).optional();

/** What a 'drop' event says: a connection refused (maxConnections reached, a blocked address, or not rsockets). */
export interface DropInfo {
  readonly localAddress: string | undefined;
  readonly localPort: number | undefined;
  readonly remoteAddress: string | undefined;
  readonly remotePort: number | undefined;
  readonly remoteFamily: string | undefined;
  /** Why, when it was not maxConnections: ERR_IP_BLOCKED for an address the server's blockList blocks, an RdmaProtocolError for a peer that is not rsockets. */
  readonly error?: Error;
}

/** Where a server without a host listens, in order: node:net's, '::' (IPv4 and IPv6 clients alike), else '0.0.0.0'. */
const UNSPECIFIED = ['::', '0.0.0.0'] as const;

/**
 * A TCP-space id bound to `host`, or without one to the first of UNSPECIFIED
 * that binds (to '::' alone with ipv6Only); throws the last failure.
 */
function boundId(hold: ChannelHold, host: string | undefined, port: number, ipv6Only: boolean): CmId {
  const candidates = host !== undefined ? [host] : ipv6Only ? UNSPECIFIED.slice(0, 1) : UNSPECIFIED;
  for (let i = 0; ; i++) {
    const id = createId(hold.channel, { portSpace: 'TCP' });
    try {
      // AFONLY: an IPv6 bind takes IPv6 requests only (no dual stack).
      if (ipv6Only) id.setOption({ option: 'AFONLY', value: true });
      id.bindAddr({ address: candidates[i]!, port });
      return id;
    } catch (error) {
      id.close();
      if (i === candidates.length - 1) throw error;
    }
  }
}

export class RdmaServer extends EventEmitter {
  /** The brand every member checks first (`#brand in asObject(this)`): only the instances this package made have it. */
  readonly #brand = true;
  #maxConnections: number | undefined;
  readonly #options: ResolvedServer;
  #hold: ChannelHold | undefined;
  #listener: CmId | undefined;
  readonly #connections = new Set<RdmaSocket>();
  #address: { address: string; family: string; port: number } | undefined;
  #closing = false;
  /** A listen() whose host name is being looked up; close() abandons it. */
  #lookup: AbortController | undefined;
  #keepProcessAlive = true;

  constructor(options?: RdmaServerOptions | ((socket: RdmaSocket) => void), connectionListener?: (socket: RdmaSocket) => void) {
    super();
    const listenerOnly = typeof options === 'function';
    // createServer(listener) takes nothing after it.
    const listener = listenerOnly ? options : optionalCallback<(socket: RdmaSocket) => void>('createServer', 'connectionListener', connectionListener);
    if (listenerOnly && connectionListener !== undefined) throw argumentError('createServer', 'connectionListener', 'already given as the first argument', 'ERR_INVALID_ARG_VALUE');
    this.#options = parseOptions('createServer', serverSchema, listenerOnly || options === undefined ? {} : options);
    if (listener) this.on('connection', listener);
  }

  /**
   * Where a listener's rejected promise goes when captureRejections is on
   * (EventEmitter's option), as node:net's server sends it: an async
   * 'connection' listener's rejection destroys that socket with it, any
   * other event's is the server's 'error'.
   */
  override [EventEmitter.captureRejectionSymbol](error: Error, event: string | symbol, ...args: unknown[]): void {
    if (!(#brand in asObject(this))) throw new InvalidThisError('RdmaServer');
    const socket = args[0];
    if (event === 'connection' && socket instanceof RdmaSocket) socket.destroy(error);
    else this.emit('error', error);
  }

  /**
   * Connections beyond this are rejected (and 'drop' is emitted): an integer
   * 0–2147483647, or undefined for no limit.
   */
  get maxConnections(): number | undefined {
    if (!(#brand in asObject(this))) throw new InvalidThisError('RdmaServer');
    return this.#maxConnections;
  }

  set maxConnections(limit: number | undefined) {
    if (!(#brand in asObject(this))) throw new InvalidThisError('RdmaServer');
    this.#maxConnections = parseArgument('set maxConnections', 'maxConnections', maxConnectionsSchema, limit);
  }

  /** Whether the server is listening. */
  get listening(): boolean {
    if (!(#brand in asObject(this))) throw new InvalidThisError('RdmaServer');
    return this.#address !== undefined && !this.#closing;
  }

  /** listen(options[, cb]), listen(port[, host][, backlog][, cb]), as node:net's. 'listening' follows, or 'error'. */
  listen(options: RdmaListenOptions, listeningListener?: () => void): this;
  listen(port?: number, host?: string, backlog?: number, listeningListener?: () => void): this;
  listen(port: number, host: string, listeningListener?: () => void): this;
  listen(port: number, listeningListener?: () => void): this;
  listen(listeningListener?: () => void): this;
  listen(...args: unknown[]): this {
    if (!(#brand in asObject(this))) throw new InvalidThisError('RdmaServer');
    const { options, callback } = normalizeListenArgs(args);
    if (this.#listener || this.#lookup) throw new RdmaNetCodeError('ERR_SERVER_ALREADY_LISTEN', 'listen() was called more than once: close() first');
    if (callback) this.once('listening', callback as () => void);
    this.#closing = false;
    if (options.host === undefined || isIP(options.host) !== 0) this.#listen(options);
    else this.#lookupAndListen(options, options.host);
    return this;
  }

  /** A host name is looked up first, as node:net's listen does (its first address); a resolver's error is the server's 'error', as it is. */
  #lookupAndListen(o: ResolvedListen, name: string): void {
    // A placeholder, so that a second listen() is refused while the name resolves.
    const pending = (this.#lookup = new AbortController());
    dns.lookup(name, (error, address) => {
      if (pending.signal.aborted) return;
      this.#lookup = undefined;
      if (error) this.emit('error', error);
      else this.#listen({ ...o, host: address });
    });
  }

  /** Closed while its host name resolves: it never listens. */
  #abandonLookup(): void {
    this.#lookup?.abort();
    this.#lookup = undefined;
  }

  #listen(o: ResolvedListen): void {
    let hold: ChannelHold | undefined;
    let listener: CmId | undefined;
    try {
      // The shared channel is made here: without a device it fails, and that is an 'error' event as any listen failure, never a throw.
      hold = this.#hold = new ChannelHold();
      hold.setKeepAlive(this.#keepProcessAlive);
      listener = boundId(hold, o.host, o.port, o.ipv6Only);
      listener.listen(o.backlog);
    } catch (error) {
      listener?.close();
      hold?.release();
      this.#hold = undefined;
      const failure = listenFailure(error, o.host ?? UNSPECIFIED.at(-1)!, o.port);
      process.nextTick(() => this.emit('error', failure));
      return;
    }
    this.#listener = listener;
    const local = listener.localAddress;
    const address = local?.address ?? o.host ?? UNSPECIFIED[0];
    this.#address = { address, family: local?.family ?? (isIPv4(address) ? 'IPv4' : 'IPv6'), port: listener.localPort };
    if (o.signal) {
      if (o.signal.aborted) process.nextTick(() => this.close());
      else o.signal.addEventListener('abort', () => this.close(), { once: true });
    }
    process.nextTick(() => this.emit('listening'));
    void this.#acceptLoop(listener);
  }

  async #acceptLoop(listener: CmId): Promise<void> {
    for (;;) {
      let request: CmId;
      try {
        request = await listener.nextRequest();
      } catch (error) {
        if (error instanceof ResourceClosedError || listener.closed) return;
        this.emit('error', new RdmaNetError('accept', (error as { code?: string }).code ?? 'EIO', { cause: error }));
        return;
      }
      void this.#accept(request);
    }
  }

  async #accept(request: CmId): Promise<void> {
    const remote = request.peerAddress;
    const local = request.localAddress;
    const remotePort = request.peerPort;
    const drop = (error?: Error) => {
      try {
        request.reject();
      } catch {
        // the peer may be gone already
      }
      request.close();
      this.emit('drop', {
        localAddress: local?.address, localPort: local?.port, remoteAddress: remote?.address, remotePort, remoteFamily: remote?.family,
        ...(error ? { error } : {}),
      } satisfies DropInfo);
    };
    // Rejected before anything is built for it, as node:net's server closes a blocked client's handle at once.
    const blocked = remote && blockedError(this.#options.blockList, { address: remote.address, family: remote.family === 'IPv4' ? 4 : 6 });
    if (blocked) return drop(blocked);
    if (this.#maxConnections !== undefined && this.#connections.size >= this.#maxConnections) return drop();
    let peer: ConnData;
    try {
      // rsockets rejects a request whose data is not its own with no private data; so does this.
      peer = decodeConnData((request.request as EventConnParam | undefined)?.privateData ?? Buffer.alloc(0));
    } catch (error) {
      return drop(error as Error);
    }
    const o = this.#options;
    const socket = new RdmaSocket({
      allowHalfOpen: o.allowHalfOpen, ...(o.highWaterMark ? { highWaterMark: o.highWaterMark } : {}), ...(o.onread ? { onread: o.onread } : {}),
    });
    let conn: StreamConnection | undefined;
    try {
      conn = new StreamConnection(request, o.rdma, socketEvents(socket));
      // As rsockets: echo the request's parameters, with this side's connection data.
      const r = request.request as EventConnParam;
      await request.accept({
        privateData: conn.connData(), responderResources: r.responderResources, initiatorDepth: r.initiatorDepth,
        flowControl: r.flowControl, retryCount: r.retryCount, rnrRetryCount: r.rnrRetryCount,
      });
    } catch (error) {
      try {
        if (conn) conn.release();
        else request.close();
      } catch {
        // already gone with the peer
      }
      socket.destroy();
      if (!this.#closing) this.emit('drop', { localAddress: local?.address, localPort: local?.port, remoteAddress: remote?.address, remotePort, remoteFamily: remote?.family, error: error as Error } satisfies DropInfo);
      return;
    }
    attachAcceptedSocket(socket, new ChannelHold(), request, conn, peer);
    if (!this.#keepProcessAlive) socket.unref();
    this.#connections.add(socket);
    socket.once('close', () => {
      this.#connections.delete(socket);
      this.#maybeEmitClose();
    });
    if (o.noDelay) socket.setNoDelay(true);
    if (o.keepAlive) socket.setKeepAlive(true, o.keepAliveInitialDelay);
    if (o.pauseOnConnect) socket.pause();
    this.emit('connection', socket);
  }

  /** The listening address: { address, family, port } (port chosen by rdma_cm for port 0); null when not listening. */
  address(): { address: string; family: string; port: number } | null {
    if (!(#brand in asObject(this))) throw new InvalidThisError('RdmaServer');
    return this.#address && !this.#closing ? { ...this.#address } : null;
  }

  /** node:net's getConnections(cb). */
  getConnections(callback: (error: Error | null, count: number) => void): this {
    if (!(#brand in asObject(this))) throw new InvalidThisError('RdmaServer');
    requiredCallback('getConnections', 'callback', callback);
    const count = this.#connections.size;
    process.nextTick(() => callback(null, count));
    return this;
  }

  /**
   * Stops accepting; 'close' follows once every connection has ended (as
   * node:net's). `callback` gets ERR_SERVER_NOT_RUNNING if it was not listening.
   */
  close(callback?: (error?: Error) => void): this {
    if (!(#brand in asObject(this))) throw new InvalidThisError('RdmaServer');
    optionalCallback('close', 'callback', callback);
    this.#abandonLookup();
    if (!this.#listener || this.#closing) {
      if (callback) process.nextTick(() => callback(new RdmaNetCodeError('ERR_SERVER_NOT_RUNNING', 'Server is not running.')));
      return this;
    }
    this.#closing = true;
    if (callback) this.once('close', () => callback());
    const listener = this.#listener;
    try {
      listener.close();
    } finally {
      this.#hold?.release();
      this.#hold = undefined;
    }
    this.#maybeEmitClose();
    return this;
  }

  #maybeEmitClose(): void {
    if (!this.#closing || this.#connections.size > 0 || !this.#listener) return;
    this.#listener = undefined;
    this.#address = undefined;
    process.nextTick(() => this.emit('close'));
  }

  ref(): this {
    if (!(#brand in asObject(this))) throw new InvalidThisError('RdmaServer');
    this.#keepProcessAlive = true;
    this.#hold?.setKeepAlive(true);
    return this;
  }

  unref(): this {
    if (!(#brand in asObject(this))) throw new InvalidThisError('RdmaServer');
    this.#keepProcessAlive = false;
    this.#hold?.setKeepAlive(false);
    return this;
  }

  /** `await using server = …`: closes it and waits for 'close'. */
  async [Symbol.asyncDispose](): Promise<void> {
    if (!(#brand in asObject(this))) throw new InvalidThisError('RdmaServer');
    this.#abandonLookup();
    if (!this.#listener) return;
    await new Promise<void>((resolve) => this.close(() => resolve()));
  }
}

/** node:net's createServer([options][, connectionListener]). */
export function createServer(options?: RdmaServerOptions | ((socket: RdmaSocket) => void), connectionListener?: (socket: RdmaSocket) => void): RdmaServer {
  return new RdmaServer(options, connectionListener);
}
