// Bound calls (src/ffi/bound-call.ts) against real C functions: the stub must
// pass each stored argument exactly and return the function's result.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import process from 'node:process';
import koffi from 'koffi';
import { boundCallsUnavailable, fixedCall, type FixedCall } from '../../src/ffi/bound-call.js';
import { toAddress, type Address } from '../../src/ffi/library.js';
import { cFunctionAddress } from '../support/c-function.js';

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

test('RDMACM_BOUND_CALLS=0 turns bound calls off, and says so', () => {
  const script = `
    import { boundCallsUnavailable, fixedCall } from './src/ffi/bound-call.ts';
    const call = fixedCall(1n, () => 42, [0, 0, 0], true);
    console.log(JSON.stringify({ bound: call.bound, result: call.call(), why: boundCallsUnavailable() }));`;
  const output = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    env: { ...process.env, RDMACM_BOUND_CALLS: '0' }, encoding: 'utf8',
  });
  assert.deepEqual(JSON.parse(output), { bound: false, result: 42, why: 'RDMACM_BOUND_CALLS=0' });
});
