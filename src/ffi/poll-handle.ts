// A watch of a file descriptor's readability on this thread's libuv loop: a
// uv_poll_t, reached one of two ways.
// - On the main thread, libuv's own functions through FFI (main-loop.ts),
//   every watch calling back through one koffi.register'ed function.
//   koffi.node.poll's wrapper builds an events object with three named
//   properties on every wake-up: over half of a Node wake-up's instructions.
//   A FIFO ping-pong executed 12,630 instructions a round trip with it and
//   5,929 without it on the host, and took 181-242 against 128-164 µs a
//   round trip in the soft-RoCE guest (docs/performance-notes.md, "koffi's
//   poll wrapper").
// - On a worker thread, koffi.node.poll, whose handles koffi's finalizers
//   close when a worker is torn down.
import koffi from 'koffi';
import type { node as koffiNode } from 'koffi';
import { libuv, UV_POLL, UV_READABLE } from './libuv.js';
import { mainLoopReachable, openHandle, closeHandle, uvFailed } from './main-loop.js';
import { toAddress, type Address, type Pointer } from './library.js';

/** libuv's poll callback's status: 0, or a negative errno (libuv stopped the watch). */
export type PollCallback = (status: number) => void;

export interface PollHandle {
  /** Watches for readability: the callback comes on every wake-up while started. */
  start(): void;
  stop(): void;
  /** Whether a started watch keeps the process alive (libuv's ref). */
  ref(): void;
  unref(): void;
  /** Stops for good; the callback does not come again. Idempotent. */
  close(): void;
}

/** How this thread's watches reach libuv: 'libuv' directly, or 'koffi' (koffi.node.poll). */
export type PollHandleKind = 'libuv' | 'koffi';

/** How this thread's watches reach libuv. */
export function pollHandleKind(): PollHandleKind {
  return mainLoopReachable() ? 'libuv' : 'koffi';
}

/** A watch of `fd`, stopped until start(). */
export function openPollHandle(fd: number, onPoll: PollCallback): PollHandle {
  return mainLoopReachable() ? new UvPollHandle(fd, onPoll) : new KoffiPollHandle(fd, onPoll);
}

class KoffiPollHandle implements PollHandle {
  readonly #handle: koffiNode.PollHandle;
  readonly #callback: (events: koffiNode.PollEvents) => void;

  constructor(fd: number, onPoll: PollCallback) {
    // koffi passes libuv's status first (its typings omit it).
    this.#callback = onPoll as unknown as (events: koffiNode.PollEvents) => void;
    this.#handle = koffi.node.poll(fd, { readable: true }, this.#callback);
    this.#handle.stop();
  }

  start(): void {
    this.#handle.start({ readable: true }, this.#callback);
  }
  stop(): void {
    this.#handle.stop();
  }
  ref(): void {
    this.#handle.ref();
  }
  unref(): void {
    this.#handle.unref();
  }
  close(): void {
    this.#handle.close();
  }
}

/** The open handles, by their address as the shared callback receives it. */
const uvHandles = new Map<Address, UvPollHandle>();
let uvCallback: Pointer | undefined;

/** The one callback of every uv_poll_t made here, registered at first need. */
function pollCallback(): Pointer {
  if (uvCallback !== undefined) return uvCallback;
  const prototype = koffi.proto('void rdmacm_uv_poll_cb(uintptr_t handle, int status, int events)');
  const callback = koffi.register((handle: Address, status: number) => uvHandles.get(handle)?.onPoll(status), koffi.pointer(prototype));
  return (uvCallback = BigInt(callback));
}

class UvPollHandle implements PollHandle {
  readonly #memory: Pointer;
  readonly #address: Address;
  #closed = false;

  constructor(fd: number, readonly onPoll: PollCallback) {
    this.#memory = openHandle(UV_POLL, (loop, memory) => libuv.uv_poll_init(loop, memory, fd), 'uv_poll_init');
    this.#address = toAddress(this.#memory);
    uvHandles.set(this.#address, this);
  }

  start(): void {
    if (this.#closed) return;
    const status = libuv.uv_poll_start(this.#memory, UV_READABLE, pollCallback());
    if (status !== 0) throw uvFailed('uv_poll_start', status);
  }
  stop(): void {
    if (!this.#closed) libuv.uv_poll_stop(this.#memory);
  }
  ref(): void {
    if (!this.#closed) libuv.uv_ref(this.#memory);
  }
  unref(): void {
    if (!this.#closed) libuv.uv_unref(this.#memory);
  }
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    uvHandles.delete(this.#address);
    closeHandle(this.#memory);
  }
}
