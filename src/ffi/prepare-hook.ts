// A callback once per turn of the main thread's event loop, just before
// libuv polls for I/O: a uv_prepare_t made through FFI (main-loop.ts), never
// keeping the process alive. It ends a turn's bookkeeping without an
// immediate: on the host, an immediate per wake-up added 4,582 instructions
// to a FIFO ping-pong's round trip, this hook 1,528 (docs/performance-notes.md,
// "koffi's poll wrapper").
import koffi from 'koffi';
import { libuv, UV_PREPARE } from './libuv.js';
import { mainLoopReachable, nodeDrainsAfterCallbacks, openHandle, uvFailed } from './main-loop.js';
import type { Pointer } from './library.js';

export interface PrepareHook {
  /** Calls back before each poll phase from now on. */
  start(): void;
  /** No more calls until start(). */
  stop(): void;
}

/**
 * The hook calling `callback`, stopped; undefined where this thread makes no
 * libuv handles of its own (see main-loop.ts) or Node is 26 or later. Node 26
 * ends a turn with an immediate instead: each wake-up there queues one anyway
 * (main-loop.ts, nodeDrainsAfterCallbacks), and in one Debian 12 guest the
 * hook read little faster beside it (events ping-pong p50, medians of three
 * rounds: next() 219 µs with the hook and 222 without, a listener 153 and
 * 166; 2026-12-05). And the one CI run that ended Node 26's turns with this
 * hook aborted in its Node 26 pass (docs/performance-notes.md, "koffi's poll
 * wrapper"), unexplained.
 */
export function openPrepareHook(callback: () => void): PrepareHook | undefined {
  if (!nodeDrainsAfterCallbacks || !mainLoopReachable()) return undefined;
  const memory = openHandle(UV_PREPARE, (loop, handle) => libuv.uv_prepare_init(loop, handle), 'uv_prepare_init');
  libuv.uv_unref(memory);
  const prototype = koffi.proto('void rdmacm_uv_prepare_cb(uintptr_t handle)');
  const registered: Pointer = BigInt(koffi.register(() => callback(), koffi.pointer(prototype)));
  // Never closed: one per thread, for the life of the process (the main thread's loop is not checked at exit).
  return {
    start(): void {
      const status = libuv.uv_prepare_start(memory, registered);
      if (status !== 0) throw uvFailed('uv_prepare_start', status);
    },
    stop(): void {
      libuv.uv_prepare_stop(memory);
    },
  };
}
