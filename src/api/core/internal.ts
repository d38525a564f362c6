// A key that only this package's own modules hold. The classes are exported (for
// instanceof and types), but their constructors and handle-wrapping factories
// take raw pointers; without the key a caller gets an argument error instead of
// a way to hand native code a bad pointer.
import { argumentError } from './validate.js';

/** @internal */
export const internal: unique symbol = Symbol('rdmacm.internal');
/** @internal */
export type Internal = typeof internal;

/** @internal */
export function assertInternal(key: unknown, what: string, instead: string): void {
  if (key !== internal) throw argumentError(what, 'this', `${what} is internal to rdmacm: ${instead}`, 'ERR_INVALID_ARG_VALUE');
}
