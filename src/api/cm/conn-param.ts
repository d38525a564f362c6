// Connection parameters (struct rdma_conn_param): documented defaults, the
// private-data limits, and the encoding for rdma_connect/rdma_accept.
import { Buffer } from 'node:buffer';
import koffi from 'koffi';
import { z } from 'zod';
import { rdma_conn_param } from '../../structs/rdma-cma.js';
import { argumentError, bytes, isHonestBytes, isPlainObject, parseArgument, u32, u8, type Holds, type InputIs } from '../core/validate.js';

/**
 * Private data limits in bytes, from the IB CM and librdmacm (they include no
 * librdmacm header, which rdma_cm adds itself for RC).
 */
export const PRIVATE_DATA_LIMITS = Object.freeze({
  RC: Object.freeze({ connect: 56, accept: 196, reject: 148 }),
  UD: Object.freeze({ connect: 180, accept: 136, reject: 136 }),
} as const);

/**
 * Connection parameters of connect() and accept() (struct rdma_conn_param).
 * The defaults allow one RDMA read or atomic in flight each way and retry RNR forever.
 */
export interface ConnParam {
  /**
   * Bytes for the peer, in its ConnectionError or Established.privateData: at
   * most PRIVATE_DATA_LIMITS' (RC: 56 on connect, 196 on accept; UD: 180, 136).
   * @defaultValue none
   */
  privateData?: Uint8Array;
  /**
   * RDMA reads and atomics the peer may have in flight to us, 0–255 (at most the device's maxQpRdAtom).
   * @defaultValue 1
   */
  responderResources?: number;
  /**
   * RDMA reads and atomics we may have in flight to the peer, 0–255.
   * @defaultValue 1
   */
  initiatorDepth?: number;
  /**
   * Whether hardware flow control is available, 0 or 1 (0–255 accepted); exchanged with the peer, TCP port space only.
   * @defaultValue 1
   */
  flowControl?: number;
  /**
   * Retries after a transport timeout, 0–7.
   * @defaultValue 7
   */
  retryCount?: number;
  /**
   * How often the peer retries a send that finds no receive posted here (RNR), 0–7; 7 retries forever.
   * @defaultValue 7
   */
  rnrRetryCount?: number;
  /**
   * Whether the QP uses a shared receive queue; only read when the id has no QP (the caller manages it).
   * @defaultValue false
   */
  srq?: boolean;
  /**
   * The QP number, 0–4294967295; only read when the id has no QP.
   * @defaultValue 0
   */
  qpNum?: number;
}
/** ConnParam with every default filled in: what connParamSchema.parse() returns. */
export interface ResolvedConnParam extends Required<Omit<ConnParam, 'privateData'>> {
  privateData?: Uint8Array;
}

const connParamObject = z.strictObject({
  privateData: bytes.optional(),
  responderResources: u8.default(1),
  initiatorDepth: u8.default(1),
  flowControl: u8.default(1),
  retryCount: z.number().int().min(0).max(7, 'retryCount is 0–7').default(7),
  rnrRetryCount: z.number().int().min(0).max(7, 'rnrRetryCount is 0–7').default(7),
  srq: z.boolean().default(false),
  qpNum: u32.default(0),
});
type ConnParamTied = Holds<InputIs<typeof connParamObject, ConnParam>>;
/**
 * ConnParam's schema: parse() checks every range and fills in the defaults.
 * For callers that validate parameters ahead of a connect.
 */
export const connParamSchema: z.ZodType<ResolvedConnParam, ConnParam> = connParamObject;

/** rdma_conn_param in native layout; keep the returned object alive across the call (it holds the private data). */
export interface EncodedConnParam {
  readonly struct: Buffer;
  readonly privateData: Buffer | undefined;
}

export function encodeConnParam(
  operation: string, param: ConnParam | undefined, kind: 'connect' | 'accept', transport: 'RC' | 'UD',
): EncodedConnParam {
  // Most connects and accepts take the defaults: one struct, encoded once
  // (librdmacm copies it during the call, so sharing it is safe).
  if (param === undefined || param === null) return (defaultConnParam ??= encodeValidated(connParamSchema.parse({})));
  const p = parseConnParam(operation, param);
  const limit = PRIVATE_DATA_LIMITS[transport][kind];
  if (p.privateData && p.privateData.byteLength > limit) {
    throw argumentError(operation, 'param.privateData', `at most ${limit} bytes on ${kind} for ${transport} (got ${p.privateData.byteLength})`, 'ERR_OUT_OF_RANGE');
  }
  return encodeValidated(p);
}

let defaultConnParam: EncodedConnParam | undefined;

/** ConnParam's fields but the private data, which differs on every connect or accept. */
const connParamRest = connParamObject.omit({ privateData: true });

/**
 * connParamSchema's parse. Private data held in a data property of a plain
 * object whose own keys are all enumerable strings is checked on its own and
 * the rest parsed apart, so the parse memo answers the rest when it repeats
 * (zod took about 3 ms of a socket's connect and accept in the soft-RoCE
 * guest); anything else parses whole.
 */
function parseConnParam(operation: string, param: ConnParam): ResolvedConnParam {
  if (isPlainObject(param)) {
    const property = Object.getOwnPropertyDescriptor(param, 'privateData');
    const privateData: unknown = property && 'value' in property ? property.value : undefined;
    if (isHonestBytes(privateData) && Object.keys(param).length === Reflect.ownKeys(param).length) {
      const rest: Record<string, unknown> = { ...param };
      delete rest.privateData;
      return { ...parseArgument(operation, 'param', connParamRest, rest), privateData };
    }
  }
  return parseArgument(operation, 'param', connParamSchema, param);
}

function encodeValidated(p: z.output<typeof connParamSchema>): EncodedConnParam {
  const privateData = p.privateData ? Buffer.from(p.privateData) : undefined;
  void privateData?.buffer; // off the V8 heap before its address is taken
  const struct = Buffer.alloc(rdma_conn_param.size);
  koffi.encode(struct, rdma_conn_param, {
    private_data: privateData ? koffi.address(privateData) : null,
    private_data_len: privateData?.byteLength ?? 0,
    responder_resources: p.responderResources,
    initiator_depth: p.initiatorDepth,
    flow_control: p.flowControl,
    retry_count: p.retryCount,
    rnr_retry_count: p.rnrRetryCount,
    srq: p.srq ? 1 : 0,
    qp_num: p.qpNum,
  });
  return { struct, privateData };
}
