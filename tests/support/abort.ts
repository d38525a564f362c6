// What an aborted operation rejects with: Node's own AbortError shape.
import assert from 'node:assert/strict';
import { AbortError } from '../../src/index.js';

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
