// rdma_getaddrinfo results: iterable entries with decoded addresses, freed
// exactly once (close() or `using`).
import { Buffer } from 'node:buffer';
import koffi from 'koffi';
import { z } from 'zod';
import { librdmacm } from '../../ffi/librdmacm.js';
import { RdmaError, checkAddrInfo } from '../../ffi/errors.js';
import { callAsync, type Pointer } from '../../ffi/library.js';
import { nativeBytes } from '../../ffi/native-copy.js';
import { rdma_addrinfo, type RdmaAddrinfo } from '../../structs/rdma-cma.js';
import { AF_INET, AF_INET6, AF_IB } from '../../structs/socket.js';
import { AddrInfoFlag, PortSpace, QpType, flagMask, flagNames, type AddrInfoFlagName, type PortSpaceName, type QpTypeName } from '../core/enums.js';
import { InvalidThisError, abortError, asObject } from '../core/errors.js';
import { Resource, handleToRelease } from '../core/resource.js';
import { decodeSocketAddress, type AddressFamily, type SocketAddress } from './socket-address.js';
import { abortSignal, argumentError, cString, parseArgument, type Holds, type InputIs } from '../core/validate.js';

/** One rdma_addrinfo entry, decoded. */
export interface AddrInfoEntry {
  readonly flags: readonly AddrInfoFlagName[];
  readonly family: AddressFamily | 'UNSPEC';
  readonly qpType: QpTypeName | `UNKNOWN(${number})`;
  readonly portSpace: PortSpaceName | `UNKNOWN(${number})`;
  readonly source: SocketAddress | undefined;
  readonly destination: SocketAddress | undefined;
  readonly sourceCanonName: string | undefined;
  readonly destinationCanonName: string | undefined;
}

const FAMILIES: Record<number, AddressFamily> = { [AF_INET]: 'IPv4', [AF_INET6]: 'IPv6', [AF_IB]: 'IB' };
const FAMILY_VALUES = { IPv4: AF_INET, IPv6: AF_INET6, IB: AF_IB } as const;

/** rdma_getaddrinfo's hints. */
export interface AddrInfoHints {
  /**
   * rdma_getaddrinfo's flags by name: PASSIVE (an address to listen on),
   * NUMERICHOST (`node` is an address, not a name), NOROUTE, FAMILY.
   * @defaultValue []
   */
  flags?: AddrInfoFlagName[];
  /**
   * 'IPv4', 'IPv6' or 'IB' only.
   * @defaultValue any family
   */
  family?: 'IPv4' | 'IPv6' | 'IB';
  /**
   * 'RC', 'UC' or 'UD' only.
   * @defaultValue any type (librdmacm chooses by port space)
   */
  qpType?: 'RC' | 'UC' | 'UD';
  /**
   * 'TCP' (reliable connected), 'UDP' (datagrams), 'IB' or 'IPOIB'.
   * @defaultValue 'TCP'
   */
  portSpace?: PortSpaceName;
}
const hintsSchema = z.strictObject({
  flags: z.array(z.enum(AddrInfoFlag.names as [AddrInfoFlagName, ...AddrInfoFlagName[]])).default([]),
  family: z.enum(['IPv4', 'IPv6', 'IB']).optional(),
  qpType: z.enum(['RC', 'UC', 'UD']).optional(),
  portSpace: z.enum(PortSpace.names as [PortSpaceName, ...PortSpaceName[]]).default('TCP'),
});
type HintsTied = Holds<InputIs<typeof hintsSchema, AddrInfoHints>>;

/** Options of getAddrInfoAsync. */
export interface AddrInfoOptions {
  /** Stops waiting: the promise rejects with an AbortError (code 'ABORT_ERR'). */
  readonly signal?: AbortSignal | undefined;
}

const asyncOptionsSchema = z.strictObject({
  signal: abortSignal.optional(),
}) satisfies z.ZodType<AddrInfoOptions>;

/** Validates the arguments of either form and encodes the hints. */
function prepare(node: string | null, service: string | null, hints: AddrInfoHints) {
  const operation = 'rdma_getaddrinfo';
  const n = parseArgument(operation, 'node', cString.nullable(), node);
  const s = parseArgument(operation, 'service', cString.nullable(), service);
  const h = parseArgument(operation, 'hints', hintsSchema, hints);
  if (n === null && s === null) {
    throw argumentError(operation, 'node', 'node and service cannot both be null', 'ERR_INVALID_ARG_VALUE');
  }
  const encoded = Buffer.alloc(rdma_addrinfo.size);
  encoded.writeInt32LE(flagMask(AddrInfoFlag, h.flags), koffi.offsetof(rdma_addrinfo, 'ai_flags'));
  if (h.family) encoded.writeInt32LE(FAMILY_VALUES[h.family], koffi.offsetof(rdma_addrinfo, 'ai_family'));
  if (h.qpType) encoded.writeInt32LE(QpType.values[h.qpType], koffi.offsetof(rdma_addrinfo, 'ai_qp_type'));
  encoded.writeInt32LE(PortSpace.values[h.portSpace], koffi.offsetof(rdma_addrinfo, 'ai_port_space'));
  return { operation, n, s, encoded };
}

function decodeAddress(address: Pointer | null, length: number): SocketAddress | undefined {
  if (!address || length === 0) return undefined;
  return decodeSocketAddress(nativeBytes(address, length));
}

export class AddrInfo extends Resource implements Iterable<AddrInfoEntry> {
  /** The brand every member checks first (`#brand in asObject(this)`): only the instances this package made have it. */
  readonly #brand = true;
  /** The entries, decoded once. */
  readonly entries: readonly AddrInfoEntry[];

  private constructor(handle: Pointer) {
    super('address info', handle, undefined);
    const entries: AddrInfoEntry[] = [];
    for (let at: Pointer | null = handle; at; ) {
      const ai = koffi.decode(at, rdma_addrinfo) as RdmaAddrinfo;
      entries.push({
        flags: flagNames(AddrInfoFlag, ai.ai_flags),
        family: FAMILIES[ai.ai_family] ?? 'UNSPEC',
        qpType: QpType.nameOf(ai.ai_qp_type),
        portSpace: PortSpace.nameOf(ai.ai_port_space),
        source: decodeAddress(ai.ai_src_addr, ai.ai_src_len),
        destination: decodeAddress(ai.ai_dst_addr, ai.ai_dst_len),
        sourceCanonName: ai.ai_src_canonname ? (koffi.decode(ai.ai_src_canonname, 'char', -1) as string) : undefined,
        destinationCanonName: ai.ai_dst_canonname ? (koffi.decode(ai.ai_dst_canonname, 'char', -1) as string) : undefined,
      });
      at = ai.ai_next;
    }
    this.entries = entries;
  }

  /**
   * rdma_getaddrinfo(node, service, hints) on the calling thread: it blocks the
   * event loop for as long as name resolution takes (DNS included). See
   * resolveAsync.
   */
  static resolve(node: string | null, service: string | null, hints: AddrInfoHints = {}): AddrInfo {
    const { operation, n, s, encoded } = prepare(node, service, hints);
    const slot = Buffer.alloc(8);
    checkAddrInfo(operation, librdmacm.rdma_getaddrinfo(n, s, encoded, slot));
    return AddrInfo.#fromSlot(operation, slot);
  }

  /**
   * rdma_getaddrinfo on a libuv threadpool thread (koffi's async call), so the
   * event loop runs on while it resolves. Arguments are validated first, as by
   * resolve(); a bad one rejects before any native call. An aborted `signal`
   * rejects with an AbortError at once; the native call cannot be stopped, so
   * it runs to its end, and a list it returns then is freed.
   */
  static async resolveAsync(node: string | null, service: string | null, hints: AddrInfoHints = {}, options: AddrInfoOptions = {}): Promise<AddrInfo> {
    const { operation, n, s, encoded } = prepare(node, service, hints);
    const { signal } = parseArgument(operation, 'options', asyncOptionsSchema, options);
    if (signal?.aborted) throw abortError(signal);
    const slot = Buffer.alloc(8);
    const call = callAsync(librdmacm.rdma_getaddrinfo, n, s, encoded, slot).then(({ result, errno }) => {
      checkAddrInfo(operation, result, errno);
      return AddrInfo.#fromSlot(operation, slot);
    });
    if (!signal) return call;
    let onAbort: (() => void) | undefined;
    let stopped: Error | undefined;
    const aborted = new Promise<never>((_, reject) => {
      onAbort = () => reject((stopped = abortError(signal)));
      signal.addEventListener('abort', onAbort, { once: true });
    });
    try {
      return await Promise.race([call, aborted]);
    } catch (error) {
      // The abort came first: what the call still brings is nobody's, so it is freed.
      if (error === stopped) call.then((late) => late.close(), () => undefined);
      throw error;
    } finally {
      signal.removeEventListener('abort', onAbort!);
    }
  }

  /** The list rdma_getaddrinfo stored in `slot`, owned from here on. */
  static #fromSlot(operation: string, slot: Buffer): AddrInfo {
    const list = slot.readBigUInt64LE(0);
    if (list === 0n) throw new RdmaError(operation, 5 /* EIO */, 'it reported success but returned no list');
    return new AddrInfo(list);
  }

  [Symbol.iterator](): Iterator<AddrInfoEntry> {
    if (!(#brand in asObject(this))) throw new InvalidThisError('AddrInfo');
    this.ensureOpen('iterate');
    return this.entries[Symbol.iterator]();
  }

  /** rdma_freeaddrinfo, exactly once. */
  protected release(): void {
    if (!(#brand in asObject(this))) throw new InvalidThisError('AddrInfo');
    librdmacm.rdma_freeaddrinfo(handleToRelease(this, 'AddrInfo'));
  }
}

/**
 * rdma_getaddrinfo: resolves a node and service into RDMA addresses.
 *
 * Synchronous: it blocks the event loop while it resolves, and a host name
 * may need DNS (seconds, if a server does not answer). Pass a numeric address,
 * or use getAddrInfoAsync, in a program that must stay responsive.
 */
export function getAddrInfo(node: string | null, service: string | null, hints?: AddrInfoHints): AddrInfo {
  return AddrInfo.resolve(node, service, hints);
}

/**
 * rdma_getaddrinfo off the event loop: the same arguments, checks, result and
 * errors as getAddrInfo, as a promise. The call runs on a libuv threadpool
 * thread (UV_THREADPOOL_SIZE, 4 by default, shared with fs and dns.lookup),
 * which it holds until resolution ends, whether or not `signal` aborted the
 * wait.
 */
export function getAddrInfoAsync(node: string | null, service: string | null, hints?: AddrInfoHints, options?: AddrInfoOptions): Promise<AddrInfo> {
  return AddrInfo.resolveAsync(node, service, hints, options);
}
