// Connection parameters (struct rdma_conn_param): documented defaults, the
// private-data limits, and the encoding for rdma_connect/rdma_accept.
import { Buffer } from 'node:buffer';
import koffi from 'koffi';
import { z } from 'zod';
import { rdma_conn_param } from '../structs/rdma-cma.js';
import { argumentError, bytes, parseArgument, u32, u8 } from './validate.js';

/**
 * Private data limits in bytes, from the IB CM and librdmacm (they include no
 * librdmacm header, which rdma_cm adds itself for RC).
 */
export const PRIVATE_DATA_LIMITS = {
  RC: { connect: 56, accept: 196, reject: 148 },
  UD: { connect: 180, accept: 136, reject: 136 },
} as const;

/**
 * Defaults: responderResources 1 and initiatorDepth 1 (one RDMA read or atomic
 * in flight each way), flowControl 1, retryCount 7 and rnrRetryCount 7 (7 means
 * "retry forever" for RNR), no SRQ, qpNum 0 (both ignored when the id has a QP).
 */
export const connParamSchema = z.strictObject({
  privateData: bytes.optional(),
  responderResources: u8.default(1),
  initiatorDepth: u8.default(1),
  flowControl: u8.default(1),
  retryCount: z.number().int().min(0).max(7, 'retryCount is 0–7').default(7),
  rnrRetryCount: z.number().int().min(0).max(7, 'rnrRetryCount is 0–7').default(7),
  srq: z.boolean().default(false),
  qpNum: u32.default(0),
});
export type ConnParam = z.input<typeof connParamSchema>;

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
  const p = parseArgument(operation, 'param', connParamSchema, param);
  const limit = PRIVATE_DATA_LIMITS[transport][kind];
  if (p.privateData && p.privateData.byteLength > limit) {
    throw argumentError(operation, 'param.privateData', `at most ${limit} bytes on ${kind} for ${transport} (got ${p.privateData.byteLength})`);
  }
  return encodeValidated(p);
}

let defaultConnParam: EncodedConnParam | undefined;

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
