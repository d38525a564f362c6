// A queue pair (struct ibv_qp) made by rdma_create_qp or rdma_create_ep on a
// CmId: posting sends and receives, and taking their completions.
import { Buffer } from 'node:buffer';
import koffi from 'koffi';
import { contextOps, type ContextOps } from '../../ffi/inline-verbs.js';
import { toAddress, type Pointer } from '../../ffi/library.js';
import { snapshotStruct } from '../../ffi/native-copy.js';
import { z } from 'zod';
import { libibverbs } from '../../ffi/libibverbs.js';
import { checkVerbs } from '../../ffi/errors.js';
import { ibv_qp, ibv_qp_attr } from '../../structs/verbs-resources.js';
import type { IbvQpCap } from '../../structs/verbs-resources.js';
import { CompletionQueue } from '../work/completion-queue.js';
import { QpType, type QpTypeName } from '../core/enums.js';
import type { MemoryRegion } from './memory-region.js';
import type { ProtectionDomain } from './protection-domain.js';
import { Resource, handleToRelease } from '../core/resource.js';
import { InvalidThisError, asObject } from '../core/errors.js';
import { assertInternal, internal, type Internal } from '../core/internal.js';
import {
  PreparedRecv, PreparedRecvChain, PreparedSend, PreparedSendChain, postOnce,
  type PostTarget, type RecvChainOptions, type RecvOptions, type SendChainOptions, type SendOptions,
} from '../work/work-request.js';
import { PreparedRequestIds } from '../work/work-request-ids.js';
import { argumentError, parseArgument } from '../core/validate.js';
import type { WorkCompletion } from '../work/work-completion.js';

const IBV_QP_MIN_RNR_TIMER = 1 << 15;
const MIN_RNR_TIMER_OFFSET = koffi.offsetof(ibv_qp_attr, 'min_rnr_timer');
/** IB's 5-bit RNR timer code: 0 is 655.36 ms, 1 is 0.01 ms, 12 is 0.64 ms, 31 is 491.52 ms. */
const rnrTimerCode = z.number().int().min(0).max(31, 'an RNR timer code is 0–31 (IB encoding: 1 = 0.01 ms, 12 = 0.64 ms, 0 = 655.36 ms)');

const QP = {
  context: koffi.offsetof(ibv_qp, 'context'),
  pd: koffi.offsetof(ibv_qp, 'pd'),
  sendCq: koffi.offsetof(ibv_qp, 'send_cq'),
  recvCq: koffi.offsetof(ibv_qp, 'recv_cq'),
  srq: koffi.offsetof(ibv_qp, 'srq'),
  qpNum: koffi.offsetof(ibv_qp, 'qp_num'),
  qpType: koffi.offsetof(ibv_qp, 'qp_type'),
};

/** What the device granted (qp_init_attr.cap is in/out). */
export interface QueuePairCaps {
  readonly maxSendWr: number;
  readonly maxRecvWr: number;
  readonly maxSendSge: number;
  readonly maxRecvSge: number;
  readonly maxInlineData: number;
}

export class QueuePair extends Resource {
  /** The brand every member checks first (`#brand in asObject(this)`): only the instances this package made have it. */
  readonly #brand = true;
  readonly qpNum: number;
  readonly type: QpTypeName | `UNKNOWN(${number})`;
  readonly caps: QueuePairCaps;
  readonly sendCq: CompletionQueue;
  readonly recvCq: CompletionQueue;
  readonly #ops: ContextOps;
  /** qp->pd, wrapped by the first use: a connection-setup loop never needs the object. */
  readonly #pdHandle: Pointer;
  readonly #protectionDomainOf: (pd: Pointer) => ProtectionDomain;
  #protectionDomain: ProtectionDomain | undefined;
  /** What work requests need to know about this QP, made by the first one. */
  #target: PostTarget | undefined;
  /** Set when the QP takes its receives from a shared receive queue. */
  readonly #usesSrq: boolean;
  /** rdma_destroy_qp on the owning id. */
  readonly #destroy: () => void;

  /**
   * @internal Wraps id->qp after rdma_create_qp/rdma_create_ep. Its CQs are `own` ones
   * given to createQp (which this QP then uses), or else librdmacm's.
   * `protectionDomainOf` gives the PD object for qp->pd; `destroy` is
   * rdma_destroy_qp on the owning id.
   */
  constructor(
    key: Internal, owner: Resource, handle: Pointer, protectionDomainOf: (pd: Pointer) => ProtectionDomain, granted: IbvQpCap,
    destroy: () => void,
    /** Resources of the caller's that this QP is built on: each closes the QP before itself. */
    own: { readonly sendCq?: CompletionQueue; readonly recvCq?: CompletionQueue; readonly pd?: ProtectionDomain; readonly srq?: Resource } = {},
  ) {
    assertInternal(key, 'new QueuePair', 'use id.createQp()');
    super('queue pair', handle, owner);
    // Every field first: the snapshot is shared.
    const fields = snapshotStruct(handle, ibv_qp.size);
    const sendCq = fields.getBigUint64(QP.sendCq, true);
    const recvCq = fields.getBigUint64(QP.recvCq, true);
    const srq = fields.getBigUint64(QP.srq, true);
    const context = fields.getBigUint64(QP.context, true);
    const pdHandle = fields.getBigUint64(QP.pd, true);
    this.qpNum = fields.getUint32(QP.qpNum, true);
    this.type = QpType.nameOf(fields.getInt32(QP.qpType, true));
    this.caps = {
      maxSendWr: granted.max_send_wr,
      maxRecvWr: granted.max_recv_wr,
      maxSendSge: granted.max_send_sge,
      maxRecvSge: granted.max_recv_sge,
      maxInlineData: granted.max_inline_data,
    };
    this.#pdHandle = pdHandle;
    this.#protectionDomainOf = protectionDomainOf;
    const ops: ContextOps = contextOps(context);
    this.sendCq = own.sendCq ?? CompletionQueue.borrow(internal, sendCq, this, ops);
    this.recvCq = own.recvCq ?? (recvCq === sendCq ? this.sendCq : CompletionQueue.borrow(internal, recvCq, this, ops));
    if (own.sendCq) this.use(own.sendCq);
    if (own.recvCq && own.recvCq !== own.sendCq) this.use(own.recvCq);
    if (own.pd) this.use(own.pd);
    if (own.srq) this.use(own.srq);
    this.#usesSrq = srq !== 0n;
    this.#ops = ops;
    this.#destroy = destroy;
  }

  /** The protection domain of this queue pair (qp->pd). */
  get protectionDomain(): ProtectionDomain {
    if (!(#brand in asObject(this))) throw new InvalidThisError('QueuePair');
    this.ensureOpen('protectionDomain');
    return (this.#protectionDomain ??= this.#protectionDomainOf(this.#pdHandle));
  }

  #postTarget(): PostTarget {
    const ops = this.#ops;
    return (this.#target ??= {
      owner: this, address: toAddress(this.handle), ops, receiveVerb: 'postRecv', pd: this.protectionDomain,
      maxInlineData: this.caps.maxInlineData, qpType: this.type, prepared: new PreparedRequestIds(),
    });
  }

  /** Validates and encodes a receive once; post() it each time its buffer is free. */
  prepareRecv(region: MemoryRegion, options?: RecvOptions): PreparedRecv {
    if (!(#brand in asObject(this))) throw new InvalidThisError('QueuePair');
    this.ensureOpen('prepareRecv');
    this.#refuseWithSrq('prepareRecv');
    return new PreparedRecv(internal, this.#postTarget(), region, options);
  }

  /**
   * Validates and encodes `options.count` receives once, linked into one chain
   * over `region` (receive i at offset + i × stride); post() posts them all in
   * one call, e.g. to refill a receive ring.
   */
  prepareRecvChain(region: MemoryRegion, options: RecvChainOptions): PreparedRecvChain {
    if (!(#brand in asObject(this))) throw new InvalidThisError('QueuePair');
    this.ensureOpen('prepareRecvChain');
    this.#refuseWithSrq('prepareRecvChain');
    return new PreparedRecvChain(internal, this.#postTarget(), region, options);
  }

  /** Validates and encodes a send (or RDMA write/read) once; post() it as often as needed. */
  prepareSend(source: MemoryRegion | Uint8Array, options?: SendOptions): PreparedSend {
    if (!(#brand in asObject(this))) throw new InvalidThisError('QueuePair');
    this.ensureOpen('prepareSend');
    return new PreparedSend(internal, this.#postTarget(), source, options);
  }

  /**
   * Validates and encodes `options.count` sends once, linked into one chain
   * from `source` (send i from offset + i × stride); post() posts them all in
   * one call. Only the last is signaled unless options.signaled says otherwise.
   */
  prepareSendChain(source: MemoryRegion | Uint8Array, options: SendChainOptions): PreparedSendChain {
    if (!(#brand in asObject(this))) throw new InvalidThisError('QueuePair');
    this.ensureOpen('prepareSendChain');
    return new PreparedSendChain(internal, this.#postTarget(), source, options);
  }

  /** rdma_post_recv: posts one receive into `region`; returns its wr_id. */
  postRecv(region: MemoryRegion, options?: RecvOptions): number {
    if (!(#brand in asObject(this))) throw new InvalidThisError('QueuePair');
    this.ensureOpen('postRecv');
    this.#refuseWithSrq('postRecv');
    return postOnce(new PreparedRecv(internal, this.#postTarget(), region, options, true));
  }

  /**
   * rdma_post_send (and RDMA write/read with options.opcode): posts one request;
   * returns its wr_id. A plain buffer may be sent only inline.
   */
  postSend(source: MemoryRegion | Uint8Array, options?: SendOptions): number {
    if (!(#brand in asObject(this))) throw new InvalidThisError('QueuePair');
    this.ensureOpen('postSend');
    return postOnce(new PreparedSend(internal, this.#postTarget(), source, options, true));
  }

  #refuseWithSrq(operation: string): void {
    if (this.#usesSrq) throw argumentError(operation, 'queuePair', 'this queue pair takes its receives from a shared receive queue: post them to id.srq', 'ERR_INVALID_ARG_VALUE');
  }

  /**
   * How long a peer that finds no receive posted here waits before it retries
   * (ibv_modify_qp with IBV_QP_MIN_RNR_TIMER, RTS to RTS), as IB's 5-bit code:
   * 1 = 0.01 ms, 12 = 0.64 ms, 0 = 655.36 ms. rdma_cm leaves it at 0, so a
   * receiver that falls behind stalls its sender 655 ms per RNR NAK. Call it
   * once the connection is established (the connect moves the QP through RTR,
   * which sets the timer).
   */
  setMinRnrTimer(code: number): void {
    if (!(#brand in asObject(this))) throw new InvalidThisError('QueuePair');
    const operation = 'ibv_modify_qp';
    this.ensureOpen(operation);
    const c = parseArgument(operation, 'code', rnrTimerCode, code);
    const attr = Buffer.alloc(ibv_qp_attr.size);
    attr.writeUInt8(c, MIN_RNR_TIMER_OFFSET);
    checkVerbs(operation, libibverbs.ibv_modify_qp(this.handle, attr, IBV_QP_MIN_RNR_TIMER));
  }

  /** rdma_get_send_comp: blocks until a send completion; an error status throws WorkCompletionError. */
  getSendComp(): WorkCompletion {
    if (!(#brand in asObject(this))) throw new InvalidThisError('QueuePair');
    this.ensureOpen('getSendComp');
    return this.sendCq.waitOne();
  }

  /** rdma_get_recv_comp: blocks until a receive completion; an error status throws WorkCompletionError. */
  getRecvComp(): WorkCompletion {
    if (!(#brand in asObject(this))) throw new InvalidThisError('QueuePair');
    this.ensureOpen('getRecvComp');
    return this.recvCq.waitOne();
  }

  /** The next send-queue completion, on the event loop (on a shared CQ: the next of any of its QPs; see qpNum). */
  nextSendCompletion(): Promise<WorkCompletion> {
    if (!(#brand in asObject(this))) throw new InvalidThisError('QueuePair');
    this.ensureOpen('nextSendCompletion');
    return this.sendCq.next();
  }

  /** The next receive completion, on the event loop (on a shared CQ: the next of any of its QPs; see qpNum). */
  nextRecvCompletion(): Promise<WorkCompletion> {
    if (!(#brand in asObject(this))) throw new InvalidThisError('QueuePair');
    this.ensureOpen('nextRecvCompletion');
    return this.recvCq.next();
  }

  /**
   * rdma_destroy_qp, after the CQs acked their events (it destroys librdmacm's
   * CQs too, never your own); then its prepared requests are closed, their wr_ids
   * and contexts forgotten.
   */
  protected release(): void {
    if (!(#brand in asObject(this))) throw new InvalidThisError('QueuePair');
    handleToRelease(this, 'QueuePair'); // refuses any call but close()'s: the QP is destroyed once
    try {
      this.#destroy();
    } finally {
      this.#target?.prepared.releaseAll();
    }
  }
}
