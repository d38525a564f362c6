// A watch of a file descriptor's readability on this thread's libuv loop: a
// uv_poll_t, reached one of two ways.
// - On the main thread, libuv's own functions through FFI, every watch
//   calling back through one koffi.register'ed function. koffi.node.poll's
//   wrapper builds an events object with three named properties on every
//   wake-up: over half of a Node wake-up's instructions. A FIFO ping-pong
//   executed 12,630 instructions a round trip with it and 5,929 without it
//   on the host, and took 181-242 against 128-164 µs a round trip in the
//   soft-RoCE guest (docs/performance-notes.md, "koffi's poll wrapper").
// - On a worker thread, koffi.node.poll: a handle still open when a worker's
//   loop closes aborts the process, and worker.terminate() runs no JavaScript
//   that could close ours, where koffi's finalizers close its own.
import { Buffer } from 'node:buffer';
import { isMainThread } from 'node:worker_threads';
import koffi from 'koffi';
import type { node as koffiNode } from 'koffi';
import { RdmaError } from './errors.js';
import { libc } from './libc.js';
import { libuv, UV_POLL, UV_READABLE } from './libuv.js';
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

let kind: PollHandleKind | undefined;

/** How this thread's watches reach libuv, decided once per thread. */
export function pollHandleKind(): PollHandleKind {
  return (kind ??= isMainThread && libuv.has('uv_poll_init') && libuv.has('napi_get_uv_event_loop') ? 'libuv' : 'koffi');
}

/** A watch of `fd`, stopped until start(). */
export function openPollHandle(fd: number, onPoll: PollCallback): PollHandle {
  return pollHandleKind() === 'libuv' ? new UvPollHandle(fd, onPoll) : new KoffiPollHandle(fd, onPoll);
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

/** The main thread's loop, libuv's handle size, free() and the callback every handle shares: found once. */
interface UvPollShared {
  readonly loop: Pointer;
  readonly handleSize: number;
  readonly free: Pointer;
  readonly callback: Pointer;
}
let shared: UvPollShared | undefined;
/** The open handles, by their address as the shared callback receives it. */
const uvHandles = new Map<Address, UvPollHandle>();

function uvShared(): UvPollShared {
  if (shared) return shared;
  const slot = Buffer.alloc(8);
  const status = libuv.napi_get_uv_event_loop(koffi.node.env as unknown as Pointer, slot);
  if (status !== 0) throw new RdmaError('napi_get_uv_event_loop', 5, `N-API status ${status}`);
  const prototype = koffi.proto('void rdmacm_uv_poll_cb(uintptr_t handle, int status, int events)');
  const callback = koffi.register((handle: Address, status: number) => uvHandles.get(handle)?.onPoll(status), koffi.pointer(prototype));
  shared = {
    loop: slot.readBigUInt64LE(0),
    handleSize: Number(libuv.uv_handle_size(UV_POLL)),
    free: libc.symbolAddress('free'),
    callback: BigInt(callback),
  };
  return shared;
}

/** libuv's error (a negative errno on Linux) as an RdmaError. */
function uvFailed(call: string, error: number): RdmaError {
  return new RdmaError(call, -error, `libuv: ${libuv.uv_err_name(error) ?? error}`);
}

class UvPollHandle implements PollHandle {
  /** The uv_poll_t, malloc'ed: libuv frees it with free() once it is closed. */
  readonly #memory: Pointer;
  readonly #address: Address;
  #closed = false;

  constructor(fd: number, readonly onPoll: PollCallback) {
    const { loop, handleSize } = uvShared();
    const memory = libc.malloc(handleSize);
    if (memory === null || memory === 0n) throw new RdmaError('malloc', 12, 'no memory for a libuv poll handle');
    const status = libuv.uv_poll_init(loop, memory, fd);
    if (status !== 0) {
      libc.free(memory);
      throw uvFailed('uv_poll_init', status);
    }
    this.#memory = memory;
    this.#address = toAddress(memory);
    uvHandles.set(this.#address, this);
  }

  start(): void {
    if (this.#closed) return;
    const status = libuv.uv_poll_start(this.#memory, UV_READABLE, uvShared().callback);
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
    libuv.uv_close(this.#memory, uvShared().free);
  }
}
