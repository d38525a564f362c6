// The safe API's error families: native (RdmaError), bad input (RdmaArgumentError),
// closed resources (ResourceClosedError), failed work (WorkCompletionError),
// connection-manager events that end an operation (ConnectionError), aborted
// waits (AbortError, as Node's own) and members called on a `this` that is not
// their class's (InvalidThisError, Node's ERR_INVALID_THIS).
import type { z } from 'zod';
export { RdmaError, UnsupportedError, LibraryLoadError } from '../../ffi/errors.js';
export type { MissingPiece } from '../../ffi/diagnosis.js';
export type { Requirement } from '../../ffi/load-errors.js';

/**
 * Node's code for a bad argument, as its own APIs use them:
 * `ERR_INVALID_ARG_TYPE` (not the kind of value asked for: a string for a
 * number, a plain object for a ProtectionDomain), `ERR_OUT_OF_RANGE` (a
 * number or size outside its bounds, a fraction, NaN), `ERR_INVALID_ARG_VALUE`
 * (the right kind but a value the operation cannot take: an unknown enum
 * name or option, a call in the wrong state for it) and, on sockets,
 * node:net's `ERR_SOCKET_BAD_PORT` and `ERR_UNKNOWN_ENCODING`.
 */
export type ArgumentErrorCode = 'ERR_INVALID_ARG_TYPE' | 'ERR_INVALID_ARG_VALUE' | 'ERR_OUT_OF_RANGE' | 'ERR_SOCKET_BAD_PORT' | 'ERR_UNKNOWN_ENCODING';

/** One broken rule: where (a parameter path like 'options.qp.sendWr'), what, and Node's code for it. */
export interface ArgumentIssue {
  readonly path: string;
  readonly rule: string;
  readonly code: ArgumentErrorCode;
}

/**
 * A caller passed a bad argument; nothing reached native code. `code` is
 * Node's code for the first issue (see ArgumentErrorCode); `issues` lists
 * every broken rule.
 */
export class RdmaArgumentError extends TypeError {
  override name = 'RdmaArgumentError';
  readonly code: ArgumentErrorCode;
  constructor(
    readonly operation: string,
    readonly issues: readonly ArgumentIssue[],
  ) {
    super(`${operation}: ${issues.map((i) => `${i.path}: ${i.rule}`).join('; ')}`);
    this.code = issues[0]?.code ?? 'ERR_INVALID_ARG_VALUE';
  }

  /** @internal From zod's issues, with paths rooted at the parameter's name. */
  static fromZod(operation: string, parameter: string, error: z.core.$ZodError): RdmaArgumentError {
    return new RdmaArgumentError(
      operation,
      error.issues.map((issue) => ({
        path: [parameter, ...issue.path.map(String)].join('.'),
        rule: issue.message,
        code: nodeCodeOf(issue),
      })),
    );
  }
}

/**
 * Node's code for one zod issue. A fraction, NaN or infinity fails zod's type
 * check but is a number out of range to Node, as a number past its bounds is;
 * a custom check names its code in `params.code` (the class checks say
 * ERR_INVALID_ARG_TYPE), else it is a value rule.
 */
function nodeCodeOf(issue: z.core.$ZodIssue): ArgumentErrorCode {
  switch (issue.code) {
    case 'invalid_type':
      return (issue.expected === 'number' || issue.expected === 'int') && typeof issue.input === 'number' ? 'ERR_OUT_OF_RANGE' : 'ERR_INVALID_ARG_TYPE';
    case 'invalid_union': {
      // The value had a branch's type if some branch failed it for something else (family 5 is no literal 0, 4 or 6).
      const codes = issue.errors.map((branch) => (branch[0] ? nodeCodeOf(branch[0]) : 'ERR_INVALID_ARG_TYPE'));
      return codes.find((code) => code !== 'ERR_INVALID_ARG_TYPE') ?? 'ERR_INVALID_ARG_TYPE';
    }
    case 'too_big':
    case 'too_small':
      // A number's bounds; a string's or a list's length is a value rule (an empty name).
      return issue.origin === 'number' || issue.origin === 'int' || issue.origin === 'bigint' ? 'ERR_OUT_OF_RANGE' : 'ERR_INVALID_ARG_VALUE';
    case 'not_multiple_of':
      return 'ERR_OUT_OF_RANGE';
    case 'custom':
      return (issue.params?.code as ArgumentErrorCode | undefined) ?? 'ERR_INVALID_ARG_VALUE';
    default:
      return 'ERR_INVALID_ARG_VALUE';
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

const NOT_AN_OBJECT = Object.freeze({});

/**
 * `value` if it is an object (a function included), else an object with no
 * private fields: `#brand in asObject(this)` is false for a primitive `this`,
 * where `#brand in this` throws a bare TypeError. Object(this) did the same,
 * but optimized code kept calling the Object builtin for it (2-2.5 % of a
 * busy ping-pong's samples in the soft-RoCE guest); these compares compile inline.
 */
export function asObject(value: unknown): object {
  return (typeof value === 'object' && value !== null) || typeof value === 'function' ? (value as object) : NOT_AN_OBJECT;
}

/** The AbortError for an aborted `signal`: its reason becomes the cause. */
export function abortError(signal: AbortSignal): AbortError {
  return new AbortError(undefined, { cause: signal.reason });
}
