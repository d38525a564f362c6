// The channels every socket and server of the thread share: one
// connection-manager event channel, and one completion channel per device
// (one fd, one libuv handle each, however many connections), made on first
// use and closed when the last user leaves. They keep the process alive only
// while a user wants that (a listening server, a ref'd socket), as node:net's
// handles do.
import { EventChannel } from '../api/cm/event-channel.js';
import type { CompletionChannel } from '../api/work/completion-channel.js';
import type { DeviceContext } from '../api/verbs/device-context.js';

let channel: EventChannel | undefined;
let users = 0;
let keepingAlive = 0;

/** A user's hold on the shared channel. */
export class ChannelHold {
  readonly channel: EventChannel;
  #released = false;
  #keepsAlive = true;

  constructor() {
    if (!channel || channel.closed) {
      channel = new EventChannel();
      users = 0;
      keepingAlive = 0;
    }
    this.channel = channel;
    users++;
    keepingAlive++;
    channel.setRef(true);
  }

  /** Whether this user keeps the process alive while it waits for events. */
  setKeepAlive(keepAlive: boolean): void {
    if (this.#released || keepAlive === this.#keepsAlive) return;
    this.#keepsAlive = keepAlive;
    keepingAlive += keepAlive ? 1 : -1;
    this.channel.setRef(keepingAlive > 0);
  }

  /** Leaves; the last user closes the channel (after its ids are closed). */
  release(): void {
    if (this.#released) return;
    this.#released = true;
    if (this.#keepsAlive) keepingAlive--;
    if (this.channel !== channel) return;
    if (--users === 0) {
      channel = undefined;
      this.channel.close();
    } else {
      this.channel.setRef(keepingAlive > 0);
    }
  }
}

/** The completion channel of each device in use, by its ibv_context, and how many queues hold it. */
const completionChannels = new Map<bigint, { channel: CompletionChannel; users: number }>();

/**
 * A connection's hold on its device's shared completion channel: its
 * completion queue joins the channel, and the last to leave closes it (after
 * its queue: a channel's queues close first).
 */
export class CompletionChannelHold {
  readonly channel: CompletionChannel;
  readonly #context: bigint;
  #released = false;

  constructor(device: DeviceContext) {
    this.#context = device.unsafeHandle;
    let shared = completionChannels.get(this.#context);
    if (!shared || shared.channel.closed) {
      shared = { channel: device.createCompletionChannel(), users: 0 };
      completionChannels.set(this.#context, shared);
    }
    shared.users++;
    this.channel = shared.channel;
  }

  release(): void {
    if (this.#released) return;
    this.#released = true;
    const shared = completionChannels.get(this.#context);
    if (!shared || shared.channel !== this.channel) return;
    if (--shared.users === 0) {
      completionChannels.delete(this.#context);
      this.channel.close();
    }
  }
}
