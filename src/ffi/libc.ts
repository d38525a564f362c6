// The few libc calls the binding needs: around RDMA file descriptors, one
// copy out of native memory, and the pages of bound calls.
import { defineLibrary, fn, type FunctionSpec } from './library.js';

export const libcFunctions = {
  // fcntl is variadic in C; every call here passes one int.
  fcntl: fn('int', ['int fd', 'int cmd', 'int arg']),
  poll: fn('int', ['struct pollfd *fds', 'unsigned long nfds', 'int timeout']),
  memcpy: fn('void *', ['void *dest', 'const void *src', 'size_t n']),
  mmap: fn('void *', ['void *addr', 'size_t length', 'int prot', 'int flags', 'int fd', 'int64_t offset']),
  mprotect: fn('int', ['void *addr', 'size_t len', 'int prot']),
  munmap: fn('int', ['void *addr', 'size_t length']),
} as const satisfies Record<string, FunctionSpec>;

export const libc = defineLibrary({ name: 'libc', sonames: ['libc.so.6'], envOverride: 'RDMACM_LIBC' }, libcFunctions);

export const F_GETFL = 3;
export const F_SETFL = 4;
export const O_NONBLOCK = 0o4000;
export const POLLIN = 0x001;
