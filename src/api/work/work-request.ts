// Work requests, validated once and encoded once into native memory
// (struct ibv_send_wr / ibv_recv_wr plus one ibv_sge). post() is the hot path:
// a closed-resource check and one FFI crossing, nothing allocated; a prepared
// request's crossing is a bound call, with no argument to convert.
import koffi from 'koffi';
import { z } from 'zod';
import { RdmaError } from '../../ffi/errors.js';
import {
  IBV_SEND_FENCE, IBV_SEND_INLINE, IBV_SEND_SIGNALED, IBV_SEND_SOLICITED,
  IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_FETCH_AND_ADD,
  IBV_WR_RDMA_READ, IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_SEND, IBV_WR_SEND_WITH_IMM,
  RDMA_UDP_QKEY, repeatedVerbCall, type ContextOps, type RepeatedVerb,
} from '../../ffi/inline-verbs.js';
import type { FixedCall } from '../../ffi/bound-call.js';
import { AddressHandle } from '../verbs/address-handle.js';
import { toAddress, type Address, type Pointer } from '../../ffi/library.js';
import { RECV_WR_OFFSET, SEND_WR_OFFSET, SGE_OFFSET, ibv_recv_wr, ibv_send_wr, ibv_sge } from '../../structs/verbs-work.js';
import { MemoryRegion } from '../verbs/memory-region.js';
import { nativeScratch, type NativeScratch } from '../core/native-memory.js';
import { argumentError, instanceCheck, isHonestBytes, isResizable, numberIssue, parseArgument, u32, u64, type Holds, type InputIs } from '../core/validate.js';
import { InvalidThisError, ResourceClosedError, type RdmaArgumentError, asObject } from '../core/errors.js';
import { workRequestIds, type PreparedRequestIds, type WorkRequestLease } from './work-request-ids.js';
import { assertInternal, type Internal } from '../core/internal.js';
import { markUntransferable } from '../core/untransferable.js';
import { Resource, lifetimeOf, type Lifetime } from '../core/resource.js';

const ATOMIC_SIZE = 8;
/** The classes whose instances the abstract classes' members take, for InvalidThisError's message. */
const ANY_PREPARED = 'PreparedSend, PreparedRecv, PreparedSendChain or PreparedRecvChain';
const SINGLE_PREPARED = 'PreparedSend or PreparedRecv';
const PREPARED_CHAIN = 'PreparedSendChain or PreparedRecvChain';
const MAX_SGE_LENGTH = 0xffffffff;

/** Where a one-sided operation lands: a peer's region (see MemoryRegion.remote and encodeRemoteRegion). */
export interface RemoteTarget {
  /** The remote virtual address, 0–2^64−1 (a number up to 2^53−1, or a bigint). */
  address: bigint | number;
  /** The peer region's rkey, 0–4294967295. */
  rkey: number;
  /**
   * The bytes the remote region has from `address`: when given, a longer transfer is refused here rather than by the peer.
   * @defaultValue none: not checked here
   */
  length?: number;
}
const remoteSchema = z.strictObject({
  address: u64,
  rkey: u32,
  length: z.number().int().min(0).optional(),
});
type RemoteTied = Holds<InputIs<typeof remoteSchema, RemoteTarget>>;

/** Options of one receive (postRecv, prepareRecv). */
export interface RecvOptions {
  /**
   * Where in the region the received bytes land, 0 up to its length.
   * @defaultValue 0
   */
  offset?: number;
  /**
   * Bytes the receive may take, 0–4294967295 and within the region from `offset`.
   * @defaultValue the rest of the region from `offset` (0 must be given explicitly)
   */
  length?: number;
  /**
   * Any value, handed back as the completion's `context`.
   * @defaultValue undefined
   */
  context?: unknown;
}
const recvOptionsSchema = z.strictObject({
  offset: z.number().int().min(0).default(0),
  length: z.number().int().min(0).max(0xffffffff, 'an SGE length is a u32').optional(),
  context: z.unknown().optional(),
});
type RecvTied = Holds<InputIs<typeof recvOptionsSchema, RecvOptions>>;

/** Where a chain's requests find their buffers: request i uses the bytes at offset + i × stride. */
export interface ChainSlots {
  /** How many requests the chain posts at once, 1–4096. */
  count: number;
  /**
   * Where the first request's buffer starts in the region, 0 up to its length.
   * @defaultValue 0
   */
  offset?: number;
  /**
   * Bytes of each request, 1–4294967295; every request's bytes must lie within the region.
   * @defaultValue the stride; with no stride (or 0), the rest of the region from `offset`
   */
  length?: number;
  /**
   * Bytes from one request's buffer to the next, 0 or more; 0 puts every request on the same bytes.
   * @defaultValue the length
   */
  stride?: number;
}

const chainSlotsSchema = z.strictObject({
  count: z.number().int().min(1).max(4096),
  offset: z.number().int().min(0).default(0),
  length: z.number().int().min(1).max(0xffffffff, 'an SGE length is a u32').optional(),
  stride: z.number().int().min(0).optional(),
});
type ChainSlotsTied = Holds<InputIs<typeof chainSlotsSchema, ChainSlots>>;

/** prepareRecvChain's options. */
export interface RecvChainOptions extends ChainSlots {
  /**
   * Any value, handed back as each completion's `context`.
   * @defaultValue undefined
   */
  context?: unknown;
}
const recvChainOptionsSchema = chainSlotsSchema.extend({ context: z.unknown().optional() });
type RecvChainTied = Holds<InputIs<typeof recvChainOptionsSchema, RecvChainOptions>>;

/** prepareSendChain's options. */
export interface SendChainOptions extends ChainSlots {
  /**
   * Which sends complete: 'last' (one completion per post), 'all', or 'none'.
   * @defaultValue 'last'
   */
  signaled?: 'last' | 'all' | 'none';
  /**
   * Whether the bytes go inline (copied into each request, up to the QP's maxInlineData);
   * a plain (unregistered) buffer can only be sent inline.
   * @defaultValue false
   */
  inline?: boolean;
  /**
   * Any value, handed back as the signaled sends' completions' `context`.
   * @defaultValue undefined
   */
  context?: unknown;
}
const sendChainOptionsSchema = chainSlotsSchema.extend({
  signaled: z.enum(['last', 'all', 'none']).default('last'),
  inline: z.boolean().default(false),
  context: z.unknown().optional(),
});
type SendChainTied = Holds<InputIs<typeof sendChainOptionsSchema, SendChainOptions>>;

/** A UD send's destination (rdma_post_ud_send's). */
export interface UdDestination {
  /** The address handle to the peer (pd.createAh(), id.addressHandleTo() or id.addressHandleFrom()). */
  ah: AddressHandle;
  /** The peer's QP number, 0–0xffffff (24 bits); 0xffffff sends to a multicast group. */
  remoteQpn: number;
  /**
   * The peer QP's qkey, 0–4294967295.
   * @defaultValue RDMA_UDP_QKEY (0x01234567), the qkey librdmacm gives UD QPs
   */
  remoteQkey?: number;
}

/** Options of one send (postSend, prepareSend): SEND, RDMA write and read, atomics. */
export interface SendOptions {
  /**
   * Where in the region (or buffer) the bytes start, 0 up to its length.
   * @defaultValue 0
   */
  offset?: number;
  /**
   * Bytes to send, 0–4294967295 and within the region from `offset`; an atomic's is 8.
   * @defaultValue the rest of the region from `offset` (0 must be given explicitly)
   */
  length?: number;
  /**
   * Any value, handed back as the completion's `context`.
   * @defaultValue undefined
   */
  context?: unknown;
  /**
   * 'SEND', 'RDMA_WRITE', 'RDMA_READ', 'ATOMIC_CMP_AND_SWP' or 'ATOMIC_FETCH_AND_ADD';
   * all but SEND need `remote`.
   * @defaultValue 'SEND'
   */
  opcode?: 'SEND' | 'RDMA_WRITE' | 'RDMA_READ' | 'ATOMIC_CMP_AND_SWP' | 'ATOMIC_FETCH_AND_ADD';
  /**
   * Atomics (required for them): the value to compare (CMP_AND_SWP) or to add (FETCH_AND_ADD), 0–2^64−1.
   * @defaultValue none
   */
  compareAdd?: bigint | number;
  /**
   * CMP_AND_SWP (required for it): the value stored when the remote word equals compareAdd, 0–2^64−1.
   * @defaultValue none
   */
  swap?: bigint | number;
  /**
   * Whether the bytes go inline (copied into the request, up to the QP's
   * maxInlineData); a plain (unregistered) buffer can only be sent inline. Not for reads and atomics.
   * @defaultValue false
   */
  inline?: boolean;
  /**
   * Whether the send produces a completion (unsignaled ones still need a signaled one now and then to free the queue).
   * @defaultValue true
   */
  signaled?: boolean;
  /**
   * Whether the peer's solicited-only completion notification fires for it.
   * @defaultValue false
   */
  solicited?: boolean;
  /**
   * Whether it waits for the QP's earlier reads and atomics to finish (IBV_SEND_FENCE).
   * @defaultValue false
   */
  fence?: boolean;
  /**
   * Immediate data for the peer's completion, 0–4294967295: SEND and RDMA_WRITE only (they become *_WITH_IMM).
   * @defaultValue none
   */
  immediate?: number;
  /**
   * Where a one-sided operation lands (required for all but SEND).
   * @defaultValue none
   */
  remote?: RemoteTarget;
  /**
   * On a UD queue pair: the destination.
   * @defaultValue none
   */
  ud?: UdDestination;
}

const sendOptionsSchema = recvOptionsSchema.extend({
  opcode: z.enum(['SEND', 'RDMA_WRITE', 'RDMA_READ', 'ATOMIC_CMP_AND_SWP', 'ATOMIC_FETCH_AND_ADD']).default('SEND'),
  compareAdd: u64.optional(),
  swap: u64.optional(),
  inline: z.boolean().default(false),
  signaled: z.boolean().default(true),
  solicited: z.boolean().default(false),
  fence: z.boolean().default(false),
  immediate: u32.optional(),
  remote: remoteSchema.optional(),
  ud: z.strictObject({
    ah: instanceCheck<AddressHandle>((value) => Resource.isA(value, AddressHandle), 'expected an AddressHandle'),
    remoteQpn: z.number().int().min(0).max(0xffffff, 'a QP number is 24 bits'),
    remoteQkey: u32.default(RDMA_UDP_QKEY),
  }).optional(),
});
type SendTied = Holds<InputIs<typeof sendOptionsSchema, SendOptions>>;

/** What a queue pair (or shared receive queue) tells its work requests about itself. */
export interface PostTarget {
  readonly owner: Resource;
  /** The QP's (or SRQ's) handle as the hot path passes it. */
  readonly address: Address;
  readonly ops: ContextOps;
  /** How receives are posted to it: ops.post_recv for a QP, ops.post_srq_recv for an SRQ. */
  readonly receiveVerb: 'postRecv' | 'postSrqRecv';
  readonly pd: Resource;
  readonly maxInlineData: number;
  readonly qpType: string;
  /** The ids of the queue's prepared requests, released when it closes. */
  readonly prepared: PreparedRequestIds;
}

/** The local memory of an SGE, checked: offset/length inside the region (or inline buffer). */
function localRange(
  operation: string, source: MemoryRegion | Uint8Array, pd: Resource, offset: number, length: number | undefined,
): { address: Pointer; length: number; lkey: number; region: MemoryRegion | undefined } {
  const size = source instanceof MemoryRegion ? source.length : source.byteLength;
  if (offset > size) throw argumentError(operation, 'options.offset', `offset ${offset} is past the end of the ${size}-byte region`, 'ERR_OUT_OF_RANGE');
  const bytes = length ?? size - offset;
  if (length === undefined && bytes === 0) throw argumentError(operation, 'options.length', 'a length of 0 must be given explicitly', 'ERR_INVALID_ARG_VALUE');
  if (offset + bytes > size) {
    throw argumentError(operation, 'options.length', `offset ${offset} + length ${bytes} leaves the ${size}-byte region`, 'ERR_OUT_OF_RANGE');
  }
  if (bytes > 0xffffffff) throw argumentError(operation, 'options.length', 'an SGE length is a u32', 'ERR_OUT_OF_RANGE');
  if (source instanceof MemoryRegion) {
    if (source.closed) throw new ResourceClosedError('memory region', operation, 'it was deregistered', 'region');
    if (source.protectionDomain !== pd) throw argumentError(operation, 'region', 'the memory region belongs to another protection domain', 'ERR_INVALID_ARG_VALUE');
    return { address: source.address + BigInt(offset), length: bytes, lkey: source.lkey, region: source };
  }
  void source.buffer;
  return { address: koffi.address(source) + BigInt(offset), length: bytes, lkey: 0, region: undefined };
}

/** A plain buffer is sent only inline (the device cannot read unregistered memory otherwise). */
function checkSendSource(operation: string, source: MemoryRegion | Uint8Array, inline: boolean): void {
  if (Resource.isA(source, MemoryRegion)) return;
  if (!isHonestBytes(source)) throw argumentError(operation, 'region', 'expected a MemoryRegion, or a Buffer or Uint8Array to send inline', 'ERR_INVALID_ARG_TYPE');
  if (!inline) {
    throw argumentError(operation, 'region', 'a plain buffer can only be sent inline (options.inline: true); register it otherwise', 'ERR_INVALID_ARG_VALUE');
  }
}

/**
 * A plain buffer that a prepared send reads at each post (inline data): held
 * alive, of a fixed length (a resizable or growable buffer could shrink under
 * it), marked untransferable so postMessage and structuredClone cannot detach
 * it, and checked at each post for a detach that happens anyway (WebAssembly
 * memory that grew). Made after the request's other checks: the mark is for
 * good.
 */
class KeptBuffer {
  private readonly length: number;

  constructor(operation: string, private readonly view: Uint8Array) {
    if (isResizable(view.buffer)) {
      throw argumentError(operation, 'region', 'a view over a resizable ArrayBuffer or growable SharedArrayBuffer can shrink under a prepared send; copy it into a fixed-length buffer', 'ERR_INVALID_ARG_VALUE');
    }
    markUntransferable(view.buffer);
    this.length = view.length;
  }

  /** `length`, not `byteLength` (the same for bytes): V8 inlines it, and byteLength cost 7 ns a post on the host. */
  check(operation: string): void {
    if (this.view.length !== this.length) {
      throw argumentError(operation, 'region', 'the buffer was detached (transferred or its memory replaced) after the request was prepared', 'ERR_INVALID_ARG_VALUE');
    }
  }
}

/** What bounds setLength(): the most bytes and the rule that says so; undefined when the length is fixed (atomics). */
interface LengthBound {
  readonly max: number;
  readonly rule: string;
}

/**
 * setLength's and setRange's refusal of a length past `bound`. Out of line, as
 * ATOMIC_RANGE_RULE is made once: setRange's bytecode, receiver check
 * included, stays under the 460 bytes up to which V8 inlines a function into
 * its caller (a loop that moves the range and posts).
 */
function beyondBound(operation: string, length: number, bound: LengthBound): RdmaArgumentError {
  return argumentError(operation, 'length', `${length} bytes is more than ${bound.max}: ${bound.rule}`, 'ERR_OUT_OF_RANGE');
}
const ATOMIC_RANGE_RULE = `an atomic works on one ${ATOMIC_SIZE}-byte word: its range is fixed at prepare`;

/** The tightest of the local range's room and the opcode's limits, for setLength(). */
function lengthBound(size: number, offset: number, limits: readonly (LengthBound | undefined)[] = []): LengthBound {
  let bound: LengthBound = { max: size - offset, rule: `offset ${offset} + length must stay within the ${size}-byte region` };
  if (bound.max > MAX_SGE_LENGTH) bound = { max: MAX_SGE_LENGTH, rule: 'an SGE length is a u32' };
  for (const limit of limits) if (limit !== undefined && limit.max < bound.max) bound = limit;
  return bound;
}

/** Inline data is copied into the WQE: no more than the QP granted. */
function checkInlineLength(operation: string, length: number, maxInlineData: number): void {
  if (length > maxInlineData) {
    throw argumentError(operation, 'options.length', `inline data of ${length} bytes exceeds the queue pair's max_inline_data (${maxInlineData})`, 'ERR_OUT_OF_RANGE');
  }
}

/** The rules of each opcode that only show once the local range is known. */
function checkSendRules(operation: string, o: z.output<typeof sendOptionsSchema>, length: number, maxInlineData: number, atomic: boolean): void {
  const refuse = (path: string, rule: string) => {
    throw argumentError(operation, path, rule, 'ERR_INVALID_ARG_VALUE');
  };
  if (o.inline) checkInlineLength(operation, length, maxInlineData);
  if (o.opcode !== 'SEND' && !o.remote) refuse('options.remote', `${o.opcode} needs the peer's { address, rkey }`);
  if ((o.opcode === 'RDMA_READ' || atomic) && o.inline) refuse('options.inline', `${o.opcode} cannot be inline`);
  if ((o.opcode === 'RDMA_READ' || atomic) && o.immediate !== undefined) refuse('options.immediate', `${o.opcode} carries no immediate data`);
  if (o.remote?.length !== undefined && length > o.remote.length) {
    refuse('options.remote.length', `the ${length}-byte transfer exceeds the ${o.remote.length}-byte remote region`);
  }
  if (atomic) {
    if (length !== ATOMIC_SIZE) refuse('options.length', `an atomic works on one 8-byte word (got ${length} bytes)`);
    if (BigInt(o.remote!.address) % 8n !== 0n) refuse('options.remote.address', 'an atomic needs an 8-byte aligned remote address');
    if (o.compareAdd === undefined) refuse('options.compareAdd', `${o.opcode} needs compareAdd`);
    if (o.opcode === 'ATOMIC_CMP_AND_SWP' && o.swap === undefined) refuse('options.swap', 'ATOMIC_CMP_AND_SWP needs swap');
  } else if (o.compareAdd !== undefined || o.swap !== undefined) {
    refuse('options.compareAdd', 'compareAdd and swap are for atomics only');
  }
  if (o.ud) {
    if (o.opcode !== 'SEND') refuse('options.ud', 'UD queue pairs only send');
    if (o.ud.ah.closed) throw new ResourceClosedError('address handle', operation, undefined, 'options.ud.ah');
  }
}

/**
 * What a prepared request and a prepared chain share: the queue they post to,
 * the region (or kept inline buffer) they read, their wr_ids, and their post
 * with its arguments stored (bound where possible; plain for a one-shot post,
 * whose id is not leased: its context goes with its completion).
 */
abstract class PreparedPost {
  /**
   * The brand every member checks first (`#brand in asObject(this)`): only the
   * instances this package made have it. Each class below has its own, for
   * its own members (a member runs only on its own class's instances).
   */
  readonly #brand = true;
  /** The first of its wr_ids. */
  protected readonly firstId: number;
  protected readonly postCall: FixedCall;
  readonly #lease: WorkRequestLease | undefined;
  /** A prepared send's plain buffer (a one-shot post reads its buffer only during the call). */
  readonly #kept: KeptBuffer | undefined;
  /** Whether its queue is closed and its region deregistered, read where each post checks them (see Lifetime). */
  readonly #queueLifetime: Lifetime;
  readonly #regionLifetime: Lifetime | undefined;

  protected constructor(
    protected readonly target: PostTarget,
    protected readonly region: MemoryRegion | undefined,
    kept: KeptBuffer | undefined,
    post: { readonly verb: RepeatedVerb; readonly wr: Address; readonly badWr: Address },
    ids: { readonly count: number; readonly context: unknown; readonly once: boolean },
  ) {
    this.#kept = kept;
    this.#queueLifetime = lifetimeOf(target.owner);
    this.#regionLifetime = region && lifetimeOf(region);
    const postCall = repeatedVerbCall(target.ops, post.verb, target.address, post.wr, post.badWr, !ids.once);
    this.postCall = postCall;
    if (ids.once) {
      this.firstId = workRequestIds.takeOnce(ids.context);
      return;
    }
    try {
      this.#lease = target.prepared.lease(this, ids.count, ids.context, postCall);
    } catch (error) {
      postCall.release();
      throw error;
    }
    this.firstId = this.#lease.first;
  }

  /** Whether close() has run, here or through the queue's close. */
  get closed(): boolean {
    if (!(#brand in asObject(this))) throw new InvalidThisError(ANY_PREPARED);
    return this.#lease?.released ?? false;
  }

  /**
   * Forgets its wr_ids and their context; post() then throws
   * ResourceClosedError. Closing the queue closes it too. Close it once its
   * completions are in: a later one comes without its context. Idempotent.
   */
  close(): void {
    if (!(#brand in asObject(this))) throw new InvalidThisError(ANY_PREPARED);
    this.#lease?.release();
  }

  [Symbol.dispose](): void {
    if (!(#brand in asObject(this))) throw new InvalidThisError(ANY_PREPARED);
    this.close();
  }

  /** What every post checks before its crossing: its queue open, its region registered, its ids held. */
  protected check(operation: string): void {
    if (!(#brand in asObject(this))) throw new InvalidThisError(ANY_PREPARED);
    if (this.#queueLifetime.closed) throw new ResourceClosedError(this.target.owner.kind, operation);
    if (this.#regionLifetime?.closed) throw new ResourceClosedError('memory region', operation, 'it was deregistered');
    if (this.#lease?.released) throw new ResourceClosedError(this.kind, operation);
    this.#kept?.check(operation);
  }

  protected ensureOpen(operation: string): void {
    if (!(#brand in asObject(this))) throw new InvalidThisError(ANY_PREPARED);
    if (this.#lease?.released) throw new ResourceClosedError(this.kind, operation);
  }

  /** What this is, for messages. */
  protected abstract get kind(): string;
}

abstract class PreparedWorkRequest extends PreparedPost {
  /** The brand every member checks first (`#brand in asObject(this)`): only the instances this package made have it. */
  readonly #brand = true;
  readonly wrId: number;
  protected readonly memory: NativeScratch;
  protected readonly sge: number;
  readonly #lengthBound: LengthBound | undefined;

  protected constructor(
    target: PostTarget,
    region: MemoryRegion | undefined,
    kept: KeptBuffer | undefined,
    context: unknown,
    once: boolean,
    verb: RepeatedVerb,
    wrSize: number,
    lengthBound: LengthBound | undefined,
  ) {
    const memory = nativeScratch(wrSize + ibv_sge.size + 8);
    const wr = toAddress(memory.address);
    const badWr = toAddress(memory.address + BigInt(wrSize + ibv_sge.size));
    super(target, region, kept, { verb, wr, badWr }, { count: 1, context, once });
    this.memory = memory;
    this.sge = wrSize;
    this.#lengthBound = lengthBound;
    this.wrId = this.firstId;
  }

  protected writeSge(address: Pointer, length: number, lkey: number): void {
    if (!(#brand in asObject(this))) throw new InvalidThisError(SINGLE_PREPARED);
    const v = this.memory.view;
    v.setBigUint64(this.sge, address, true);
    v.setUint32(this.sge + SGE_OFFSET.length, length, true);
    v.setUint32(this.sge + SGE_OFFSET.lkey, lkey, true);
  }

  /**
   * Changes the SGE's length (e.g. a shorter message from the same region),
   * within the rules checked when it was prepared: offset + length inside the
   * region or buffer, inline data within max_inline_data, an RDMA write or
   * read within the remote region. An atomic's 8 bytes are fixed.
   */
  setLength(length: number): void {
    if (!(#brand in asObject(this))) throw new InvalidThisError(SINGLE_PREPARED);
    const operation = 'setLength';
    this.ensureOpen(operation);
    const bound = this.#lengthBound;
    if (bound === undefined) throw argumentError(operation, 'length', `an atomic works on one ${ATOMIC_SIZE}-byte word: its length is fixed`, 'ERR_INVALID_ARG_VALUE');
    if (!Number.isInteger(length) || length < 0) throw argumentError(operation, 'length', 'must be a non-negative integer', numberIssue(length));
    if (length > bound.max) throw beyondBound(operation, length, bound);
    this.memory.view.setUint32(this.sge + SGE_OFFSET.length, length, true);
  }
}

/** The verb a receive post to `target` calls, for its errors. */
const receivePostName = (target: PostTarget) => (target.qpType === 'SRQ' ? 'ibv_post_srq_recv' : 'ibv_post_recv');

/** Posts a one-shot request; if the post fails its wr_id (and context) is forgotten. Returns the wr_id. */
export function postOnce(request: PreparedRecv | PreparedSend): number {
  try {
    request.post();
  } catch (error) {
    workRequestIds.release(request.wrId);
    throw error;
  }
  return request.wrId;
}

/** A send, RDMA write or read, or atomic, encoded once; post() it as often as you like. */
export class PreparedSend extends PreparedWorkRequest {
  /** The brand every member checks first (`#brand in asObject(this)`): only the instances this package made have it. */
  readonly #brand = true;
  /** A UD send's destination, kept alive and checked at each post. */
  readonly #addressHandle: AddressHandle | undefined;
  /** What setRange/setRemote/setImmediate may change, fixed at prepare. */
  readonly #sourceSize: number;
  readonly #sourceLow: number;
  readonly #sourceHigh: number;
  readonly #opcodeBound: LengthBound;
  readonly #atomic: boolean;
  readonly #rdma: boolean;
  readonly #immediate: boolean;

  /** @internal Use qp.prepareSend(). */
  constructor(key: Internal, target: PostTarget, source: MemoryRegion | Uint8Array, options: SendOptions | undefined, once = false) {
    assertInternal(key, 'new PreparedSend', 'use qp.prepareSend()');
    const operation = 'QueuePair.postSend';
    const o = parseArgument(operation, 'options', sendOptionsSchema, options ?? {});
    const atomic = o.opcode === 'ATOMIC_CMP_AND_SWP' || o.opcode === 'ATOMIC_FETCH_AND_ADD';
    checkSendSource(operation, source, o.inline);
    const range = localRange(operation, source, target.pd, o.offset, atomic ? (o.length ?? ATOMIC_SIZE) : o.length);
    checkSendRules(operation, o, range.length, target.maxInlineData, atomic);
    if ((target.qpType === 'UD') !== (o.ud !== undefined)) {
      throw argumentError(operation, 'options.ud', target.qpType === 'UD' ? 'a UD queue pair needs options.ud { ah, remoteQpn }' : 'options.ud is for UD queue pairs only', 'ERR_INVALID_ARG_VALUE');
    }
    const size = source instanceof MemoryRegion ? source.length : source.byteLength;
    const opcodeLimits = [
      o.inline ? { max: target.maxInlineData, rule: `inline data must not exceed the queue pair's max_inline_data (${target.maxInlineData})` } : undefined,
      o.remote?.length !== undefined ? { max: o.remote.length, rule: `the transfer must not exceed the ${o.remote.length}-byte remote region` } : undefined,
    ];
    const bound = atomic ? undefined : lengthBound(size, o.offset, opcodeLimits);
    const kept = once || source instanceof MemoryRegion ? undefined : new KeptBuffer(operation, source);
    // An unsignaled request never completes, so it has no context to return.
    super(target, range.region, kept, o.signaled ? o.context : undefined, once, 'postSend', ibv_send_wr.size, bound);

    const v = this.memory.view;
    v.setUint32(SEND_WR_OFFSET.wrId, this.wrId, true);
    v.setBigUint64(SEND_WR_OFFSET.sgList, this.memory.address + BigInt(this.sge), true);
    v.setInt32(SEND_WR_OFFSET.numSge, 1, true);
    const opcode =
      o.opcode === 'RDMA_READ' ? IBV_WR_RDMA_READ
      : o.opcode === 'RDMA_WRITE' ? (o.immediate === undefined ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_WRITE_WITH_IMM)
      : o.opcode === 'ATOMIC_CMP_AND_SWP' ? IBV_WR_ATOMIC_CMP_AND_SWP
      : o.opcode === 'ATOMIC_FETCH_AND_ADD' ? IBV_WR_ATOMIC_FETCH_AND_ADD
      : o.immediate === undefined ? IBV_WR_SEND : IBV_WR_SEND_WITH_IMM;
    v.setInt32(SEND_WR_OFFSET.opcode, opcode, true);
    const flags = (o.signaled ? IBV_SEND_SIGNALED : 0) | (o.inline ? IBV_SEND_INLINE : 0) |
      (o.solicited ? IBV_SEND_SOLICITED : 0) | (o.fence ? IBV_SEND_FENCE : 0);
    v.setUint32(SEND_WR_OFFSET.sendFlags, flags, true);
    if (o.immediate !== undefined) v.setUint32(SEND_WR_OFFSET.immData, o.immediate, false);
    if (o.remote && atomic) {
      v.setBigUint64(SEND_WR_OFFSET.atomicRemoteAddr, BigInt(o.remote.address), true);
      v.setUint32(SEND_WR_OFFSET.atomicRkey, o.remote.rkey, true);
      v.setBigUint64(SEND_WR_OFFSET.compareAdd, BigInt(o.compareAdd ?? 0), true);
      v.setBigUint64(SEND_WR_OFFSET.swap, BigInt(o.swap ?? 0), true);
    } else if (o.remote) {
      v.setBigUint64(SEND_WR_OFFSET.remoteAddr, BigInt(o.remote.address), true);
      v.setUint32(SEND_WR_OFFSET.rkey, o.remote.rkey, true);
    } else if (o.ud) {
      this.#addressHandle = o.ud.ah;
      v.setBigUint64(SEND_WR_OFFSET.udAh, o.ud.ah.pointer, true);
      v.setUint32(SEND_WR_OFFSET.udRemoteQpn, o.ud.remoteQpn, true);
      v.setUint32(SEND_WR_OFFSET.udRemoteQkey, o.ud.remoteQkey, true);
    }
    this.writeSge(range.address, range.length, range.lkey);
    const start = range.address - BigInt(o.offset);
    this.#sourceSize = size;
    this.#sourceLow = Number(start & 0xffffffffn);
    this.#sourceHigh = Number(start >> 32n);
    // The opcode's own limits, wherever setRange() puts the bytes (the region's bound moves with the offset).
    this.#opcodeBound = lengthBound(Infinity, 0, opcodeLimits);
    this.#atomic = atomic;
    this.#rdma = o.opcode === 'RDMA_WRITE' || o.opcode === 'RDMA_READ';
    this.#immediate = o.immediate !== undefined;
  }

  /**
   * Moves the request's local bytes to `length` bytes at `offset` in its
   * region or buffer (e.g. the next message of a ring), within the rules
   * checked when it was prepared. A few compares and stores: no allocation.
   */
  setRange(offset: number, length: number): void {
    if (!(#brand in asObject(this))) throw new InvalidThisError('PreparedSend');
    const operation = 'setRange';
    this.ensureOpen(operation);
    const size = this.#sourceSize;
    if (this.#atomic) throw argumentError(operation, 'length', ATOMIC_RANGE_RULE, 'ERR_INVALID_ARG_VALUE');
    if (!Number.isSafeInteger(offset) || offset < 0 || offset > size) throw argumentError(operation, 'offset', `must be an integer within the ${size}-byte region`, numberIssue(offset));
    if (!Number.isSafeInteger(length) || length < 0 || offset + length > size) {
      throw argumentError(operation, 'length', `offset ${offset} + length must stay within the ${size}-byte region (got ${length})`, numberIssue(length));
    }
    if (length > this.#opcodeBound.max) throw beyondBound(operation, length, this.#opcodeBound);
    const v = this.memory.view;
    const low = this.#sourceLow + offset;
    v.setUint32(this.sge, low % 2 ** 32, true);
    v.setUint32(this.sge + 4, this.#sourceHigh + Math.floor(low / 2 ** 32), true);
    v.setUint32(this.sge + SGE_OFFSET.length, length, true);
  }

  /**
   * Points an RDMA write or read at another remote address and rkey (e.g. the
   * next free bytes of a peer's ring). The peer's rkey bounds what it allows;
   * a remote length given at prepare bounds setRange() as before.
   */
  setRemote(address: number, rkey: number): void {
    if (!(#brand in asObject(this))) throw new InvalidThisError('PreparedSend');
    const operation = 'setRemote';
    this.ensureOpen(operation);
    if (!this.#rdma) throw argumentError(operation, 'options.opcode', 'only an RDMA_WRITE or RDMA_READ has a remote address', 'ERR_INVALID_ARG_VALUE');
    if (!Number.isSafeInteger(address) || address < 0) throw argumentError(operation, 'address', 'must be a non-negative safe integer', numberIssue(address));
    if (typeof rkey !== 'number' || (rkey >>> 0) !== rkey) throw argumentError(operation, 'rkey', 'must be a u32', numberIssue(rkey));
    const v = this.memory.view;
    v.setUint32(SEND_WR_OFFSET.remoteAddr, address % 2 ** 32, true);
    v.setUint32(SEND_WR_OFFSET.remoteAddr + 4, Math.floor(address / 2 ** 32), true);
    v.setUint32(SEND_WR_OFFSET.rkey, rkey, true);
  }

  /** Changes the immediate data of a request prepared with one (SEND or RDMA_WRITE with `immediate`). */
  setImmediate(value: number): void {
    if (!(#brand in asObject(this))) throw new InvalidThisError('PreparedSend');
    const operation = 'setImmediate';
    this.ensureOpen(operation);
    if (!this.#immediate) throw argumentError(operation, 'options.immediate', 'the request was prepared without immediate data', 'ERR_INVALID_ARG_VALUE');
    if (typeof value !== 'number' || (value >>> 0) !== value) throw argumentError(operation, 'value', 'must be a u32', numberIssue(value));
    this.memory.view.setUint32(SEND_WR_OFFSET.immData, value, false);
  }

  /** ibv_post_send of this request: one FFI crossing. */
  post(): void {
    if (!(#brand in asObject(this))) throw new InvalidThisError('PreparedSend');
    this.check('PreparedSend.post');
    if (this.#addressHandle?.closed) throw new ResourceClosedError('address handle', 'PreparedSend.post', undefined, 'options.ud.ah');
    const ret = this.postCall.call();
    if (ret !== 0) throw new RdmaError('ibv_post_send', ret);
  }

  protected get kind(): string {
    if (!(#brand in asObject(this))) throw new InvalidThisError('PreparedSend');
    return 'prepared send';
  }
}

/** A receive, encoded once; post() it again each time its buffer is free. */
export class PreparedRecv extends PreparedWorkRequest {
  /** The brand every member checks first (`#brand in asObject(this)`): only the instances this package made have it. */
  readonly #brand = true;
  /** @internal Use qp.prepareRecv(). */
  constructor(key: Internal, target: PostTarget, region: MemoryRegion, options: RecvOptions | undefined, once = false) {
    assertInternal(key, 'new PreparedRecv', 'use qp.prepareRecv()');
    const operation = 'QueuePair.postRecv';
    if (!Resource.isA(region, MemoryRegion)) throw argumentError(operation, 'region', 'expected a MemoryRegion', 'ERR_INVALID_ARG_TYPE');
    const o = parseArgument(operation, 'options', recvOptionsSchema, options ?? {});
    const range = localRange(operation, region, target.pd, o.offset, o.length);
    super(target, range.region, undefined, o.context, once, target.receiveVerb, ibv_recv_wr.size, lengthBound(region.length, o.offset));
    const v = this.memory.view;
    v.setUint32(RECV_WR_OFFSET.wrId, this.wrId, true);
    v.setBigUint64(RECV_WR_OFFSET.sgList, this.memory.address + BigInt(this.sge), true);
    v.setInt32(RECV_WR_OFFSET.numSge, 1, true);
    this.writeSge(range.address, range.length, range.lkey);
  }

  /** ibv_post_recv of this request: one FFI crossing. */
  post(): void {
    if (!(#brand in asObject(this))) throw new InvalidThisError('PreparedRecv');
    this.check('PreparedRecv.post');
    const ret = this.postCall.call();
    if (ret !== 0) throw new RdmaError(receivePostName(this.target), ret);
  }

  protected get kind(): string {
    if (!(#brand in asObject(this))) throw new InvalidThisError('PreparedRecv');
    return 'prepared receive';
  }
}

/** Where a chain's requests, their SGEs and the bad_wr slot sit in its native memory. */
interface ChainLayout {
  readonly memory: NativeScratch;
  readonly wrSize: number;
  readonly sgeBase: number;
  readonly badWrOffset: number;
}

function chainLayout(count: number, wrSize: number): ChainLayout {
  const sgeBase = wrSize * count;
  const badWrOffset = sgeBase + ibv_sge.size * count;
  return { memory: nativeScratch(badWrOffset + 8), wrSize, sgeBase, badWrOffset };
}

/** The resolved slots of a chain: `count` buffers of `length` bytes, `stride` apart from `offset`. */
function chainSlots(operation: string, target: PostTarget, source: MemoryRegion | Uint8Array, o: z.output<typeof chainSlotsSchema>) {
  const size = source instanceof MemoryRegion ? source.length : source.byteLength;
  const length = o.length ?? (o.stride ? o.stride : size - o.offset);
  const stride = o.stride ?? length;
  // The last slot's range checks them all: they only move forward by the stride.
  const last = localRange(operation, source, target.pd, o.offset + (o.count - 1) * stride, length);
  const base = last.address - BigInt((o.count - 1) * stride);
  return { length, stride, base, lkey: last.lkey, region: last.region };
}

/**
 * `count` requests linked into one chain (their `next` fields), encoded once:
 * one post() posts them all in a single FFI crossing. Request i uses the
 * buffer at offset + i × stride; its wr_id is firstWrId + i (slotOf() maps a
 * completion back to i).
 */
abstract class PreparedChain extends PreparedPost {
  /** The brand every member checks first (`#brand in asObject(this)`): only the instances this package made have it. */
  readonly #brand = true;
  readonly count: number;
  readonly firstWrId: number;
  /** Where each request's buffer starts, relative to the region's start. */
  readonly offset: number;
  readonly stride: number;
  readonly length: number;
  readonly #layout: ChainLayout;
  /** For a refused post's error: the C verb, and what the chain holds ('receives', 'sends'). */
  readonly #verbName: string;
  readonly #noun: string;

  protected constructor(
    target: PostTarget, slots: ReturnType<typeof chainSlots>, o: z.output<typeof chainSlotsSchema>, context: unknown,
    wr: { readonly size: number; readonly wrId: number; readonly next: number; readonly sgList: number; readonly numSge: number },
    verb: RepeatedVerb, verbName: string, noun: string, kept: KeptBuffer | undefined,
  ) {
    const layout = chainLayout(o.count, wr.size);
    const { memory, sgeBase } = layout;
    const post = { verb, wr: toAddress(memory.address), badWr: toAddress(memory.address + BigInt(layout.badWrOffset)) };
    super(target, slots.region, kept, post, { count: o.count, context, once: false });
    this.#verbName = verbName;
    this.#noun = noun;
    this.count = o.count;
    this.offset = o.offset;
    this.stride = slots.stride;
    this.length = slots.length;
    this.firstWrId = this.firstId;
    const v = memory.view;
    for (let i = 0; i < o.count; i++) {
      const at = i * wr.size;
      const sge = sgeBase + i * ibv_sge.size;
      v.setUint32(at + wr.wrId, this.firstWrId + i, true);
      v.setBigUint64(at + wr.next, i + 1 < o.count ? memory.address + BigInt(at + wr.size) : 0n, true);
      v.setBigUint64(at + wr.sgList, memory.address + BigInt(sge), true);
      v.setInt32(at + wr.numSge, 1, true);
      v.setBigUint64(sge, slots.base + BigInt(i * slots.stride), true);
      v.setUint32(sge + SGE_OFFSET.length, slots.length, true);
      v.setUint32(sge + SGE_OFFSET.lkey, slots.lkey, true);
    }
    this.#layout = layout;
  }

  /** The index of the request a completion's wr_id belongs to, or -1 when it is not this chain's. */
  slotOf(wrId: number): number {
    if (!(#brand in asObject(this))) throw new InvalidThisError(PREPARED_CHAIN);
    const slot = wrId - this.firstWrId;
    return slot >= 0 && slot < this.count ? slot : -1;
  }

  /** For subclasses' encoding: calls `write` with the chain's view and each request's offset in it. */
  protected eachRequest(write: (view: DataView, at: number, index: number) => void): void {
    if (!(#brand in asObject(this))) throw new InvalidThisError(PREPARED_CHAIN);
    for (let i = 0; i < this.count; i++) write(this.#layout.memory.view, i * this.#layout.wrSize, i);
  }

  /**
   * Posts the whole chain: one FFI crossing. If the provider refuses one
   * request, those before it are posted and the error says how many.
   */
  protected postAll(operation: string): void {
    if (!(#brand in asObject(this))) throw new InvalidThisError(PREPARED_CHAIN);
    this.check(operation);
    const ret = this.postCall.call();
    if (ret !== 0) {
      const { memory, badWrOffset, wrSize } = this.#layout;
      const failedAt = Number(memory.view.getBigUint64(badWrOffset, true) - memory.address) / wrSize;
      const posted = Number.isInteger(failedAt) && failedAt >= 0 && failedAt < this.count ? failedAt : 0;
      throw new RdmaError(this.#verbName, ret, `${posted} of the chain's ${this.count} ${this.#noun} were posted`);
    }
  }
}

const RECV_CHAIN_WR = { size: ibv_recv_wr.size, ...RECV_WR_OFFSET };
const SEND_CHAIN_WR = { size: ibv_send_wr.size, ...SEND_WR_OFFSET };

/** `count` receives in one chain: one post() refills a whole receive ring. */
export class PreparedRecvChain extends PreparedChain {
  /** The brand every member checks first (`#brand in asObject(this)`): only the instances this package made have it. */
  readonly #brand = true;
  /** @internal Use qp.prepareRecvChain(). */
  constructor(key: Internal, target: PostTarget, region: MemoryRegion, options: RecvChainOptions) {
    assertInternal(key, 'new PreparedRecvChain', 'use qp.prepareRecvChain()');
    const operation = 'QueuePair.prepareRecvChain';
    if (!Resource.isA(region, MemoryRegion)) throw argumentError(operation, 'region', 'expected a MemoryRegion', 'ERR_INVALID_ARG_TYPE');
    const o = parseArgument(operation, 'options', recvChainOptionsSchema, options);
    super(target, chainSlots(operation, target, region, o), o, o.context, RECV_CHAIN_WR, target.receiveVerb, receivePostName(target), 'receives', undefined);
  }

  /** Posts every receive of the chain: one FFI crossing. */
  post(): void {
    if (!(#brand in asObject(this))) throw new InvalidThisError('PreparedRecvChain');
    this.postAll('PreparedRecvChain.post');
  }

  protected get kind(): string {
    if (!(#brand in asObject(this))) throw new InvalidThisError('PreparedRecvChain');
    return 'prepared receive chain';
  }
}

/**
 * `count` sends in one chain, e.g. a batch of messages from consecutive slots.
 * By default only the last is signaled: its completion retires the whole chain
 * (a send queue completes in order), at one completion per post().
 */
export class PreparedSendChain extends PreparedChain {
  /** The brand every member checks first (`#brand in asObject(this)`): only the instances this package made have it. */
  readonly #brand = true;
  /** @internal Use qp.prepareSendChain(). */
  constructor(key: Internal, target: PostTarget, source: MemoryRegion | Uint8Array, options: SendChainOptions) {
    assertInternal(key, 'new PreparedSendChain', 'use qp.prepareSendChain()');
    const operation = 'QueuePair.prepareSendChain';
    const o = parseArgument(operation, 'options', sendChainOptionsSchema, options);
    checkSendSource(operation, source, o.inline);
    if (target.qpType === 'UD') throw argumentError(operation, 'queuePair', 'a chain sends on connected queue pairs only; post UD sends one by one', 'ERR_INVALID_ARG_VALUE');
    const slots = chainSlots(operation, target, source, o);
    if (o.inline) checkInlineLength(operation, slots.length, target.maxInlineData);
    const kept = source instanceof MemoryRegion ? undefined : new KeptBuffer(operation, source);
    super(target, slots, o, o.context, SEND_CHAIN_WR, 'postSend', 'ibv_post_send', 'sends', kept);
    const inline = o.inline ? IBV_SEND_INLINE : 0;
    this.eachRequest((view, at, index) => {
      const signaled = o.signaled === 'all' || (o.signaled === 'last' && index === o.count - 1);
      view.setInt32(at + SEND_WR_OFFSET.opcode, IBV_WR_SEND, true);
      view.setUint32(at + SEND_WR_OFFSET.sendFlags, (signaled ? IBV_SEND_SIGNALED : 0) | inline, true);
    });
  }

  /** Posts every send of the chain: one FFI crossing. */
  post(): void {
    if (!(#brand in asObject(this))) throw new InvalidThisError('PreparedSendChain');
    this.postAll('PreparedSendChain.post');
  }

  protected get kind(): string {
    if (!(#brand in asObject(this))) throw new InvalidThisError('PreparedSendChain');
    return 'prepared send chain';
  }
}
