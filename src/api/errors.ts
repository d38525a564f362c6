// The safe API's error families: native (RdmaError), bad input (RdmaArgumentError),
// closed resources (ResourceClosedError), failed work (WorkCompletionError) and
// connection-manager events that end an operation (ConnectionError).
import type { z } from 'zod';
export { RdmaError, UnsupportedError, LibraryLoadError } from '../ffi/errors.js';
export type { MissingPiece } from '../ffi/diagnosis.js';
export type { Requirement } from '../ffi/load-errors.js';

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

  /** From zod's issues, with paths rooted at the parameter's name. */
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

/** A resource was used after close() (its own, or a parent's). */
export class ResourceClosedError extends Error {
  override name = 'ResourceClosedError';
  readonly code = 'ERR_RDMACM_CLOSED';
  constructor(
    readonly resource: string,
    operation: string,
    /** What to do instead, when there is something. */
    hint?: string,
  ) {
    super(`${operation}: the ${resource} is closed${hint ? `; ${hint}` : ''}`);
  }
}
