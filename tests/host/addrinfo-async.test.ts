// getAddrInfoAsync: the same checks and errors as getAddrInfo, the call on a
// worker thread, an AbortSignal. On a host without an RDMA stack
// rdma_getaddrinfo fails in its set-up (ucma_init: no device) before it
// resolves anything, even '127.0.0.1': what the worker thread's call returns is
// then that typed ENODEV, with the worker's errno. A real resolution, and the
// event loop running during a slow one, need a device (tests/device/addrinfo).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { getAddrInfo, getAddrInfoAsync, RdmaArgumentError, RdmaError, type AddrInfoHints, type AddrInfoOptions } from '../../src/index.js';
import { hostRdmaDevices } from '../support/device.js';
import { assertAbortedWith } from '../support/errors.js';

const noRdmaStack = hostRdmaDevices().length === 0;

type Args = [node: string | null, service: string | null, hints?: AddrInfoHints];

// The same bad arguments getAddrInfo's rows in validation.test.ts refuse.
const badRows: { name: string; args: Args; path: string }[] = [
  { name: 'node and service both null', args: [null, null], path: 'node' },
  { name: 'node is an empty string', args: ['', '7471'], path: 'node' },
  { name: 'service with an embedded NUL', args: ['127.0.0.1', '74\x0071'], path: 'service' },
  { name: 'node is a number', args: [127 as never, '7471'], path: 'node' },
  { name: 'hints.flags has an unknown flag', args: ['127.0.0.1', '7471', { flags: ['PASSIVE', 'BOGUS' as never] }], path: 'hints.flags.1' },
  { name: 'hints.family is a number (AF_INET)', args: ['127.0.0.1', '7471', { family: 2 as never }], path: 'hints.family' },
  { name: 'hints has an unknown key', args: ['127.0.0.1', '7471', { ai_flags: 1 } as never], path: 'hints' },
  { name: 'hints is null', args: ['127.0.0.1', '7471', null as never], path: 'hints' },
];

for (const row of badRows) {
  test(`getAddrInfoAsync rejects as getAddrInfo throws: ${row.name}`, async () => {
    let thrown: unknown;
    try {
      getAddrInfo(...row.args).close();
    } catch (error) {
      thrown = error;
    }
    assert.ok(thrown instanceof RdmaArgumentError, `getAddrInfo throws RdmaArgumentError: ${String(thrown)}`);
    const promise = getAddrInfoAsync(...row.args);
    assert.ok(promise instanceof Promise, 'a bad argument rejects the promise; it does not throw');
    await assert.rejects(promise, (error: unknown) => {
      assert.ok(error instanceof RdmaArgumentError);
      assert.equal(error.code, thrown.code, 'the same code as the synchronous form');
      assert.equal(error.operation, 'rdma_getaddrinfo');
      assert.equal(error.issues[0]?.path, row.path);
      assert.equal(error.message, thrown.message);
      return true;
    });
  });
}

const badOptions: { name: string; options: unknown; path: string; rule: RegExp }[] = [
  { name: 'options.signal is not an AbortSignal', options: { signal: 'abort' }, path: 'options.signal', rule: /AbortSignal/ },
  { name: 'options has a timeoutMs (it takes none)', options: { timeoutMs: 100 }, path: 'options', rule: /Unrecognized key: "timeoutMs"/ },
  { name: 'options is null', options: null, path: 'options', rule: /expected object/ },
];

for (const row of badOptions) {
  test(`getAddrInfoAsync refuses its own options: ${row.name}`, async () => {
    await assert.rejects(getAddrInfoAsync('127.0.0.1', '7471', {}, row.options as AddrInfoOptions), (error: unknown) => {
      assert.ok(error instanceof RdmaArgumentError);
      assert.equal(error.issues[0]?.path, row.path);
      assert.match(error.issues[0]!.rule, row.rule);
      return true;
    });
  });
}

test('an already aborted signal rejects with AbortError (ABORT_ERR), its reason as cause, before any call', async () => {
  const reason = new Error('the user gave up');
  const error = await getAddrInfoAsync('127.0.0.1', '7471', {}, { signal: AbortSignal.abort(reason) }).then(
    () => assert.fail('resolved'),
    (rejection: unknown) => rejection,
  );
  assertAbortedWith(error, reason);
});

test('the asynchronous call fails with the same typed error as the synchronous one (errno from the worker thread)', { skip: !noRdmaStack && 'this host has an RDMA device: the call resolves (tests/device/addrinfo covers it)' }, async () => {
  let syncError: unknown;
  try {
    getAddrInfo('127.0.0.1', '7471').close();
  } catch (error) {
    syncError = error;
  }
  assert.ok(syncError instanceof RdmaError, String(syncError));
  await assert.rejects(getAddrInfoAsync('127.0.0.1', '7471'), (error: unknown) => {
    assert.ok(error instanceof RdmaError, String(error));
    assert.equal(error.code, 'ENODEV', 'no RDMA device: ucma_init fails before any resolution');
    assert.equal(error.errno, 19);
    assert.equal(error.syscall, 'rdma_getaddrinfo');
    assert.equal(error.message, syncError.message);
    return true;
  });
});

test('aborting while the call runs rejects at once with AbortError; the call\'s own late outcome is handled, not left unhandled', async () => {
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);
  process.on('unhandledRejection', onUnhandled);
  try {
    const controller = new AbortController();
    const promise = getAddrInfoAsync('127.0.0.1', '7471', {}, { signal: controller.signal });
    const reason = new Error('stop');
    controller.abort(reason);
    const error = await promise.then(() => assert.fail('resolved'), (rejection: unknown) => rejection);
    assertAbortedWith(error, reason);
    // The native call still finishes on its thread (ENODEV here, in well under a millisecond; a list
    // to free on a device host, which tests/device/addrinfo checks). Give it time to, then look.
    await getAddrInfoAsync('127.0.0.1', '7471').then((late) => late.close(), () => undefined);
    await sleep(100);
    assert.deepEqual(unhandled, []);
  } finally {
    process.off('unhandledRejection', onUnhandled);
  }
});
