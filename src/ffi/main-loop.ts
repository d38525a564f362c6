// The main thread's libuv loop, reached through FFI on Node's own libuv
// (libuv.ts): where rdmacm makes its poll handles (poll-handle.ts) and its
// prepare hook (prepare-hook.ts). The main thread only: a handle still open
// when a worker's loop closes aborts the process (Node's CheckedUvLoopClose),
// and worker.terminate() runs no JavaScript that could close it. Handle
// memory comes from malloc, and uv_close is handed free() as its close
// callback: libuv frees the memory once it is done with it, with no
// JavaScript called back.
import { Buffer } from 'node:buffer';
import process from 'node:process';
import { isMainThread } from 'node:worker_threads';
import koffi from 'koffi';
import { RdmaError } from './errors.js';
import { libc } from './libc.js';
import { libuv } from './libuv.js';
import type { Pointer } from './library.js';

/**
 * Whether Node runs the nextTick queue and promise reactions after a libuv
 * callback that koffi makes (with napi_call_function, outside a callback
 * scope). Node 20 to 25 run both in the check phase of the same turn: Node
 * 20's native-immediates pass opens a callback scope every turn, whose close
 * drains them. Node 26 opens it only when a native immediate is queued (seen
 * in gdb, docs/performance-notes.md "Why Node 26 needs an immediate"), so
 * what such a callback settles waits for the next timer or I/O unless rdmacm
 * queues an immediate: there a watch's read is one (fd-watcher.ts), and an
 * immediate also ends the turn (prepare-hook.ts). Decided by version, not
 * probed: a probe fooled by another callback's drain would bring the stalls
 * back. The host tier's drain test checks the version rule on Node 20, 22,
 * 24 and 26 (23 and 25 passed it too, 2026-12-07).
 */
export const nodeDrainsAfterCallbacks = Number(process.versions.node.split('.')[0]) < 26;

let reachable: boolean | undefined;

/** Whether this thread makes its own libuv handles: the main thread, in a Node that exports libuv's functions. */
export function mainLoopReachable(): boolean {
  return (reachable ??= isMainThread && libuv.has('uv_poll_init') && libuv.has('uv_prepare_init') && libuv.has('napi_get_uv_event_loop'));
}

let loop: Pointer | undefined;

/** The main thread's uv_loop_t (see mainLoopReachable). */
export function mainLoop(): Pointer {
  if (loop !== undefined) return loop;
  const slot = Buffer.alloc(8);
  const status = libuv.napi_get_uv_event_loop(koffi.node.env as unknown as Pointer, slot);
  if (status !== 0) throw new RdmaError('napi_get_uv_event_loop', 5, `N-API status ${status}`);
  return (loop = slot.readBigUInt64LE(0));
}

/** libuv's error (a negative errno on Linux) as an RdmaError. */
export function uvFailed(call: string, error: number): RdmaError {
  return new RdmaError(call, -error, `libuv: ${libuv.uv_err_name(error) ?? error}`);
}

/**
 * Memory for a handle of `type` (a uv_handle_type), made on the main loop by
 * `init`: closeHandle gives it back.
 */
export function openHandle(type: number, init: (loop: Pointer, memory: Pointer) => number, call: string): Pointer {
  const memory = libc.malloc(Number(libuv.uv_handle_size(type)));
  if (memory === null || memory === 0n) throw new RdmaError('malloc', 12, 'no memory for a libuv handle');
  const status = init(mainLoop(), memory);
  if (status !== 0) {
    libc.free(memory);
    throw uvFailed(call, status);
  }
  return memory;
}

let free: Pointer | undefined;

/** Closes a handle of openHandle; libuv frees its memory once the loop is done with it. */
export function closeHandle(memory: Pointer): void {
  libuv.uv_close(memory, (free ??= libc.symbolAddress('free')));
}
