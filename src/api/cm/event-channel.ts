// An rdma_cm event channel on Node's event loop. Its fd is non-blocking and
// watched through libuv; each event is copied out and acked at once (so
// rdma_destroy_id never waits on us), then handed to the operation waiting for
// it on its id, or to the channel's async iterator, or queued on its id.
import { performance } from 'node:perf_hooks';
import koffi from 'koffi';
import { librdmacm } from '../../ffi/librdmacm.js';
import { RdmaError, checkPointer } from '../../ffi/errors.js';
import type { Pointer } from '../../ffi/library.js';
import { rdma_event_channel } from '../../structs/rdma-cma.js';

import { copyCmEvent, type CmEvent, type RawCmEvent } from './cm-event.js';
import { FdWatcher, setNonBlocking } from '../core/fd-watcher.js';
import { nativeScratch } from '../core/native-memory.js';
import { Resource, handleToRelease } from '../core/resource.js';
import { InvalidThisError, asObject } from '../core/errors.js';

// setTimeout's limit: a longer delay fires at once. A deadline further off
// re-arms the timer each time it fires.
const MAX_TIMER_DELAY_MS = 0x7fffffff;

// The members by which ids and channel talk to each other are keyed by these
// symbols, which the package does not export: callers can neither see nor call them.
/** @internal */
export const offerEvent: unique symbol = Symbol('rdmacm.offerEvent');
/** @internal */
export const keepEvent: unique symbol = Symbol('rdmacm.keepEvent');
/** @internal */
export const failPending: unique symbol = Symbol('rdmacm.failPending');
/** @internal */
export const expireWaiters: unique symbol = Symbol('rdmacm.expireWaiters');
/** @internal */
export const attachTarget: unique symbol = Symbol('rdmacm.attachTarget');
/** @internal */
export const detachTarget: unique symbol = Symbol('rdmacm.detachTarget');
/** @internal */
export const expectEvent: unique symbol = Symbol('rdmacm.expectEvent');
/** @internal */
export const settleWait: unique symbol = Symbol('rdmacm.settleWait');

/** @internal What the channel needs from an id to route its events (CmId provides it). */
export interface EventTarget {
  readonly udPortSpace: boolean;
  /** Offers an event to the id's pending operation; true if it took it. */
  [offerEvent](event: CmEvent<EventTarget>): boolean;
  /** Queues an event nobody waited for. */
  [keepEvent](event: CmEvent<EventTarget>): void;
  /** The channel cannot read events any more: every pending operation fails with `error`. */
  [failPending](error: unknown): void;
  /** Ends the operations whose deadline (performance.now() time) is past; returns the nearest deadline left, or Infinity. */
  [expireWaiters](now: number): number;
}

/**
 * The ids a channel's events carry: cm-id.ts merges `id: CmId` into this
 * interface (this module cannot import it: cm-id.ts imports this one).
 */
export interface ChannelEventIds {}
/** The id type of a channel's events: CmId. */
export type ChannelId = ChannelEventIds extends { readonly id: infer Id } ? Id : unknown;
/** A connection-manager event as the channel hands it out, with its CmIds. */
export type ChannelEvent = CmEvent<ChannelId>;

/** @internal Wraps a CONNECT_REQUEST's new cm_id as an id object on this channel. */
export type RequestAdopter = (channel: EventChannel, idHandle: Pointer, listener: EventTarget, request: RawCmEvent['conn'] | RawCmEvent['ud']) => EventTarget;

/** Set by cm-id.ts (which this module cannot import at run time) to wrap new connection requests. */
let adoptRequest: RequestAdopter | undefined;

/** @internal */
export function setRequestAdopter(adopter: RequestAdopter): void {
  adoptRequest = adopter;
}

export class EventChannel extends Resource implements AsyncIterable<ChannelEvent> {
  /** The brand every member checks first (`#brand in asObject(this)`): only the instances this package made have it. */
  readonly #brand = true;
  readonly fd: number;
  readonly #watcher: FdWatcher;
  /** The ids on this channel by address: a Map lookup by BigInt compares with a runtime call. */
  readonly #targets = new Map<number, EventTarget>();
  /** rdma_get_cm_event's out-parameter. */
  readonly #eventSlot = nativeScratch(8);
  /** Whether an event's id carries UD parameters (bound once: called for every event). */
  readonly #isUdPortSpace = (idAddress: number): boolean => this.#targets.get(idAddress)?.udPortSpace ?? false;
  #demand = 0;
  /** One timer for the deadlines of every operation waiting here, set for the nearest. */
  #deadlineTimer: NodeJS.Timeout | undefined;
  #deadlineTimerDue = Infinity;
  #iterators = 0;
  #iteratorQueue: ChannelEvent[] = [];
  #iteratorWaiters: ((result: IteratorResult<ChannelEvent>) => void)[] = [];
  constructor() {
    const handle = checkPointer('rdma_create_event_channel', librdmacm.rdma_create_event_channel());
    super('event channel', handle, undefined);
    this.fd = koffi.decode(handle, koffi.offsetof(rdma_event_channel, 'fd'), 'int') as number;
    setNonBlocking(this.fd);
    this.#watcher = new FdWatcher(this.fd, () => this.#drain());
  }

  /**
   * Whether operations waiting here keep the process alive (libuv's ref), as
   * a Node handle's ref()/unref(); true by default. Waits still run either
   * way; the deadline timer follows suit.
   */
  setRef(ref: boolean): void {
    if (!(#brand in asObject(this))) throw new InvalidThisError('EventChannel');
    this.#ref = ref;
    this.#watcher.setRef(ref);
    if (ref) this.#deadlineTimer?.ref();
    else this.#deadlineTimer?.unref();
  }
  #ref = true;

  /** @internal Routes events of `idHandle` to `target`. */
  [attachTarget](idHandle: Pointer, target: EventTarget): void {
    if (!(#brand in asObject(this))) throw new InvalidThisError('EventChannel');
    this.ensureOpen('attach');
    this.#targets.set(Number(idHandle), target);
  }

  /** @internal */
  [detachTarget](idHandle: Pointer): void {
    if (!(#brand in asObject(this))) throw new InvalidThisError('EventChannel');
    this.#targets.delete(Number(idHandle));
  }

  /**
   * @internal An operation starts waiting for an event: read the fd whenever it
   * is readable until the operation is served, and have its id expire it once
   * `timeoutMs` has passed. Returns its deadline (performance.now() time).
   * Nothing is read now: the operation was issued just now, and its event is
   * rarely there yet (a read would only find EAGAIN).
   */
  [expectEvent](timeoutMs?: number): number {
    if (!(#brand in asObject(this))) throw new InvalidThisError('EventChannel');
    this.ensureOpen('wait for an event');
    this.#demand++;
    const deadline = timeoutMs === undefined ? Infinity : this.#now() + timeoutMs;
    if (deadline < this.#deadlineTimerDue) this.#armDeadlineTimer(deadline);
    this.#watcher.setInterest(true);
    return deadline;
  }

  /**
   * performance.now() as of the start of this synchronous run of JavaScript: a
   * deadline needs milliseconds, not the clock read (and the brand check of
   * performance.now) that each of hundreds of waits issued at once would cost.
   * A deadline may come early by as long as that run has lasted, rarely a millisecond.
   */
  #now(): number {
    if (!this.#clockIsCurrent) {
      this.#clock = performance.now();
      this.#clockIsCurrent = true;
      queueMicrotask(this.#clockExpires);
    }
    return this.#clock;
  }

  #clock = 0;
  #clockIsCurrent = false;
  readonly #clockExpires = (): void => {
    this.#clockIsCurrent = false;
  };

  /** @internal An operation stopped waiting (served, timed out or aborted). */
  [settleWait](): void {
    if (!(#brand in asObject(this))) throw new InvalidThisError('EventChannel');
    // With nobody waiting, stop watching the fd and the clock, so an idle channel does not keep the process alive.
    if (--this.#demand === 0) {
      this.#watcher.setInterest(false);
      this.#disarmDeadlineTimer();
    }
  }

  // One timer per channel, not one per operation: a timer costs more than the
  // rest of an operation's JavaScript, and hundreds of operations may wait at
  // once. Nor does the channel keep a set of deadlines to delete from at every
  // event: it asks the ids when the timer fires, which is rare.
  #armDeadlineTimer(due: number): void {
    clearTimeout(this.#deadlineTimer);
    this.#deadlineTimerDue = due;
    const delay = Math.min(MAX_TIMER_DELAY_MS, Math.max(0, Math.ceil(due - performance.now())));
    this.#deadlineTimer = setTimeout(() => this.#expireDue(), delay);
    if (!this.#ref) this.#deadlineTimer.unref();
  }

  #disarmDeadlineTimer(): void {
    clearTimeout(this.#deadlineTimer);
    this.#deadlineTimer = undefined;
    this.#deadlineTimerDue = Infinity;
  }

  #expireDue(): void {
    this.#disarmDeadlineTimer();
    // An event may have come in time and wait unread behind a busy turn of the
    // loop (timers run before I/O): it settles its operation, not the deadline.
    this.#drain();
    const now = performance.now();
    let next = Infinity;
    for (const target of [...this.#targets.values()]) next = Math.min(next, target[expireWaiters](now));
    if (next !== Infinity) this.#armDeadlineTimer(next);
  }

  /** Reads one event without blocking; undefined when none is pending. */
  #readOne(): RawCmEvent | undefined {
    if (librdmacm.rdma_get_cm_event(this.handle, this.#eventSlot.buffer) !== 0) {
      const errno = koffi.errno();
      if (errno === 11 /* EAGAIN */) return undefined;
      throw new RdmaError('rdma_get_cm_event', errno);
    }
    const native = this.#eventSlot.view.getBigUint64(0, true);
    let event: RawCmEvent;
    try {
      event = copyCmEvent(native, this.#isUdPortSpace);
    } finally {
      librdmacm.rdma_ack_cm_event(native);
    }
    return event;
  }

  /**
   * The fd is readable: reads and hands out events until none is pending or
   * nobody waits. Synchronous, in libuv's callback: a wake-up costs no promise.
   */
  #drain(): void {
    try {
      while (this.#demand > 0 && !this.closed) {
        const event = this.#readOne();
        if (!event) return;
        this.#dispatch(event);
      }
    } catch (error) {
      // A failing read leaves nobody waiting forever: every pending operation gets the error.
      for (const target of this.#targets.values()) target[failPending](error);
      for (const waiter of this.#iteratorWaiters.splice(0)) {
        this[settleWait]();
        waiter({ value: undefined, done: true });
      }
    }
  }

  #dispatch(raw: RawCmEvent): void {
    let target = this.#targets.get(raw.idAddress);
    const listener = raw.listenIdAddress === 0 ? undefined : this.#targets.get(raw.listenIdAddress);
    if (raw.type === 'CONNECT_REQUEST' && listener && !target && adoptRequest) {
      target = adoptRequest(this, raw.idHandle, listener, raw.conn ?? raw.ud);
    }
    if (!target) return; // an id closed since: its event is acked and dropped
    const event: CmEvent<EventTarget> = { type: raw.type, status: raw.status, conn: raw.conn, ud: raw.ud, id: target, listenId: listener };
    // A connection request is the listener's business; everything else its own id's.
    const owner = raw.type === 'CONNECT_REQUEST' && listener ? listener : target;
    if (owner[offerEvent](event)) return;
    if (this.#iterators > 0) return this.#toIterator(event);
    owner[keepEvent](event);
  }

  #toIterator(targetEvent: CmEvent<EventTarget>): void {
    const event = targetEvent as ChannelEvent; // every target on a channel is a CmId
    const waiter = this.#iteratorWaiters.shift();
    if (waiter) {
      this[settleWait]();
      waiter({ value: event, done: false });
    } else {
      this.#iteratorQueue.push(event);
    }
  }

  /**
   * Every event that no pending operation takes, in order. Events that an
   * operation (resolveAddr, connect, …) waits for go to that operation.
   */
  [Symbol.asyncIterator](): AsyncIterator<ChannelEvent> {
    if (!(#brand in asObject(this))) throw new InvalidThisError('EventChannel');
    this.ensureOpen('iterate');
    this.#iterators++;
    let finished = false;
    const finish = (): IteratorResult<ChannelEvent> => {
      if (!finished) {
        finished = true;
        this.#iterators--;
      }
      return { value: undefined, done: true };
    };
    return {
      next: () => {
        if (finished || this.closed) return Promise.resolve(finish());
        const queued = this.#iteratorQueue.shift();
        if (queued) return Promise.resolve({ value: queued, done: false });
        return new Promise((resolve) => {
          this.#iteratorWaiters.push(resolve);
          this[expectEvent]();
        });
      },
      return: () => Promise.resolve(finish()),
    };
  }

  protected release(): void {
    if (!(#brand in asObject(this))) throw new InvalidThisError('EventChannel');
    const handle = handleToRelease(this, 'EventChannel');
    this.#disarmDeadlineTimer();
    this.#watcher.close();
    for (const waiter of this.#iteratorWaiters.splice(0)) waiter({ value: undefined, done: true });
    this.#targets.clear();
    librdmacm.rdma_destroy_event_channel(handle);
  }
}
