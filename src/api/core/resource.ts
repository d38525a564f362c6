// What every safe resource shares: one native handle, a parent it keeps alive,
// children (and users) it closes first, idempotent close(), `using` support,
// and a ResourceClosedError for any use after close.
import process from 'node:process';
import { ResourceClosedError } from './errors.js';
import type { Pointer } from '../../ffi/library.js';

const leakWarnings = new FinalizationRegistry<string>((description) => {
  process.emitWarning(`${description} was garbage-collected without close(); its native resources leaked`, {
    code: 'RDMACM_LEAK',
  });
});

export abstract class Resource {
  #handle: Pointer;
  #closed = false;
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

  /** Whether close() has run (on this resource or a parent). */
  get closed(): boolean {
    return this.#closed;
  }

  /** The native pointer. Unsafe: it dangles after close(). */
  get unsafeHandle(): Pointer {
    this.ensureOpen('unsafeHandle');
    return this.#handle;
  }

  /** Moves this resource under another parent (rdma_migrate_id moves an id to another channel). */
  protected reparent(parent: Resource | undefined): void {
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
    resource.ensureOpen(`create a ${this.kind} on it`);
    (resource.#users ??= new Set()).add(this);
    (this.#used ??= []).push(resource);
  }

  /** Throws ResourceClosedError when closed. */
  protected ensureOpen(operation: string): void {
    if (this.#closed) throw new ResourceClosedError(this.kind, operation);
  }

  /** The handle, for this resource's own native calls. */
  protected get handle(): Pointer {
    return this.#handle;
  }

  /** Closes children and users (newest first), then frees this resource's native object. Idempotent. */
  close(): void {
    if (this.#closed) return;
    let firstError: unknown;
    const dependents = [...(this.#children ?? []), ...(this.#users ?? [])];
    for (let i = dependents.length - 1; i >= 0; i--) {
      try {
        dependents[i]!.close();
      } catch (error) {
        firstError ??= error;
      }
    }
    this.#closed = true;
    leakWarnings.unregister(this);
    try {
      this.release();
    } catch (error) {
      firstError ??= error;
    } finally {
      if (this.parent) this.parent.#children!.delete(this);
      if (this.#used) for (const resource of this.#used) resource.#users!.delete(this);
    }
    if (firstError !== undefined) throw firstError;
  }

  [Symbol.dispose](): void {
    this.close();
  }

  /** Frees the native object; called once, after the children are closed. */
  protected abstract release(): void;
}
