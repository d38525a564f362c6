// Bound calls, opt-in: a prepared request's post and a CQ's poll keep their
// three arguments in native memory and are called through a 32-byte stub of
// x86-64 code that the binding writes into a page it then makes executable
// (src/ffi/bound-call.ts). Off unless asked for.
import { z } from 'zod';
import { boundCallsRequested, boundCallsUnavailable, probeBoundCalls, setBoundCalls as chooseBoundCalls } from '../../ffi/bound-call.js';
import { parseArgument } from '../core/validate.js';

const enabledSchema = z.boolean();

/** Whether requests prepared, and completion queues first polled, from now on use bound calls. */
export interface BoundCallStatus {
  /**
   * Asked for: `setBoundCalls(true)`, or `RDMACM_BOUND_CALLS=1` in the
   * environment when setBoundCalls was not called (read once, at the first
   * request or queue that could use them, or the first status asked for).
   */
  readonly enabled: boolean;
  /** Enabled and working here: posts and polls prepared from now on are bound. */
  readonly active: boolean;
  /** Why they are not active (not asked for, not x86-64, executable memory refused, libc not loaded). */
  readonly reason?: string;
}

/**
 * Whether bound calls are asked for and work on this system. Where they are
 * enabled, the first call sets up the stub (maps a page, writes 32 bytes of
 * code, makes it executable), as the first bound post would.
 */
export function boundCallStatus(): BoundCallStatus {
  if (!boundCallsRequested()) return { enabled: false, active: false, reason: boundCallsUnavailable()! };
  const reason = probeBoundCalls();
  return reason === undefined ? { enabled: true, active: true } : { enabled: true, active: false, reason };
}

/**
 * Turns bound calls on or off for requests prepared, and completion queues
 * first polled, from now on (the others keep their kind); wins over
 * `RDMACM_BOUND_CALLS`. Where they cannot work, calls stay plain and the status
 * says why: no error, since the plain calls do the same thing a little slower.
 */
export function setBoundCalls(enabled: boolean): BoundCallStatus {
  chooseBoundCalls(parseArgument('setBoundCalls', 'enabled', enabledSchema, enabled));
  return boundCallStatus();
}
