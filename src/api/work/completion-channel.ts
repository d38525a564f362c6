// A completion channel (struct ibv_comp_channel) that many completion queues
// share: one fd and one libuv watch for all of them, each event handed to the
// queue it names. A server with thousands of connections then watches one fd,
// not thousands. Made by DeviceContext.createCompletionChannel(); queues join
// it with createCq({ channel }).
import { Buffer } from 'node:buffer';
import koffi from 'koffi';
import { libibverbs } from '../../ffi/libibverbs.js';
import { RdmaError, checkPointer, checkVerbs } from '../../ffi/errors.js';
import type { Pointer } from '../../ffi/library.js';
import { ibv_comp_channel } from '../../structs/verbs-resources.js';
import { Resource, handleToRelease, lifetimeOf, type Lifetime } from '../core/resource.js';
import { InvalidThisError, asObject } from '../core/errors.js';
import { assertInternal, type Internal } from '../core/internal.js';
import { FdWatcher, setNonBlocking } from '../core/fd-watcher.js';

const EAGAIN = 11;
const CHANNEL_FD = koffi.offsetof(ibv_comp_channel, 'fd');
/** Events taken per wake-up: the fd stays readable, so more wake the loop again after other work. */
const EVENTS_PER_WAKE = 64;

/** What a completion queue gives the channel it joins. */
export interface ChannelMember {
  /** An event of this queue was taken off the channel (it is to be acked by the queue). */
  onEvent(): void;
  /** The channel failed: no more events come. */
  onChannelError(error: unknown): void;
}

/** A queue's place on a channel: the watch it wants, as an FdWatcher of its own would give it. */
export interface ChannelWatch {
  readonly fd: number;
  /** The queue was armed (ibv_req_notify_cq): it may raise one event. */
  armed(): void;
  setInterest(interested: boolean): void;
  setRef(ref: boolean): void;
  /** Takes the events waiting on the channel, handing each to its queue (for a blocking wait). */
  takeEvents(): void;
  close(): void;
}

/** @internal Joins a completion queue (by its ibv_cq address) to `channel`. */
export let joinChannel: (channel: CompletionChannel, cq: bigint, member: ChannelMember) => ChannelWatch;
/** @internal The ibv_context `channel` was made on. */
export let contextOfChannel: (channel: CompletionChannel) => Pointer;

export class CompletionChannel extends Resource {
  /** The brand every member checks first (`#brand in asObject(this)`): only the instances this package made have it. */
  readonly #brand = true;
  /** The channel's fd (non-blocking): readable while an event waits. */
  readonly fd: number;
  readonly #members = new Map<bigint, { member: ChannelMember; armed: boolean }>();
  /**
   * Members armed since their last event was taken. Each arming raises at most
   * one event, so no more than this many can wait on the channel.
   */
  #armedMembers = 0;
  /** Members that want events now, and of those how many keep the process alive. */
  #interested = 0;
  #interestedRef = 0;
  #watcher: FdWatcher | undefined;
  /** ibv_get_cq_event's out-parameters: the CQ, its context. */
  readonly #slots = Buffer.alloc(16);
  readonly #cqSlot = this.#slots.subarray(0, 8);
  readonly #contextSlot = this.#slots.subarray(8);

  readonly #context: Pointer;
  /** Whether the channel is closed, as each wake-up reads it (see Lifetime). */
  readonly #lifetime: Lifetime;

  private constructor(handle: Pointer, device: Resource, context: Pointer) {
    super('completion channel', handle, device);
    this.#lifetime = lifetimeOf(this);
    this.#context = context;
    this.fd = koffi.decode(handle, CHANNEL_FD, 'int') as number;
    setNonBlocking(this.fd);
  }

  /** @internal ibv_create_comp_channel on an open device context; see DeviceContext.createCompletionChannel. */
  static create(key: Internal, device: Resource, context: Pointer): CompletionChannel {
    assertInternal(key, 'CompletionChannel.create', 'use device.createCompletionChannel()');
    return new CompletionChannel(checkPointer('ibv_create_comp_channel', libibverbs.ibv_create_comp_channel(context)), device, context);
  }

  /** How many completion queues use this channel. */
  get queues(): number {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CompletionChannel');
    return this.#members.size;
  }

  static {
    joinChannel = (channel, cq, member) => channel.#join(cq, member);
    contextOfChannel = (channel) => channel.#context;
  }

  #join(cq: bigint, member: ChannelMember): ChannelWatch {
    this.ensureOpen('createCq');
    const entry = { member, armed: false };
    this.#members.set(cq, entry);
    let interested = false;
    let ref = true;
    const channel = this;
    return {
      fd: this.fd,
      armed(): void {
        if (entry.armed) return;
        entry.armed = true;
        channel.#armedMembers++;
      },
      setInterest(on: boolean): void {
        if (on === interested || channel.#lifetime.closed) return;
        interested = on;
        channel.#interested += on ? 1 : -1;
        if (ref) channel.#interestedRef += on ? 1 : -1;
        channel.#updateWatch();
      },
      setRef(on: boolean): void {
        if (on === ref || channel.#lifetime.closed) return;
        ref = on;
        if (interested) channel.#interestedRef += on ? 1 : -1;
        channel.#updateWatch();
      },
      takeEvents: () => this.#takeEvents(),
      close(): void {
        this.setInterest(false);
        // The kernel drops a destroyed queue's pending event.
        if (entry.armed) channel.#armedMembers--;
        entry.armed = false;
        channel.#members.delete(cq);
      },
    };
  }

  /** Watches the fd while any queue wants events; keeps the process alive while any of those does. */
  #updateWatch(): void {
    if (this.#interested === 0) return this.#watcher?.setInterest(false);
    this.#watcher ??= new FdWatcher(this.fd, () => this.#takeEvents());
    this.#watcher.setRef(this.#interestedRef > 0);
    this.#watcher.setInterest(true);
  }

  /**
   * Takes up to EVENTS_PER_WAKE events, each handed to the queue it names.
   * It stops early once no member is armed: none can have an event waiting,
   * and the read that would find the channel empty is a system call.
   */
  #takeEvents(): void {
    for (let taken = 0; taken < EVENTS_PER_WAKE && !this.#lifetime.closed; taken++) {
      if (taken > 0 && this.#armedMembers === 0) return;
      if (libibverbs.ibv_get_cq_event(this.handle, this.#cqSlot, this.#contextSlot) !== 0) {
        const errno = koffi.errno();
        if (errno === EAGAIN) return;
        const error = new RdmaError('ibv_get_cq_event', errno || 5, 'the completion channel failed (device removed?)');
        this.#watcher?.setInterest(false);
        for (const { member } of [...this.#members.values()]) member.onChannelError(error);
        return;
      }
      // A queue leaves only as it is destroyed, and the kernel drops a destroyed
      // queue's pending events: an unknown address is never acked (it may be freed).
      const entry = this.#members.get(this.#cqSlot.readBigUInt64LE(0));
      if (!entry) continue;
      if (entry.armed) {
        entry.armed = false;
        this.#armedMembers--;
      }
      entry.member.onEvent();
    }
  }

  protected release(): void {
    if (!(#brand in asObject(this))) throw new InvalidThisError('CompletionChannel');
    const handle = handleToRelease(this, 'CompletionChannel');
    // Its queues were closed first (they are its users): no member is left.
    this.#watcher?.close();
    this.#watcher = undefined;
    checkVerbs('ibv_destroy_comp_channel', libibverbs.ibv_destroy_comp_channel(handle));
  }
}
