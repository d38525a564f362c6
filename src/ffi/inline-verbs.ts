// The static inline verbs, reimplemented in one place. verbs.h's ibv_post_send,
// ibv_post_recv, ibv_post_srq_recv, ibv_poll_cq and ibv_req_notify_cq call
// through context->ops; rdma_verbs.h's helpers wrap them. No symbol exists for
// any of them, so the function pointers are read from struct ibv_context_ops
// and bound once per context.
import { Buffer } from 'node:buffer';
import koffi, { type TypeObject } from 'koffi';
import { fixedCall, type FixedCall } from './bound-call.js';
import { libibverbs } from './libibverbs.js';
import { POLL_FAILED_ERRNO } from './errors.js';
import { readPointer, type Address, type Pointer, type PointerArg } from './library.js';
import { ibv_context, ibv_context_ops, ibv_cq, ibv_mr, ibv_qp, ibv_srq, verbs_context, VERBS_ABI_IS_EXTENDED } from '../structs/verbs-resources.js';
import { RECV_WR_OFFSET, SEND_WR_OFFSET, SGE_OFFSET, ibv_recv_wr, ibv_send_wr, ibv_sge } from '../structs/verbs-work.js';
import { rdma_cm_id } from '../structs/rdma-cma.js';

/** ibv_access_flags. */
export const IBV_ACCESS_LOCAL_WRITE = 1;
export const IBV_ACCESS_REMOTE_WRITE = 1 << 1;
export const IBV_ACCESS_REMOTE_READ = 1 << 2;
export const IBV_ACCESS_REMOTE_ATOMIC = 1 << 3;
/** ibv_wr_opcode values the helpers use. */
export const IBV_WR_RDMA_WRITE = 0;
export const IBV_WR_RDMA_WRITE_WITH_IMM = 1;
export const IBV_WR_SEND = 2;
export const IBV_WR_SEND_WITH_IMM = 3;
export const IBV_WR_RDMA_READ = 4;
export const IBV_WR_ATOMIC_CMP_AND_SWP = 5;
export const IBV_WR_ATOMIC_FETCH_AND_ADD = 6;
/** ibv_send_flags. */
export const IBV_SEND_FENCE = 1 << 0;
export const IBV_SEND_SIGNALED = 1 << 1;
export const IBV_SEND_SOLICITED = 1 << 2;
export const IBV_SEND_INLINE = 1 << 3;
/** The qkey of every rdma_post_ud_send (rdma_cma.h). */
export const RDMA_UDP_QKEY = 0x01234567;

const postSendProto = koffi.proto('int rdmacm_post_send_fn(void *qp, void *wr, void *bad_wr)');
const postRecvProto = koffi.proto('int rdmacm_post_recv_fn(void *qp, void *wr, void *bad_wr)');
const postSrqRecvProto = koffi.proto('int rdmacm_post_srq_recv_fn(void *srq, void *wr, void *bad_wr)');
const pollCqProto = koffi.proto('int rdmacm_poll_cq_fn(void *cq, int num_entries, void *wc)');
const reqNotifyCqProto = koffi.proto('int rdmacm_req_notify_cq_fn(void *cq, int solicited_only)');
// The same functions with their pointers declared as addresses, for the hot
// path: a call of three Numbers took 0.70 µs in the TCG guest against 0.87 µs
// for three BigInt `void *` (31–33 against 37–38 ns on the host).
const postSendAtProto = koffi.proto('int rdmacm_post_send_at_fn(uintptr_t qp, uintptr_t wr, uintptr_t bad_wr)');
const postRecvAtProto = koffi.proto('int rdmacm_post_recv_at_fn(uintptr_t qp, uintptr_t wr, uintptr_t bad_wr)');
const postSrqRecvAtProto = koffi.proto('int rdmacm_post_srq_recv_at_fn(uintptr_t srq, uintptr_t wr, uintptr_t bad_wr)');
const pollCqAtProto = koffi.proto('int rdmacm_poll_cq_at_fn(uintptr_t cq, int num_entries, uintptr_t wc)');

/** The data-path verbs of one device context, bound once. */
export interface ContextOps {
  /** ops.post_send(qp, wr, &bad_wr): 0 or a positive errno. */
  readonly postSend: (qp: PointerArg, wr: PointerArg, badWr: PointerArg) => number;
  /** ops.post_recv(qp, wr, &bad_wr). */
  readonly postRecv: (qp: PointerArg, wr: PointerArg, badWr: PointerArg) => number;
  /** ops.post_srq_recv(srq, wr, &bad_wr). */
  readonly postSrqRecv: (srq: PointerArg, wr: PointerArg, badWr: PointerArg) => number;
  /** ops.poll_cq(cq, n, wc[]): the number of completions, or < 0 on error. */
  readonly pollCq: (cq: PointerArg, numEntries: number, wc: PointerArg) => number;
  /** ops.req_notify_cq(cq, solicited_only): 0 or a positive errno. */
  readonly reqNotifyCq: (cq: PointerArg, solicitedOnly: number) => number;
  /** postSend with addresses (see toAddress): the cheapest crossing, for prepared requests. */
  readonly postSendAt: (qp: Address, wr: Address, badWr: Address) => number;
  /** postRecv with addresses. */
  readonly postRecvAt: (qp: Address, wr: Address, badWr: Address) => number;
  /** postSrqRecv with addresses. */
  readonly postSrqRecvAt: (srq: Address, wr: Address, badWr: Address) => number;
  /** pollCq with addresses. */
  readonly pollCqAt: (cq: Address, numEntries: number, wc: Address) => number;
  /** The provider's functions behind the verbs that prepared requests and polls repeat (0n: the provider has none). */
  readonly functions: Readonly<Record<RepeatedVerb, Pointer>>;
}

/** The verbs a prepared request or a CQ's poll calls again and again with the same arguments. */
export type RepeatedVerb = 'postSend' | 'postRecv' | 'postSrqRecv' | 'pollCq';

const opsOffset = koffi.offsetof(ibv_context, 'ops');
const opsCache = new Map<Pointer, ContextOps>();

const opPointer = (context: Pointer, slot: string) => readPointer(context, opsOffset + koffi.offsetof(ibv_context_ops, slot));

function bindOp<F>(context: Pointer, slot: string, proto: TypeObject): F {
  const fnPointer = opPointer(context, slot);
  if (fnPointer === 0n) {
    return ((): number => 95 /* EOPNOTSUPP */) as F;
  }
  return koffi.decode(fnPointer, proto) as F;
}

/** The bound data-path verbs of a struct ibv_context, resolved on first use and cached. */
export function contextOps(context: Pointer): ContextOps {
  let ops = opsCache.get(context);
  if (!ops) {
    ops = {
      postSend: bindOp(context, 'post_send', postSendProto),
      postRecv: bindOp(context, 'post_recv', postRecvProto),
      postSrqRecv: bindOp(context, 'post_srq_recv', postSrqRecvProto),
      pollCq: bindOp(context, 'poll_cq', pollCqProto),
      reqNotifyCq: bindOp(context, 'req_notify_cq', reqNotifyCqProto),
      postSendAt: bindOp(context, 'post_send', postSendAtProto),
      postRecvAt: bindOp(context, 'post_recv', postRecvAtProto),
      postSrqRecvAt: bindOp(context, 'post_srq_recv', postSrqRecvAtProto),
      pollCqAt: bindOp(context, 'poll_cq', pollCqAtProto),
      functions: {
        postSend: opPointer(context, 'post_send'),
        postRecv: opPointer(context, 'post_recv'),
        postSrqRecv: opPointer(context, 'post_srq_recv'),
        pollCq: opPointer(context, 'poll_cq'),
      },
    };
    opsCache.set(context, ops);
  }
  return ops;
}

/**
 * ops.<verb>(a, b, c) with its arguments kept, for a prepared request's posts
 * or a CQ's polls: a bound call (bound-call.ts) when `repeated`, else a plain
 * call of the `*At` function.
 */
export function repeatedVerbCall(ops: ContextOps, verb: RepeatedVerb, a: Address, b: Address, c: Address, repeated = true): FixedCall {
  // pollCq's middle argument is an int: a Number, which an Address may be.
  const plain = ops[`${verb}At`] as (a: Address, b: Address, c: Address) => number;
  return fixedCall(ops.functions[verb], plain, [a, b, c], repeated);
}

/** Forget a context's bound ops (call before ibv_close_device frees it). */
export function forgetContextOps(context: Pointer): void {
  opsCache.delete(context);
}

const queryPortProto = koffi.proto('int rdmacm_query_port_fn(void *context, uint8_t port_num, void *port_attr, size_t port_attr_len)');
const abiCompatOffset = koffi.offsetof(ibv_context, 'abi_compat');
const contextInVerbsContext = BigInt(koffi.offsetof(verbs_context, 'context'));
const szInVerbsContext = koffi.offsetof(verbs_context, 'sz');
const queryPortInVerbsContext = koffi.offsetof(verbs_context, 'query_port');
/** How far a provider's verbs_context must reach (its sz) to hold query_port: verbs_get_ctx_op's test. */
const sizeWithQueryPort = BigInt(verbs_context.size - queryPortInVerbsContext);

/**
 * The provider's verbs_context query_port for `context`, found as verbs.h's
 * verbs_get_ctx_op finds it; 0n where the context is not extended, or its
 * verbs_context is too short to hold the op, or the op is NULL.
 */
export function extendedQueryPort(context: Pointer): Pointer {
  if (readPointer(context, abiCompatOffset) !== VERBS_ABI_IS_EXTENDED) return 0n;
  const extended = context - contextInVerbsContext;
  if (readPointer(extended, szInVerbsContext) < sizeWithQueryPort) return 0n;
  return readPointer(extended, queryPortInVerbsContext);
}

/**
 * verbs.h's ibv_query_port, a static inline: the provider's query_port with
 * the buffer's size, which libibverbs fills as far as its own struct
 * ibv_port_attr goes and zeroes beyond (or copies the buffer's share of, when
 * the buffer is the smaller); else the exported symbol, which fills the
 * compat part, up to `flags`, of a buffer zeroed first. 0 or an errno.
 */
export function queryPort(context: Pointer, port: number, attr: Uint8Array): number {
  const op = extendedQueryPort(context);
  if (op === 0n) {
    attr.fill(0);
    return libibverbs.ibv_query_port(context, port, attr);
  }
  const call = koffi.decode(op, queryPortProto) as (context: Pointer, port: number, attr: Uint8Array, length: number) => number;
  return call(context, port, attr, attr.byteLength);
}

const qpContextOffset = koffi.offsetof(ibv_qp, 'context');
const cqContextOffset = koffi.offsetof(ibv_cq, 'context');
const idField = (name: string) => koffi.offsetof(rdma_cm_id, name);
const ID_QP = idField('qp');
const ID_PD = idField('pd');
const ID_SRQ = idField('srq');
const ID_SEND_CQ = idField('send_cq');
const ID_RECV_CQ = idField('recv_cq');
const ID_SEND_CQ_CHANNEL = idField('send_cq_channel');
const ID_RECV_CQ_CHANNEL = idField('recv_cq_channel');
const srqContextOffset = koffi.offsetof(ibv_srq, 'context');

const qpOps = (qp: Pointer) => contextOps(readPointer(qp, qpContextOffset));
const cqOps = (cq: Pointer) => contextOps(readPointer(cq, cqContextOffset));

/** ibv_post_send (verbs.h inline). */
export function ibv_post_send(qp: Pointer, wr: PointerArg, badWr: PointerArg): number {
  return qpOps(qp).postSend(qp, wr, badWr);
}
/** ibv_post_recv (verbs.h inline). */
export function ibv_post_recv(qp: Pointer, wr: PointerArg, badWr: PointerArg): number {
  return qpOps(qp).postRecv(qp, wr, badWr);
}
/** ibv_post_srq_recv (verbs.h inline). */
export function ibv_post_srq_recv(srq: Pointer, wr: PointerArg, badWr: PointerArg): number {
  return contextOps(readPointer(srq, srqContextOffset)).postSrqRecv(srq, wr, badWr);
}
/** ibv_poll_cq (verbs.h inline). */
export function ibv_poll_cq(cq: Pointer, numEntries: number, wc: PointerArg): number {
  return cqOps(cq).pollCq(cq, numEntries, wc);
}
/** ibv_req_notify_cq (verbs.h inline). */
export function ibv_req_notify_cq(cq: Pointer, solicitedOnly: number): number {
  return cqOps(cq).reqNotifyCq(cq, solicitedOnly);
}

/** rdma_verbs.h's rdma_seterrno: a verbs errno becomes -1 with errno set. */
function seterrno(ret: number): number {
  if (ret) {
    koffi.errno(ret);
    return -1;
  }
  return 0;
}

// One scratch area for the helpers' on-stack structs: calls are synchronous and
// the provider copies a work request before post returns, so it is reused.
const SEND_WR = 0;
const RECV_WR = SEND_WR + ibv_send_wr.size;
const SGE = RECV_WR + ibv_recv_wr.size;
const BAD_WR = SGE + ibv_sge.size;
const SCRATCH_SIZE = BAD_WR + 8;
let scratch: { address: Pointer; view: DataView } | undefined;
function scratchArea() {
  if (!scratch) {
    const address = koffi.alloc('uint8_t', SCRATCH_SIZE) as Pointer;
    scratch = { address, view: new DataView(koffi.view(address, SCRATCH_SIZE)) };
  }
  return scratch;
}

const toU64 = (value: Pointer | number | null) => BigInt(value ?? 0);

function sendWr(context: Pointer | null, sgl: Pointer, nsge: number, opcode: number, flags: number): { address: Pointer; view: DataView } {
  const area = scratchArea();
  const v = area.view;
  for (let i = 0; i < ibv_send_wr.size; i += 8) v.setBigUint64(SEND_WR + i, 0n, true);
  v.setBigUint64(SEND_WR + SEND_WR_OFFSET.wrId, toU64(context), true);
  v.setBigUint64(SEND_WR + SEND_WR_OFFSET.sgList, sgl, true);
  v.setInt32(SEND_WR + SEND_WR_OFFSET.numSge, nsge, true);
  v.setInt32(SEND_WR + SEND_WR_OFFSET.opcode, opcode, true);
  v.setUint32(SEND_WR + SEND_WR_OFFSET.sendFlags, flags >>> 0, true);
  return area;
}

function postScratchSend(id: Pointer): number {
  const area = scratchArea();
  return seterrno(ibv_post_send(readPointer(id, ID_QP), area.address + BigInt(SEND_WR), area.address + BigInt(BAD_WR)));
}

/** Write one SGE into scratch and return its address. */
function scratchSge(addr: Pointer, length: number, lkey: number): Pointer {
  const area = scratchArea();
  area.view.setBigUint64(SGE, addr, true);
  area.view.setUint32(SGE + SGE_OFFSET.length, length >>> 0, true);
  area.view.setUint32(SGE + SGE_OFFSET.lkey, lkey >>> 0, true);
  return area.address + BigInt(SGE);
}

const MR_ADDR = koffi.offsetof(ibv_mr, 'addr');
const MR_LENGTH = koffi.offsetof(ibv_mr, 'length');
const MR_LKEY = koffi.offsetof(ibv_mr, 'lkey');
const mrLkey = (mr: Pointer | null) => (mr ? (koffi.decode(mr, MR_LKEY, 'uint32_t') as number) : 0);

/** rdma_reg_msgs: LOCAL_WRITE on id->pd. */
export function rdma_reg_msgs(id: Pointer, addr: PointerArg, length: number): Pointer | null {
  return libibverbs.ibv_reg_mr(readPointer(id, ID_PD), addr, length, IBV_ACCESS_LOCAL_WRITE);
}
/** rdma_reg_read: LOCAL_WRITE | REMOTE_READ. */
export function rdma_reg_read(id: Pointer, addr: PointerArg, length: number): Pointer | null {
  return libibverbs.ibv_reg_mr(readPointer(id, ID_PD), addr, length, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
}
/** rdma_reg_write: LOCAL_WRITE | REMOTE_WRITE. */
export function rdma_reg_write(id: Pointer, addr: PointerArg, length: number): Pointer | null {
  return libibverbs.ibv_reg_mr(readPointer(id, ID_PD), addr, length, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
}
/** rdma_dereg_mr: -1 with errno on failure. */
export function rdma_dereg_mr(mr: Pointer): number {
  return seterrno(libibverbs.ibv_dereg_mr(mr));
}

/** rdma_post_recvv: to id->srq when the id has one, else to id->qp. */
export function rdma_post_recvv(id: Pointer, context: Pointer | null, sgl: Pointer, nsge: number): number {
  const area = scratchArea();
  const v = area.view;
  v.setBigUint64(RECV_WR + RECV_WR_OFFSET.wrId, toU64(context), true);
  v.setBigUint64(RECV_WR + RECV_WR_OFFSET.next, 0n, true);
  v.setBigUint64(RECV_WR + RECV_WR_OFFSET.sgList, sgl, true);
  v.setInt32(RECV_WR + RECV_WR_OFFSET.numSge, nsge, true);
  const wr = area.address + BigInt(RECV_WR);
  const bad = area.address + BigInt(BAD_WR);
  const srq = readPointer(id, ID_SRQ);
  if (srq !== 0n) return seterrno(ibv_post_srq_recv(srq, wr, bad));
  return seterrno(ibv_post_recv(readPointer(id, ID_QP), wr, bad));
}
/** rdma_post_sendv. */
export function rdma_post_sendv(id: Pointer, context: Pointer | null, sgl: Pointer, nsge: number, flags: number): number {
  sendWr(context, sgl, nsge, IBV_WR_SEND, flags);
  return postScratchSend(id);
}
/** The one-sided posts: an RDMA read or write to (remoteAddr, rkey). */
function postRdma(
  opcode: number, id: Pointer, context: Pointer | null, sgl: Pointer, nsge: number, flags: number, remoteAddr: bigint, rkey: number,
): number {
  const { view } = sendWr(context, sgl, nsge, opcode, flags);
  view.setBigUint64(SEND_WR + SEND_WR_OFFSET.remoteAddr, remoteAddr, true);
  view.setUint32(SEND_WR + SEND_WR_OFFSET.rkey, rkey >>> 0, true);
  return postScratchSend(id);
}
/** rdma_post_readv. */
export function rdma_post_readv(
  id: Pointer, context: Pointer | null, sgl: Pointer, nsge: number, flags: number, remoteAddr: bigint, rkey: number,
): number {
  return postRdma(IBV_WR_RDMA_READ, id, context, sgl, nsge, flags, remoteAddr, rkey);
}
/** rdma_post_writev. */
export function rdma_post_writev(
  id: Pointer, context: Pointer | null, sgl: Pointer, nsge: number, flags: number, remoteAddr: bigint, rkey: number,
): number {
  return postRdma(IBV_WR_RDMA_WRITE, id, context, sgl, nsge, flags, remoteAddr, rkey);
}

/**
 * rdma_post_recv. C only assert()s that the buffer lies inside the MR; this
 * checks it and fails with EINVAL instead.
 */
export function rdma_post_recv(id: Pointer, context: Pointer | null, addr: Pointer, length: number, mr: Pointer): number {
  const mrAddr = readPointer(mr, MR_ADDR);
  const mrLength = BigInt(koffi.decode(mr, MR_LENGTH, 'size_t') as number | bigint);
  if (addr < mrAddr || addr + BigInt(length) > mrAddr + mrLength) return seterrno(22 /* EINVAL */);
  return rdma_post_recvv(id, context, scratchSge(addr, length, mrLkey(mr)), 1);
}
/** rdma_post_send: mr may be NULL for inline data. */
export function rdma_post_send(id: Pointer, context: Pointer | null, addr: Pointer, length: number, mr: Pointer | null, flags: number): number {
  return rdma_post_sendv(id, context, scratchSge(addr, length, mrLkey(mr)), 1, flags);
}
/** rdma_post_read. */
export function rdma_post_read(
  id: Pointer, context: Pointer | null, addr: Pointer, length: number, mr: Pointer, flags: number, remoteAddr: bigint, rkey: number,
): number {
  return rdma_post_readv(id, context, scratchSge(addr, length, mrLkey(mr)), 1, flags, remoteAddr, rkey);
}
/** rdma_post_write: mr may be NULL for inline data. */
export function rdma_post_write(
  id: Pointer, context: Pointer | null, addr: Pointer, length: number, mr: Pointer | null, flags: number, remoteAddr: bigint, rkey: number,
): number {
  return rdma_post_writev(id, context, scratchSge(addr, length, mrLkey(mr)), 1, flags, remoteAddr, rkey);
}
/** rdma_post_ud_send: a SEND to (ah, remote_qpn) with qkey RDMA_UDP_QKEY. */
export function rdma_post_ud_send(
  id: Pointer, context: Pointer | null, addr: Pointer, length: number, mr: Pointer | null, flags: number, ah: Pointer, remoteQpn: number,
): number {
  const { view } = sendWr(context, scratchSge(addr, length, mrLkey(mr)), 1, IBV_WR_SEND, flags);
  view.setBigUint64(SEND_WR + SEND_WR_OFFSET.udAh, ah, true);
  view.setUint32(SEND_WR + SEND_WR_OFFSET.udRemoteQpn, remoteQpn >>> 0, true);
  view.setUint32(SEND_WR + SEND_WR_OFFSET.udRemoteQkey, RDMA_UDP_QKEY, true);
  return postScratchSend(id);
}

/**
 * The loop behind rdma_get_send_comp/rdma_get_recv_comp: poll; when empty,
 * arm the CQ, poll again to close the race, then block in ibv_get_cq_event
 * and ack the event. Returns the number of completions (1) or -1 with errno.
 */
function getComp(cq: Pointer, channel: Pointer, wc: PointerArg): number {
  const out = Buffer.alloc(16); // struct ibv_cq *cq; void *context
  for (;;) {
    let ret = ibv_poll_cq(cq, 1, wc);
    if (ret) return ret < 0 ? seterrno(POLL_FAILED_ERRNO) : ret;
    ret = ibv_req_notify_cq(cq, 0);
    if (ret) return seterrno(ret);
    ret = ibv_poll_cq(cq, 1, wc);
    if (ret) return ret < 0 ? seterrno(POLL_FAILED_ERRNO) : ret;
    ret = libibverbs.ibv_get_cq_event(channel, out.subarray(0, 8), out.subarray(8, 16));
    if (ret) return ret;
    libibverbs.ibv_ack_cq_events(cq, 1);
  }
}

/** rdma_get_send_comp: blocks until one send completion is in wc. */
export function rdma_get_send_comp(id: Pointer, wc: PointerArg): number {
  return getComp(readPointer(id, ID_SEND_CQ), readPointer(id, ID_SEND_CQ_CHANNEL), wc);
}
/** rdma_get_recv_comp: blocks until one receive completion is in wc. */
export function rdma_get_recv_comp(id: Pointer, wc: PointerArg): number {
  return getComp(readPointer(id, ID_RECV_CQ), readPointer(id, ID_RECV_CQ_CHANNEL), wc);
}
