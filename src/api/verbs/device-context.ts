// An open RDMA device (struct ibv_context): owned when opened here, borrowed
// when it belongs to a connection-manager id (librdmacm closes those).
import { Buffer } from 'node:buffer';
import { accessSync, constants } from 'node:fs';
import koffi from 'koffi';
import { z } from 'zod';
import { libibverbs } from '../../ffi/libibverbs.js';
import { checkPointer, checkVerbs, errnoName, RdmaError } from '../../ffi/errors.js';
import { forgetContextOps } from '../../ffi/inline-verbs.js';
import { readPointer, readPointerArray, type Pointer } from '../../ffi/library.js';
import { ibv_device, ibv_device_attr, type IbvDevice, type IbvDeviceAttr } from '../../structs/verbs-device.js';
import { ibv_context } from '../../structs/verbs-resources.js';
import { Resource, handleToRelease } from '../core/resource.js';
import { InvalidThisError, asObject } from '../core/errors.js';
import { argumentError, count, cString, instanceCheck, parseArgument, type Holds, type InputIs } from '../core/validate.js';
import { assertInternal, internal, type Internal } from '../core/internal.js';
import { ProtectionDomain } from './protection-domain.js';
import { CompletionQueue } from '../work/completion-queue.js';
import { CompletionChannel, contextOfChannel } from '../work/completion-channel.js';

/** createCq's options (ibv_create_cq). */
export interface CqOptions {
  /**
   * Completions the queue holds: at least as many as can be outstanding on
   * every QP that shares it; 1 up to the device's maxCqe.
   * @defaultValue 256
   */
  entries?: number;
  /**
   * The queue's completion channel, for next() and waitOne(): true makes one
   * for this queue alone; a CompletionChannel of this device
   * (createCompletionChannel()) shares one fd among many queues; false: none,
   * so only poll() and busy-poll.
   * @defaultValue true
   */
  channel?: boolean | CompletionChannel;
  /**
   * The completion vector (interrupt) to signal, 0 up to the device's num_comp_vectors − 1.
   * @defaultValue 0
   */
  compVector?: number;
}
const cqOptionsSchema = z.strictObject({
  entries: count.default(256),
  channel: z.union([z.boolean(), instanceCheck<CompletionChannel>((value) => Resource.isA(value, CompletionChannel), 'expected a boolean or a CompletionChannel of this device')]).default(true),
  compVector: z.number().int().min(0).max(0x7fffffff).default(0),
});
type CqOptionsTied = Holds<InputIs<typeof cqOptionsSchema, CqOptions>>;

/** The device limits the safe API validates against. */
export interface DeviceLimits {
  readonly maxQpWr: number;
  readonly maxSge: number;
  readonly maxCqe: number;
  readonly maxQpRdAtom: number;
  readonly maxMrSize: bigint;
}

const ENODEV = 19;
const EACCES = 13;

/**
 * ibv_open_device's failure for `device`, read at once after the call. When
 * the device file cannot be opened, libibverbs looks for it elsewhere and
 * leaves errno at what that search found (ENOENT): so a file this process may
 * not read and write is reported as the EACCES it is, naming the file.
 */
export function openDeviceError(device: Pointer): RdmaError {
  const errno = koffi.errno() || 5; // EIO
  const { name, dev_name: file } = koffi.decode(device, ibv_device) as IbvDevice;
  const path = `/dev/infiniband/${file}`;
  if (errno !== EACCES) {
    try {
      accessSync(path, constants.R_OK | constants.W_OK);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EACCES') {
        return new RdmaError('ibv_open_device', EACCES, `device ${name}: this process may not read and write ${path} (libibverbs reported ${errnoName(errno)})`);
      }
    }
  }
  return new RdmaError('ibv_open_device', errno, `device ${name}`);
}

/** Limits by ibv_context: a device's limits never change, and every id on it asks. */
const limitsByContext = new Map<Pointer, DeviceLimits>();

/** ibv_query_device's limits of an open context, queried once per context. */
export function deviceLimits(context: Pointer): DeviceLimits {
  let limits = limitsByContext.get(context);
  if (!limits) {
    const attr = Buffer.alloc(ibv_device_attr.size);
    checkVerbs('ibv_query_device', libibverbs.ibv_query_device(context, attr));
    const decoded = koffi.decode(attr, ibv_device_attr) as IbvDeviceAttr;
    limits = {
      maxQpWr: decoded.max_qp_wr,
      maxSge: decoded.max_sge,
      maxCqe: decoded.max_cqe,
      maxQpRdAtom: decoded.max_qp_rd_atom,
      maxMrSize: BigInt(decoded.max_mr_size),
    };
    limitsByContext.set(context, limits);
  }
  return limits;
}

export class DeviceContext extends Resource {
  /** The brand every member checks first (`#brand in asObject(this)`): only the instances this package made have it. */
  readonly #brand = true;

  private constructor(
    handle: Pointer,
    /** False for a context librdmacm owns (from a CmId): never closed here. */
    readonly owned: boolean,
  ) {
    super('device context', handle, undefined, { warnOnLeak: owned });
  }

  /** @internal Wraps a context that librdmacm owns (rdma_cm_id->verbs). */
  static borrow(key: Internal, handle: Pointer): DeviceContext {
    assertInternal(key, 'DeviceContext.borrow', 'use id.device or DeviceContext.open()');
    return new DeviceContext(handle, false);
  }

  /** Opens a device from ibv_get_device_list by name (default: the first). */
  static open(name?: string): DeviceContext {
    parseArgument('DeviceContext.open', 'name', cString.optional(), name);
    const count = Buffer.alloc(4);
    const list = checkPointer('ibv_get_device_list', libibverbs.ibv_get_device_list(count));
    try {
      const devices = readPointerArray(list, count.readInt32LE(0));
      const device = devices.find((d) => name === undefined || libibverbs.ibv_get_device_name(d) === name);
      if (device === undefined) {
        // None at all: ENODEV's own hint (how to make one). Some, but not this name: say which there are.
        const known = devices.map((d) => libibverbs.ibv_get_device_name(d) ?? '?');
        if (known.length === 0) throw new RdmaError('ibv_open_device', ENODEV, name === undefined ? undefined : `no device named ${name}`);
        throw new RdmaError('ibv_open_device', ENODEV, `no device named ${name}`, {
          hint: `this host's RDMA device${known.length === 1 ? ' is' : 's are'} ${known.join(', ')}: pass one of those names, or none for the first`,
        });
      }
      const context = libibverbs.ibv_open_device(device);
      if (context === null || context === 0n) throw openDeviceError(device);
      return new DeviceContext(context, true);
    } finally {
      libibverbs.ibv_free_device_list(list);
    }
  }

  /** The device's name, e.g. 'rxe0'. */
  get name(): string {
    if (!(#brand in asObject(this))) throw new InvalidThisError('DeviceContext');
    this.ensureOpen('name');
    const device = readPointer(this.handle, koffi.offsetof(ibv_context, 'device'));
    return libibverbs.ibv_get_device_name(device) ?? '';
  }

  /** ibv_query_device's limits, queried once. */
  get limits(): DeviceLimits {
    if (!(#brand in asObject(this))) throw new InvalidThisError('DeviceContext');
    this.ensureOpen('limits');
    return deviceLimits(this.handle);
  }

  /** Allocates a protection domain on this device (ibv_alloc_pd). */
  allocPd(): ProtectionDomain {
    if (!(#brand in asObject(this))) throw new InvalidThisError('DeviceContext');
    this.ensureOpen('allocPd');
    return ProtectionDomain.allocate(internal, this, this.handle);
  }

  /**
   * A completion queue of your own on this device (ibv_create_cq), to share
   * between queue pairs: pass it as `sendCq` and/or `recvCq` to id.createQp().
   * Its queue pairs close before it does. For an id's device, use id.device.
   */
  createCq(options: CqOptions = {}): CompletionQueue {
    if (!(#brand in asObject(this))) throw new InvalidThisError('DeviceContext');
    const operation = 'ibv_create_cq';
    this.ensureOpen(operation);
    const o = parseArgument(operation, 'options', cqOptionsSchema, options);
    const { maxCqe } = deviceLimits(this.handle);
    if (o.entries > maxCqe) throw argumentError(operation, 'options.entries', `this device allows at most ${maxCqe} entries per completion queue`, 'ERR_OUT_OF_RANGE');
    const vectors = koffi.decode(this.handle, koffi.offsetof(ibv_context, 'num_comp_vectors'), 'int') as number;
    if (o.compVector >= vectors) throw argumentError(operation, 'options.compVector', `this device has ${vectors} completion vector(s): 0–${vectors - 1}`, 'ERR_OUT_OF_RANGE');
    if (o.channel instanceof CompletionChannel) {
      if (o.channel.closed) throw argumentError(operation, 'options.channel', 'the completion channel is closed', 'ERR_INVALID_ARG_VALUE');
      if (contextOfChannel(o.channel) !== this.handle) throw argumentError(operation, 'options.channel', 'the completion channel belongs to another device', 'ERR_INVALID_ARG_VALUE');
    }
    return CompletionQueue.create(internal, this, this.handle, o.entries, o.channel, o.compVector);
  }

  /**
   * A completion channel (ibv_create_comp_channel) that many completion
   * queues share: pass it as createCq({ channel }). One fd and one libuv watch
   * serve them all, each event reaching its own queue: a server with many
   * connections watches one fd, not one per queue. Its queues close before it.
   */
  createCompletionChannel(): CompletionChannel {
    if (!(#brand in asObject(this))) throw new InvalidThisError('DeviceContext');
    this.ensureOpen('ibv_create_comp_channel');
    return CompletionChannel.create(internal, this, this.handle);
  }

  protected release(): void {
    if (!(#brand in asObject(this))) throw new InvalidThisError('DeviceContext');
    const handle = handleToRelease(this, 'DeviceContext');
    if (!this.owned) return;
    forgetContextOps(handle);
    limitsByContext.delete(handle);
    checkVerbs('ibv_close_device', libibverbs.ibv_close_device(handle));
  }
}
