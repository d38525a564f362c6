// Assertions on the errors the safe API promises: an aborted operation's, and a closed resource's.
import assert from 'node:assert/strict';
import { AbortError, ResourceClosedError } from '../../src/index.js';

/**
 * Asserts that `error` is what Node's own APIs reject with when their signal is
 * aborted with `reason`: an AbortError, code 'ABORT_ERR', the reason as its
 * cause; not a DOMException (whose code is a number).
 */
export function assertAbortedWith(error: unknown, reason: unknown): asserts error is AbortError {
  assert.ok(error instanceof AbortError, `expected an AbortError, got ${String(error)}`);
  assert.ok(!(error instanceof DOMException), 'not a DOMException');
  assert.equal(error.name, 'AbortError');
  assert.equal(error.code, 'ABORT_ERR');
  assert.equal(error.message, 'The operation was aborted');
  assert.equal(error.cause, reason, 'the signal\'s reason is the cause');
}

/**
 * Asserts that `call` throws ResourceClosedError for the closed `resource`
 * ('memory region', …), naming `parameter` when the closed resource was an argument.
 */
export function assertClosedResource(call: () => unknown, resource: string, parameter?: string): void {
  assert.throws(call, (error: unknown) => {
    assert.ok(error instanceof ResourceClosedError, `expected ResourceClosedError, got ${String(error)}`);
    assert.equal(error.code, 'ERR_RDMACM_CLOSED');
    assert.equal(error.resource, resource, error.message);
    assert.equal(error.parameter, parameter, error.message);
    return true;
  });
}
