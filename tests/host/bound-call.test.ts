// Bound calls (src/ffi/bound-call.ts) against real C functions: the stub must
// pass each stored argument exactly and return the function's result. They are
// opt-in; this file turns them on for itself, and the cases about the switch
// and the kernel's refusals run in child processes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import process from 'node:process';
import koffi from 'koffi';
import { boundCallsUnavailable, fixedCall, setBoundCalls, type FixedCall } from '../../src/ffi/bound-call.js';
import { toAddress, type Address } from '../../src/ffi/library.js';
import { RdmaArgumentError, setBoundCalls as setBoundCallsChecked, type BoundCallStatus } from '../../src/index.js';
import { cFunctionAddress } from '../support/c-function.js';
import { childJson } from '../support/child-module.js';

setBoundCalls(true);

const memcmp = cFunctionAddress('libc.so.6', 'memcmp');
const plainMemcmp = koffi.decode(memcmp, koffi.proto('int rdmacm_test_memcmp_fn(uintptr_t a, uintptr_t b, uintptr_t n)')) as
  (a: Address, b: Address, n: Address) => number;
const labs = cFunctionAddress('libc.so.6', 'labs');
const plainLabs = koffi.decode(labs, koffi.proto('int rdmacm_test_labs_fn(intptr_t a, intptr_t b, intptr_t c)')) as
  (a: Address, b: Address, c: Address) => number;

const a = Buffer.from('0123456789abcdef');
const other = Buffer.from('0123456789abcdeF');
const [at, otherAt] = [a, other].map((b) => toAddress(koffi.address(b))) as [Address, Address];
const expectBound = process.arch === 'x64';

test('a bound call passes its three stored arguments and returns the result', () => {
  const call = fixedCall(memcmp, plainMemcmp, [at, otherAt, 16], true);
  try {
    assert.equal(call.bound, expectBound, boundCallsUnavailable());
    assert.ok(call.call() > 0, "the last bytes differ, and 'f' (0x66) > 'F' (0x46)");
  } finally {
    call.release();
  }
});

test('setIntArgument changes a stored int, sign-extended as C converts an int', () => {
  const compare = fixedCall(memcmp, plainMemcmp, [at, otherAt, 16], true);
  const absolute = fixedCall(labs, plainLabs, [0, 0, 0], true);
  try {
    assert.notEqual(compare.call(), 0);
    compare.setIntArgument(2, 15); // the difference is in the 16th byte
    assert.equal(compare.call(), 0);
    compare.setIntArgument(2, 16);
    assert.notEqual(compare.call(), 0);
    // labs reads all 64 bits: -5 only comes back as 5 if the upper half was filled with ones.
    absolute.setIntArgument(0, -5);
    assert.equal(absolute.call(), 5);
    absolute.setIntArgument(0, 7);
    assert.equal(absolute.call(), 7);
  } finally {
    compare.release();
    absolute.release();
  }
});

test('hundreds of calls at once, over several pages, each keep their own arguments; released slots are reused', () => {
  const equalUpTo = (n: number) => fixedCall(memcmp, plainMemcmp, [at, otherAt, n], true);
  let calls: FixedCall[] = Array.from({ length: 300 }, (_, i) => equalUpTo(i % 17));
  assert.deepEqual(calls.map((c) => (c.call() === 0 ? 'same' : 'differ')), calls.map((_, i) => (i % 17 === 16 ? 'differ' : 'same')));
  for (const call of calls) call.release();
  for (const call of calls) call.release(); // idempotent: a slot is freed once
  calls = Array.from({ length: 300 }, () => equalUpTo(16));
  assert.ok(calls.every((c) => c.call() !== 0));
  for (const call of calls) call.release();
});

test('a one-shot call, or a missing function, is a plain call with the same result', () => {
  const once = fixedCall(memcmp, plainMemcmp, [at, otherAt, 15], false);
  assert.equal(once.bound, false);
  assert.equal(once.call(), 0);
  once.setIntArgument(2, 16);
  assert.notEqual(once.call(), 0);
  let called = 0;
  const missing = fixedCall(0n, () => ++called, [0, 0, 0], true);
  assert.equal(missing.bound, false);
  assert.equal(missing.call(), 1);
});

/** Child-script lines: `boundKind()` binds labs(7) and says whether the call was bound and what it returned. */
const BOUND_KIND = `
  import { fixedCall } from './src/ffi/bound-call.ts';
  import { cFunctionAddress } from './tests/support/c-function.ts';
  const labs = cFunctionAddress('libc.so.6', 'labs');
  const boundKind = () => {
    const call = fixedCall(labs, (a) => Math.abs(Number(a)), [7, 0, 0], true);
    const kind = { bound: call.bound, result: call.call() };
    call.release();
    return kind;
  };`;

interface Kind { bound: boolean; result: number }

test('bound calls are opt-in: off by default, on with RDMACM_BOUND_CALLS=1, and setBoundCalls() wins over the environment', () => {
  const script = `${BOUND_KIND}
    import { boundCallStatus, setBoundCalls } from './src/index.ts';
    const first = [boundCallStatus(), boundKind()];
    const turned = [setBoundCalls(process.env.RDMACM_BOUND_CALLS !== '1'), boundKind()];
    console.log(JSON.stringify({ first, turned }));`;
  const asked = process.arch === 'x64' ? { enabled: true, active: true } : { enabled: true, active: false, reason: `the stub is x86-64 code (this is ${process.arch})` };
  const notAsked = { enabled: false, active: false, reason: 'not asked for: they are opt-in (RDMACM_BOUND_CALLS=1, or setBoundCalls(true))' };
  const turnedOff = { enabled: false, active: false, reason: 'turned off (setBoundCalls(false))' };
  const kind = (status: BoundCallStatus): Kind => ({ bound: status.active, result: 7 });

  const byDefault = childJson<{ first: [BoundCallStatus, Kind]; turned: [BoundCallStatus, Kind] }>(script, { RDMACM_BOUND_CALLS: '' });
  assert.deepEqual(byDefault.first, [notAsked, kind(notAsked)]);
  assert.deepEqual(byDefault.turned, [asked, kind(asked)]);

  const fromEnvironment = childJson<{ first: [BoundCallStatus, Kind]; turned: [BoundCallStatus, Kind] }>(script, { RDMACM_BOUND_CALLS: '1' });
  assert.deepEqual(fromEnvironment.first, [asked, kind(asked)]);
  assert.deepEqual(fromEnvironment.turned, [turnedOff, kind(turnedOff)]);
});

test('setBoundCalls() takes a boolean only, and refuses anything else before changing anything', () => {
  for (const junk of ['yes', 1, undefined, null, {}]) {
    assert.throws(() => setBoundCallsChecked(junk as never), (error: unknown) =>
      error instanceof RdmaArgumentError && error.code === 'ERR_INVALID_ARG_TYPE' && error.issues[0]?.path === 'enabled' && /boolean/.test(error.message));
  }
});

// The kernel's refusals, as a hardened system makes them. PR_SET_MDWE (Linux
// 6.3+, what systemd's MemoryDenyWriteExecute= sets) refuses to make a page
// executable that was not; a seccomp filter refuses the stub's mapping. Either
// way the calls stay plain and say why.
const REFUSALS = `${BOUND_KIND}
  import koffi from 'koffi';
  import { boundCallStatus } from './src/index.ts';
  const libc = koffi.load('libc.so.6');`;

test('where the kernel refuses executable memory (PR_SET_MDWE), calls stay plain and the status says why', (t) => {
  const seen = childJson<{ refused: number; errno: number; status: BoundCallStatus; kind: Kind }>(`${REFUSALS}
    const prctl = libc.func('int prctl(int option, unsigned long a2, unsigned long a3, unsigned long a4, unsigned long a5)');
    const PR_SET_MDWE = 65, PR_MDWE_REFUSE_EXEC_GAIN = 1;
    const refused = prctl(PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN, 0, 0, 0);
    const errno = koffi.errno();
    console.log(JSON.stringify({ refused, errno, status: boundCallStatus(), kind: boundKind() }));`,
  // jitless: V8 itself then needs no new executable page once the refusal is in.
  { RDMACM_BOUND_CALLS: '1', NODE_OPTIONS: '--jitless' });
  if (seen.refused !== 0) return t.skip(`this kernel has no PR_SET_MDWE (prctl: errno ${seen.errno}; Linux 6.3+ has it)`);
  if (process.arch !== 'x64') return t.skip(`bound calls are x86-64 only (this is ${process.arch})`);
  assert.deepEqual(seen.status, { enabled: true, active: false, reason: 'the system refuses executable memory (mprotect: errno 13)' });
  assert.deepEqual(seen.kind, { bound: false, result: 7 });
});

test('where mmap is refused (a seccomp filter, as a sandbox sets), calls stay plain and the status says why', (t) => {
  if (process.arch !== 'x64') return t.skip(`bound calls are x86-64 only (this is ${process.arch})`);
  // A filter on this thread (the one that maps the stub) answers ENOMEM to an
  // mmap of exactly the stub's two pages, and allows everything else: an
  // address-space limit did the same but starved V8 too (a CI run died in a
  // collection inside the window).
  const seen = childJson<{ installed: number; errno: number; status: BoundCallStatus; kind: Kind }>(`${REFUSALS}
    const prctl = libc.func('int prctl(int option, unsigned long a2, unsigned long a3, unsigned long a4, unsigned long a5)');
    const PR_SET_NO_NEW_PRIVS = 38, PR_SET_SECCOMP = 22, SECCOMP_MODE_FILTER = 2;
    const AUDIT_ARCH_X86_64 = 0xc000003e, SYS_MMAP = 9, STUB_PAGES = 8192, ENOMEM = 12;
    const LD_ABS = 0x20, JEQ = 0x15, RET = 0x06, RET_ERRNO = 0x00050000, RET_ALLOW = 0x7fff0000;
    // struct seccomp_data: nr at 0, arch at 4, args[1] (mmap's length) at 24.
    const program = [
      [LD_ABS, 0, 0, 4], [JEQ, 0, 5, AUDIT_ARCH_X86_64],
      [LD_ABS, 0, 0, 0], [JEQ, 0, 3, SYS_MMAP],
      [LD_ABS, 0, 0, 24], [JEQ, 0, 1, STUB_PAGES],
      [RET, 0, 0, RET_ERRNO | ENOMEM], [RET, 0, 0, RET_ALLOW],
    ];
    const filter = Buffer.alloc(8 * program.length);
    program.forEach(([code, jt, jf, k], i) => {
      filter.writeUInt16LE(code, 8 * i); filter.writeUInt8(jt, 8 * i + 2); filter.writeUInt8(jf, 8 * i + 3); filter.writeUInt32LE(k >>> 0, 8 * i + 4);
    });
    const fprog = Buffer.alloc(16); // struct sock_fprog: unsigned short len, then the filter's address
    fprog.writeUInt16LE(program.length, 0);
    fprog.writeBigUInt64LE(BigInt(koffi.address(filter)), 8);
    const installed = prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, BigInt(koffi.address(fprog)), 0, 0);
    const errno = koffi.errno();
    console.log(JSON.stringify({ installed, errno, status: boundCallStatus(), kind: boundKind() }));`, { RDMACM_BOUND_CALLS: '1' });
  assert.equal(seen.installed, 0, `the seccomp filter went in (errno ${seen.errno})`);
  assert.deepEqual(seen.status, { enabled: true, active: false, reason: 'mmap failed (errno 12)' });
  assert.deepEqual(seen.kind, { bound: false, result: 7 }, 'a refused stub stays refused: the process keeps plain calls');
});
