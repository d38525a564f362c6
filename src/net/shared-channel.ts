// One connection-manager event channel for every socket and server of the
// process (one fd, one libuv handle), made on first use and closed when the
// last user leaves. It keeps the process alive only while a user wants that
// (a listening server, a ref'd socket), as node:net's handles do.
import { EventChannel } from '../api/event-channel.js';

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
