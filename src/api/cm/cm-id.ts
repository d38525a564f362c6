// A connection-manager id (struct rdma_cm_id): addressing, connection setup and
// teardown, and the queue pair it carries. An id on an EventChannel is
// asynchronous: its operations return promises settled by the channel's events.
// An id without a channel is synchronous, as in the man pages: each call blocks
// the thread until librdmacm has the result.
import { Buffer } from 'node:buffer';
import koffi from 'koffi';
import { z } from 'zod';
import { librdmacm } from '../../ffi/librdmacm.js';
import { libibverbs } from '../../ffi/libibverbs.js';
import { RdmaError, UnsupportedError, checkRdma, checkVerbs } from '../../ffi/errors.js';
import { readPointer, writePointer, type Pointer } from '../../ffi/library.js';
import { rdma_addr, rdma_cm_id, rdma_cm_join_mc_attr_ex, rdma_route } from '../../structs/rdma-cma.js';
import { memberOffset } from '../../structs/registry.js';
import { nativeBytes } from '../../ffi/native-copy.js';
import {
  ibv_qp, ibv_qp_attr, ibv_qp_init_attr, ibv_srq, ibv_srq_init_attr, type IbvQpCap, type IbvSrqInitAttr,
} from '../../structs/verbs-resources.js';
import { ConnectionError, ERROR_EVENTS, copyCmEvent, type CmEvent, type EventConnParam, type EventUdParam } from './cm-event.js';
import { encodeConnParam, type ConnParam, PRIVATE_DATA_LIMITS } from './conn-param.js';
import { DeviceContext, deviceLimits, type DeviceLimits } from '../verbs/device-context.js';
import { CmEventType, IbvEventType, PortSpace, QpType, type CmEventTypeName, type IbvEventTypeName, type PortSpaceName } from '../core/enums.js';
import { abortError, InvalidThisError, ResourceClosedError, asObject } from '../core/errors.js';
import {
  EventChannel, attachTarget, detachTarget, expireWaiters, failPending, keepEvent, offerEvent, setRequestAdopter, type EventTarget,
} from './event-channel.js';
import { Waiter } from './event-waiter.js';
import type { MemoryRegion } from '../verbs/memory-region.js';
import { ProtectionDomain } from '../verbs/protection-domain.js';
import { AddressHandle } from '../verbs/address-handle.js';
import { QueuePair } from '../verbs/queue-pair.js';
import { CompletionQueue } from '../work/completion-queue.js';
import { SharedReceiveQueue } from '../verbs/shared-receive-queue.js';
import { Resource, handleToRelease } from '../core/resource.js';
import { assertInternal, internal, type Internal } from '../core/internal.js';
import { decodeSocketAddress, encodeSocketAddress, type SocketAddress } from './socket-address.js';
import { pathRecordsOf, type PathRecord } from './path-record.js';
import { nativeScratch } from '../core/native-memory.js';
import { abortSignal, argumentError, bytes, count, instanceCheck, ipAddress, parseArgument, port, timeoutMs, type Holds, type InputIs } from '../core/validate.js';
import type { RecvOptions, SendOptions } from '../work/work-request.js';
import type { WorkCompletion } from '../work/work-completion.js';

/** A connection-manager event with this API's id objects. */
export type ConnectionEvent = CmEvent<CmId>;

// The ids a channel's events carry are CmIds. Declared here, by merging into
// event-channel.ts's ChannelEventIds: that module cannot import this one, which imports it.
declare module './event-channel.js' {
  interface ChannelEventIds {
    readonly id: CmId;
  }
}

const ID = {
  verbs: koffi.offsetof(rdma_cm_id, 'verbs'),
  qp: koffi.offsetof(rdma_cm_id, 'qp'),
  pd: koffi.offsetof(rdma_cm_id, 'pd'),
  event: koffi.offsetof(rdma_cm_id, 'event'),
  qpType: koffi.offsetof(rdma_cm_id, 'qp_type'),
  portNum: koffi.offsetof(rdma_cm_id, 'port_num'),
  srq: koffi.offsetof(rdma_cm_id, 'srq'),
  src: koffi.offsetof(rdma_cm_id, 'route') + koffi.offsetof(rdma_route, 'addr') + koffi.offsetof(rdma_addr, 'src_storage'),
  dst: koffi.offsetof(rdma_cm_id, 'route') + koffi.offsetof(rdma_route, 'addr') + koffi.offsetof(rdma_addr, 'dst_storage'),
};
const QP_PD = koffi.offsetof(ibv_qp, 'pd');
const SRQ_PD = koffi.offsetof(ibv_srq, 'pd');
const SOCKADDR_STORAGE_SIZE = 128;
const IBV_QP_CAP = 1 << 19;
const swap16 = (value: number) => ((value & 0xff) << 8) | (value >> 8);

/** An IP address and port: where to bind, or what to resolve. */
export interface EndpointAddress {
  /**
   * An IPv4 or IPv6 address as text; no host names (resolve those with
   * getAddrInfo). A link-local IPv6 address names its zone by interface or
   * index (`fe80::1%eth0`, `fe80::1%2`); decoded addresses name it back.
   */
  address: string;
  /**
   * The port, 0–65535; on bindAddr, 0 lets the kernel pick one.
   * @defaultValue 0
   */
  port?: number;
}
export const endpointSchema = z.strictObject({ address: ipAddress, port: port.default(0) });
type EndpointTied = Holds<InputIs<typeof endpointSchema, EndpointAddress>>;

/** Options of every operation that waits for an event on an asynchronous id. */
export interface WaitOptions {
  /**
   * Milliseconds the operation may take, 0–2147483647; past them (and a
   * second's grace for the event to arrive) it rejects with RdmaError ETIMEDOUT.
   * @defaultValue the operation's own, given in its description: 2000 for
   * resolveAddr and resolveRoute (librdmacm's timeout), 10000 for connect and
   * accept, 5000 for disconnect; the other operations wait until their event,
   * the signal or close()
   */
  timeoutMs?: number;
  /**
   * Aborts the wait: the operation rejects with AbortError (an aborted signal
   * stops it before the call).
   * @defaultValue none
   */
  signal?: AbortSignal;
}
export const waitSchema = z.strictObject({
  timeoutMs: timeoutMs.optional(),
  signal: abortSignal.optional(),
});
type WaitTied = Holds<InputIs<typeof waitSchema, WaitOptions>>;

/** resolveAddr's options. */
export interface ResolveAddrOptions extends WaitOptions {
  /**
   * The local address to resolve from (rdma_resolve_addr's src_addr).
   * @defaultValue none: the route to the destination chooses
   */
  source?: EndpointAddress;
}
const resolveSchema = waitSchema.extend({ source: endpointSchema.optional() });
type ResolveTied = Holds<InputIs<typeof resolveSchema, ResolveAddrOptions>>;

/** joinMulticast's options. */
export interface JoinMulticastOptions extends WaitOptions {
  /**
   * Join as a send-only full member (rdma_join_multicast_ex, where librdmacm
   * has it; otherwise UnsupportedError): the group's messages are not received here.
   * @defaultValue false
   */
  sendOnly?: boolean;
}
const joinSchema = waitSchema.extend({ sendOnly: z.boolean().default(false) });
type JoinTied = Holds<InputIs<typeof joinSchema, JoinMulticastOptions>>;
/** The arguments of listen, notify, the multicast calls and eventName: built once (a schema costs milliseconds to build under TCG). */
const groupSchema = z.strictObject({ address: ipAddress });
const backlogSchema = z.number().int().min(0).max(0x7fffffff);
const ibvEventSchema = z.enum(IbvEventType.names as [IbvEventTypeName, ...IbvEventTypeName[]]);
const cmEventSchema = z.enum(CmEventType.names as [CmEventTypeName, ...CmEventTypeName[]]);

/** Parses the options of an operation about to be issued: an aborted signal stops it before the call. */
function issueOptions<S extends z.ZodType<{ signal?: AbortSignal | undefined }>>(operation: string, schema: S, options: unknown): z.output<S> {
  const parsed = parseArgument(operation, 'options', schema, options);
  if (parsed.signal?.aborted) throw abortError(parsed.signal);
  return parsed;
}

/** rdma_create_srq's attributes (createSrq). */
export interface SrqAttr {
  /**
   * Receives the queue holds at once, 1–2147483647 and at most the device's limit.
   * @defaultValue 64
   */
  maxWr?: number;
  /**
   * Scatter/gather entries per receive, 1–2147483647 and at most the device's maxSge.
   * @defaultValue 1
   */
  maxSge?: number;
  /**
   * The low-water mark, 0–4294967295: when fewer receives are posted the
   * device raises SRQ_LIMIT_REACHED; 0 never does.
   * @defaultValue 0
   */
  srqLimit?: number;
}
const srqAttrSchema = z.strictObject({
  maxWr: count.default(64),
  maxSge: count.default(1),
  srqLimit: z.number().int().min(0).max(0xffffffff).default(0),
});
type SrqAttrTied = Holds<InputIs<typeof srqAttrSchema, SrqAttr>>;

/** rdma_create_qp's attributes; the defaults suit a simple RC ping-pong. */
export interface QpAttr {
  /**
   * Send queue depth: sends outstanding at once, 1–2147483647 and at most the device's maxQpWr.
   * @defaultValue 16
   */
  sendWr?: number;
  /**
   * Receive queue depth: receives posted at once, 1–2147483647 and at most the device's maxQpWr.
   * @defaultValue 16
   */
  recvWr?: number;
  /**
   * Scatter/gather entries per send, 1–2147483647 and at most the device's maxSge.
   * @defaultValue 1
   */
  sendSge?: number;
  /**
   * Scatter/gather entries per receive, 1–2147483647 and at most the device's maxSge.
   * @defaultValue 1
   */
  recvSge?: number;
  /**
   * Bytes a send may carry inline (copied into the request), 0–4294967295;
   * the device may grant more, or refuse (qp.caps.maxInlineData says what it granted).
   * @defaultValue 0
   */
  inlineData?: number;
  /**
   * Whether every send completes on the CQ (sq_sig_all); otherwise only the
   * sends posted with `signaled`.
   * @defaultValue false
   */
  sqSigAll?: boolean;
  /**
   * 'RC' (reliable connected), 'UC' (unreliable connected) or 'UD' (datagrams).
   * @defaultValue 'RC'
   */
  qpType?: 'RC' | 'UC' | 'UD';
}
export const qpAttrSchema = z.strictObject({
  sendWr: count.default(16),
  recvWr: count.default(16),
  sendSge: count.default(1),
  recvSge: count.default(1),
  inlineData: z.number().int().min(0).max(0xffffffff).default(0),
  sqSigAll: z.boolean().default(false),
  qpType: z.enum(['RC', 'UC', 'UD']).default('RC'),
});
type QpAttrTied = Holds<InputIs<typeof qpAttrSchema, QpAttr>>;

/** createQp's attributes: rdma_create_qp's, and completion queues of your own to share. */
export interface CreateQpAttr extends QpAttr {
  /**
   * A completion queue of your own (from id.device.createCq()) for the sends;
   * it may serve several QPs.
   * @defaultValue one librdmacm creates with its own completion channel, and destroys with the QP
   */
  sendCq?: CompletionQueue;
  /**
   * A completion queue of your own for the receives; needs `sendCq` too
   * (librdmacm never frees a send CQ it made for a QP whose receive CQ it did not make).
   * @defaultValue one librdmacm creates, as for sendCq
   */
  recvCq?: CompletionQueue;
}
const completionQueue = instanceCheck<CompletionQueue>((value) => Resource.isA(value, CompletionQueue), 'expected a CompletionQueue (from id.device.createCq())');
const createQpSchema = qpAttrSchema.extend({
  sendCq: completionQueue.optional(),
  recvCq: completionQueue.optional(),
});
type CreateQpTied = Holds<InputIs<typeof createQpSchema, CreateQpAttr>>;

/** An rdma_set_option setting at the RDMA_OPTION_ID level. */
export type IdOption =
  /** The type of service of the connection's packets, 0–255 (before resolveAddr). */
  | { option: 'TOS'; value: number }
  /** Whether the id may bind an address in use (SO_REUSEADDR's role; before bindAddr). */
  | { option: 'REUSEADDR'; value: boolean }
  /** Whether an IPv6 id binds IPv6 only, not IPv4-mapped addresses too (before bindAddr). */
  | { option: 'AFONLY'; value: boolean }
  /** The QP's local ACK timeout, 0–31: 4.096 µs × 2^value (0 keeps the port's default). */
  | { option: 'ACK_TIMEOUT'; value: number };
const optionSchema = z.discriminatedUnion('option', [
  z.strictObject({ option: z.literal('TOS'), value: z.number().int().min(0).max(255) }),
  z.strictObject({ option: z.literal('REUSEADDR'), value: z.boolean() }),
  z.strictObject({ option: z.literal('AFONLY'), value: z.boolean() }),
  z.strictObject({ option: z.literal('ACK_TIMEOUT'), value: z.number().int().min(0).max(31) }),
]);
type IdOptionTied = Holds<InputIs<typeof optionSchema, IdOption>>;
const OPTION_IDS = { TOS: 0, REUSEADDR: 1, AFONLY: 2, ACK_TIMEOUT: 3 } as const;

/** A multicast group this id joined: its address and the UD parameters to send to it. */
export interface MulticastGroup {
  readonly address: string;
  readonly ud: EventUdParam;
}

/** What the peer sent when the connection was established. */
export interface Established {
  readonly privateData: Buffer;
  readonly conn: EventConnParam | undefined;
  /** For UD (the UDP port space): where the peer's QP is — make an AddressHandle from ud.ahAttr. */
  readonly ud: EventUdParam | undefined;
}

/**
 * Encoded sockaddrs of parsed endpoints. The parse memo hands out the same
 * (frozen) endpoint for the same address and port, so repeated binds and
 * resolves encode once; librdmacm only reads the sockaddr during the call.
 */
const sockaddrs = new WeakMap<z.output<typeof endpointSchema>, Buffer>();
function sockaddrOf(endpoint: z.output<typeof endpointSchema>): Buffer {
  let encoded = sockaddrs.get(endpoint);
  if (!encoded) sockaddrs.set(endpoint, (encoded = encodeSocketAddress(endpoint.address, endpoint.port)));
  return encoded;
}

/** Events that end a pending operation even though it did not wait for them. */
const ENDING_EVENTS = new Set<string>([...Object.keys(ERROR_EVENTS), 'DISCONNECTED']);

export class CmId extends Resource {
  /** The brand every member checks first (`#brand in asObject(this)`): only the instances this package made have it. */
  readonly #brand = true;
  /** The JavaScript value given at creation (rdma_cm_id->context's role). */
  readonly context: unknown;
  readonly portSpace: PortSpaceName;
  #channel: EventChannel | null;
  #queuePair: QueuePair | undefined;
  #sharedReceiveQueue: SharedReceiveQueue | undefined;
  #protectionDomain: ProtectionDomain | undefined;
  #device: DeviceContext | undefined;
  /** Set for ids made by rdma_create_ep (and their requests): destroyed with rdma_destroy_ep. */
  readonly #endpoint: boolean;
  #inbox: ConnectionEvent[] = [];
  /** Operations waiting for events on this id (an operation, and possibly waitForDisconnect), oldest first. */
  readonly #waiters: Waiter[] = [];
  #disconnected = false;
  /**
   * For ids that arrived as connection requests: what the peer sent, its
   * connection parameters (an RC request) or UD parameters (a UDP port space
   * request, `'qkey' in request`); `privateData` either way.
   */
  readonly request: EventConnParam | EventUdParam | undefined;

  /** @internal Use createId(), createEndpoint() or a listener's getRequest()/nextRequest(). */
  constructor(
    key: Internal,
    handle: Pointer,
    channel: EventChannel | null,
    options: {
      context?: unknown;
      portSpace: PortSpaceName;
      endpoint: boolean;
      request?: EventConnParam | EventUdParam | undefined;
      /** The PD the caller gave for the QP (rdma_create_ep), if any. */
      pd?: ProtectionDomain | undefined;
      /** The caps rdma_create_ep granted, when it made a QP. */
      granted?: IbvQpCap | undefined;
    },
  ) {
    assertInternal(key, 'new CmId', 'use createId(), createEndpoint() or a listener\'s getRequest()/nextRequest()');
    super('connection id', handle, channel ?? undefined);
    this.#channel = channel;
    this.context = options.context;
    this.portSpace = options.portSpace;
    this.#endpoint = options.endpoint;
    this.request = options.request;
    this.#protectionDomain = options.pd;
    channel?.[attachTarget](handle, this);
    // Only rdma_create_ep and rdma_get_request on its listener make an id with a QP.
    if (options.endpoint && readPointer(handle, ID.qp) !== 0n) this.#adoptQueuePair(options.pd, options.granted);
  }

  /** The channel this id's events arrive on; null for a synchronous id. */
  get channel(): EventChannel | null {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CmId');
    return this.#channel;
  }

  get udPortSpace(): boolean {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CmId');
    return this.portSpace === 'UDP' || this.portSpace === 'IPOIB';
  }

  /** The queue pair, once created (createQp, createEndpoint, or a request's); undefined again once it is closed. */
  get qp(): QueuePair | undefined {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CmId');
    return this.#hasOpenQueuePair() ? this.#queuePair : undefined;
  }

  /** The queue pair, or an error that says how to get one. */
  get queuePair(): QueuePair {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CmId');
    return this.#queuePairFor('queuePair');
  }

  #queuePairFor(operation: string): QueuePair {
    this.ensureOpen(operation);
    if (!this.#queuePair) throw argumentError(operation, 'id', 'this id has no queue pair: call createQp() first', 'ERR_INVALID_ARG_VALUE');
    if (this.#queuePair.closed) throw new ResourceClosedError('queue pair', operation, 'call createQp() for a new one');
    return this.#queuePair;
  }

  /** The device this id is bound to (after bindAddr/resolveAddr), borrowed from librdmacm. */
  get device(): DeviceContext | undefined {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CmId');
    this.ensureOpen('device');
    const verbs = readPointer(this.handle, ID.verbs);
    if (verbs === 0n) return undefined;
    if (!this.#device || this.#device.unsafeHandle !== verbs) this.#device = DeviceContext.borrow(internal, verbs);
    return this.#device;
  }

  /** The protection domain of this id's queue pair (librdmacm's default one unless you gave your own). */
  get pd(): ProtectionDomain {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CmId');
    this.ensureOpen('pd');
    if (this.#hasOpenQueuePair()) return this.#queuePair!.protectionDomain;
    this.#checkReusedPd('pd');
    if (this.#protectionDomain) return this.#protectionDomain;
    const qp = readPointer(this.handle, ID.qp);
    const srq = qp === 0n ? readPointer(this.handle, ID.srq) : 0n;
    const pd = qp !== 0n ? readPointer(qp, QP_PD) : srq !== 0n ? readPointer(srq, SRQ_PD) : readPointer(this.handle, ID.pd);
    if (pd === 0n) throw argumentError('pd', 'id', 'this id has no protection domain yet: create its queue pair first', 'ERR_INVALID_ARG_VALUE');
    return this.#borrowPd(pd);
  }

  /** id->pd is the PD of the id's last QP or SRQ; if that was one of yours, closed since, it dangles. */
  #checkReusedPd(operation: string): void {
    const known = this.#protectionDomain;
    if (known?.owned && known.closed) {
      throw new ResourceClosedError('protection domain', operation, 'this id\'s last queue pair or SRQ was on it, closed since, and librdmacm would reuse it: give createQp() or createSrq() an open one');
    }
  }

  /** Wraps librdmacm's PD of this id (closed with the id, never freed here). */
  #borrowPd(pd: Pointer): ProtectionDomain {
    this.#protectionDomain = ProtectionDomain.borrow(internal, pd, this);
    return this.#protectionDomain;
  }

  /** rdma_get_local_addr + rdma_get_src_port. */
  get localAddress(): SocketAddress | undefined {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CmId');
    return this.#address(ID.src);
  }

  /** rdma_get_peer_addr + rdma_get_dst_port. */
  get peerAddress(): SocketAddress | undefined {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CmId');
    return this.#address(ID.dst);
  }

  /**
   * The paths of this id's route (rdma_cm_id.route.path_rec): what
   * resolveRoute() found, or, on an id from a connection request, what the
   * request carried. Empty before. Each path's trafficClass is, on RoCE, the
   * type of service the connection uses.
   */
  get pathRecords(): PathRecord[] {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CmId');
    this.ensureOpen('pathRecords');
    return pathRecordsOf(this.handle);
  }

  get localPort(): number {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CmId');
    this.ensureOpen('localPort');
    return swap16(librdmacm.rdma_get_src_port(this.handle));
  }

  get peerPort(): number {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CmId');
    this.ensureOpen('peerPort');
    return swap16(librdmacm.rdma_get_dst_port(this.handle));
  }

  #address(offset: number): SocketAddress | undefined {
    this.ensureOpen('address');
    return decodeSocketAddress(nativeBytes(this.handle + BigInt(offset), SOCKADDR_STORAGE_SIZE));
  }

  /** rdma_bind_addr. */
  bindAddr(address: EndpointAddress): void {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CmId');
    const operation = 'rdma_bind_addr';
    this.ensureOpen(operation);
    const a = parseArgument(operation, 'address', endpointSchema, address);
    checkRdma(operation, librdmacm.rdma_bind_addr(this.handle, sockaddrOf(a)));
  }

  /** rdma_resolve_addr: resolves the destination to a device (ADDR_RESOLVED). Default timeout 2000 ms. */
  async resolveAddr(destination: EndpointAddress, options: ResolveAddrOptions = {}): Promise<void> {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CmId');
    const operation = 'rdma_resolve_addr';
    this.ensureOpen(operation);
    const dst = parseArgument(operation, 'destination', endpointSchema, destination);
    const o = this.#issueOptions(operation, resolveSchema, options, 'C timeout');
    const cTimeout = o.timeoutMs ?? 2000;
    const source = o.source ? encodeSocketAddress(o.source.address, o.source.port) : null;
    checkRdma(operation, librdmacm.rdma_resolve_addr(this.handle, source, sockaddrOf(dst), cTimeout));
    await this.#eventAfter(operation, ['ADDR_RESOLVED'], o, cTimeout);
  }

  /** rdma_resolve_route (ROUTE_RESOLVED). Default timeout 2000 ms. */
  async resolveRoute(options: WaitOptions = {}): Promise<void> {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CmId');
    const operation = 'rdma_resolve_route';
    this.ensureOpen(operation);
    const o = this.#issueOptions(operation, waitSchema, options, 'C timeout');
    const cTimeout = o.timeoutMs ?? 2000;
    checkRdma(operation, librdmacm.rdma_resolve_route(this.handle, cTimeout));
    await this.#eventAfter(operation, ['ROUTE_RESOLVED'], o, cTimeout);
  }

  /**
   * rdma_create_qp. Without `pd` the id's default PD is used. Without
   * `attr.sendCq`/`attr.recvCq`, librdmacm creates a CQ with its completion
   * channel for each, and destroys them with the QP. A CQ of your own (from
   * id.device.createCq()) can serve both, or several QPs; it closes their QPs
   * before itself. Your own recvCq needs your own sendCq: librdmacm never
   * frees a send CQ it made for a QP whose receive CQ it did not make.
   */
  createQp(attr: CreateQpAttr = {}, pd?: ProtectionDomain): QueuePair {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CmId');
    const operation = 'rdma_create_qp';
    this.ensureOpen(operation);
    if (this.#hasOpenQueuePair()) throw argumentError(operation, 'id', 'this id already has a queue pair', 'ERR_INVALID_ARG_VALUE');
    const a = parseArgument(operation, 'attr', createQpSchema, attr);
    if (pd !== undefined) {
      if (!Resource.isA(pd, ProtectionDomain)) throw argumentError(operation, 'pd', 'expected a ProtectionDomain', 'ERR_INVALID_ARG_TYPE');
      if (pd.closed) throw new ResourceClosedError('protection domain', operation, undefined, 'pd');
    }
    if (pd === undefined) this.#checkReusedPd(operation);
    const verbs = this.#deviceHandle(operation);
    checkQpAttrLimits(operation, a, deviceLimits(verbs));
    if (a.sendCq) checkOwnCq(operation, 'attr.sendCq', a.sendCq, verbs);
    if (a.recvCq) checkOwnCq(operation, 'attr.recvCq', a.recvCq, verbs);
    // rdma-core's ucma_destroy_cqs frees a send CQ it made only along with a receive CQ it made: this one would leak.
    if (a.recvCq && !a.sendCq) throw argumentError(operation, 'attr.sendCq', 'with your own recvCq, give a sendCq too (librdmacm would never free the send CQ it made): e.g. sendCq: id.device.createCq()', 'ERR_INVALID_ARG_VALUE');
    const init = encodeQpInitAttr(a);
    checkRdma(operation, librdmacm.rdma_create_qp(this.handle, pd ? pd.unsafeHandle : null, init));
    if (pd) this.#protectionDomain = pd;
    return this.#adoptQueuePair(pd, grantedCaps(init), a.sendCq, a.recvCq);
  }

  /** A queue pair closed on its own (or by its shared CQ) is gone: the id may have a new one. */
  #hasOpenQueuePair(): boolean {
    return this.#queuePair !== undefined && !this.#queuePair.closed;
  }

  /** id->verbs, or an argument error: with no device yet, librdmacm would dereference NULL. */
  #deviceHandle(operation: string): Pointer {
    const verbs = readPointer(this.handle, ID.verbs);
    if (verbs === 0n) throw argumentError(operation, 'id', 'this id has no device yet: resolve an address (or bind to a device\'s address) first', 'ERR_INVALID_ARG_VALUE');
    return verbs;
  }

  /**
   * rdma_create_srq: a shared receive queue on this id; the QP created next on
   * it takes its receives from there. Without `pd`, the id's default PD.
   */
  createSrq(attr: SrqAttr = {}, pd?: ProtectionDomain): SharedReceiveQueue {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CmId');
    const operation = 'rdma_create_srq';
    this.ensureOpen(operation);
    if (this.#sharedReceiveQueue) throw argumentError(operation, 'id', 'this id already has a shared receive queue', 'ERR_INVALID_ARG_VALUE');
    if (this.#hasOpenQueuePair()) throw argumentError(operation, 'id', 'create the shared receive queue before the queue pair that uses it', 'ERR_INVALID_ARG_VALUE');
    const a = parseArgument(operation, 'attr', srqAttrSchema, attr);
    if (pd !== undefined && !Resource.isA(pd, ProtectionDomain)) throw argumentError(operation, 'pd', 'expected a ProtectionDomain', 'ERR_INVALID_ARG_TYPE');
    if (pd?.closed) throw new ResourceClosedError('protection domain', operation, undefined, 'pd');
    if (pd === undefined) this.#checkReusedPd(operation);
    this.#deviceHandle(operation);
    const init = Buffer.alloc(ibv_srq_init_attr.size);
    koffi.encode(init, ibv_srq_init_attr, { srq_context: null, attr: { max_wr: a.maxWr, max_sge: a.maxSge, srq_limit: a.srqLimit } });
    checkRdma(operation, librdmacm.rdma_create_srq(this.handle, pd ? pd.unsafeHandle : null, init));
    const granted = koffi.decode(init, ibv_srq_init_attr) as IbvSrqInitAttr;
    const srq = readPointer(this.handle, ID.srq);
    if (pd) this.#protectionDomain = pd;
    const handle = this.handle;
    this.#sharedReceiveQueue = new SharedReceiveQueue(internal, this, srq, pd ?? this.pd, granted.attr.max_wr, granted.attr.max_sge, () => librdmacm.rdma_destroy_srq(handle));
    return this.#sharedReceiveQueue;
  }

  /** The shared receive queue, once created. */
  get srq(): SharedReceiveQueue | undefined {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CmId');
    return this.#sharedReceiveQueue;
  }

  /** rdma_destroy_qp (the QP's regions stay registered; they belong to the PD). */
  destroyQp(): void {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CmId');
    this.ensureOpen('rdma_destroy_qp');
    this.#queuePair?.close();
    this.#queuePair = undefined;
  }

  /** Wraps id->qp; `granted` is the caps returned by create, else they are queried. */
  #adoptQueuePair(pd: ProtectionDomain | undefined, granted: IbvQpCap | undefined, sendCq?: CompletionQueue, recvCq?: CompletionQueue): QueuePair {
    const qp = readPointer(this.handle, ID.qp);
    let caps = granted;
    if (!caps) {
      const init = Buffer.alloc(ibv_qp_init_attr.size);
      checkVerbs('ibv_query_qp', libibverbs.ibv_query_qp(qp, Buffer.alloc(ibv_qp_attr.size), IBV_QP_CAP, init));
      caps = grantedCaps(init);
    }
    const handle = this.handle;
    // Given no PD, librdmacm reuses id->pd, the PD of the id's last QP or SRQ, which may be one of yours.
    const known = this.#protectionDomain;
    const onKnown = known && !known.closed && known.unsafeHandle === readPointer(qp, QP_PD) ? known : undefined;
    const protectionDomainOf = (qpPd: Pointer) => pd ?? onKnown ?? this.#borrowPd(qpPd);
    const ownPd = pd ?? (onKnown?.owned ? onKnown : undefined);
    const srq = this.#sharedReceiveQueue && !this.#sharedReceiveQueue.closed ? this.#sharedReceiveQueue : undefined;
    this.#queuePair = new QueuePair(internal, this, qp, protectionDomainOf, caps, () => librdmacm.rdma_destroy_qp(handle), { sendCq, recvCq, pd: ownPd, srq });
    return this.#queuePair;
  }

  /**
   * rdma_connect; resolves at ESTABLISHED with the peer's private data.
   * REJECTED, UNREACHABLE and CONNECT_ERROR reject with ConnectionError. Default timeout 10 s.
   */
  async connect(param?: ConnParam, options: WaitOptions = {}): Promise<Established> {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CmId');
    const operation = 'rdma_connect';
    this.ensureOpen(operation);
    const encoded = encodeConnParam(operation, param, 'connect', this.#transport());
    const o = this.#issueOptions(operation, waitSchema, options, 'wait only');
    checkRdma(operation, librdmacm.rdma_connect(this.handle, encoded.struct));
    const event = await this.#eventAfter(operation, ['ESTABLISHED'], o, 10_000);
    return { privateData: event?.conn?.privateData ?? event?.ud?.privateData ?? Buffer.alloc(0), conn: event?.conn, ud: event?.ud };
  }

  /** rdma_listen. A backlog of 0 lets librdmacm pick. */
  listen(backlog = 0): void {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CmId');
    const operation = 'rdma_listen';
    this.ensureOpen(operation);
    const b = parseArgument(operation, 'backlog', backlogSchema, backlog);
    checkRdma(operation, librdmacm.rdma_listen(this.handle, b));
  }

  /** rdma_get_request on a synchronous listener: blocks for the next request; the new id has its QP when the listener came from createEndpoint. */
  getRequest(): CmId {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CmId');
    const operation = 'rdma_get_request';
    this.ensureOpen(operation);
    if (this.#channel) throw argumentError(operation, 'id', 'this listener is asynchronous (it has an event channel): use nextRequest()', 'ERR_INVALID_ARG_VALUE');
    const slot = newIdSlot.buffer;
    checkRdma(operation, librdmacm.rdma_get_request(this.handle, slot));
    const handle = slot.readBigUInt64LE(0);
    const event = readPointer(handle, ID.event);
    const copied = event === 0n ? undefined : copyCmEvent(event, this.udPortSpace);
    const request = copied?.conn ?? copied?.ud;
    if (event !== 0n) {
      // The request event counts against the listener, whose rdma_destroy_id
      // waits until it is acked, and librdmacm acks it only on a successful RC
      // accept: a rejected or dropped request would hang the listener's close.
      librdmacm.rdma_ack_cm_event(event);
      writePointer(handle, ID.event, 0n);
    }
    // A request id is not the listener's child: it lives on after the listener closes.
    const pd = this.#protectionDomain?.owned ? this.#protectionDomain : undefined;
    return new CmId(internal, handle, null, { portSpace: this.portSpace, endpoint: this.#endpoint, request, pd });
  }

  /** The next connection request on an asynchronous listener, as a new id (accept() or reject() it). */
  async nextRequest(options: WaitOptions = {}): Promise<CmId> {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CmId');
    const operation = 'nextRequest';
    this.ensureOpen(operation);
    if (!this.#channel) throw argumentError(operation, 'id', 'this listener is synchronous: use getRequest()', 'ERR_INVALID_ARG_VALUE');
    const o = parseArgument(operation, 'options', waitSchema, options);
    const event = await this.#wait(operation, ['CONNECT_REQUEST'], o.timeoutMs, o.signal);
    return event.id;
  }

  /** rdma_accept; resolves once the connection is established. Default timeout 10 s. */
  async accept(param?: ConnParam, options: WaitOptions = {}): Promise<void> {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CmId');
    const operation = 'rdma_accept';
    this.ensureOpen(operation);
    const encoded = encodeConnParam(operation, param, 'accept', this.#transport());
    const o = this.#issueOptions(operation, waitSchema, options, 'wait only');
    const expected: CmEventTypeName[] = this.udPortSpace ? [] : ['ESTABLISHED'];
    checkRdma(operation, librdmacm.rdma_accept(this.handle, encoded.struct));
    await this.#eventAfter(operation, expected, o, 10_000);
  }

  /** rdma_reject, with optional private data for the peer (RC: up to 148 bytes). */
  reject(privateData?: Uint8Array): void {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CmId');
    const operation = 'rdma_reject';
    this.ensureOpen(operation);
    const data = parseArgument(operation, 'privateData', bytes.optional(), privateData);
    const limit = PRIVATE_DATA_LIMITS[this.#transport()].reject;
    if (data && data.byteLength > limit) throw argumentError(operation, 'privateData', `at most ${limit} bytes (got ${data.byteLength})`, 'ERR_OUT_OF_RANGE');
    const copy = data ? Buffer.from(data) : null;
    checkRdma(operation, librdmacm.rdma_reject(this.handle, copy, copy?.byteLength ?? 0));
  }

  /** rdma_establish: completes a connection whose QP the caller manages. */
  establish(): void {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CmId');
    this.ensureOpen('rdma_establish');
    checkRdma('rdma_establish', librdmacm.rdma_establish(this.handle));
  }

  /** rdma_notify: tells librdmacm of a QP event (e.g. COMM_EST). */
  notify(event: IbvEventTypeName): void {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CmId');
    const operation = 'rdma_notify';
    this.ensureOpen(operation);
    const name = parseArgument(operation, 'event', ibvEventSchema, event);
    checkRdma(operation, librdmacm.rdma_notify(this.handle, IbvEventType.values[name]));
  }

  /** Whether this id has seen DISCONNECTED (the peer, or our own disconnect, ended the connection). */
  get disconnected(): boolean {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CmId');
    return this.#disconnected;
  }

  /**
   * rdma_disconnect. On an asynchronous id, resolves at DISCONNECTED (default
   * timeout 5 s). The initiator's DISCONNECTED comes only once the peer calls
   * rdma_disconnect too, so a peer answers waitForDisconnect() with disconnect(),
   * which then resolves at once (it only tells the peer).
   */
  async disconnect(options: WaitOptions = {}): Promise<void> {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CmId');
    const operation = 'rdma_disconnect';
    this.ensureOpen(operation);
    const o = this.#issueOptions(operation, waitSchema, options, 'wait only');
    if (this.#disconnected) {
      this.#dropKept('DISCONNECTED');
      librdmacm.rdma_disconnect(this.handle);
      return;
    }
    checkRdma(operation, librdmacm.rdma_disconnect(this.handle));
    await this.#eventAfter(operation, ['DISCONNECTED'], o, 5_000);
  }

  /** Resolves when the connection ends (the peer's rdma_disconnect, or an error); then call disconnect(). */
  async waitForDisconnect(options: WaitOptions = {}): Promise<void> {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CmId');
    const operation = 'waitForDisconnect';
    this.ensureOpen(operation);
    const o = parseArgument(operation, 'options', waitSchema, options);
    if (this.#disconnected) return this.#dropKept('DISCONNECTED');
    if (!this.#channel) throw argumentError(operation, 'id', 'a synchronous id has no events to wait for', 'ERR_INVALID_ARG_VALUE');
    await this.#wait(operation, ['DISCONNECTED'], o.timeoutMs, o.signal);
  }

  #dropKept(type: CmEventTypeName): void {
    const kept = this.#inbox.findIndex((e) => e.type === type);
    if (kept >= 0) this.#inbox.splice(kept, 1);
  }

  /** rdma_migrate_id: moves this id's events to another channel (or makes it synchronous with null). */
  migrateId(channel: EventChannel | null): void {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CmId');
    const operation = 'rdma_migrate_id';
    this.ensureOpen(operation);
    if (channel !== null && !Resource.isA(channel, EventChannel)) throw argumentError(operation, 'channel', 'expected an EventChannel or null', 'ERR_INVALID_ARG_TYPE');
    if (channel?.closed) throw new ResourceClosedError('event channel', operation, undefined, 'channel');
    const busy = this.#waiters.map((w) => w.operation);
    if (busy.length > 0) throw argumentError(operation, 'id', `operations are still waiting for events: ${busy.join(', ')}`, 'ERR_INVALID_ARG_VALUE');
    checkRdma(operation, librdmacm.rdma_migrate_id(this.handle, channel ? channel.unsafeHandle : null));
    this.#channel?.[detachTarget](this.handle);
    this.#channel = channel;
    channel?.[attachTarget](this.handle, this);
    this.reparent(channel ?? undefined);
  }

  /** rdma_set_option at RDMA_OPTION_ID level: TOS, REUSEADDR, AFONLY, ACK_TIMEOUT. */
  setOption(option: IdOption): void {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CmId');
    const operation = 'rdma_set_option';
    this.ensureOpen(operation);
    const o = parseArgument(operation, 'option', optionSchema, option);
    const byteSized = o.option === 'TOS' || o.option === 'ACK_TIMEOUT';
    const value = Buffer.alloc(byteSized ? 1 : 4);
    if (byteSized) value.writeUInt8(Number(o.value), 0);
    else value.writeInt32LE(o.value ? 1 : 0, 0);
    checkRdma(operation, librdmacm.rdma_set_option(this.handle, 0, OPTION_IDS[o.option], value, value.byteLength));
  }

  /**
   * rdma_join_multicast (or rdma_join_multicast_ex for a send-only join, where
   * librdmacm has it): joins the group at `group.address`; the id's UD QP, if it
   * exists, is attached and receives the group's messages. Resolves at
   * MULTICAST_JOIN with the group's UD parameters: send to it with
   * `addressHandleTo(joined.ud)`, remoteQpn 0xffffff and `joined.ud.qkey`.
   */
  async joinMulticast(group: { address: string }, options: JoinMulticastOptions = {}): Promise<MulticastGroup> {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CmId');
    const operation = 'rdma_join_multicast';
    this.ensureOpen(operation);
    const g = parseArgument(operation, 'group', groupSchema, group);
    const { sendOnly, ...waiting } = this.#issueOptions(operation, joinSchema, options, 'wait only');
    const address = encodeSocketAddress(g.address, 0);
    if (sendOnly) {
      if (!librdmacm.has('rdma_join_multicast_ex')) throw librdmacm.unsupported('rdma_join_multicast_ex', 'a send-only multicast join');
      const attr = Buffer.alloc(rdma_cm_join_mc_attr_ex.size);
      koffi.encode(attr, rdma_cm_join_mc_attr_ex, { comp_mask: 0b11, join_flags: 1 /* SENDONLY_FULLMEMBER */, addr: koffi.address(address) });
      checkRdma(operation, librdmacm.rdma_join_multicast_ex(this.handle, attr, null));
    } else {
      checkRdma(operation, librdmacm.rdma_join_multicast(this.handle, address, null));
    }
    const event = await this.#eventAfter(operation, ['MULTICAST_JOIN'], waiting, 5_000);
    const ud = event?.ud;
    if (!ud) throw new RdmaError(operation, 5 /* EIO */, 'the join reported no UD parameters');
    return { address: g.address, ud };
  }

  /** rdma_leave_multicast. */
  leaveMulticast(group: { address: string }): void {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CmId');
    const operation = 'rdma_leave_multicast';
    this.ensureOpen(operation);
    const g = parseArgument(operation, 'group', groupSchema, group);
    checkRdma(operation, librdmacm.rdma_leave_multicast(this.handle, encodeSocketAddress(g.address, 0)));
  }

  /** UD: an address handle to the peer an ESTABLISHED (or MULTICAST_JOIN) event described. */
  addressHandleTo(ud: EventUdParam): AddressHandle {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CmId');
    this.ensureOpen('addressHandleTo');
    if (typeof ud !== 'object' || ud === null || typeof ud.ahAttr !== 'object') throw argumentError('addressHandleTo', 'ud', 'expected the ud parameters of an event', 'ERR_INVALID_ARG_TYPE');
    return this.pd.createAh(ud.ahAttr);
  }

  /** UD: an address handle back to the sender of a receive (`receive` starts with the GRH). */
  addressHandleFrom(completion: WorkCompletion, receive: Uint8Array): AddressHandle {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CmId');
    this.ensureOpen('addressHandleFrom');
    const verbs = readPointer(this.handle, ID.verbs);
    const portNum = koffi.decode(this.handle, ID.portNum, 'uint8_t') as number;
    const pd = this.pd;
    return AddressHandle.fromCompletion(internal, pd, pd.unsafeHandle, verbs, portNum, completion, receive);
  }

  // Man-page conveniences over the queue pair and the PD (rdma_verbs.h).
  /** rdma_reg_msgs on this id's PD. */
  regMsgs(buffer: Uint8Array): MemoryRegion {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CmId');
    return this.pd.regMsgs(buffer);
  }
  /** rdma_reg_read on this id's PD. */
  regRead(buffer: Uint8Array): MemoryRegion {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CmId');
    return this.pd.regRead(buffer);
  }
  /** rdma_reg_write on this id's PD. */
  regWrite(buffer: Uint8Array): MemoryRegion {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CmId');
    return this.pd.regWrite(buffer);
  }
  /** rdma_post_recv. */
  postRecv(region: MemoryRegion, options?: RecvOptions): number {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CmId');
    return this.#queuePairFor('postRecv').postRecv(region, options);
  }
  /** rdma_post_send. */
  postSend(source: MemoryRegion | Uint8Array, options?: SendOptions): number {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CmId');
    return this.#queuePairFor('postSend').postSend(source, options);
  }
  /** rdma_get_send_comp. */
  getSendComp(): WorkCompletion {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CmId');
    return this.#queuePairFor('getSendComp').getSendComp();
  }
  /** rdma_get_recv_comp. */
  getRecvComp(): WorkCompletion {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CmId');
    return this.#queuePairFor('getRecvComp').getRecvComp();
  }

  /**
   * Parses the options of an operation about to be issued (an aborted signal
   * stops it before the call). On a synchronous id the call blocks inside
   * librdmacm, where no signal can reach it, and a timeout applies only where
   * librdmacm takes one (`timeout` 'C timeout': rdma_resolve_addr and
   * rdma_resolve_route): such options are refused, not ignored.
   */
  #issueOptions<S extends z.ZodType<{ signal?: AbortSignal | undefined; timeoutMs?: number | undefined }>>(
    operation: string, schema: S, options: unknown, timeout: 'C timeout' | 'wait only',
  ): z.output<S> {
    if (!this.#channel) {
      const parsed = parseArgument(operation, 'options', schema, options);
      if (parsed.signal !== undefined) {
        throw argumentError(operation, 'options.signal', 'a synchronous id (created without an event channel) blocks inside librdmacm, where no signal can stop it: create the id on an EventChannel to abort its calls', 'ERR_INVALID_ARG_VALUE');
      }
      if (parsed.timeoutMs !== undefined && timeout === 'wait only') {
        throw argumentError(operation, 'options.timeoutMs', 'a synchronous id has no event to wait for with a timeout (the call returns when librdmacm does): create the id on an EventChannel for one', 'ERR_INVALID_ARG_VALUE');
      }
    }
    return issueOptions(operation, schema, options);
  }

  #transport(): 'RC' | 'UD' {
    const qpType = this.#queuePair?.type ?? QpType.nameOf(koffi.decode(this.handle, ID.qpType, 'int') as number);
    return this.udPortSpace || qpType === 'UD' ? 'UD' : 'RC';
  }

  /**
   * The event that ends an operation just issued. On an asynchronous id, waits
   * for it; on a synchronous id the call itself blocked until then, and its
   * event (if any) is what librdmacm left in id->event.
   */
  #eventAfter(
    operation: string, expected: readonly CmEventTypeName[], options: { timeoutMs?: number | undefined; signal?: AbortSignal | undefined },
    defaultTimeoutMs: number,
  ): Promise<ConnectionEvent | undefined> {
    if (!this.#channel || expected.length === 0) return Promise.resolve(this.#syncEvent());
    // Events are read on the event loop, so the one this call caused cannot have been taken yet.
    return this.#wait(operation, expected, (options.timeoutMs ?? defaultTimeoutMs) + 1000, options.signal, true);
  }

  /** The event a synchronous call left in id->event (acked by librdmacm on the next call). */
  #syncEvent(): ConnectionEvent | undefined {
    const event = readPointer(this.handle, ID.event);
    if (event === 0n) return undefined;
    const raw = copyCmEvent(event, this.udPortSpace);
    if (raw.idHandle === 0n) return undefined;
    return { type: raw.type, status: raw.status, id: this, listenId: undefined, conn: raw.conn, ud: raw.ud };
  }

  /**
   * Waits for one of `expected` on this id; ending events reject with
   * ConnectionError. `fresh` skips events kept from before (the operation was
   * just issued).
   */
  #wait(
    operation: string, expected: readonly CmEventTypeName[], timeoutMs: number | undefined, signal: AbortSignal | undefined, fresh = false,
  ): Promise<ConnectionEvent> {
    if (!fresh) {
      const index = this.#inbox.findIndex((e) => expected.includes(e.type as CmEventTypeName));
      if (index >= 0) return Promise.resolve(this.#inbox.splice(index, 1)[0]!);
    }
    if (signal?.aborted) return Promise.reject(abortError(signal));
    return new Waiter(operation, expected, timeoutMs, signal, this.#waiters, this.#channel!).promise;
  }

  /**
   * @internal Called by the channel: every waiter expecting the event gets it;
   * an ending event (an error, DISCONNECTED) rejects the others. True if anyone took it.
   */
  [offerEvent](event: CmEvent<EventTarget>): boolean {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CmId');
    const typed = event as ConnectionEvent;
    if (typed.type === 'DISCONNECTED') this.#disconnected = true;
    let taken = false;
    let expectedBySomeone = false;
    // A waiter that settles leaves the array at once (the next one moves into
    // its place); none joins synchronously.
    const waiters = this.#waiters;
    for (let i = 0; i < waiters.length;) {
      const waiter = waiters[i]!;
      if (waiter.expected.includes(typed.type as CmEventTypeName)) {
        expectedBySomeone = true;
        taken = true;
        waiter.resolve(typed);
      } else if (ENDING_EVENTS.has(typed.type)) {
        taken = true;
        waiter.reject(new ConnectionError(waiter.operation, typed.type, typed.status, typed.conn?.privateData ?? typed.ud?.privateData));
      }
      if (waiters[i] === waiter) i++;
    }
    // A disconnect that only ended another operation stays visible for a later waitForDisconnect().
    if (typed.type === 'DISCONNECTED' && taken && !expectedBySomeone) this.#inbox.push(typed);
    return taken;
  }

  /** @internal Called by the channel's deadline timer. */
  [expireWaiters](now: number): number {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CmId');
    let next = Infinity;
    for (const waiter of [...this.#waiters]) {
      if (waiter.deadline <= now) waiter.expire();
      else next = Math.min(next, waiter.deadline);
    }
    return next;
  }

  /** @internal Called by the channel when it can no longer read events. */
  [failPending](error: unknown): void {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CmId');
    for (const waiter of [...this.#waiters]) waiter.reject(error);
  }

  /** @internal Called by the channel: an event nobody waited for. */
  [keepEvent](event: CmEvent<EventTarget>): void {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CmId');
    this.#inbox.push(event as ConnectionEvent);
  }

  /** Events that arrived while no operation waited (DISCONNECTED, TIMEWAIT_EXIT, …), oldest first; taking them empties the list. */
  takeEvents(): ConnectionEvent[] {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CmId');
    return this.#inbox.splice(0);
  }

  protected release(): void {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CmId');
    const handle = handleToRelease(this, 'CmId');
    for (const waiter of [...this.#waiters]) waiter.reject(new ResourceClosedError(this.kind, waiter.operation));
    this.#channel?.[detachTarget](handle);
    this.#inbox = [];
    if (this.#endpoint) librdmacm.rdma_destroy_ep(handle);
    else checkRdma('rdma_destroy_id', librdmacm.rdma_destroy_id(handle));
  }
}

// Connection requests arriving on a channel become ids of the listener's kind.
setRequestAdopter((channel, handle, listener, request) =>
  new CmId(internal, handle, channel, { portSpace: (listener as CmId).portSpace, endpoint: false, request }));

function checkQpAttrLimits(operation: string, attr: z.output<typeof qpAttrSchema>, limits: DeviceLimits): void {
  const { maxQpWr, maxSge } = limits;
  const over = (field: string, value: number, limit: number) => argumentError(operation, `attr.${field}`, `at most ${limit} on this device (got ${value})`, 'ERR_OUT_OF_RANGE');
  if (attr.sendWr > maxQpWr) throw over('sendWr', attr.sendWr, maxQpWr);
  if (attr.recvWr > maxQpWr) throw over('recvWr', attr.recvWr, maxQpWr);
  if (attr.sendSge > maxSge) throw over('sendSge', attr.sendSge, maxSge);
  if (attr.recvSge > maxSge) throw over('recvSge', attr.recvSge, maxSge);
}

/** A CQ given to createQp: open, and on the id's device (ibv_create_qp would refuse another's, or worse). */
function checkOwnCq(operation: string, path: string, cq: CompletionQueue, verbs: Pointer): void {
  if (cq.closed) throw new ResourceClosedError('completion queue', operation, undefined, path);
  if (cq.contextHandle !== verbs) throw argumentError(operation, path, 'this completion queue is on another device: make it with id.device.createCq()', 'ERR_INVALID_ARG_VALUE');
}

const INIT = {
  sendCq: memberOffset(ibv_qp_init_attr, 'send_cq'),
  recvCq: memberOffset(ibv_qp_init_attr, 'recv_cq'),
  maxSendWr: memberOffset(ibv_qp_init_attr, 'cap.max_send_wr'),
  maxRecvWr: memberOffset(ibv_qp_init_attr, 'cap.max_recv_wr'),
  maxSendSge: memberOffset(ibv_qp_init_attr, 'cap.max_send_sge'),
  maxRecvSge: memberOffset(ibv_qp_init_attr, 'cap.max_recv_sge'),
  maxInlineData: memberOffset(ibv_qp_init_attr, 'cap.max_inline_data'),
  qpType: memberOffset(ibv_qp_init_attr, 'qp_type'),
  sqSigAll: memberOffset(ibv_qp_init_attr, 'sq_sig_all'),
};

/**
 * The one ibv_qp_init_attr of every rdma_create_qp/rdma_create_ep: filled,
 * passed and read back within one synchronous call, so one serves them all.
 * Off the V8 heap, so passing it costs no copy.
 */
const qpInitAttr = nativeScratch(ibv_qp_init_attr.size);

/** The `struct rdma_cm_id **` out-parameter of rdma_create_id and rdma_get_request, read right after each call. */
const newIdSlot = nativeScratch(8);

/**
 * ibv_qp_init_attr for rdma_create_qp/rdma_create_ep: no context or SRQ
 * (zeroed), and librdmacm makes each CQ not given. Written field by field: a
 * struct encode per QP costs more than the fields. Read the caps back with
 * grantedCaps() before the next QP is made.
 */
export function encodeQpInitAttr(attr: z.output<typeof qpAttrSchema> & { readonly sendCq?: CompletionQueue; readonly recvCq?: CompletionQueue }): Buffer {
  const { buffer, view } = qpInitAttr;
  buffer.fill(0);
  if (attr.sendCq) view.setBigUint64(INIT.sendCq, attr.sendCq.unsafeHandle, true);
  if (attr.recvCq) view.setBigUint64(INIT.recvCq, attr.recvCq.unsafeHandle, true);
  view.setUint32(INIT.maxSendWr, attr.sendWr, true);
  view.setUint32(INIT.maxRecvWr, attr.recvWr, true);
  view.setUint32(INIT.maxSendSge, attr.sendSge, true);
  view.setUint32(INIT.maxRecvSge, attr.recvSge, true);
  view.setUint32(INIT.maxInlineData, attr.inlineData, true);
  view.setInt32(INIT.qpType, QpType.values[attr.qpType], true);
  view.setInt32(INIT.sqSigAll, attr.sqSigAll ? 1 : 0, true);
  return buffer;
}

/** The caps the device granted, which rdma_create_qp/rdma_create_ep wrote back into the init attr. */
export function grantedCaps(init: Buffer): IbvQpCap {
  return {
    max_send_wr: init.readUInt32LE(INIT.maxSendWr),
    max_recv_wr: init.readUInt32LE(INIT.maxRecvWr),
    max_send_sge: init.readUInt32LE(INIT.maxSendSge),
    max_recv_sge: init.readUInt32LE(INIT.maxRecvSge),
    max_inline_data: init.readUInt32LE(INIT.maxInlineData),
  };
}

/** createId's options. */
export interface CreateIdOptions {
  /**
   * Any value, kept as id.context (rdma_cm_id->context's role).
   * @defaultValue undefined
   */
  context?: unknown;
  /**
   * 'TCP' (reliable connected), 'UDP' (datagrams), 'IB' or 'IPOIB'.
   * @defaultValue 'TCP'
   */
  portSpace?: PortSpaceName;
}
const createIdSchema = z.strictObject({
  context: z.unknown().optional(),
  portSpace: z.enum(PortSpace.names as [PortSpaceName, ...PortSpaceName[]]).default('TCP'),
});
type CreateIdTied = Holds<InputIs<typeof createIdSchema, CreateIdOptions>>;

/**
 * rdma_create_id. With an EventChannel the id is asynchronous (operations
 * return promises settled by events); with null it is synchronous and each
 * call blocks the thread. Port spaces: TCP (RC), UDP (UD), IB, IPOIB.
 */
export function createId(channel: EventChannel | null, options: CreateIdOptions = {}): CmId {
  const operation = 'rdma_create_id';
  if (channel !== null && !Resource.isA(channel, EventChannel)) throw argumentError(operation, 'channel', 'expected an EventChannel or null', 'ERR_INVALID_ARG_TYPE');
  if (channel?.closed) throw new ResourceClosedError('event channel', operation, undefined, 'channel');
  const o = parseArgument(operation, 'options', createIdSchema, options);
  const slot = newIdSlot.buffer;
  checkRdma(operation, librdmacm.rdma_create_id(channel ? channel.unsafeHandle : null, slot, null, PortSpace.values[o.portSpace]));
  return new CmId(internal, slot.readBigUInt64LE(0), channel, { context: o.context, portSpace: o.portSpace, endpoint: false });
}

/** rdma_event_str: the C name of an event type. */
export function eventName(type: CmEventTypeName): string {
  const name = parseArgument('rdma_event_str', 'type', cmEventSchema, type);
  return librdmacm.rdma_event_str(CmEventType.values[name]) ?? name;
}
