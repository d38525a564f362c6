// Work completions (struct ibv_wc) as typed objects, and the error that carries
// a failed one.
import { Buffer } from 'node:buffer';
import koffi from 'koffi';
import { libibverbs } from '../../ffi/libibverbs.js';
import { ibv_wc } from '../../structs/verbs-work.js';
import { readUint64Number } from '../core/native-memory.js';
import { WcFlag, WcOpcode, WcStatus, flagNames, type WcFlagName, type WcOpcodeName, type WcStatusName } from '../core/enums.js';

export interface WorkCompletion {
  /** The work request's id (the C API's wr_id). */
  readonly wrId: number;
  /** The `context` given when the request was posted, if any. */
  readonly context: unknown;
  readonly status: WcStatusName | `UNKNOWN(${number})`;
  /** ibv_wc_status_str's text for the status. */
  readonly statusText: string;
  readonly opcode: WcOpcodeName | `UNKNOWN(${number})`;
  readonly byteLen: number;
  /** Immediate data (host byte order) when flags has WITH_IMM. */
  readonly immData: number | undefined;
  readonly qpNum: number;
  readonly srcQp: number;
  readonly flags: readonly WcFlagName[];
  readonly vendorErr: number;
  /** UD and RoCE addressing of the sender, for an address handle back (see AddressHandle.fromCompletion). */
  readonly pkeyIndex: number;
  readonly slid: number;
  readonly sl: number;
  readonly dlidPathBits: number;
}

/** A work request completed with an error status. */
export class WorkCompletionError extends Error {
  override name = 'WorkCompletionError';
  readonly code: string;
  constructor(readonly completion: WorkCompletion) {
    super(`work request ${completion.wrId} (${completion.opcode}) failed: ${completion.status} (${completion.statusText})` +
      (completion.status === 'LOC_LEN_ERR' ? ' — the receive buffer is smaller than the message' : '') +
      (completion.status === 'WR_FLUSH_ERR' ? ' — the queue pair is in the error state (disconnected or closed)' : '') +
      (completion.status === 'REM_ACCESS_ERR' ? ' — the peer refused access: wrong rkey, address out of bounds, or access not granted' : ''));
    this.code = `ERR_RDMACM_WC_${completion.status}`;
  }
}

export const WC_SIZE = ibv_wc.size;
const OFFSET = {
  wrId: koffi.offsetof(ibv_wc, 'wr_id'),
  status: koffi.offsetof(ibv_wc, 'status'),
  opcode: koffi.offsetof(ibv_wc, 'opcode'),
  vendorErr: koffi.offsetof(ibv_wc, 'vendor_err'),
  byteLen: koffi.offsetof(ibv_wc, 'byte_len'),
  immData: koffi.offsetof(ibv_wc, 'imm_data'),
  qpNum: koffi.offsetof(ibv_wc, 'qp_num'),
  srcQp: koffi.offsetof(ibv_wc, 'src_qp'),
  wcFlags: koffi.offsetof(ibv_wc, 'wc_flags'),
  pkeyIndex: koffi.offsetof(ibv_wc, 'pkey_index'),
  slid: koffi.offsetof(ibv_wc, 'slid'),
  sl: koffi.offsetof(ibv_wc, 'sl'),
  dlidPathBits: koffi.offsetof(ibv_wc, 'dlid_path_bits'),
};
const WITH_IMM = WcFlag.values.WITH_IMM;
const KNOWN_FLAGS = Object.values(WcFlag.values).reduce((mask, bit) => mask | bit, 0);
const statusTexts = new Map<number, string>();
/** One frozen list per combination of known wc_flags: decoding a completion builds no array. */
const flagLists = new Map<number, readonly WcFlagName[]>();

function flagListOf(flags: number): readonly WcFlagName[] {
  const mask = flags & KNOWN_FLAGS;
  let list = flagLists.get(mask);
  if (list === undefined) {
    list = Object.freeze(flagNames(WcFlag, mask));
    flagLists.set(mask, list);
  }
  return list;
}

/** Reads a wr_id written as two 32-bit halves (no BigInt on the data path). */
export function readWrId(view: DataView, base: number): number {
  return readUint64Number(view, base + OFFSET.wrId);
}

export function readStatus(view: DataView, base: number): number {
  return view.getInt32(base + OFFSET.status, true);
}

export function readByteLen(view: DataView, base: number): number {
  return view.getUint32(base + OFFSET.byteLen, true);
}

export function readOpcode(view: DataView, base: number): number {
  return view.getInt32(base + OFFSET.opcode, true);
}

/** The immediate data in host order, or -1 when the completion carries none. */
export function readImmData(view: DataView, base: number): number {
  return view.getUint32(base + OFFSET.wcFlags, true) & WITH_IMM ? view.getUint32(base + OFFSET.immData, false) : -1;
}

/** Decodes the ibv_wc at `base` in `view` into a typed, plain object. */
export function decodeWorkCompletion(view: DataView, base: number, context: unknown): WorkCompletion {
  const status = readStatus(view, base);
  let statusText = statusTexts.get(status);
  if (statusText === undefined) {
    statusText = libibverbs.ibv_wc_status_str(status) ?? `status ${status}`;
    statusTexts.set(status, statusText);
  }
  const flags = view.getUint32(base + OFFSET.wcFlags, true);
  return {
    wrId: readWrId(view, base),
    context,
    status: WcStatus.nameOf(status),
    statusText,
    opcode: WcOpcode.nameOf(view.getInt32(base + OFFSET.opcode, true)),
    byteLen: readByteLen(view, base),
    immData: flags & WITH_IMM ? view.getUint32(base + OFFSET.immData, false) : undefined,
    qpNum: view.getUint32(base + OFFSET.qpNum, true),
    srcQp: view.getUint32(base + OFFSET.srcQp, true),
    flags: flagListOf(flags),
    vendorErr: view.getUint32(base + OFFSET.vendorErr, true),
    pkeyIndex: view.getUint16(base + OFFSET.pkeyIndex, true),
    slid: view.getUint16(base + OFFSET.slid, true),
    sl: view.getUint8(base + OFFSET.sl),
    dlidPathBits: view.getUint8(base + OFFSET.dlidPathBits),
  };
}

/** Re-encodes a completion as a struct ibv_wc (for verbs that take one, like ibv_init_ah_from_wc). */
export function encodeWorkCompletion(completion: WorkCompletion): Buffer {
  const wc = Buffer.alloc(WC_SIZE);
  const view = new DataView(wc.buffer, wc.byteOffset, wc.byteLength);
  view.setUint32(OFFSET.wrId, completion.wrId % 2 ** 32, true);
  view.setUint32(OFFSET.wrId + 4, Math.floor(completion.wrId / 2 ** 32), true);
  view.setInt32(OFFSET.status, WcStatus.values[completion.status as WcStatusName] ?? 0, true);
  view.setInt32(OFFSET.opcode, WcOpcode.values[completion.opcode as WcOpcodeName] ?? 0, true);
  view.setUint32(OFFSET.vendorErr, completion.vendorErr, true);
  view.setUint32(OFFSET.byteLen, completion.byteLen, true);
  if (completion.immData !== undefined) view.setUint32(OFFSET.immData, completion.immData, false);
  view.setUint32(OFFSET.qpNum, completion.qpNum, true);
  view.setUint32(OFFSET.srcQp, completion.srcQp, true);
  view.setUint32(OFFSET.wcFlags, completion.flags.reduce((mask, flag) => mask | WcFlag.values[flag], 0), true);
  view.setUint16(OFFSET.pkeyIndex, completion.pkeyIndex, true);
  view.setUint16(OFFSET.slid, completion.slid, true);
  view.setUint8(OFFSET.sl, completion.sl);
  view.setUint8(OFFSET.dlidPathBits, completion.dlidPathBits);
  return wc;
}
