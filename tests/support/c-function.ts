// The address of a C function, to stand in for a provider's op in a fake
// struct ibv_context (host tests, bench/overhead.ts).
import koffi from 'koffi';

const RTLD_NOW = 2;
const libc = koffi.load('libc.so.6');
const dlopen = libc.func('uintptr_t dlopen(const char *file, int mode)');
const dlsym = libc.func('uintptr_t dlsym(uintptr_t handle, const char *symbol)');

/** `symbol`'s address in the shared library `soname`; throws when it is not there. */
export function cFunctionAddress(soname: string, symbol: string): bigint {
  const address = BigInt(dlsym(dlopen(soname, RTLD_NOW), symbol) as number | bigint);
  if (address === 0n) throw new Error(`${symbol} not found in ${soname}`);
  return address;
}
