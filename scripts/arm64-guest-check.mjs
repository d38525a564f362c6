// In the arm64 guest (scripts/arm64-vm.sh): bound calls stay off off x86-64,
// even when asked for. The stub src/ffi/bound-call.ts writes is x86-64 code:
// on arm64 a repeated call must come back as the plain koffi call, with the
// reason recorded, and still return the C function's result. Exits 1
// otherwise. Needs `npm run build`.
//   node scripts/arm64-guest-check.mjs
import process from 'node:process';
import koffi from 'koffi';
import { boundCallsUnavailable, fixedCall } from '../dist/src/raw.js';
import { setBoundCalls } from '../dist/src/index.js';

const libc = koffi.load('libc.so.6');
const dlopen = libc.func('uintptr_t dlopen(const char *file, int mode)');
const dlsym = libc.func('uintptr_t dlsym(uintptr_t handle, const char *symbol)');
const memcmp = BigInt(dlsym(dlopen('libc.so.6', 2), 'memcmp'));
const plain = koffi.decode(memcmp, koffi.proto('int rdmacm_check_memcmp_fn(uintptr_t a, uintptr_t b, uintptr_t n)'));

const status = setBoundCalls(true);
const a = Buffer.from('0123456789abcdef');
const b = Buffer.from('0123456789abcdeF');
const call = fixedCall(memcmp, plain, [BigInt(koffi.address(a)), BigInt(koffi.address(b)), 16], true);
const result = call.call();
call.release();
const reason = boundCallsUnavailable();
console.log(`bound calls: ${call.bound ? 'on' : `off (${reason ?? 'no reason recorded'})`} on ${process.arch}; memcmp through the fixed call: ${result > 0 ? 'right' : `wrong (${result})`}`);
if (process.arch !== 'x64' && (call.bound || status.active || !reason?.includes('x86-64'))) process.exitCode = 1;
if (!(result > 0)) process.exitCode = 1;
