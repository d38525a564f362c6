// rdma_create_ep: an id, its address resolved (active) or bound (passive), and
// for the active side a queue pair, in one call. Synchronous, as the man page.
import { Buffer } from 'node:buffer';
import { z } from 'zod';
import { librdmacm } from '../../ffi/librdmacm.js';
import { checkRdma } from '../../ffi/errors.js';
import { AddrInfo } from './addrinfo.js';
import { internal } from '../core/internal.js';
import { CmId, encodeQpInitAttr, grantedCaps, qpAttrSchema, type QpAttr } from './cm-id.js';
import { PortSpace, type PortSpaceName } from '../core/enums.js';
import { ProtectionDomain } from '../verbs/protection-domain.js';
import { ResourceClosedError } from '../core/errors.js';
import { Resource } from '../core/resource.js';
import { argumentError, cString, instanceCheck, parseArgument, port, type Holds, type InputIs } from '../core/validate.js';

/** A port given as a decimal string: the same 0–65535 range as a number (getaddrinfo would take more). */
const portString = z.string().regex(/^\d+$/, 'a port number').refine((s) => !/^\d+$/.test(s) || Number(s) <= 65535, 'a port is 0–65535');

/** What createEndpoint resolves (with rdma_getaddrinfo) when not given an AddrInfo. */
export interface EndpointTarget {
  /**
   * The host name or address to connect to; a passive endpoint without one listens on every address.
   * @defaultValue none (required for an active endpoint)
   */
  host?: string;
  /** The port, 0–65535, as a number or a decimal string. */
  port: number | string;
  /**
   * Whether this is the listening side (RAI_PASSIVE).
   * @defaultValue false
   */
  passive?: boolean;
  /**
   * 'TCP' (reliable connected), 'UDP' (datagrams), 'IB' or 'IPOIB'.
   * @defaultValue 'TCP'
   */
  portSpace?: PortSpaceName;
}
const targetSchema = z.strictObject({
  host: cString.optional(),
  port: z.union([port, portString], { error: 'a port is an integer 0–65535 (or one as a decimal string)' }),
  passive: z.boolean().default(false),
  portSpace: z.enum(PortSpace.names as [PortSpaceName, ...PortSpaceName[]]).default('TCP'),
});
type TargetTied = Holds<InputIs<typeof targetSchema, EndpointTarget>>;

const optionsSchema = z.strictObject({
  pd: instanceCheck<ProtectionDomain>((value) => Resource.isA(value, ProtectionDomain), 'expected a ProtectionDomain').optional(),
  qp: qpAttrSchema.optional(),
  context: z.unknown().optional(),
});
type OptionsTied = Holds<InputIs<typeof optionsSchema, EndpointOptions>>;
/** createEndpoint's options. */
export interface EndpointOptions {
  /**
   * The protection domain of the endpoint's QP.
   * @defaultValue librdmacm's default one for the device
   */
  pd?: ProtectionDomain;
  /**
   * The QP's attributes (see QpAttr for each one's default).
   * @defaultValue none: no QP is created
   */
  qp?: QpAttr;
  /**
   * Any value, kept as id.context.
   * @defaultValue undefined
   */
  context?: unknown;
}

/**
 * rdma_create_ep. `target` is an AddrInfo, or `{ host, port, passive, portSpace }`
 * to resolve one. The active side gets a QP (with the caps the device granted in
 * `id.queuePair.caps`); a passive one is ready for listen() and getRequest(),
 * whose ids come with their QP. Without `qp` options no QP is created on the
 * active side either.
 */
export function createEndpoint(target: AddrInfo | EndpointTarget, options: EndpointOptions = {}): CmId {
  const operation = 'rdma_create_ep';
  const o = parseArgument(operation, 'options', optionsSchema, options);
  if (o.pd?.closed) throw new ResourceClosedError('protection domain', operation, undefined, 'options.pd');
  let info: AddrInfo;
  let ownsInfo = false;
  if (Resource.isA(target, AddrInfo)) {
    if (target.closed) throw new ResourceClosedError('address info', operation, undefined, 'target');
    info = target;
  } else {
    const t = parseArgument(operation, 'target', targetSchema, target);
    if (!t.passive && !t.host) throw argumentError(operation, 'target.host', 'an active endpoint needs a host to connect to', 'ERR_INVALID_ARG_VALUE');
    info = AddrInfo.resolve(t.host ?? null, String(t.port), { flags: t.passive ? ['PASSIVE'] : [], portSpace: t.portSpace });
    ownsInfo = true;
  }
  try {
    const entry = info.entries[0];
    const portSpace = entry && !entry.portSpace.startsWith('UNKNOWN') ? (entry.portSpace as PortSpaceName) : 'TCP';
    const init = o.qp ? encodeQpInitAttr(o.qp) : null;
    const slot = Buffer.alloc(8);
    checkRdma(operation, librdmacm.rdma_create_ep(slot, info.unsafeHandle, o.pd ? o.pd.unsafeHandle : null, init));
    const granted = init ? grantedCaps(init) : undefined;
    return new CmId(internal, slot.readBigUInt64LE(0), null, { context: o.context, portSpace, endpoint: true, granted, pd: o.pd });
  } finally {
    if (ownsInfo) info.close();
  }
}
