// The few libc calls the binding needs: around RDMA file descriptors, one
// copy out of native memory, the pages of bound calls, and libuv handles'
// memory. libc is loaded by the name of the C library the process runs on
// (glibc's or musl's); the copy and the bound calls do without it, the fd
// calls cannot.
import { runningCLibrary, libcSonames } from '../c-library.js';
import { defineLibrary, fn, type FunctionSpec } from './library.js';

export const libcFunctions = {
  // fcntl is variadic in C; every call here passes one int.
  fcntl: fn('int', ['int fd', 'int cmd', 'int arg']),
  poll: fn('int', ['struct pollfd *fds', 'unsigned long nfds', 'int timeout']),
  memcpy: fn('void *', ['void *dest', 'const void *src', 'size_t n']),
  mmap: fn('void *', ['void *addr', 'size_t length', 'int prot', 'int flags', 'int fd', 'int64_t offset']),
  mprotect: fn('int', ['void *addr', 'size_t len', 'int prot']),
  munmap: fn('int', ['void *addr', 'size_t length']),
  // For libuv handles, which libuv frees itself with free() once they are closed (see main-loop.ts).
  malloc: fn('void *', ['size_t size']),
  free: fn('void', ['void *ptr']),
} as const satisfies Record<string, FunctionSpec>;

/** What to do when libc does not load: it is the process's own C library, so nothing to install. */
export function libcAdvice(): string {
  const { family, evidence } = runningCLibrary();
  const which = family ? `this process runs on ${family} (${evidence})` : `rdmacm could not tell which C library this process runs on (${evidence})`;
  return `It is the C library Node itself runs on, not a package to install: ${which}. ` +
    'Set RDMACM_LIBC to the path of that library: the libc file that /proc/self/maps lists.';
}

export const libc = defineLibrary(
  { name: 'libc', sonames: () => libcSonames(runningCLibrary().family), envOverride: 'RDMACM_LIBC', advice: libcAdvice },
  libcFunctions,
);

export const F_GETFL = 3;
export const F_SETFL = 4;
export const O_NONBLOCK = 0o4000;
export const POLLIN = 0x001;
