// What every safe resource shares: one native handle, a parent it keeps alive,
// children (and users) it closes first, idempotent close(), `using` support,
// a ResourceClosedError for any use after close, and an InvalidThisError for
// any member called on a `this` that is not one.
//
// The receiver check. A member can be called on any `this` (`call`, a method
// detached from its object, `Object.create(QueuePair.prototype)`, an object
// given the prototype, a Proxy): such a `this` has none of the private fields,
// and may have own properties that shadow the prototype's (`handle`,
// `ensureOpen`, `owned`). So every member of every resource class first checks
// the brand of the class that defines it, `#brand in asObject(this)` (a
// private-brand check: a compare in optimized code; asObject() because `in`
// throws a bare TypeError of its own for a primitive `this`, which a method
// detached and called alone gets), inline, and throws InvalidThisError
// before it reads anything of `this`; a check called through `this` (as
// `this.ensureOpen()`) would be the forged object's own. Resource's own
// members check `#handle`. release() frees the handle only when close() runs
// it (handleToRelease), so no call of it frees a pointer the package did not make.
import process from 'node:process';
import { InvalidThisError, RdmaArgumentError, ResourceClosedError, asObject } from './errors.js';
import type { Pointer } from '../../ffi/library.js';

const leakWarnings = new FinalizationRegistry<string>((description) => {
  process.emitWarning(`${description} was garbage-collected without close(); its native resources leaked`, {
    code: 'RDMACM_LEAK',
  });
});

/**
 * The error of Resource's own members for a `this` that is not a Resource,
 * made out of line: each check stays a few bytes of bytecode, and `closed`
 * (read at every post) small enough for V8 to inline it anywhere.
 */
function notAResource(): InvalidThisError {
  return new InvalidThisError('Resource');
}

/** The resource whose release() close() is running; release() calls none of the caller's JavaScript. */
let releasing: Resource | undefined;

/**
 * @internal For release() implementations, after their brand check: the
 * handle to free, read from the private field (never an own `handle` that
 * shadows the getter). Only while close() runs the resource's release();
 * release() called any other way (it is callable at run time) is refused
 * before it frees anything, so nothing is freed twice.
 */
export let handleToRelease: (resource: Resource, type: string) => Pointer;

/**
 * @internal A resource's closed state, in an object of one shape. Resource's
 * own members read their fields through `this`, whose hidden class is each
 * subclass's own: once a program has used more than four kinds of resource,
 * every such read is a megamorphic lookup, a stub-cache probe (a check took
 * 14-15 ns against 3.5 on the host, 180-250 against 55-115 in the soft-RoCE
 * guest). The post and poll paths keep the Lifetime of what they check
 * (lifetimeOf) and read its `closed`.
 */
export class Lifetime {
  closed = false;
}

/** @internal The Lifetime of `resource`, for a hot path to keep (after its own brand check). */
export let lifetimeOf: (resource: Resource) => Lifetime;

export abstract class Resource {
  /** The native pointer; also the brand Resource's own members check (`#handle in this`). */
  #handle: Pointer;
  readonly #lifetime = new Lifetime();
  /** Made by the first child: most resources (QPs, regions, CQs) never have one. */
  #children: Set<Resource> | undefined;
  /** Resources that use this one without being its children (QPs on a shared CQ); made on first use. */
  #users: Set<Resource> | undefined;
  /** What this resource uses (see use()), to leave when it closes. */
  #used: Resource[] | undefined;
  /** Whether this resource is registered to warn when it is collected without close(). */
  #warnsOnLeak = false;
  /** The parent this resource keeps alive (and that closes it first). */
  protected parent: Resource | undefined;

  protected constructor(
    /** What this is, for messages: 'memory region', 'queue pair', … */
    readonly kind: string,
    handle: Pointer,
    parent: Resource | undefined,
    options: { warnOnLeak?: boolean } = {},
  ) {
    this.#handle = handle;
    this.parent = parent;
    if (parent) {
      parent.ensureOpen(`create a ${kind}`);
      (parent.#children ??= new Set()).add(this);
    }
    // A child is reachable from its parent, so it is never collected first: the
    // warning of the nearest reporting ancestor covers it. Under a parent that
    // warns of nothing (a device librdmacm owns), a child warns itself.
    if (parent ? !parent.#leakReported() : options.warnOnLeak !== false) this.#warnOnLeak();
  }

  /** Whether a leak of this resource is reported: it warns itself, or an ancestor that keeps it alive does. */
  #leakReported(): boolean {
    return this.#warnsOnLeak || (this.parent !== undefined && this.parent.#leakReported());
  }

  #warnOnLeak(): void {
    leakWarnings.register(this, `an rdmacm ${this.kind}`, this);
    this.#warnsOnLeak = true;
  }

  /**
   * Whether `value` is a `type` this package made: instanceof alone passes
   * Object.create(Type.prototype), whose private fields do not exist.
   */
  static isA<T extends Resource>(value: unknown, type: Function & { prototype: T }): value is T {
    return value instanceof type && #handle in value;
  }

  static {
    lifetimeOf = (resource) => resource.#lifetime;
    handleToRelease = (resource, type) => {
      if (!(#handle in resource)) throw new InvalidThisError(type);
      if (releasing !== resource) {
        throw new RdmaArgumentError(`${type}.release`, [{ path: 'this', rule: 'release() is internal to rdmacm: close() runs it, once', code: 'ERR_INVALID_ARG_VALUE' }]);
      }
      return resource.#handle;
    };
  }

  /** Whether close() has run (on this resource or a parent). */
  get closed(): boolean {
    if (!(#handle in asObject(this))) throw notAResource();
    return this.#lifetime.closed;
  }

  /** The native pointer. Unsafe: it dangles after close(). */
  get unsafeHandle(): Pointer {
    if (!(#handle in asObject(this))) throw notAResource();
    this.ensureOpen('unsafeHandle');
    return this.#handle;
  }

  /** Moves this resource under another parent (rdma_migrate_id moves an id to another channel). */
  protected reparent(parent: Resource | undefined): void {
    if (!(#handle in asObject(this))) throw notAResource();
    if (parent === this.parent) return;
    parent?.ensureOpen(`move a ${this.kind}`);
    if (this.parent) this.parent.#children!.delete(this);
    if (parent) (parent.#children ??= new Set()).add(this);
    this.parent = parent;
    if (!this.#leakReported()) this.#warnOnLeak();
  }

  /**
   * Marks this resource as a user of `resource`, which it keeps alive and which
   * closes it first, as a parent would (a QP on a CQ it does not own).
   */
  protected use(resource: Resource): void {
    if (!(#handle in asObject(this))) throw notAResource();
    resource.ensureOpen(`create a ${this.kind} on it`);
    (resource.#users ??= new Set()).add(this);
    (this.#used ??= []).push(resource);
  }

  /** Throws ResourceClosedError when closed. */
  protected ensureOpen(operation: string): void {
    if (!(#handle in asObject(this))) throw notAResource();
    if (this.#lifetime.closed) throw new ResourceClosedError(this.kind, operation);
  }

  /** The handle, for this resource's own native calls. */
  protected get handle(): Pointer {
    if (!(#handle in asObject(this))) throw notAResource();
    return this.#handle;
  }

  /** Closes children and users (newest first), then frees this resource's native object. Idempotent. */
  close(): void {
    if (!(#handle in asObject(this))) throw notAResource();
    if (this.#lifetime.closed) return;
    let firstError: unknown;
    const dependents = [...(this.#children ?? []), ...(this.#users ?? [])];
    for (let i = dependents.length - 1; i >= 0; i--) {
      try {
        dependents[i]!.close();
      } catch (error) {
        firstError ??= error;
      }
    }
    this.#lifetime.closed = true;
    leakWarnings.unregister(this);
    const outer = releasing;
    releasing = this;
    try {
      this.release();
    } catch (error) {
      firstError ??= error;
    } finally {
      releasing = outer;
      if (this.parent) this.parent.#children!.delete(this);
      if (this.#used) for (const resource of this.#used) resource.#users!.delete(this);
    }
    if (firstError !== undefined) throw firstError;
  }

  [Symbol.dispose](): void {
    if (!(#handle in asObject(this))) throw notAResource();
    this.close();
  }

  /**
   * Frees the native object; called once, by close(), after the children are
   * closed. An implementation checks its class's brand first, then frees
   * handleToRelease(this, …), which refuses any call but close()'s.
   */
  protected abstract release(): void;
}
