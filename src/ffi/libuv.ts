// The Node process's own libuv, and N-API's way to the thread's loop: Node
// exports both from its binary. Used to watch a file descriptor without
// koffi.node.poll's wrapper (poll-handle.ts) and to end a turn of the loop
// without an immediate (prepare-hook.ts).
import { OWN_PROCESS, defineLibrary, fn, type FunctionSpec } from './library.js';

export const libuvFunctions = {
  napi_get_uv_event_loop: fn('int', ['napi_env *env', 'uv_loop_t **loop']),
  uv_handle_size: fn('size_t', ['int type']),
  uv_poll_init: fn('int', ['uv_loop_t *loop', 'uv_poll_t *handle', 'int fd']),
  // cb and close_cb are function pointers: a koffi.register'ed callback, or free().
  uv_poll_start: fn('int', ['uv_poll_t *handle', 'int events', 'void *cb']),
  uv_poll_stop: fn('int', ['uv_poll_t *handle']),
  uv_prepare_init: fn('int', ['uv_loop_t *loop', 'uv_prepare_t *prepare']),
  uv_prepare_start: fn('int', ['uv_prepare_t *prepare', 'void *cb']),
  uv_prepare_stop: fn('int', ['uv_prepare_t *prepare']),
  uv_close: fn('void', ['uv_handle_t *handle', 'void *close_cb']),
  uv_ref: fn('void', ['uv_handle_t *handle']),
  uv_unref: fn('void', ['uv_handle_t *handle']),
  uv_err_name: fn('const char *', ['int err']),
} as const satisfies Record<string, FunctionSpec>;

export const libuv = defineLibrary({ name: 'libuv (in the Node process)', sonames: OWN_PROCESS }, libuvFunctions);

/** uv_handle_type's UV_POLL and UV_PREPARE. */
export const UV_POLL = 8;
export const UV_PREPARE = 9;
/** uv_poll_event's UV_READABLE. */
export const UV_READABLE = 1;
