// A protection domain (struct ibv_pd): the scope of memory registrations and
// queue pairs. Owned when allocated here; borrowed when librdmacm made it for
// an id (rdma_create_ep / rdma_create_qp without a PD) and destroys it itself.
import { z } from 'zod';
import { libibverbs } from '../../ffi/libibverbs.js';
import { checkPointer, checkVerbs } from '../../ffi/errors.js';
import type { Pointer } from '../../ffi/library.js';
import { Access, flagMask, type AccessName } from '../core/enums.js';
import { Resource, handleToRelease } from '../core/resource.js';
import { InvalidThisError, asObject } from '../core/errors.js';
import { assertInternal, internal, type Internal } from '../core/internal.js';
import { MemoryRegion } from './memory-region.js';
import { AddressHandle } from './address-handle.js';
import type { IbvAhAttr } from '../../structs/verbs-resources.js';
import { argumentError, parseArgument, registrableBytes } from '../core/validate.js';

const accessSchema = z.array(z.enum(Access.names as [AccessName, ...AccessName[]])).default(['LOCAL_WRITE']);
const sizeSchema = z.number().int().min(1, 'a region needs at least 1 byte').max(2 ** 40);

export class ProtectionDomain extends Resource {
  /** The brand every member checks first (`#brand in asObject(this)`): only the instances this package made have it. */
  readonly #brand = true;
  private constructor(
    handle: Pointer,
    parent: Resource,
    /** False for librdmacm's own PD of an id. */
    readonly owned: boolean,
  ) {
    super('protection domain', handle, parent);
  }

  /** @internal ibv_alloc_pd on a device context (see DeviceContext.allocPd). */
  static allocate(key: Internal, context: Resource, contextHandle: Pointer): ProtectionDomain {
    assertInternal(key, 'ProtectionDomain.allocate', 'use DeviceContext.allocPd()');
    return new ProtectionDomain(checkPointer('ibv_alloc_pd', libibverbs.ibv_alloc_pd(contextHandle)), context, true);
  }

  /** @internal Wraps the PD librdmacm created for an id; closing it only deregisters its regions. */
  static borrow(key: Internal, handle: Pointer, owner: Resource): ProtectionDomain {
    assertInternal(key, 'ProtectionDomain.borrow', 'use id.pd');
    return new ProtectionDomain(handle, owner, false);
  }

  /**
   * Registers `buffer` (ibv_reg_mr). The region holds the buffer, so the memory
   * stays valid and unmoved while registered. Access defaults to LOCAL_WRITE:
   * remote access only when asked for by name.
   * @param access - The access rights by name (LOCAL_WRITE, REMOTE_WRITE,
   *   REMOTE_READ, REMOTE_ATOMIC, …); remote writes and atomics need LOCAL_WRITE too.
   *   Default `['LOCAL_WRITE']`.
   */
  register(buffer: Uint8Array, access?: readonly AccessName[]): MemoryRegion {
    if (!(#brand in asObject(this))) throw new InvalidThisError('ProtectionDomain');
    const operation = 'ProtectionDomain.register';
    this.ensureOpen(operation);
    const memory = parseArgument(operation, 'buffer', registrableBytes, buffer);
    if (memory.byteLength === 0) throw argumentError(operation, 'buffer', 'cannot register an empty buffer', 'ERR_INVALID_ARG_VALUE');
    const names = parseArgument(operation, 'access', accessSchema, access);
    return MemoryRegion.register(internal, this, this.handle, memory, names, flagMask(Access, names));
  }

  /**
   * Allocates page-aligned memory and registers it; `region.buffer` is the view to use.
   * @param access - As for register(); default `['LOCAL_WRITE']`.
   */
  allocate(size: number, access?: readonly AccessName[]): MemoryRegion {
    if (!(#brand in asObject(this))) throw new InvalidThisError('ProtectionDomain');
    const operation = 'ProtectionDomain.allocate';
    // Checked before the memory is allocated: a closed PD or bad access names would refuse only after (up to 1 TiB).
    this.ensureOpen(operation);
    const bytes = parseArgument(operation, 'size', sizeSchema, size);
    parseArgument(operation, 'access', accessSchema, access);
    return this.register(MemoryRegion.pageAligned(bytes), access);
  }

  /** rdma_reg_msgs: LOCAL_WRITE. */
  regMsgs(buffer: Uint8Array): MemoryRegion {
    if (!(#brand in asObject(this))) throw new InvalidThisError('ProtectionDomain');
    return this.register(buffer, ['LOCAL_WRITE']);
  }

  /** rdma_reg_read: LOCAL_WRITE | REMOTE_READ. */
  regRead(buffer: Uint8Array): MemoryRegion {
    if (!(#brand in asObject(this))) throw new InvalidThisError('ProtectionDomain');
    return this.register(buffer, ['LOCAL_WRITE', 'REMOTE_READ']);
  }

  /** rdma_reg_write: LOCAL_WRITE | REMOTE_WRITE. */
  regWrite(buffer: Uint8Array): MemoryRegion {
    if (!(#brand in asObject(this))) throw new InvalidThisError('ProtectionDomain');
    return this.register(buffer, ['LOCAL_WRITE', 'REMOTE_WRITE']);
  }

  /** An address handle for UD sends (ibv_create_ah), e.g. from `established.ud.ahAttr`; AddressHandle.create validates `attr`. */
  createAh(attr: IbvAhAttr): AddressHandle {
    if (!(#brand in asObject(this))) throw new InvalidThisError('ProtectionDomain');
    this.ensureOpen('createAh');
    return AddressHandle.create(internal, this, this.handle, attr);
  }

  protected release(): void {
    if (!(#brand in asObject(this))) throw new InvalidThisError('ProtectionDomain');
    const handle = handleToRelease(this, 'ProtectionDomain');
    if (this.owned) checkVerbs('ibv_dealloc_pd', libibverbs.ibv_dealloc_pd(handle));
  }
}
