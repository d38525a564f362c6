// A completion queue (struct ibv_cq) and its completion channel: borrowed from
// librdmacm for one QP, or made on a device (DeviceContext.createCq) to be
// shared by several QPs. Three ways to take completions:
// - poll(): non-blocking, batched, nothing allocated (read them with the *At accessors);
// - waitOne(): blocks the thread, as rdma_get_send_comp/rdma_get_recv_comp do;
// - next() or a listener, on the event loop, in one of three modes:
//   'adaptive' (the default) polls on for a spin budget (learned per queue,
//   spin-budget.ts) from the start of a wait and after a completion, then
//   arms the channel and sleeps;
//   'events' sleeps at once (req_notify_cq, then get_cq_event when libuv sees
//   the channel readable; acks batched); 'busy-poll' never sleeps. Every mode
//   hands the loop back at least once per time slice, so timers and other I/O
//   run however fast completions come.
import { Buffer } from 'node:buffer';
import { performance } from 'node:perf_hooks';
import koffi from 'koffi';
import { libibverbs } from '../../ffi/libibverbs.js';
import { RdmaError, checkPointer, checkVerbs, pollFailed } from '../../ffi/errors.js';
import { contextOps, repeatedVerbCall, type ContextOps } from '../../ffi/inline-verbs.js';
import type { FixedCall } from '../../ffi/bound-call.js';
import { readPointer, toAddress, type Pointer } from '../../ffi/library.js';
import { ibv_comp_channel, ibv_cq } from '../../structs/verbs-resources.js';
import { Resource, handleToRelease, lifetimeOf, type Lifetime } from '../core/resource.js';
import { assertInternal, type Internal } from '../core/internal.js';
import { contextOf } from './work-request-ids.js';
import { InvalidThisError, ResourceClosedError, asObject } from '../core/errors.js';
import { argumentError, numberIssue } from '../core/validate.js';
import { FdWatcher, blockUntilReadable, setNonBlocking } from '../core/fd-watcher.js';
import { atTurnEnd } from '../core/turn-end.js';
import { CompletionChannel, joinChannel, type ChannelWatch } from './completion-channel.js';
import { nativeScratch } from '../core/native-memory.js';
import { SpinBudget } from './spin-budget.js';
import {
  WC_SIZE, WorkCompletionError, decodeWorkCompletion, readByteLen, readImmData, readOpcode, readStatus, readWrId, type WorkCompletion,
} from './work-completion.js';

/**
 * How next() and a listener wait: 'adaptive' polls for its spin budget
 * (spinBudgetUs, learned up to maxSpinBudgetUs) from the start of a wait and
 * after each completion, then sleeps on the completion channel; 'events'
 * sleeps at once; 'busy-poll' never sleeps (a core stays busy while anything
 * waits).
 */
export type CompletionMode = 'adaptive' | 'events' | 'busy-poll';
/** The modes, as CompletionQueue.mode accepts them. */
export const COMPLETION_MODES: readonly CompletionMode[] = Object.freeze(['adaptive', 'events', 'busy-poll']);
/** Adaptive mode's default spin budget, in µs: Linux's suggested busy_poll (rsockets spins 10 µs). */
export const DEFAULT_SPIN_BUDGET_US = 50;
/**
 * The default longest spin budget adaptive mode may learn, in µs: room for a
 * wake-up on each side of a ping-pong where a wake-up costs a millisecond or
 * more (a socket ping-pong's sleeping waits in the soft-RoCE guest read
 * 2.7-4.7 ms at p50 on 2026-12-02). Only a budget that pays for itself stays.
 */
export const DEFAULT_MAX_SPIN_BUDGET_US = 5000;
/** How long, in ms, completions may be served before the event loop gets its turn, by default. */
export const DEFAULT_TIME_SLICE_MS = 1;
/** The longest spin budget a queue takes, in µs (one second). */
export const MAX_SPIN_BUDGET_US = 1_000_000;
const MAX_TIME_SLICE_MS = 1000;

const BATCH = 16;
/**
 * The *At accessors' rule for a bad index, made once: a template literal in
 * #at would be bytecode in every accessor TurboFan inlines into a poll loop,
 * within a budget that five accessors and their receiver checks fill.
 */
const INDEX_RULE = `expected an integer from 0 to ${BATCH - 1}`;
const ACK_BATCH = 16;
const EAGAIN = 11;
const CQ_CHANNEL = koffi.offsetof(ibv_cq, 'channel');
const CQ_CONTEXT = koffi.offsetof(ibv_cq, 'context');
const CHANNEL_FD = koffi.offsetof(ibv_comp_channel, 'fd');
/** What the *At accessors read before the first poll: zeros, as a fresh batch would hold. */
const NOTHING_POLLED = new DataView(new ArrayBuffer(WC_SIZE * BATCH));

/**
 * Takes a queue's completions in batches, on the event loop, instead of
 * next(): no promise per completion. See CompletionQueue.setListener.
 */
export interface CompletionListener {
  /** Completions may be waiting: take them with poll() and the *At accessors; return how many were taken (0: none left). */
  onCompletions(): number;
  /** The queue can no longer deliver (its channel or a poll failed); no call follows. */
  onCompletionError(error: unknown): void;
}

// One time slice for all the queues of a thread: a chain of completions that
// hops from queue to queue (a server's many connections, a ping-pong whose
// completions are ready at once on loopback) never lets the loop turn either,
// so what bounds it is the thread's, not a queue's.
/** When this thread's queues began serving in this turn of the event loop (performance.now()). */
let turnStart = 0;
/** Whether a turn is open: cleared at the end of the turn that opened it (atTurnEnd: after its immediates, before the loop polls again). */
let inTurn = false;
const endTurn = (): void => {
  inTurn = false;
};

/**
 * The wake-ups' own slice: wake-ups of many queues' channels in one turn
 * count against it, apart from the turn's chains (so neither starves the
 * other). Opened by the first wake-up of a turn, closed at the turn's end.
 */
let wakeWindowStart = 0;
let inWakeWindow = false;
const endWakeWindow = (): void => {
  inWakeWindow = false;
};
function beginWakeWindow(now: number): void {
  if (inWakeWindow) return;
  inWakeWindow = true;
  wakeWindowStart = now;
  atTurnEnd(endWakeWindow);
}

/** Opens this turn's time slice at `now` unless one is open: every queue served until the loop turns counts against it. */
function beginTurn(now: number): void {
  if (inTurn) return;
  inTurn = true;
  turnStart = now;
  atTurnEnd(endTurn);
}

/** This thread's queues with a poll scheduled (see #schedulePoll). */
let scheduledPolls = 0;

interface Waiter {
  resolve(completion: WorkCompletion): void;
  reject(error: unknown): void;
}

export class CompletionQueue extends Resource implements AsyncIterable<WorkCompletion> {
  /** The brand every member checks first (`#brand in asObject(this)`): only the instances this package made have it. */
  readonly #brand = true;
  #mode: CompletionMode = 'adaptive';
  /** Adaptive mode's spin budget: the floor and ceiling in µs, and what it learned between them. */
  #spinBudgetUs = DEFAULT_SPIN_BUDGET_US;
  #maxSpinBudgetUs = DEFAULT_MAX_SPIN_BUDGET_US;
  readonly #spinBudget = new SpinBudget(DEFAULT_SPIN_BUDGET_US / 1000, DEFAULT_MAX_SPIN_BUDGET_US / 1000);
  #timeSliceMs = DEFAULT_TIME_SLICE_MS;
  /** Adaptive mode polls on until this time (performance.now()); set when a wait begins or a drain takes completions. */
  #spinUntil = Number.NEGATIVE_INFINITY;
  /** When the current spin began (a wait, or the spin after completions), and whether it has slept since. */
  #spinFrom = Number.NEGATIVE_INFINITY;
  #sleptSinceSpin = false;
  /** A poll is scheduled (a spin round or a slice's end). */
  #pollScheduled = false;
  /** The scheduled poll, made once: nothing is allocated per round. */
  readonly #scheduledPoll = (): void => this.#pollAgain();
  readonly #ops: ContextOps;
  /** cq->channel, read when first needed (0n: the queue has none). */
  #channel: Pointer | undefined;
  /** cq->context, read when first needed. */
  #context: Pointer | undefined;
  /**
   * The channel's fd watcher, made (and the fd made non-blocking) on first
   * use: busy-polling code never needs it. On a shared channel, this queue's
   * place on it, made with the queue.
   */
  #channelWatcher: FdWatcher | ChannelWatch | undefined;
  /** On a shared channel: its watch (the same as #channelWatcher). */
  #sharedWatch: ChannelWatch | undefined;
  #sharedChannelResource: CompletionChannel | undefined;
  /** ibv_poll_cq of this queue into its batch, the arguments stored: made by the first poll, as most queues of a setup are never polled. */
  #pollCall: FixedCall | undefined;
  /** The num_entries #pollCall holds. */
  #pollCount = BATCH;
  #view: DataView = NOTHING_POLLED;
  /** ibv_get_cq_event's two out-parameters (the CQ, its context), made with the channel's watcher. */
  #eventCqSlot: Buffer | undefined;
  #eventContextSlot: Buffer | undefined;
  #unackedEvents = 0;
  #waiters: Waiter[] = [];
  /** A completion taken for a wait begun past the time slice, delivered a turn later (#serve's `pastSlice`). */
  #held: WorkCompletion | undefined;
  #spinning = false;
  /** Notification requested and its event not yet taken: the next completion raises one. */
  #armed = false;
  #listener: CompletionListener | undefined;
  /** For a queue made here: its channel (0n without one), destroyed after it. Undefined when borrowed. */
  readonly #ownChannel: Pointer | undefined;
  /** Whether the queue is closed, as the poll and wait path reads it (see Lifetime). */
  readonly #lifetime: Lifetime;

  private constructor(handle: Pointer, owner: Resource, ops: ContextOps, ownChannel?: Pointer) {
    super('completion queue', handle, owner);
    this.#lifetime = lifetimeOf(this);
    this.#ops = ops;
    this.#ownChannel = ownChannel;
    if (ownChannel !== undefined) this.#channel = ownChannel;
  }

  /**
   * How next(), the async iterator and a listener wait; change it at any time.
   * One of 'adaptive', 'events', 'busy-poll'.
   * @defaultValue 'adaptive'
   */
  get mode(): CompletionMode {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CompletionQueue');
    return this.#mode;
  }
  set mode(mode: CompletionMode) {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CompletionQueue');
    const known = COMPLETION_MODES.indexOf(mode);
    if (known < 0) throw argumentError('mode', 'mode', `expected one of ${COMPLETION_MODES.map((m) => `'${m}'`).join(', ')}`, 'ERR_INVALID_ARG_VALUE');
    // The table's own string: the wait path's compares with literals are then one pointer
    // compare, where a string read from argv (not internalized) went through StringEqual.
    this.#mode = COMPLETION_MODES[known]!;
    if (this.#listener && !this.#pollScheduled && !this.#lifetime.closed) this.#schedulePoll(false, performance.now());
    else if (mode === 'busy-poll' && this.#waiters.length > 0 && !this.#spinning) void this.#spin();
  }

  /**
   * Adaptive mode: how long, in µs, the queue keeps polling after its last
   * completion, or from the start of a next() that finds none, before it arms
   * the channel and sleeps (an integer, 0–1,000,000), at least: the budget it
   * starts from and falls back to. It grows up to maxSpinBudgetUs where waits
   * that sleep end soon after (see maxSpinBudgetUs).
   * Polling hands the event loop back between rounds; a longer budget catches
   * replies that come later at the cost of CPU time spent looking for them.
   * @defaultValue 50
   */
  get spinBudgetUs(): number {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CompletionQueue');
    return this.#spinBudgetUs;
  }
  set spinBudgetUs(us: number) {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CompletionQueue');
    this.#spinBudgetUs = checkedSpinUs('spinBudgetUs', us);
    this.#spinBudget.setBounds(us / 1000, this.#maxSpinBudgetUs / 1000);
  }

  /**
   * Adaptive mode: the longest spin budget, in µs, the queue learns (an
   * integer, 0–1,000,000; at or under spinBudgetUs, the budget stays
   * spinBudgetUs). Two waits in a row that slept, yet ended within it, grow
   * the budget to the second one's length; the grown budget stays only while
   * spinning ends waits in half that time or less, so a wake-up it saves
   * costs at least the spin. That takes a ping-pong whose replies come after
   * a costly wake-up (an emulated guest's: hundreds of µs) off sleeping; a
   * stream that spinning cannot hurry falls back to spinBudgetUs and tries
   * again later.
   * @defaultValue 5000
   */
  get maxSpinBudgetUs(): number {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CompletionQueue');
    return this.#maxSpinBudgetUs;
  }
  set maxSpinBudgetUs(us: number) {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CompletionQueue');
    this.#maxSpinBudgetUs = checkedSpinUs('maxSpinBudgetUs', us);
    this.#spinBudget.setBounds(this.#spinBudgetUs / 1000, us / 1000);
  }

  /** Adaptive mode's budget as learned now, in µs (spinBudgetUs to maxSpinBudgetUs). */
  get learnedSpinBudgetUs(): number {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CompletionQueue');
    return this.#spinBudget.ms * 1000;
  }

  /**
   * The longest time, in ms, completions are served before the event loop gets
   * a turn (a number, 0.05–1000): bounds how late a timer can be made by a
   * stream of completions, in every mode. The slice is counted for all of the
   * thread's queues together; this queue yields once it is spent.
   * @defaultValue 1
   */
  get timeSliceMs(): number {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CompletionQueue');
    return this.#timeSliceMs;
  }
  set timeSliceMs(ms: number) {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CompletionQueue');
    if (typeof ms !== 'number' || !(ms >= 0.05 && ms <= MAX_TIME_SLICE_MS)) throw argumentError('timeSliceMs', 'timeSliceMs', `expected a number from 0.05 to ${MAX_TIME_SLICE_MS}`, numberIssue(ms));
    this.#timeSliceMs = ms;
  }

  /**
   * @internal ibv_create_cq on an open device context, with a completion channel of its
   * own (`channel` true), none (false) or a shared one; see DeviceContext.createCq.
   */
  static create(key: Internal, device: Resource, context: Pointer, entries: number, channel: boolean | CompletionChannel, compVector: number): CompletionQueue {
    assertInternal(key, 'CompletionQueue.create', 'use device.createCq()');
    const shared = channel instanceof CompletionChannel ? channel : undefined;
    const own = channel === true ? checkPointer('ibv_create_comp_channel', libibverbs.ibv_create_comp_channel(context)) : 0n;
    const used = shared ? shared.unsafeHandle : own;
    let cq: Pointer;
    try {
      cq = checkPointer('ibv_create_cq', libibverbs.ibv_create_cq(context, entries, null, used || null, compVector));
    } catch (error) {
      if (own !== 0n) libibverbs.ibv_destroy_comp_channel(own);
      throw error;
    }
    const queue = new CompletionQueue(cq, device, contextOps(context), own);
    queue.#context = context;
    if (shared) {
      queue.#channel = used;
      queue.#sharedChannelResource = shared;
      // The channel closes its queues first, as a parent would.
      queue.use(shared);
      queue.#channelWatcher = queue.#sharedWatch = joinChannel(shared, cq, {
        onEvent: () => queue.#sharedEvent(),
        onChannelError: (error) => queue.#channelFailed(error),
      });
    }
    return queue;
  }

  /**
   * @internal Wraps a CQ that librdmacm created for an id (destroyed by rdma_destroy_qp).
   * `ops` are its device context's, which its queue pair shares.
   */
  static borrow(key: Internal, handle: Pointer, owner: Resource, ops: ContextOps): CompletionQueue {
    assertInternal(key, 'CompletionQueue.borrow', 'use qp.sendCq / qp.recvCq');
    return new CompletionQueue(handle, owner, ops);
  }

  /** Polls up to `max` (≤ 16) completions into the internal batch; returns how many. Allocates nothing. */
  poll(max = BATCH): number {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CompletionQueue');
    if (this.#lifetime.closed) throw new ResourceClosedError(this.kind, 'poll');
    const pollCall = this.#pollCall ?? this.#preparePoll();
    if (max !== this.#pollCount) {
      // Checked only when the count changes: the usual poll() repeats its count and pays nothing.
      if (typeof max !== 'number' || !(max >= 1) || max % 1 !== 0) throw argumentError('poll', 'max', `expected an integer of at least 1 (above ${BATCH}, ${BATCH} are polled)`, numberIssue(max));
      const entries = max > BATCH ? BATCH : max;
      if (entries !== this.#pollCount) {
        pollCall.setIntArgument(1, entries);
        this.#pollCount = entries;
      }
    }
    const count = pollCall.call();
    if (count < 0) throw pollFailed(count);
    return count;
  }

  #preparePoll(): FixedCall {
    const entries = nativeScratch(WC_SIZE * BATCH);
    this.#view = entries.view;
    return (this.#pollCall = repeatedVerbCall(this.#ops, 'pollCq', toAddress(this.handle), BATCH, toAddress(entries.address)));
  }

  /**
   * Where the index-th entry of the poll batch starts; an argument error for an
   * index that is not an integer 0–15. A DataView
   * would read offset 0 for NaN or a string and throw a RangeError past the end.
   */
  #at(operation: string, index: number): number {
    if (typeof index !== 'number' || !(index >= 0 && index < BATCH) || index % 1 !== 0) {
      throw argumentError(operation, 'index', INDEX_RULE, numberIssue(index));
    }
    return index * WC_SIZE;
  }

  /** Status (0 = SUCCESS) of the i-th completion of the last poll(). */
  statusAt(index: number): number {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CompletionQueue');
    return readStatus(this.#view, this.#at('statusAt', index));
  }
  /**
   * wr_id of the i-th completion of the last poll(). A one-shot post's context
   * is kept until its completion is decoded (completionAt(), next(), waitOne())
   * or taken with contextAt(): a loop that reads only wr_ids should post without one.
   */
  wrIdAt(index: number): number {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CompletionQueue');
    return readWrId(this.#view, this.#at('wrIdAt', index));
  }
  /** The context of the i-th completion of the last poll(); a one-shot post's is forgotten once taken. */
  contextAt(index: number): unknown {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CompletionQueue');
    return contextOf(readWrId(this.#view, this.#at('contextAt', index)));
  }
  /** byte_len of the i-th completion of the last poll(). */
  byteLenAt(index: number): number {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CompletionQueue');
    return readByteLen(this.#view, this.#at('byteLenAt', index));
  }

  /** Opcode (a WcOpcode value: RECV_RDMA_WITH_IMM is 129) of the i-th completion of the last poll(). */
  opcodeAt(index: number): number {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CompletionQueue');
    return readOpcode(this.#view, this.#at('opcodeAt', index));
  }
  /** Immediate data (host order) of the i-th completion of the last poll(); -1 when it carries none. */
  immDataAt(index: number): number {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CompletionQueue');
    return readImmData(this.#view, this.#at('immDataAt', index));
  }

  /** The i-th completion of the last poll(), decoded (with its context). */
  completionAt(index: number): WorkCompletion {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CompletionQueue');
    const base = this.#at('completionAt', index);
    return decodeWorkCompletion(this.#view, base, contextOf(readWrId(this.#view, base)));
  }

  /**
   * Blocks the thread until one completion arrives, as rdma_get_*_comp do.
   * A completion with an error status throws WorkCompletionError.
   */
  waitOne(): WorkCompletion {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CompletionQueue');
    const operation = 'waitOne';
    this.ensureOpen(operation);
    try {
      for (;;) {
        if (this.poll(1)) return this.#checked(this.completionAt(0));
        this.#armNotify();
        if (this.poll(1)) return this.#checked(this.completionAt(0));
        const watcher = this.#watcher();
        if (!watcher) throw new RdmaError('ibv_get_cq_event', 22, 'this CQ has no completion channel; use poll()');
        blockUntilReadable(watcher.fd, -1);
        this.#takeChannelEvent();
      }
    } finally {
      // The event it took may be the one a pending next() watched for: serve those again, which re-arms.
      if (this.#waiters.length > 0 && this.#mode !== 'busy-poll' && !this.#armed && !this.#pollScheduled && !this.#lifetime.closed) this.#serve(performance.now());
    }
  }

  /**
   * Hands every completion to `listener` (undefined stops): on each wake-up of
   * the completion channel it drains the queue with poll(), then the queue is
   * armed and drained once more, so none that lands in between is missed.
   * One libuv wake-up, however many completions; nothing allocated per
   * completion. Used instead of next(), never with it. `keepAlive` false lets
   * the process exit while the queue sleeps (see unref()); it defaults to true.
   */
  setListener(listener: CompletionListener | undefined, options: { keepAlive?: boolean } = {}): void {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CompletionQueue');
    const operation = 'setListener';
    this.ensureOpen(operation);
    if (listener !== undefined && (typeof listener !== 'object' || typeof listener.onCompletions !== 'function' || typeof listener.onCompletionError !== 'function')) {
      throw argumentError(operation, 'listener', 'expected { onCompletions(): number, onCompletionError(error) }', 'ERR_INVALID_ARG_TYPE');
    }
    if (listener && this.#waiters.length > 0) throw argumentError(operation, 'listener', 'next() is waiting on this queue: a listener replaces next(), never joins it', 'ERR_INVALID_ARG_VALUE');
    this.#listener = listener;
    if (!listener) {
      this.#channelWatcher?.setInterest(false);
      return;
    }
    const watcher = this.#eventWatcher();
    watcher.setRef(options.keepAlive !== false);
    watcher.setInterest(true);
    const now = performance.now();
    beginTurn(now);
    this.#serveListener(now);
  }

  /** A sleeping listener keeps the process alive again (as a Node handle's ref()). */
  ref(): void {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CompletionQueue');
    this.#channelWatcher?.setRef(true);
  }

  /** A sleeping listener no longer keeps the process alive (as a Node handle's unref()). */
  unref(): void {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CompletionQueue');
    this.#channelWatcher?.setRef(false);
  }

  /**
   * Drains into the listener. Then busy-poll goes on draining until its time
   * slice is spent, adaptive polls again soon (#schedulePoll) while within
   * its spin budget, and otherwise the queue is armed and drained once more: a
   * completion after the arming raises an event. `now`: the clock read that
   * began this round, read again only after the listener took completions.
   */
  #serveListener(now: number): void {
    const listener = this.#listener!;
    try {
      let taken = 0;
      for (let count; (count = listener.onCompletions()) > 0; taken += count) {
        if (this.#listener !== listener) return;
        now = performance.now();
        if (this.#sliceSpent(now)) return this.#schedulePoll(false, now);
      }
      if (this.#mode === 'busy-poll') {
        while (!this.#sliceSpent((now = performance.now()))) {
          listener.onCompletions();
          if (this.#listener !== listener) return;
        }
        return this.#schedulePoll(false, now);
      }
      if (this.#armed || this.#lifetime.closed) return;
      if (this.#spinsOn(taken > 0, now)) return this.#schedulePoll(true, now);
      this.#armNotify();
      while (listener.onCompletions() > 0) if (this.#listener !== listener) return;
    } catch (error) {
      this.#listener = undefined;
      this.#channelWatcher?.setInterest(false);
      listener.onCompletionError(error);
    }
  }

  /** The next completion, on the event loop. Error statuses reject with WorkCompletionError. */
  next(): Promise<WorkCompletion> {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CompletionQueue');
    if (this.#lifetime.closed) throw new ResourceClosedError(this.kind, 'next');
    if (this.#listener) throw argumentError('next', 'queue', 'this queue hands its completions to a listener (setListener)', 'ERR_INVALID_ARG_VALUE');
    return new Promise<WorkCompletion>((resolve, reject) => {
      this.#waiters.push({ resolve, reject });
      if (this.#mode === 'busy-poll') {
        if (!this.#spinning) void this.#spin();
      } else if (this.#waiters.length === 1 && !this.#pollScheduled) {
        // Adaptive: a wait polls for the budget before it sleeps, as rsockets
        // spins at the start of each blocking wait, whoever took the last
        // completions (poll() in a drain-then-wait loop leaves no trace here).
        const now = performance.now();
        if (this.#mode === 'adaptive') this.#startSpin(now);
        // A chain of waits that each find a completion at once never returns
        // to the loop: its first wait of a turn starts the slice that bounds it.
        if (!inTurn) beginTurn(now);
        else if (this.#sliceSpent(now)) {
          // Past the slice, which the code before this wait spent (a post whose
          // system call ran rxe's work, say), what is ready goes a turn later.
          // On events a wait with nothing ready arms and sleeps at once: a sleep
          // hands the loop its turn too. Deferring it as well cost a turn, and
          // most often a stop and restart of the channel's watch, in one wait in
          // six to nine of an events ping-pong in the soft-RoCE guest
          // (docs/performance-notes.md, "A wait past the time slice").
          if (this.#mode === 'events') return this.#serve(now, true);
          return this.#schedulePoll(false, now);
        }
        this.#serve(now);
      }
    });
  }

  /**
   * Every completion, in order, on the event loop (as next() gives them). A
   * completion with an error status ends the iteration by throwing
   * WorkCompletionError; closing the queue ends it quietly.
   */
  async *[Symbol.asyncIterator](): AsyncGenerator<WorkCompletion> {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CompletionQueue');
    while (!this.#lifetime.closed) {
      try {
        yield await this.next();
      } catch (error) {
        if (error instanceof ResourceClosedError && this.#lifetime.closed) return;
        throw error;
      }
    }
  }

  /**
   * Adaptive and events modes: delivers what the queue holds to its waiters;
   * while some still wait, polls on (adaptive, within its spin budget) or
   * arms the CQ and lets the channel's watch call back. Synchronous, so a
   * wake-up costs no promise of its own. `now`: the clock read that began
   * this round, read again after each empty poll of the spin (in the
   * soft-RoCE guest a read cost 0.65-3.4 µs, an empty poll 1.5-2.1).
   *
   * The spin polls in a row, as busy-poll's does: the waiter's code is
   * parked on the wait, and other code queued in the thread waits behind
   * the spin until its budget or the slice ends. Past the slice, or while
   * another queue of the thread has a poll scheduled, it goes on a turn of
   * the loop later (#schedulePoll), so queues take turns and timers run.
   * With a microtask per poll, the receiving side of a 64 B stream read
   * 10-16 % fewer messages a second in the soft-RoCE guest (two sets'
   * medians, docs/performance-notes.md).
   *
   * `pastSlice` (a single wait begun past the time slice): a completion it
   * finds is held for that waiter and delivered a turn later, first thing.
   */
  #serve(now: number, pastSlice = false): void {
    try {
      this.#deliverHeld();
      let taken = 0;
      let learned = false;
      while (this.#waiters.length > 0) {
        const count = this.poll(this.#waiters.length < BATCH ? this.#waiters.length : BATCH);
        if (pastSlice && count > 0) {
          this.#held = this.completionAt(0);
          return this.#schedulePoll(false, now);
        }
        for (let i = 0; i < count; i++) this.#deliver(this.completionAt(i));
        taken += count;
        if (count > 0) continue;
        // Armed: the next completion raises an event. One that landed before the
        // arming raises none, hence one more poll after arming.
        if (this.#armed) break;
        // The wait these completions ended teaches the budget once, however often this loop comes here.
        const tookSome: boolean = taken > 0 && !learned;
        learned ||= tookSome;
        if (this.#spinsOn(tookSome, now)) {
          now = performance.now();
          if (this.#pollsAlone(now)) continue;
          this.#schedulePoll(false, now);
          break;
        }
        this.#armNotify();
      }
      if (taken > 0 && !learned && this.#waiters.length === 0) this.#spinsOn(true, now);
      if (this.#waiters.length > 0) this.#eventWatcher().setInterest(true);
      else this.#channelWatcher?.setInterest(false);
    } catch (error) {
      this.#failWaiters(error);
    }
  }

  /** The completion a wait past the slice took (#serve's `pastSlice`) goes to the first waiter, before any polled after it. */
  #deliverHeld(): void {
    const held = this.#held;
    if (held === undefined) return;
    this.#held = undefined;
    this.#deliver(held);
  }

  /** Every wait ends with `error`, and the channel is no longer watched for them. */
  #failWaiters(error: unknown): void {
    this.#held = undefined;
    this.#channelWatcher?.setInterest(false);
    for (const waiter of this.#waiters.splice(0)) waiter.reject(error);
  }

  /** The channel's watcher, or an error: a CQ without a channel raises no events to wait for. */
  #eventWatcher(): FdWatcher | ChannelWatch {
    const watcher = this.#watcher();
    if (!watcher) throw new RdmaError('ibv_get_cq_event', 22, 'this CQ has no completion channel; use mode busy-poll');
    return watcher;
  }

  /**
   * The channel is readable (events mode): take its event, then serve whoever
   * waits. With nobody left (a busy-poll spin served them), serving stops the
   * watch, which would otherwise keep the process alive.
   */
  #channelReadable(): void {
    // Many queues' wake-ups come in one turn. Past a slice of them the
    // event stays on the channel: libuv watches it level-triggered and calls
    // again next turn, after the timers; until then it costs a callback, not a read.
    const now = performance.now();
    beginWakeWindow(now);
    if (now - wakeWindowStart >= this.#timeSliceMs) return;
    try {
      this.#takeChannelEvent();
    } catch (error) {
      return this.#channelFailed(error);
    }
    this.#eventServed(now);
  }

  /** A shared channel took an event of this queue (see CompletionChannel). */
  #sharedEvent(): void {
    this.#eventTaken();
    this.#eventServed(performance.now());
  }

  /** After an event (taken at `now`): serve whoever waits, in this turn's time slice. */
  #eventServed(now: number): void {
    if (this.#lifetime.closed) return;
    beginTurn(now);
    // Many queues' wake-ups can come in one turn: past the slice, the rest wait for a later turn.
    if (this.#sliceSpent(now)) return this.#schedulePoll(false, now);
    if (this.#listener) this.#serveListener(now);
    else this.#serve(now);
  }

  /** The channel can deliver no more: the listener and every wait end with `error`. */
  #channelFailed(error: unknown): void {
    const listener = this.#listener;
    this.#listener = undefined;
    listener?.onCompletionError(error);
    this.#failWaiters(error);
  }

  /**
   * Whether to poll again soon rather than sleep (adaptive mode, within the
   * spin budget). `tookSome`: completions were just taken, so the wait they
   * ended teaches the budget, and the spin starts again from `now`.
   */
  #spinsOn(tookSome: boolean, now: number): boolean {
    if (this.#mode !== 'adaptive') return false;
    if (tookSome) {
      const waited = now - this.#spinFrom;
      if (waited < Infinity) {
        if (this.#sleptSinceSpin) this.#spinBudget.slept(waited);
        else this.#spinBudget.caught(waited);
      }
      this.#startSpin(now);
    }
    return now < this.#spinUntil;
  }

  /** A spin begins at `now`: a wait's, or the one after completions. */
  #startSpin(now: number): void {
    this.#spinFrom = now;
    this.#sleptSinceSpin = false;
    this.#spinUntil = now + this.#spinBudget.ms;
  }

  /** Whether this thread's queues have served completions for a whole time slice since the event loop last had a turn. */
  #sliceSpent(now: number): boolean {
    return now - turnStart >= this.#timeSliceMs;
  }

  /** Whether this queue, with no poll of its own scheduled, may poll on now: no other queue of the thread has one scheduled and the slice lasts. */
  #pollsAlone(now: number): boolean {
    return scheduledPolls === 0 && !this.#sliceSpent(now);
  }

  /**
   * Polls again in the loop's check phase (the next turn's, when called
   * there), after timers and I/O. `soon` (adaptive mode's spin after a
   * listener took completions): in a microtask instead, so the code that
   * took them runs first (its microtasks are queued before this one), while
   * this queue is the thread's only one polling and the time slice lasts;
   * else next turn, so many queues take turns. A turn of the loop took
   * 40-90 µs in the soft-RoCE guest, more than the wait it was spinning for
   * (docs/performance-notes.md).
   */
  #schedulePoll(soon: boolean, now: number): void {
    if (this.#pollScheduled) return;
    const inMicrotask = soon && this.#pollsAlone(now);
    this.#pollScheduled = true;
    scheduledPolls++;
    // queueMicrotask, though Node wraps each callback in an async scope (1.7-7 µs
    // in the soft-RoCE guest): as reactions to a settled promise (0.5-0.7 µs), a
    // Node 26 process aborted once on its async id stack (docs/performance-notes.md).
    if (inMicrotask) queueMicrotask(this.#scheduledPoll);
    else setImmediate(this.#scheduledPoll);
  }

  #pollAgain(): void {
    this.#pollScheduled = false;
    scheduledPolls--;
    if (this.#lifetime.closed) return;
    const now = performance.now();
    beginTurn(now);
    // Queues scheduled in one check phase take turns: past the slice, the rest go round again next turn.
    if (this.#sliceSpent(now)) return this.#schedulePoll(false, now);
    if (this.#listener) this.#serveListener(now);
    else if (this.#mode === 'busy-poll') {
      if (!this.#spinning && this.#waiters.length > 0) void this.#spin();
    } else if (this.#waiters.length > 0) this.#serve(now);
  }

  /**
   * Busy-poll mode: spins on poll() until none wait (or the mode changes),
   * handing the loop a turn whenever a time slice is spent.
   */
  async #spin(): Promise<void> {
    this.#spinning = true;
    try {
      this.#deliverHeld();
      while (this.#waiters.length > 0 && !this.#lifetime.closed) {
        if (this.#mode !== 'busy-poll') return this.#serve(performance.now());
        if (this.#sliceSpent(performance.now())) {
          await new Promise<void>((resolve) => setImmediate(resolve));
          beginTurn(performance.now());
          continue;
        }
        const count = this.poll(this.#waiters.length < BATCH ? this.#waiters.length : BATCH);
        for (let i = 0; i < count; i++) this.#deliver(this.completionAt(i));
      }
    } catch (error) {
      this.#failWaiters(error);
    } finally {
      this.#spinning = false;
      // An events-mode wait before the switch may have left the channel watched.
      if (this.#waiters.length === 0) this.#channelWatcher?.setInterest(false);
    }
  }

  #deliver(completion: WorkCompletion): void {
    const waiter = this.#waiters.shift();
    if (!waiter) return;
    if (completion.status === 'SUCCESS') waiter.resolve(completion);
    else waiter.reject(new WorkCompletionError(completion));
  }

  #checked(completion: WorkCompletion): WorkCompletion {
    if (completion.status !== 'SUCCESS') throw new WorkCompletionError(completion);
    return completion;
  }

  /** The completion channel's watcher (its fd set non-blocking), made on first need; undefined without a channel. */
  #watcher(): FdWatcher | ChannelWatch | undefined {
    if (this.#channelWatcher) return this.#channelWatcher;
    const channel = (this.#channel ??= readPointer(this.handle, CQ_CHANNEL));
    if (channel === 0n) return undefined;
    const fd = koffi.decode(channel, CHANNEL_FD, 'int') as number;
    setNonBlocking(fd);
    const slots = Buffer.alloc(16);
    this.#eventCqSlot = slots.subarray(0, 8);
    this.#eventContextSlot = slots.subarray(8);
    this.#channelWatcher = new FdWatcher(fd, () => this.#channelReadable());
    return this.#channelWatcher;
  }

  #armNotify(): void {
    const ret = this.#ops.reqNotifyCq(this.handle, 0);
    if (ret !== 0) throw new RdmaError('ibv_req_notify_cq', ret);
    this.#armed = true;
    this.#sharedWatch?.armed();
    this.#sleptSinceSpin = true;
  }

  /**
   * Takes the channel's pending event, if any (the fd is non-blocking), and
   * acks events in batches. The channel is this CQ's alone and each arming
   * yields at most one event, and the fd stays readable while one is left:
   * one read per wake-up is enough, where reading on to EAGAIN cost a second
   * system call on every wake-up.
   */
  #takeChannelEvent(): void {
    if (this.#sharedWatch) return this.#sharedWatch.takeEvents(); // this queue's event comes back through #sharedEvent
    if (libibverbs.ibv_get_cq_event(this.#channel!, this.#eventCqSlot!, this.#eventContextSlot!) !== 0) {
      const errno = koffi.errno();
      if (errno === EAGAIN) return; // nothing pending: another reader took it
      throw new RdmaError('ibv_get_cq_event', errno || 5, 'the completion channel failed (device removed?)');
    }
    this.#eventTaken();
  }

  /** An event of this queue was taken: the queue is no longer armed, and the event is acked in a batch. */
  #eventTaken(): void {
    this.#armed = false;
    if (++this.#unackedEvents >= ACK_BATCH) this.#ackEvents();
  }

  #ackEvents(): void {
    if (this.#unackedEvents > 0) libibverbs.ibv_ack_cq_events(this.handle, this.#unackedEvents);
    this.#unackedEvents = 0;
  }

  /** The shared completion channel this queue is on (createCq({ channel })), if any. */
  get sharedChannel(): CompletionChannel | undefined {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CompletionQueue');
    return this.#sharedChannelResource;
  }

  /** @internal The ibv_context (device) this queue is on, read once. */
  get contextHandle(): Pointer {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CompletionQueue');
    this.ensureOpen('contextHandle');
    return (this.#context ??= readPointer(this.handle, CQ_CONTEXT));
  }

  /** Whether this queue was made by createCq (and is destroyed by its close). */
  get owned(): boolean {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CompletionQueue');
    return this.#ownChannel !== undefined;
  }

  protected release(): void {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CompletionQueue');
    const handle = handleToRelease(this, 'CompletionQueue');
    this.#listener = undefined;
    this.#pollCall?.release();
    // ibv_destroy_cq waits for every event to be acked.
    this.#ackEvents();
    this.#channelWatcher?.close();
    this.#held = undefined;
    if (this.#waiters.length > 0) {
      const error = new ResourceClosedError(this.kind, 'next');
      for (const waiter of this.#waiters.splice(0)) waiter.reject(error);
    }
    if (this.#ownChannel === undefined) return;
    // Its queue pairs were closed first (they are its users), so the CQ is free to go.
    checkVerbs('ibv_destroy_cq', libibverbs.ibv_destroy_cq(handle));
    if (this.#ownChannel !== 0n) checkVerbs('ibv_destroy_comp_channel', libibverbs.ibv_destroy_comp_channel(this.#ownChannel));
  }
}

/** A spin budget option's value, in µs, or its argument error. */
function checkedSpinUs(name: string, us: number): number {
  if (!Number.isInteger(us) || us < 0 || us > MAX_SPIN_BUDGET_US) throw argumentError(name, name, `expected an integer from 0 to ${MAX_SPIN_BUDGET_US}`, numberIssue(us));
  return us;
}
