// Waits for a file descriptor to become readable on Node's event loop, through
// libuv (koffi.node.poll): no thread is parked in a blocking call, and a
// watcher with nobody waiting does not keep the process alive. Two ways to use
// one: readable() promises, or a listen() callback that stays installed.
import koffi from 'koffi';
import type { node as koffiNode } from 'koffi';
import { libc, F_GETFL, F_SETFL, O_NONBLOCK, POLLIN } from '../ffi/libc.js';
import { RdmaError } from '../ffi/errors.js';

/** Sets O_NONBLOCK on `fd` so reads report EAGAIN instead of blocking. */
export function setNonBlocking(fd: number): void {
  const flags = libc.fcntl(fd, F_GETFL, 0);
  if (flags < 0 || libc.fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) throw new RdmaError('fcntl', koffi.errno());
}

/** Blocks the thread until `fd` is readable or `timeoutMs` passes (-1: forever). For the synchronous API only. */
export function blockUntilReadable(fd: number, timeoutMs: number): boolean {
  const pollfd = Buffer.alloc(8);
  pollfd.writeInt32LE(fd, 0);
  pollfd.writeInt16LE(POLLIN, 4);
  for (;;) {
    const ready = libc.poll(pollfd, 1, timeoutMs);
    if (ready >= 0) return ready > 0;
    if (koffi.errno() !== 4 /* EINTR */) throw new RdmaError('poll', koffi.errno());
  }
}

export class FdWatcher {
  /** Watchers created and not yet closed (a leak check for tests). */
  static open = 0;
  #handle: koffiNode.PollHandle | undefined;
  #waiters: (() => void)[] = [];
  #closed = false;
  #onReadable: (() => void) | undefined;
  /** Whether the handle runs #onReadable (listen() use). */
  #listening = false;
  /** Interest was lost this turn: stop listening at its end unless it returns. */
  #stopDue = false;

  constructor(readonly fd: number) {
    FdWatcher.open++;
  }

  /** Resolves when the fd is readable (or the watcher closes). */
  readable(): Promise<void> {
    return new Promise((resolve) => {
      if (this.#closed) return resolve();
      if (this.#onReadable) throw new Error('FdWatcher.readable: this watcher is in listen() use');
      this.#waiters.push(resolve);
      if (!this.#handle) {
        this.#handle = koffi.node.poll(this.fd, { readable: true }, () => this.#wake());
      } else if (this.#waiters.length === 1) {
        this.#handle.start({ readable: true }, () => this.#wake());
      }
    });
  }

  /**
   * Installs `onReadable`, called every time the fd is readable while
   * setInterest(true) holds. Level-triggered: it must consume what made the fd
   * readable, or it runs again at once. Not to be mixed with readable().
   */
  listen(onReadable: () => void): void {
    if (this.#closed) return;
    if (this.#handle || this.#onReadable) throw new Error('FdWatcher.listen: this watcher is already in use');
    this.#onReadable = onReadable;
  }

  /**
   * Whether the listen() callback is wanted. While it is, libuv watches the fd
   * and the process stays alive. Losing interest stops the watch at the end of
   * this turn of the event loop, unless interest returns first: a wait that
   * follows its wake-up at once then costs no stop and restart of libuv's handle
   * (an epoll_ctl pair each).
   */
  setInterest(interested: boolean): void {
    if (interested) {
      this.#stopDue = false;
      if (this.#listening || this.#closed || !this.#onReadable) return;
      this.#listening = true;
      if (this.#handle) this.#handle.start({ readable: true }, this.#onReadable);
      else this.#handle = koffi.node.poll(this.fd, { readable: true }, this.#onReadable);
    } else if (this.#listening && !this.#stopDue) {
      this.#stopDue = true;
      setImmediate(this.#stopIfDue);
    }
  }

  readonly #stopIfDue = (): void => {
    if (!this.#stopDue) return;
    this.#stopDue = false;
    this.#listening = false;
    this.#handle?.stop();
  };

  /** Stops watching and releases the current waiters (the fd may not be readable): nobody needs the fd now. */
  idle(): void {
    if (this.#waiters.length > 0) this.#wake();
  }

  #wake(): void {
    this.#handle?.stop();
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const wake of waiters) wake();
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    FdWatcher.open--;
    this.#handle?.close();
    this.#handle = undefined;
    this.#listening = false;
    this.#wake();
  }
}
