// A shared receive queue (struct ibv_srq) made with rdma_create_srq on an id:
// the queue pair created on that id afterwards takes its receives from it.
// Receives complete on the queue pair's receive CQ.
import koffi from 'koffi';
import { contextOps } from '../../ffi/inline-verbs.js';
import { readPointer, toAddress, type Pointer } from '../../ffi/library.js';
import { ibv_srq } from '../../structs/verbs-resources.js';
import type { MemoryRegion } from './memory-region.js';
import type { ProtectionDomain } from './protection-domain.js';
import { Resource, handleToRelease } from '../core/resource.js';
import { InvalidThisError, asObject } from '../core/errors.js';
import { assertInternal, internal, type Internal } from '../core/internal.js';
import { PreparedRecv, PreparedRecvChain, postOnce, type PostTarget, type RecvChainOptions, type RecvOptions } from '../work/work-request.js';
import { PreparedRequestIds } from '../work/work-request-ids.js';

export class SharedReceiveQueue extends Resource {
  /** The brand every member checks first (`#brand in asObject(this)`): only the instances this package made have it. */
  readonly #brand = true;
  readonly maxWr: number;
  readonly maxSge: number;
  readonly #target: PostTarget;
  /** rdma_destroy_srq on the owning id. */
  readonly #destroy: () => void;

  /** @internal Wraps id->srq after rdma_create_srq; `destroy` is rdma_destroy_srq on the owning id. */
  constructor(
    key: Internal, owner: Resource, handle: Pointer, pd: ProtectionDomain, maxWr: number, maxSge: number, destroy: () => void,
  ) {
    assertInternal(key, 'new SharedReceiveQueue', 'use id.createSrq()');
    super('shared receive queue', handle, owner);
    if (pd.owned) this.use(pd); // the caller's PD closes this SRQ before itself
    this.maxWr = maxWr;
    this.maxSge = maxSge;
    this.#destroy = destroy;
    const context = readPointer(handle, koffi.offsetof(ibv_srq, 'context'));
    const ops = contextOps(context);
    this.#target = { owner: this, address: toAddress(handle), ops, receiveVerb: 'postSrqRecv', pd, maxInlineData: 0, qpType: 'SRQ', prepared: new PreparedRequestIds() };
  }

  /** Validates and encodes a receive once; post() it each time its buffer is free. */
  prepareRecv(region: MemoryRegion, options?: RecvOptions): PreparedRecv {
    if (!(#brand in asObject(this))) throw new InvalidThisError('SharedReceiveQueue');
    this.ensureOpen('prepareRecv');
    return new PreparedRecv(internal, this.#target, region, options);
  }

  /** Like QueuePair.prepareRecvChain: `options.count` receives posted together by one post(). */
  prepareRecvChain(region: MemoryRegion, options: RecvChainOptions): PreparedRecvChain {
    if (!(#brand in asObject(this))) throw new InvalidThisError('SharedReceiveQueue');
    this.ensureOpen('prepareRecvChain');
    return new PreparedRecvChain(internal, this.#target, region, options);
  }

  /** ibv_post_srq_recv of one receive; returns its wr_id. */
  postRecv(region: MemoryRegion, options?: RecvOptions): number {
    if (!(#brand in asObject(this))) throw new InvalidThisError('SharedReceiveQueue');
    this.ensureOpen('postRecv');
    return postOnce(new PreparedRecv(internal, this.#target, region, options, true));
  }

  /** rdma_destroy_srq (after the QPs that use it are gone: the id closes its QP first); then its prepared receives are closed. */
  protected release(): void {
    if (!(#brand in asObject(this))) throw new InvalidThisError('SharedReceiveQueue');
    handleToRelease(this, 'SharedReceiveQueue'); // refuses any call but close()'s: the SRQ is destroyed once
    try {
      this.#destroy();
    } finally {
      this.#target.prepared.releaseAll();
    }
  }
}
