// Registered memory (struct ibv_mr). The region holds the JavaScript memory it
// registered, so that memory can neither be freed nor moved while the device
// may touch it, and marks it untransferable (core/untransferable.ts), so
// postMessage or structuredClone cannot detach it; after deregister() any
// post that names the region is refused before native code.
import { Buffer } from 'node:buffer';
import koffi from 'koffi';
import { libibverbs } from '../../ffi/libibverbs.js';
import { RdmaError, checkVerbs } from '../../ffi/errors.js';
import type { Pointer } from '../../ffi/library.js';
import { ibv_mr } from '../../structs/verbs-resources.js';
import type { AccessName } from '../core/enums.js';
import { Resource, handleToRelease } from '../core/resource.js';
import { InvalidThisError, asObject } from '../core/errors.js';
import { z } from 'zod';
import { parseArgument } from '../core/validate.js';
import { assertInternal, type Internal } from '../core/internal.js';
import { markUntransferable, noteAllocated } from '../core/untransferable.js';

const PAGE_SIZE = 4096;
const LKEY = koffi.offsetof(ibv_mr, 'lkey');
const RKEY = koffi.offsetof(ibv_mr, 'rkey');

/** What a peer needs to reach a region with RDMA read/write: its address, rkey and length. */
export interface RemoteRegion {
  readonly address: bigint;
  readonly rkey: number;
  readonly length: number;
}

const pageAlignedSize = z.number().int().min(1, 'at least 1 byte').max(2 ** 40);

export class MemoryRegion extends Resource {
  /** The brand every member checks first (`#brand in asObject(this)`): only the instances this package made have it. */
  readonly #brand = true;
  /** The registered memory. Valid for as long as this object is reachable. */
  readonly buffer: Buffer;
  /** The memory's native address. */
  readonly address: bigint;
  readonly length: number;
  readonly lkey: number;
  readonly rkey: number;
  /** The access this region was registered with. */
  readonly access: readonly AccessName[];

  private constructor(handle: Pointer, pd: Resource, buffer: Buffer, address: bigint, access: readonly AccessName[]) {
    super('memory region', handle, pd);
    this.buffer = buffer;
    this.address = address;
    this.length = buffer.byteLength;
    this.lkey = koffi.decode(handle, LKEY, 'uint32_t') as number;
    this.rkey = koffi.decode(handle, RKEY, 'uint32_t') as number;
    this.access = access;
  }

  /** @internal ibv_reg_mr; arguments are validated by the caller. */
  static register(key: Internal, pd: Resource, pdHandle: Pointer, memory: Uint8Array, access: readonly AccessName[], accessMask: number): MemoryRegion {
    assertInternal(key, 'MemoryRegion.register', 'use pd.register() or id.regMsgs()');
    // Reading .buffer moves a small on-heap typed array off the heap for good, so its address is stable.
    // A transfer would detach the ArrayBuffer and let its memory be freed under
    // the registration; once marked, postMessage and structuredClone cannot.
    // The mark is for good (there is no unmarking), and Node's Buffer pool
    // (small Buffer.from/allocUnsafe) is marked already. It does not stop a
    // web-stream BYOB read, nor Node 22's ArrayBuffer.prototype.transfer()
    // (Node 24 refuses it), which detach anyway.
    markUntransferable(memory.buffer);
    const buffer = Buffer.isBuffer(memory) ? memory : Buffer.from(memory.buffer, memory.byteOffset, memory.byteLength);
    const address = koffi.address(buffer);
    const handle = libibverbs.ibv_reg_mr(pdHandle, address, buffer.byteLength, accessMask);
    if (handle === null || handle === 0n) throw new RdmaError('ibv_reg_mr', koffi.errno() || 12);
    return new MemoryRegion(handle, pd, buffer, address, access);
  }

  /** A page-aligned Buffer of `size` bytes whose memory the garbage collector owns (never freed under a view). */
  static pageAligned(size: number): Buffer {
    parseArgument('MemoryRegion.pageAligned', 'size', pageAlignedSize, size);
    const slab = Buffer.allocUnsafeSlow(size + PAGE_SIZE);
    noteAllocated(slab.buffer);
    const misalignment = Number(koffi.address(slab) % BigInt(PAGE_SIZE));
    const start = misalignment === 0 ? 0 : PAGE_SIZE - misalignment;
    return slab.subarray(start, start + size).fill(0);
  }

  /** The protection domain this region belongs to. */
  get protectionDomain(): Resource {
    if (!(#brand in asObject(this))) throw new InvalidThisError('MemoryRegion');
    return this.parent!;
  }

  /** The remote descriptor to hand a peer (only useful with REMOTE_READ/WRITE access). */
  get remote(): RemoteRegion {
    if (!(#brand in asObject(this))) throw new InvalidThisError('MemoryRegion');
    this.ensureOpen('remote');
    return { address: this.address, rkey: this.rkey, length: this.length };
  }

  /** ibv_dereg_mr. Same as close(). */
  deregister(): void {
    if (!(#brand in asObject(this))) throw new InvalidThisError('MemoryRegion');
    this.close();
  }

  protected release(): void {
    if (!(#brand in asObject(this))) throw new InvalidThisError('MemoryRegion');
    checkVerbs('ibv_dereg_mr', libibverbs.ibv_dereg_mr(handleToRelease(this, 'MemoryRegion')));
  }
}
