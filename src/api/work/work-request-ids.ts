// wr_ids and the JavaScript contexts behind them. One table for the process:
// a completion can arrive on any CQ (an SRQ's receives land on the CQ of
// whichever QP took them), so the id alone must find its context.
//
// A prepared request (or chain) leases its ids: they stay in the table, with
// or without a context, until the lease is released by the request's close(),
// its queue's close, or the collection of a request the program dropped. A
// one-shot post's id stays only when it has a context, until its completion is
// decoded. After the counter wraps around, ids still in the table are skipped.
import { RdmaError } from '../../ffi/errors.js';

const MAX_WR_ID = 0xffffffff;
const ENOSPC = 28;

interface Tracked {
  readonly context: unknown;
  /** A one-shot post's: dropped once its completion is decoded. */
  readonly once: boolean;
}

/** Every wr_id in use and its context. Ids run from 1 to `last` (requests encode a u32), then wrap to 1. */
export class WorkRequestIds {
  readonly #tracked = new Map<number, Tracked>();
  readonly #last: number;
  #next: number;

  constructor(first = 1, last = MAX_WR_ID) {
    this.#next = first;
    this.#last = last;
  }

  /** How many ids are in use (held by leases, or by one-shot posts with a context). */
  get size(): number {
    return this.#tracked.size;
  }

  /** A fresh id for a one-shot post; its context (if any) is kept until its completion is decoded. */
  takeOnce(context: unknown): number {
    const wrId = this.#allocate(1);
    if (context !== undefined) this.#tracked.set(wrId, { context, once: true });
    return wrId;
  }

  /** `count` consecutive fresh ids sharing one context, held until released; returns the first. */
  take(count: number, context: unknown): number {
    const first = this.#allocate(count);
    const tracked: Tracked = { context, once: false };
    for (let i = 0; i < count; i++) this.#tracked.set(first + i, tracked);
    return first;
  }

  /** Forgets `count` ids from `first` (a failed post, a released lease). */
  release(first: number, count = 1): void {
    for (let i = 0; i < count; i++) this.#tracked.delete(first + i);
  }

  /** The context of a completed wr_id (forgotten if it was a one-shot post's). */
  contextOf(wrId: number): unknown {
    const tracked = this.#tracked.get(wrId);
    if (tracked?.once) this.#tracked.delete(wrId);
    return tracked?.context;
  }

  /**
   * The first of `count` consecutive ids none of which is in use. Each failed
   * try moves past an id in use, so size + 2 tries (one for a wrap) reach a
   * free run unless the ids in use leave none that long.
   */
  #allocate(count: number): number {
    for (let tries = this.#tracked.size + 2; tries > 0; tries--) {
      // A block stays consecutive: it never straddles the wrap.
      const first = this.#next + count - 1 > this.#last ? 1 : this.#next;
      const inUse = this.#lastInUse(first, count);
      const after = (inUse === -1 ? first + count - 1 : inUse) + 1;
      this.#next = after > this.#last ? 1 : after;
      if (inUse === -1) return first;
    }
    throw new RdmaError('wr_id allocation', ENOSPC, `no run of ${count} free wr_ids among the ${this.#tracked.size} in use`);
  }

  /** The last id of [first, first + count) still in use, or -1. */
  #lastInUse(first: number, count: number): number {
    for (let id = first + count - 1; id >= first; id--) if (this.#tracked.has(id)) return id;
    return -1;
  }
}

/** The process's table (see above). */
export const workRequestIds = new WorkRequestIds();

/** The context of a completed wr_id (forgotten if it was a one-shot post's). */
export function contextOf(wrId: number): unknown {
  return workRequestIds.contextOf(wrId);
}

/** Releases the ids of prepared requests the program dropped without close(). */
const droppedRequests = new FinalizationRegistry<WorkRequestLease>((lease) => lease.release());

/** What else a prepared request holds until its ids are released (its bound post call). */
export interface ReleasedWithIds {
  release(): void;
}

/** The ids of one prepared request or chain, held until release(). */
export class WorkRequestLease {
  #released = false;

  constructor(
    readonly first: number,
    readonly count: number,
    private readonly ids: WorkRequestIds,
    private readonly group: Set<WorkRequestLease>,
    private readonly held: ReleasedWithIds | undefined,
  ) {}

  get released(): boolean {
    return this.#released;
  }

  /** Forgets the ids and their context, and releases what the request held with them. Idempotent. */
  release(): void {
    if (this.#released) return;
    this.#released = true;
    droppedRequests.unregister(this);
    this.ids.release(this.first, this.count);
    this.group.delete(this);
    this.held?.release();
  }
}

/** The leases of one queue's prepared requests: the queue's close releases them all. */
export class PreparedRequestIds {
  readonly #leases = new Set<WorkRequestLease>();

  constructor(private readonly ids: WorkRequestIds = workRequestIds) {}

  /** How many leases are held. */
  get size(): number {
    return this.#leases.size;
  }

  /**
   * Leases `count` ids for `request`; they, and `held`, are released too if
   * `request` is collected first.
   */
  lease(request: object, count: number, context: unknown, held?: ReleasedWithIds): WorkRequestLease {
    const lease = new WorkRequestLease(this.ids.take(count, context), count, this.ids, this.#leases, held);
    this.#leases.add(lease);
    droppedRequests.register(request, lease, lease);
    return lease;
  }

  /** Releases every lease (the queue is closing). */
  releaseAll(): void {
    for (const lease of [...this.#leases]) lease.release();
  }
}
