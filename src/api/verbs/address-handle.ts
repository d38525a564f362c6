// An address handle (struct ibv_ah): where a UD send goes. Made from the UD
// parameters the connection manager reports (ESTABLISHED on a UDP-port-space
// id, MULTICAST_JOIN), or from a received completion to answer its sender.
import { Buffer } from 'node:buffer';
import koffi from 'koffi';
import { libibverbs } from '../../ffi/libibverbs.js';
import { checkPointer, checkVerbs } from '../../ffi/errors.js';
import type { Pointer } from '../../ffi/library.js';
import { ibv_ah_attr, type IbvAhAttr } from '../../structs/verbs-resources.js';
import { ibv_grh } from '../../structs/verbs-work.js';
import { Resource, handleToRelease } from '../core/resource.js';
import { InvalidThisError, asObject } from '../core/errors.js';
import { assertInternal, type Internal } from '../core/internal.js';
import { encodeWorkCompletion, type WorkCompletion } from '../work/work-completion.js';
import { WcFlag, type WcFlagName } from '../core/enums.js';
import { z } from 'zod';
import { ahAttrSchema, argumentError, bytes, parseArgument, u16, u32, u8 } from '../core/validate.js';
import { formatIPv6 } from '../cm/socket-address.js';

/** The 40-byte global route header at the start of every UD receive buffer. */
export const GRH_SIZE = ibv_grh.size;
const GRH_SGID = koffi.offsetof(ibv_grh, 'sgid');
const GRH_DGID = koffi.offsetof(ibv_grh, 'dgid');

/**
 * The fields of a WorkCompletion that encodeWorkCompletion writes back into an
 * ibv_wc. Not strict: a completion also carries its context and status text.
 */
const receivedCompletion = z.object({
  wrId: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
  status: z.literal('SUCCESS', 'only a successful receive says who sent it'),
  opcode: z.enum(['RECV', 'RECV_RDMA_WITH_IMM'], 'expected a receive completion'),
  byteLen: u32,
  immData: u32.optional(),
  qpNum: u32,
  srcQp: u32,
  flags: z.array(z.enum(WcFlag.names as [WcFlagName, ...WcFlagName[]])),
  vendorErr: u32,
  pkeyIndex: u16,
  slid: u16,
  sl: u8,
  dlidPathBits: u8,
});

export class AddressHandle extends Resource {
  /** The brand every member checks first (`#brand in asObject(this)`): only the instances this package made have it. */
  readonly #brand = true;
  private constructor(handle: Pointer, pd: Resource) {
    super('address handle', handle, pd);
  }

  /** @internal ibv_create_ah from an ah_attr (e.g. `established.ud.ahAttr`); `attr` is validated here, for every caller. */
  static create(key: Internal, pd: Resource, pdHandle: Pointer, attr: IbvAhAttr): AddressHandle {
    assertInternal(key, 'AddressHandle.create', 'use pd.createAh() or id.addressHandleTo()');
    const checked = parseArgument('createAh', 'attr', ahAttrSchema, attr);
    const encoded = Buffer.alloc(ibv_ah_attr.size);
    koffi.encode(encoded, ibv_ah_attr, checked);
    return new AddressHandle(checkPointer('ibv_create_ah', libibverbs.ibv_create_ah(pdHandle, encoded)), pd);
  }

  /**
   * @internal An address handle back to the sender of a UD receive (ibv_init_ah_from_wc +
   * ibv_create_ah): `receive` is the receive buffer, which starts with the GRH.
   */
  static fromCompletion(
    key: Internal, pd: Resource, pdHandle: Pointer, context: Pointer, portNum: number, completion: WorkCompletion, receive: Uint8Array,
  ): AddressHandle {
    assertInternal(key, 'AddressHandle.fromCompletion', 'use id.addressHandleFrom()');
    const operation = 'addressHandleFrom';
    const received = parseArgument(operation, 'completion', receivedCompletion, completion);
    const buffer = parseArgument(operation, 'receive', bytes, receive);
    if (buffer.byteLength < GRH_SIZE) throw argumentError(operation, 'receive', `needs the ${GRH_SIZE}-byte GRH`, 'ERR_OUT_OF_RANGE');
    const attr = Buffer.alloc(ibv_ah_attr.size);
    const grh = Buffer.from(buffer.subarray(0, GRH_SIZE));
    // The parsed copy, not the caller's object: what was checked is what gets encoded.
    const wc = encodeWorkCompletion({ ...received, immData: received.immData, context: undefined, statusText: '' });
    checkVerbs('ibv_init_ah_from_wc', libibverbs.ibv_init_ah_from_wc(context, portNum, wc, grh, attr));
    return new AddressHandle(checkPointer('ibv_create_ah', libibverbs.ibv_create_ah(pdHandle, attr)), pd);
  }

  /** The handle is for the send path; it must outlive the sends that name it. */
  get pointer(): Pointer {
    if (!(#brand in asObject(this))) throw new InvalidThisError('AddressHandle');
    return this.unsafeHandle;
  }

  protected release(): void {
    if (!(#brand in asObject(this))) throw new InvalidThisError('AddressHandle');
    checkVerbs('ibv_destroy_ah', libibverbs.ibv_destroy_ah(handleToRelease(this, 'AddressHandle')));
  }
}

/** A UD receive split into where it came from (the GRH) and the payload after it. */
export interface UdMessage {
  /** The sender: an IPv4 address (RoCE v2 over IPv4), else its GID as IPv6 text. */
  readonly source: string;
  readonly destination: string;
  readonly payload: Buffer;
}

const byteLenSchema = z.number().int().min(0);

/** RoCE v2 over IPv4 puts a 20-byte IPv4 header in the GRH's last 20 bytes. */
const IPV4_HEADER_AT = GRH_SIZE - 20;

/** Strips the 40-byte GRH from a UD receive of `byteLen` bytes (which counts the GRH) in `receive`. */
export function decodeUdMessage(receive: Uint8Array, byteLen: number): UdMessage {
  parseArgument('decodeUdMessage', 'receive', bytes, receive);
  parseArgument('decodeUdMessage', 'byteLen', byteLenSchema, byteLen);
  if (byteLen < GRH_SIZE || byteLen > receive.byteLength) {
    throw argumentError('decodeUdMessage', 'byteLen', `a UD receive is the ${GRH_SIZE}-byte GRH plus the payload, within the buffer (got ${byteLen} of ${receive.byteLength})`, 'ERR_OUT_OF_RANGE');
  }
  const payload = Buffer.from(receive.subarray(GRH_SIZE, byteLen));
  if (receive[IPV4_HEADER_AT]! >> 4 === 4) {
    const ipv4 = (offset: number) => Array.from(receive.subarray(IPV4_HEADER_AT + offset, IPV4_HEADER_AT + offset + 4)).join('.');
    return { source: ipv4(12), destination: ipv4(16), payload };
  }
  const gid = (offset: number) => formatIPv6(receive.subarray(offset, offset + 16));
  return { source: gid(GRH_SGID), destination: gid(GRH_DGID), payload };
}
