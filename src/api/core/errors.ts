// The safe API's error families: native (RdmaError), bad input (RdmaArgumentError),
// closed resources (ResourceClosedError), failed work (WorkCompletionError),
// connection-manager events that end an operation (ConnectionError), aborted
// waits (AbortError, as Node's own) and members called on a `this` that is not
// their class's (InvalidThisError, Node's ERR_INVALID_THIS).
import type { z } from 'zod';
export { RdmaError, UnsupportedError, LibraryLoadError } from '../../ffi/errors.js';
export type { MissingPiece } from '../../ffi/diagnosis.js';
export type { Requirement } from '../../ffi/load-errors.js';

/** One broken rule: where (a parameter path like 'options.qp.sendWr') and what. */
export interface ArgumentIssue {
  readonly path: string;
  readonly rule: string;
}

/** A caller passed a bad argument; nothing reached native code. */
export class RdmaArgumentError extends TypeError {
  override name = 'RdmaArgumentError';
  readonly code = 'ERR_RDMACM_ARGUMENT';
  constructor(
    readonly operation: string,
    readonly issues: readonly ArgumentIssue[],
  ) {
    super(`${operation}: ${issues.map((i) => `${i.path}: ${i.rule}`).join('; ')}`);
  }

  /** @internal From zod's issues, with paths rooted at the parameter's name. */
  static fromZod(operation: string, parameter: string, error: z.core.$ZodError): RdmaArgumentError {
    return new RdmaArgumentError(
      operation,
      error.issues.map((issue) => ({
        path: [parameter, ...issue.path.map(String)].join('.'),
        rule: issue.message,
      })),
    );
  }
}

/**
 * A resource was used after close() (its own, or a parent's): called, or passed
 * to a call. Every use of a closed resource throws this, never
 * RdmaArgumentError, which is for values wrong in themselves; `parameter`
 * names the argument when the closed resource was one.
 */
export class ResourceClosedError extends Error {
  override name = 'ResourceClosedError';
  readonly code = 'ERR_RDMACM_CLOSED';
  constructor(
    /** What is closed: 'queue pair', 'memory region', … */
    readonly resource: string,
    operation: string,
    /** What to do instead, when there is something. */
    hint?: string,
    /** The parameter path ('pd', 'options.ud.ah') when the closed resource was passed as an argument. */
    readonly parameter?: string,
  ) {
    super(`${operation}: the ${resource}${parameter ? ` passed as ${parameter}` : ''} is closed${hint ? `; ${hint}` : ''}`);
  }
}

/**
 * An operation stopped by its AbortSignal, shaped as Node's own APIs reject
 * (timers/promises, events.once, fs): name 'AbortError', code 'ABORT_ERR',
 * the message Node uses, and the signal's reason as `cause`. Not a
 * DOMException: its numeric `code` is what Node's errors do not have.
 */
export class AbortError extends Error {
  override name = 'AbortError';
  readonly code = 'ABORT_ERR';
  constructor(message = 'The operation was aborted', options?: { cause?: unknown }) {
    super(message, options);
  }
}

/**
 * A method, getter or setter was called on a `this` that is not an instance
 * of its class made by this package: `Object.create(QueuePair.prototype)`, an
 * object given the prototype, a Proxy of an instance (which has none of its
 * private state), or an instance of another class (`call`, `apply`, a method
 * detached from its object). Shaped as Node's own classes throw it
 * (`URLSearchParams.prototype.get.call({})`): a TypeError with code
 * 'ERR_INVALID_THIS' and the message Node uses. Nothing reached native code.
 */
export class InvalidThisError extends TypeError {
  readonly code = 'ERR_INVALID_THIS';
  /** @param type - The class the member belongs to: 'QueuePair', 'Resource', … */
  constructor(type: string) {
    super(`Value of "this" must be of type ${type}`);
  }
}

/** The AbortError for an aborted `signal`: its reason becomes the cause. */
export function abortError(signal: AbortSignal): AbortError {
  return new AbortError(undefined, { cause: signal.reason });
}
