// A completion queue (struct ibv_cq) and its completion channel: borrowed from
// librdmacm for one QP, or made on a device (DeviceContext.createCq) to be
// shared by several QPs. Three ways to take completions:
// - poll(): non-blocking, batched, nothing allocated (read them with the *At accessors);
// - waitOne(): blocks the thread, as rdma_get_send_comp/rdma_get_recv_comp do;
// - next(): a Promise, on the event loop (req_notify_cq, then get_cq_event when
//   libuv sees the channel readable; acks batched), or busy-polling in mode 'busy-poll'.
import { Buffer } from 'node:buffer';
import koffi from 'koffi';
import { libibverbs } from '../ffi/libibverbs.js';
import { RdmaError, checkPointer, checkVerbs, pollFailed } from '../ffi/errors.js';
import { contextOps, repeatedVerbCall, type ContextOps } from '../ffi/inline-verbs.js';
import type { FixedCall } from '../ffi/bound-call.js';
import { readPointer, toAddress, type Pointer } from '../ffi/library.js';
import { ibv_comp_channel, ibv_cq } from '../structs/verbs-resources.js';
import { Resource } from './resource.js';
import { assertInternal, type Internal } from './internal.js';
import { contextOf } from './work-request-ids.js';
import { ResourceClosedError } from './errors.js';
import { argumentError } from './validate.js';
import { FdWatcher, blockUntilReadable, setNonBlocking } from './fd-watcher.js';
import { nativeScratch } from './native-memory.js';
import {
  WC_SIZE, WorkCompletionError, decodeWorkCompletion, readByteLen, readImmData, readOpcode, readStatus, readWrId, type WorkCompletion,
} from './work-completion.js';

/** How next() waits: 'events' sleeps on the completion channel; 'busy-poll' spins, yielding to the loop between rounds. */
export type CompletionMode = 'events' | 'busy-poll';

const BATCH = 16;
const ACK_BATCH = 16;
const BUSY_SPINS = 2000;
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

interface Waiter {
  resolve(completion: WorkCompletion): void;
  reject(error: unknown): void;
}

export class CompletionQueue extends Resource implements AsyncIterable<WorkCompletion> {
  /**
   * How next() waits; change it at any time.
   * @defaultValue 'events'
   */
  mode: CompletionMode = 'events';
  readonly #ops: ContextOps;
  /** cq->channel, read when first needed (0n: the queue has none). */
  #channel: Pointer | undefined;
  /** cq->context, read when first needed. */
  #context: Pointer | undefined;
  /** The channel's fd watcher, made non-blocking on first use: busy-polling code never needs it. */
  #channelWatcher: FdWatcher | undefined;
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
  #spinning = false;
  /** Notification requested and its event not yet taken: the next completion raises one. */
  #armed = false;
  #listener: CompletionListener | undefined;
  /** For a queue made here: its channel (0n without one), destroyed after it. Undefined when borrowed. */
  readonly #ownChannel: Pointer | undefined;

  private constructor(handle: Pointer, owner: Resource, ops: ContextOps, ownChannel?: Pointer) {
    super('completion queue', handle, owner);
    this.#ops = ops;
    this.#ownChannel = ownChannel;
    if (ownChannel !== undefined) this.#channel = ownChannel;
  }

  /**
   * @internal ibv_create_cq (with a new completion channel unless `withChannel` is false)
   * on an open device context; see DeviceContext.createCq.
   */
  static create(key: Internal, device: Resource, context: Pointer, entries: number, withChannel: boolean, compVector: number): CompletionQueue {
    assertInternal(key, 'CompletionQueue.create', 'use device.createCq()');
    const channel = withChannel ? checkPointer('ibv_create_comp_channel', libibverbs.ibv_create_comp_channel(context)) : 0n;
    let cq: Pointer;
    try {
      cq = checkPointer('ibv_create_cq', libibverbs.ibv_create_cq(context, entries, null, channel || null, compVector));
    } catch (error) {
      if (channel !== 0n) libibverbs.ibv_destroy_comp_channel(channel);
      throw error;
    }
    const queue = new CompletionQueue(cq, device, contextOps(context), channel);
    queue.#context = context;
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
    this.ensureOpen('poll');
    const pollCall = this.#pollCall ?? this.#preparePoll();
    const entries = max > BATCH ? BATCH : max;
    if (entries !== this.#pollCount) {
      pollCall.setIntArgument(1, entries);
      this.#pollCount = entries;
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

  /** Status (0 = SUCCESS) of the i-th completion of the last poll(). */
  statusAt(index: number): number {
    return readStatus(this.#view, index * WC_SIZE);
  }
  /**
   * wr_id of the i-th completion of the last poll(). A one-shot post's context
   * is kept until its completion is decoded (completionAt(), next(), waitOne())
   * or taken with contextAt(): a loop that reads only wr_ids should post without one.
   */
  wrIdAt(index: number): number {
    return readWrId(this.#view, index * WC_SIZE);
  }
  /** The context of the i-th completion of the last poll(); a one-shot post's is forgotten once taken. */
  contextAt(index: number): unknown {
    return contextOf(readWrId(this.#view, index * WC_SIZE));
  }
  /** byte_len of the i-th completion of the last poll(). */
  byteLenAt(index: number): number {
    return readByteLen(this.#view, index * WC_SIZE);
  }

  /** Opcode (a WcOpcode value: RECV_RDMA_WITH_IMM is 129) of the i-th completion of the last poll(). */
  opcodeAt(index: number): number {
    return readOpcode(this.#view, index * WC_SIZE);
  }
  /** Immediate data (host order) of the i-th completion of the last poll(); -1 when it carries none. */
  immDataAt(index: number): number {
    return readImmData(this.#view, index * WC_SIZE);
  }

  /** The i-th completion of the last poll(), decoded (with its context). */
  completionAt(index: number): WorkCompletion {
    const base = index * WC_SIZE;
    return decodeWorkCompletion(this.#view, base, contextOf(readWrId(this.#view, base)));
  }

  /**
   * Blocks the thread until one completion arrives, as rdma_get_*_comp do.
   * A completion with an error status throws WorkCompletionError.
   */
  waitOne(): WorkCompletion {
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
      if (this.#waiters.length > 0 && this.mode === 'events' && !this.#armed && !this.closed) this.#serve();
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
    const operation = 'setListener';
    this.ensureOpen(operation);
    if (listener !== undefined && (typeof listener !== 'object' || typeof listener.onCompletions !== 'function' || typeof listener.onCompletionError !== 'function')) {
      throw argumentError(operation, 'listener', 'expected { onCompletions(): number, onCompletionError(error) }');
    }
    if (listener && this.#waiters.length > 0) throw argumentError(operation, 'listener', 'next() is waiting on this queue: a listener replaces next(), never joins it');
    this.#listener = listener;
    if (!listener) {
      this.#channelWatcher?.setInterest(false);
      return;
    }
    const watcher = this.#eventWatcher();
    watcher.setRef(options.keepAlive !== false);
    watcher.setInterest(true);
    this.#serveListener();
  }

  /** A sleeping listener keeps the process alive again (as a Node handle's ref()). */
  ref(): void {
    this.#channelWatcher?.setRef(true);
  }

  /** A sleeping listener no longer keeps the process alive (as a Node handle's unref()). */
  unref(): void {
    this.#channelWatcher?.setRef(false);
  }

  /** Drains into the listener, arms, drains again: a completion after the arming raises an event. */
  #serveListener(): void {
    const listener = this.#listener!;
    try {
      while (listener.onCompletions() > 0) if (this.#listener !== listener) return;
      if (this.#armed || this.closed) return;
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
    this.ensureOpen('next');
    if (this.#listener) throw argumentError('next', 'queue', 'this queue hands its completions to a listener (setListener)');
    return new Promise<WorkCompletion>((resolve, reject) => {
      this.#waiters.push({ resolve, reject });
      if (this.mode === 'busy-poll') {
        if (!this.#spinning) void this.#spin();
      } else if (this.#waiters.length === 1) {
        this.#serve();
      }
    });
  }

  /**
   * Every completion, in order, on the event loop (as next() gives them). A
   * completion with an error status ends the iteration by throwing
   * WorkCompletionError; closing the queue ends it quietly.
   */
  async *[Symbol.asyncIterator](): AsyncGenerator<WorkCompletion> {
    while (!this.closed) {
      try {
        yield await this.next();
      } catch (error) {
        if (error instanceof ResourceClosedError && this.closed) return;
        throw error;
      }
    }
  }

  /**
   * Events mode: delivers what the queue holds to its waiters; while some still
   * wait, arms the CQ and lets the channel's watch call back. Synchronous, so a
   * wake-up costs no promise of its own.
   */
  #serve(): void {
    try {
      while (this.#waiters.length > 0) {
        const count = this.poll(this.#waiters.length < BATCH ? this.#waiters.length : BATCH);
        for (let i = 0; i < count; i++) this.#deliver(this.completionAt(i));
        if (count > 0) continue;
        // Armed: the next completion raises an event. One that landed before the
        // arming raises none, hence one more poll after arming.
        if (this.#armed) break;
        this.#armNotify();
      }
      if (this.#waiters.length > 0) this.#eventWatcher().setInterest(true);
      else this.#channelWatcher?.setInterest(false);
    } catch (error) {
      this.#failWaiters(error);
    }
  }

  /** Every wait ends with `error`, and the channel is no longer watched for them. */
  #failWaiters(error: unknown): void {
    this.#channelWatcher?.setInterest(false);
    for (const waiter of this.#waiters.splice(0)) waiter.reject(error);
  }

  /** The channel's watcher, or an error: a CQ without a channel raises no events to wait for. */
  #eventWatcher(): FdWatcher {
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
    try {
      this.#takeChannelEvent();
    } catch (error) {
      const listener = this.#listener;
      this.#listener = undefined;
      listener?.onCompletionError(error);
      return this.#failWaiters(error);
    }
    if (this.closed) return;
    if (this.#listener) this.#serveListener();
    else this.#serve();
  }

  /** Busy-poll mode: spins on poll(), yielding to the loop now and then, until none wait (or the mode changes). */
  async #spin(): Promise<void> {
    this.#spinning = true;
    try {
      let spins = 0;
      while (this.#waiters.length > 0 && !this.closed) {
        if (this.mode !== 'busy-poll') return this.#serve();
        const count = this.poll(this.#waiters.length < BATCH ? this.#waiters.length : BATCH);
        for (let i = 0; i < count; i++) this.#deliver(this.completionAt(i));
        if (count === 0 && ++spins % BUSY_SPINS === 0) await new Promise<void>((resolve) => setImmediate(resolve));
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
  #watcher(): FdWatcher | undefined {
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
  }

  /**
   * Takes the channel's pending event, if any (the fd is non-blocking), and
   * acks events in batches. The channel is this CQ's alone and each arming
   * yields at most one event, and the fd stays readable while one is left:
   * one read per wake-up is enough, where reading on to EAGAIN cost a second
   * system call on every wake-up.
   */
  #takeChannelEvent(): void {
    if (libibverbs.ibv_get_cq_event(this.#channel!, this.#eventCqSlot!, this.#eventContextSlot!) !== 0) {
      const errno = koffi.errno();
      if (errno === EAGAIN) return; // nothing pending: another reader took it
      throw new RdmaError('ibv_get_cq_event', errno || 5, 'the completion channel failed (device removed?)');
    }
    this.#armed = false;
    if (++this.#unackedEvents >= ACK_BATCH) this.#ackEvents();
  }

  #ackEvents(): void {
    if (this.#unackedEvents > 0) libibverbs.ibv_ack_cq_events(this.handle, this.#unackedEvents);
    this.#unackedEvents = 0;
  }

  /** @internal The ibv_context (device) this queue is on, read once. */
  get contextHandle(): Pointer {
    this.ensureOpen('contextHandle');
    return (this.#context ??= readPointer(this.handle, CQ_CONTEXT));
  }

  /** Whether this queue was made by createCq (and is destroyed by its close). */
  get owned(): boolean {
    return this.#ownChannel !== undefined;
  }

  protected release(): void {
    this.#listener = undefined;
    this.#pollCall?.release();
    // ibv_destroy_cq waits for every event to be acked.
    this.#ackEvents();
    this.#channelWatcher?.close();
    if (this.#waiters.length > 0) {
      const error = new ResourceClosedError(this.kind, 'next');
      for (const waiter of this.#waiters.splice(0)) waiter.reject(error);
    }
    if (this.#ownChannel === undefined) return;
    // Its queue pairs were closed first (they are its users), so the CQ is free to go.
    checkVerbs('ibv_destroy_cq', libibverbs.ibv_destroy_cq(this.handle));
    if (this.#ownChannel !== 0n) checkVerbs('ibv_destroy_comp_channel', libibverbs.ibv_destroy_comp_channel(this.#ownChannel));
  }
}
