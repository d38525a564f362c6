// Node's stream members read the stream's internal state unchecked: called on
// a forged receiver (Object.create(RdmaSocket.prototype), a Proxy, another
// class's instance) they throw a bare TypeError, reject with one, or crash the
// process from a later tick. guardInherited gives a class its own copy of each
// such member that checks the receiver first, as the class's own members do.
import { InvalidThisError } from '../api/core/errors.js';

type AnyFunction = (this: unknown, ...args: unknown[]) => unknown;

/** Node's own async functions (the stream helpers every, toArray, …): refused by a rejection, as they fail. */
const isAsync = (fn: AnyFunction) => (fn as { [Symbol.toStringTag]?: string })[Symbol.toStringTag] === 'AsyncFunction';

/** `fn` behind the receiver check, keeping its name and length (what stream.pipeline and friends may read). */
function guarded(fn: AnyFunction, isInstance: (value: unknown) => boolean, type: string): AnyFunction {
  const wrapper = isAsync(fn)
    ? function (this: unknown, ...args: unknown[]) {
      if (!isInstance(this)) return Promise.reject(new InvalidThisError(type));
      return Reflect.apply(fn, this, args);
    }
    : function (this: unknown, ...args: unknown[]) {
      if (!isInstance(this)) throw new InvalidThisError(type);
      return Reflect.apply(fn, this, args);
    };
  Object.defineProperty(wrapper, 'name', { value: fn.name });
  Object.defineProperty(wrapper, 'length', { value: fn.length });
  return wrapper;
}

/**
 * Defines on `prototype` a checked copy of every method, getter and setter it
 * inherits from the prototypes below `upTo` (not included) that it does not
 * define itself. EventEmitter's members are generic (they work on any object
 * and type their own errors), so classes pass EventEmitter.prototype as `upTo`.
 */
export function guardInherited(prototype: object, upTo: object, type: string, isInstance: (value: unknown) => boolean): void {
  const seen = new Set<PropertyKey>(Reflect.ownKeys(prototype));
  for (let p = Object.getPrototypeOf(prototype) as object | null; p && p !== upTo; p = Object.getPrototypeOf(p) as object | null) {
    for (const key of Reflect.ownKeys(p)) {
      if (seen.has(key) || key === 'constructor') continue;
      seen.add(key);
      const inherited = Object.getOwnPropertyDescriptor(p, key)!;
      if (typeof inherited.value === 'function') {
        Object.defineProperty(prototype, key, { ...inherited, value: guarded(inherited.value as AnyFunction, isInstance, type) });
      } else if (inherited.get || inherited.set) {
        Object.defineProperty(prototype, key, {
          ...inherited,
          get: inherited.get && guarded(inherited.get as AnyFunction, isInstance, type),
          set: inherited.set && guarded(inherited.set as AnyFunction, isInstance, type),
        });
      }
    }
  }
}
