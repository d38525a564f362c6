// Calls back when a file descriptor is readable, on Node's event loop through
// libuv (a uv_poll_t, src/ffi/poll-handle.ts): no thread is parked in a
// blocking call, and a watcher nobody is interested in does not keep the
// process alive.
import { Buffer } from 'node:buffer';
import process from 'node:process';
import koffi from 'koffi';
import { libc, F_GETFL, F_SETFL, O_NONBLOCK, POLLIN } from '../../ffi/libc.js';
import { RdmaError } from '../../ffi/errors.js';
import { nodeDrainsAfterCallbacks } from '../../ffi/main-loop.js';
import { openPollHandle, type PollHandle } from '../../ffi/poll-handle.js';
import { atTurnEnd } from './turn-end.js';

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

/** This thread's watchers whose libuv handle is started (they run onReadable). */
const started = new Set<FdWatcher>();
let exitHookInstalled = false;

/**
 * koffi (3.3.4) aborts the whole process when a poll callback comes while a
 * worker thread is being torn down, which process.exit() in a worker does with
 * its event loop still running. So every watch of the thread stops on 'exit'.
 * (worker.terminate() runs no JavaScript first: see the README.)
 */
function stopWatchesOnExit(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const watcher of started) watcher.close();
  });
}

/** Watchers created and not yet closed. */
let openWatchers = 0;

export class FdWatcher {
  /** Watchers created and not yet closed (a leak check for tests). */
  static get open(): number {
    return openWatchers;
  }

  /** This thread's watchers now watching (each keeps the process alive). */
  static get watching(): number {
    return started.size;
  }
  #handle: PollHandle | undefined;
  #closed = false;
  /** Interest was lost this turn: stop watching at its end unless it returns. */
  #stopDue = false;
  /** The end-of-turn check of #stopDue is queued: one per turn, however often interest comes and goes. */
  #stopCheckQueued = false;

  /**
   * `onReadable` runs in each turn of the event loop in which libuv finds the
   * fd readable while setInterest(true) holds, later in that turn than
   * libuv's callback, under a callback scope (#polled). Level-triggered: it
   * must consume what made the fd readable, or it runs again next turn.
   */
  constructor(readonly fd: number, private readonly onReadable: () => void) {
    openWatchers++;
  }

  /**
   * Whether onReadable is wanted. While it is, libuv watches the fd and the
   * process stays alive. Losing interest stops the watch at the end of this
   * turn of the event loop, unless interest returns first: a wait that follows
   * its wake-up at once then costs no stop and restart of libuv's handle (an
   * epoll_ctl pair each).
   */
  setInterest(interested: boolean): void {
    if (interested) {
      this.#stopDue = false;
      if (this.#closed || started.has(this)) return;
      if (!this.#handle) {
        this.#handle = openPollHandle(this.fd, this.#polled);
        if (!this.#ref) this.#handle.unref();
      }
      this.#handle.start();
      started.add(this);
      stopWatchesOnExit();
    } else if (!this.#stopDue && started.has(this)) {
      this.#stopDue = true;
      if (this.#stopCheckQueued) return;
      this.#stopCheckQueued = true;
      atTurnEnd(this.#stopIfDue);
    }
  }

  /**
   * libuv's poll callback, with its status. On an error (POLLERR: e.g. a
   * device's event queue closed under it) libuv has stopped the watch, so it
   * is forgotten here: renewed interest starts it again. The owner reads the
   * fd either way, and its read reports the failure.
   *
   * The owner's read runs later in this turn, not here: koffi calls this
   * outside any callback scope, where a native callback that the read reaches
   * (an HTTP parser, TLS or HTTP/2 fed by a socket's 'data') opened the
   * outermost scope and ran the tick queue at its close, under this
   * JavaScript. A tick that threw there left its async id on Node's stack,
   * and with an async hook on (node:test's, an APM's) Node aborted at the
   * next scope's close (docs/performance-notes.md, "An abort, not an
   * error"). Run later, the read is under a scope, as Node's own I/O
   * callbacks are, and an error it throws reaches 'uncaughtException' as
   * theirs do. Node 20 to 25 run a tick queued here in the check phase of
   * this turn, at the close of the scope they open there every turn; Node 26
   * opens none by itself (main-loop.ts), so the read is an immediate, in the
   * same check phase, whose scope's close also runs what it settles.
   */
  readonly #polled = (status: number): void => {
    if (status < 0) started.delete(this);
    if (this.#readQueued) return;
    this.#readQueued = true;
    if (nodeDrainsAfterCallbacks) process.nextTick(this.#read);
    else setImmediate(this.#read);
  };

  /** Whether #read is queued: libuv may report the fd again before it runs. */
  #readQueued = false;

  readonly #read = (): void => {
    this.#readQueued = false;
    if (!this.#closed) this.onReadable();
  };

  readonly #stopIfDue = (): void => {
    this.#stopCheckQueued = false;
    if (!this.#stopDue) return;
    this.#stopDue = false;
    started.delete(this);
    this.#handle?.stop();
  };

  /** Whether a started watch keeps the process alive (libuv's ref); true by default. */
  setRef(ref: boolean): void {
    this.#ref = ref;
    if (ref) this.#handle?.ref();
    else this.#handle?.unref();
  }
  #ref = true;

  /** Stops watching for good; onReadable is not called again. Idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    openWatchers--;
    this.#handle?.close();
    this.#handle = undefined;
    started.delete(this);
  }
}
