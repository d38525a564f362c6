// Connection-manager events (struct rdma_cm_event) copied into plain objects,
// and the typed errors that event statuses become.
import { Buffer } from 'node:buffer';
import koffi from 'koffi';
import type { Pointer } from '../../ffi/library.js';
import { errnoName } from '../../ffi/errors.js';
import { rdma_cm_event, rdma_ud_param, type RdmaUdParam } from '../../structs/rdma-cma.js';
import { memberOffset } from '../../structs/registry.js';
import { nativeBytes, snapshotStruct } from '../../ffi/native-copy.js';
import type { IbvAhAttr } from '../../structs/verbs-resources.js';
import { CmEventType, type CmEventTypeName } from '../core/enums.js';
import { readUint64Number } from '../core/native-memory.js';

/** The connection parameters an event carried, private data copied out. */
export interface EventConnParam {
  readonly privateData: Buffer;
  readonly responderResources: number;
  readonly initiatorDepth: number;
  readonly flowControl: number;
  readonly retryCount: number;
  readonly rnrRetryCount: number;
  readonly srq: boolean;
  readonly qpNum: number;
}

/** The UD parameters an event carried (for the UDP port space and multicast). */
export interface EventUdParam {
  readonly privateData: Buffer;
  readonly ahAttr: IbvAhAttr;
  readonly qpNum: number;
  readonly qkey: number;
}

/** A copied rdma_cm_event; the native event was acked right after the copy. */
export interface RawCmEvent {
  readonly type: CmEventTypeName | `UNKNOWN(${number})`;
  /** 0, a negative errno, or (for REJECTED) the transport's reject reason. */
  readonly status: number;
  readonly idHandle: Pointer;
  readonly listenIdHandle: Pointer | null;
  /** The same two pointers as Numbers (0: none), to look ids up by. */
  readonly idAddress: number;
  readonly listenIdAddress: number;
  /** For connection events (requests, responses, ESTABLISHED, rejections) of an RC id. */
  readonly conn: EventConnParam | undefined;
  /** For events of a UD id and multicast events. Neither is set for address, route and disconnect events. */
  readonly ud: EventUdParam | undefined;
}

const EVENT = {
  id: memberOffset(rdma_cm_event, 'id'),
  listenId: memberOffset(rdma_cm_event, 'listen_id'),
  event: memberOffset(rdma_cm_event, 'event'),
  status: memberOffset(rdma_cm_event, 'status'),
  param: memberOffset(rdma_cm_event, 'param'),
  privateData: memberOffset(rdma_cm_event, 'param.conn.private_data'),
  privateDataLen: memberOffset(rdma_cm_event, 'param.conn.private_data_len'),
  responderResources: memberOffset(rdma_cm_event, 'param.conn.responder_resources'),
  initiatorDepth: memberOffset(rdma_cm_event, 'param.conn.initiator_depth'),
  flowControl: memberOffset(rdma_cm_event, 'param.conn.flow_control'),
  retryCount: memberOffset(rdma_cm_event, 'param.conn.retry_count'),
  rnrRetryCount: memberOffset(rdma_cm_event, 'param.conn.rnr_retry_count'),
  srq: memberOffset(rdma_cm_event, 'param.conn.srq'),
  qpNum: memberOffset(rdma_cm_event, 'param.conn.qp_num'),
};

const UD_EVENTS = new Set<string>(['MULTICAST_JOIN', 'MULTICAST_ERROR']);
/** Events whose param union holds nothing (rdma_cm(7)): they get neither conn nor ud. */
const NO_PARAM_EVENTS = new Set<string>(['ADDR_RESOLVED', 'ADDR_ERROR', 'ROUTE_RESOLVED', 'ROUTE_ERROR', 'DISCONNECTED', 'DEVICE_REMOVAL', 'TIMEWAIT_EXIT', 'ADDR_CHANGE']);

function copyPrivateData(address: Pointer | null, length: number): Buffer {
  if (!address || length === 0) return Buffer.alloc(0);
  return nativeBytes(address, length);
}

/**
 * Copies everything out of a native rdma_cm_event (before it is acked).
 * `udPortSpace` says whether the event's id is UD, or looks it up by id handle
 * (a channel serves ids of both kinds).
 */
export function copyCmEvent(event: Pointer, udPortSpace: boolean | ((idAddress: number) => boolean)): RawCmEvent {
  // One copy of the whole struct instead of a native decode per field: events
  // are read on the event loop, often hundreds at a time. Every field is read
  // before anything else takes the shared snapshot.
  const v = snapshotStruct(event, rdma_cm_event.size);
  const type = CmEventType.nameOf(v.getInt32(EVENT.event, true));
  const status = v.getInt32(EVENT.status, true);
  const idHandle = v.getBigUint64(EVENT.id, true);
  const idAddress = readUint64Number(v, EVENT.id);
  const listenIdAddress = readUint64Number(v, EVENT.listenId);
  const listenIdHandle = listenIdAddress === 0 ? null : v.getBigUint64(EVENT.listenId, true);
  let conn: EventConnParam | undefined;
  let ud: EventUdParam | undefined;
  if (NO_PARAM_EVENTS.has(type)) return { type, status, idHandle, listenIdHandle, idAddress, listenIdAddress, conn, ud };
  // A CONNECT_REQUEST's id is new: the listener's port space says what it carries.
  const owner = listenIdAddress !== 0 ? listenIdAddress : idAddress;
  if (UD_EVENTS.has(type) || (typeof udPortSpace === 'boolean' ? udPortSpace : udPortSpace(owner))) {
    const p = koffi.decode(event, EVENT.param, rdma_ud_param) as RdmaUdParam;
    ud = { privateData: copyPrivateData(p.private_data, p.private_data_len), ahAttr: p.ah_attr, qpNum: p.qp_num, qkey: p.qkey };
  } else {
    conn = {
      privateData: copyPrivateData(v.getBigUint64(EVENT.privateData, true), v.getUint8(EVENT.privateDataLen)),
      responderResources: v.getUint8(EVENT.responderResources),
      initiatorDepth: v.getUint8(EVENT.initiatorDepth),
      flowControl: v.getUint8(EVENT.flowControl),
      retryCount: v.getUint8(EVENT.retryCount),
      rnrRetryCount: v.getUint8(EVENT.rnrRetryCount),
      srq: v.getUint8(EVENT.srq) !== 0,
      qpNum: v.getUint32(EVENT.qpNum, true),
    };
  }
  return { type, status, idHandle, listenIdHandle, idAddress, listenIdAddress, conn, ud };
}

/** A connection-manager event as the safe API hands it out: ids are the API's own objects. */
export interface CmEvent<Id> {
  readonly type: RawCmEvent['type'];
  readonly status: number;
  /** The id the event is for (for CONNECT_REQUEST: the new id of the request). */
  readonly id: Id;
  /** For CONNECT_REQUEST: the listening id. */
  readonly listenId: Id | undefined;
  readonly conn: EventConnParam | undefined;
  readonly ud: EventUdParam | undefined;
}

/** Events that end an operation with an error, and their codes. */
export const ERROR_EVENTS: Partial<Record<CmEventTypeName, string>> = {
  ADDR_ERROR: 'ERR_RDMACM_ADDR_ERROR',
  ROUTE_ERROR: 'ERR_RDMACM_ROUTE_ERROR',
  CONNECT_ERROR: 'ERR_RDMACM_CONNECT_ERROR',
  UNREACHABLE: 'ERR_RDMACM_UNREACHABLE',
  REJECTED: 'ERR_RDMACM_REJECTED',
  DEVICE_REMOVAL: 'ERR_RDMACM_DEVICE_REMOVAL',
  MULTICAST_ERROR: 'ERR_RDMACM_MULTICAST_ERROR',
};

/** IB CM reject reason 28: the peer's application rejected (rdma_reject). */
const REJECT_CONSUMER_DEFINED = 28;

/** An operation ended with a connection-manager event other than the one it waited for. */
export class ConnectionError extends Error {
  override name = 'ConnectionError';
  readonly code: string;
  /** For REJECTED: the peer's private data (rdma_reject's). */
  readonly privateData: Buffer | undefined;
  /** For REJECTED: the transport's reject reason (28: the peer's application rejected). */
  readonly rejectReason: number | undefined;
  /** The errno when the event's status is a negative errno (an ETIMEDOUT UNREACHABLE, say); as in Node's system errors. */
  readonly errno: number | undefined;
  /** The call whose outcome this event was, as in Node's system errors. */
  readonly syscall: string;

  constructor(
    readonly operation: string,
    readonly event: RawCmEvent['type'],
    readonly status: number,
    privateData?: Buffer,
  ) {
    const code = ERROR_EVENTS[event as CmEventTypeName] ?? 'ERR_RDMACM_UNEXPECTED_EVENT';
    const rejected = event === 'REJECTED';
    const detail = rejected
      ? `reason ${status}${status === REJECT_CONSUMER_DEFINED ? ' (rejected by the peer)' : ''}`
      : status < 0 ? `${errnoName(-status)}` : `status ${status}`;
    const hint = rejected || event === 'UNREACHABLE' ? ' — is a server listening on that address and port?' : '';
    super(`${operation}: ${event} (${detail})${hint}`);
    this.code = code;
    this.privateData = rejected ? privateData : undefined;
    this.rejectReason = rejected ? status : undefined;
    this.errno = !rejected && status < 0 ? -status : undefined;
    this.syscall = operation;
  }
}
