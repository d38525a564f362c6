// rsockets' stream wire format (rdma-core librdmacm/rsocket.c), as pure
// encoders and decoders: the connection's private data, the immediate data of
// every message, and the buffer (SGL) and iomap entries one side RDMA-writes
// into the other's memory. Nothing here touches a device; the socket layer
// decides when each is sent.
import { Buffer } from 'node:buffer';

/** rs_conn_data's `version`: the only one rsockets has ever spoken (rsocket.c: rs_format_conn_data). */
export const PROTOCOL_VERSION = 1;
/** Bytes of struct rs_conn_data, in the REQ and in the REP. */
export const CONN_DATA_SIZE = 40;
/** rs_conn_data flags: the sender is big-endian (its SGL and iomap entries are written in that order). */
export const CONN_FLAG_NET = 0x01;
/** rs_conn_data flags: the sender understands iomap (rdma-core always sets it). */
export const CONN_FLAG_IOMAP = 0x02;

/** Bytes of one struct rs_sge {addr u64, key u32, length u32}: a target SGL entry. */
export const SGE_SIZE = 16;
/** Bytes of one struct rs_iomap {offset u64, addr u64, key u32, length u32}. */
export const IOMAP_SIZE = 24;
/** Entries of the target SGL each side offers (RS_SGL_SIZE): the two halves of its receive ring. */
export const TARGET_SGL_ENTRIES = 2;

/** The immediate's op, its top three bits (rsocket.c: rs_msg_op). */
export const Op = {
  DATA: 0,
  SGL: 4,
  IOMAP_SGL: 6,
  CTRL: 7,
} as const;
/** RS_OP_CTRL's values. KEEPALIVE never travels as an immediate (a keepalive is an imm-less write). */
export const Ctrl = {
  DISCONNECT: 0,
  KEEPALIVE: 1,
  SHUTDOWN: 2,
} as const;

const VALUE_MASK = 0x1fffffff;

/** rsockets' defaults (rsocket.c: def_*), which rstream and rcopy peers expect unless told otherwise. */
export const DEFAULTS = {
  sendQueueDepth: 384,
  recvQueueDepth: 384,
  inlineSize: 64,
  recvBufferSize: 1 << 17,
  sendBufferSize: 1 << 17,
  iomapEntries: 0,
  /** RS_MAX_TRANSFER: the largest data message rsockets sends (a sender's choice: receivers take any length). */
  maxTransfer: 1 << 16,
  /** RS_QP_CTRL_SIZE: control messages in flight at once. */
  controlSlots: 4,
  /** RS_QP_MIN_SIZE: queues are clamped up to this. */
  minQueueDepth: 16,
  /** RS_QP_MAX_SIZE. */
  maxQueueDepth: 0xfffe,
} as const;

/** The immediate of a message: op in the top 3 bits, value below (sent big-endian, as the verbs layer does). */
export function immediate(op: number, value: number): number {
  return ((op << 29) | (value & VALUE_MASK)) >>> 0;
}
export function immediateOp(imm: number): number {
  return imm >>> 29;
}
export function immediateValue(imm: number): number {
  return imm & VALUE_MASK;
}

/** An rs_sge: where a peer may write (address, rkey) and how many bytes (or, for the SGL itself, entries). */
export interface WireSge {
  readonly address: bigint;
  readonly key: number;
  readonly length: number;
}

/** struct rs_conn_data: what each side tells the other in the connect and accept. */
export interface ConnData {
  readonly version: number;
  readonly flags: number;
  /** Data messages the peer may send before its first credit update (the sender's posted receives). */
  readonly credits: number;
  /** Iomap entries the peer may write into this side's table (decoded from the 8-bit scale). */
  readonly targetIomapSize: number;
  /** This side's 2-entry target SGL: where the peer writes buffer updates; `length` counts entries. */
  readonly targetSgl: WireSge;
  /** The first half of this side's receive ring: where the peer writes its first data. */
  readonly dataBuf: WireSge;
}

/** A peer spoke rsockets wrongly; the socket is destroyed with it. */
export class ProtocolError extends Error {
  override name = 'RdmaProtocolError';
  readonly code = 'ERR_RDMACM_PROTOCOL';
}

/** rsockets' 8-bit scaled count of iomap entries (rsocket.c: rs_value_to_scale). */
export function encodeIomapSize(entries: number): number {
  return entries <= 0x80 ? entries : 0x80 | (entries >> 8);
}
export function decodeIomapSize(scaled: number): number {
  return scaled <= 0x80 ? scaled : (scaled & 0x7f) << 8;
}

/** The 40 bytes of rs_conn_data: every multi-byte field big-endian, whatever the flags say. */
export function encodeConnData(data: Omit<ConnData, 'version'>): Buffer {
  const out = Buffer.alloc(CONN_DATA_SIZE);
  out.writeUInt8(PROTOCOL_VERSION, 0);
  out.writeUInt8(data.flags, 1);
  out.writeUInt16BE(data.credits, 2);
  // bytes 4–6 reserved (zero)
  out.writeUInt8(encodeIomapSize(data.targetIomapSize), 7);
  writeSgeBE(out, 8, data.targetSgl);
  writeSgeBE(out, 24, data.dataBuf);
  return out;
}

/**
 * Reads a peer's rs_conn_data and checks what this side relies on: 40 bytes
 * (RC private data arrives zero-padded, so more is normal), version 1, a
 * target SGL of 1–2 entries and a non-empty first buffer within u32.
 */
export function decodeConnData(bytes: Uint8Array): ConnData {
  if (bytes.byteLength < CONN_DATA_SIZE) throw new ProtocolError(`the peer's connection data is ${bytes.byteLength} bytes; rsockets sends ${CONN_DATA_SIZE}`);
  const view = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const version = view.readUInt8(0);
  if (version !== PROTOCOL_VERSION) throw new ProtocolError(`the peer speaks rsockets protocol version ${version}; only ${PROTOCOL_VERSION} is known`);
  const data: ConnData = {
    version,
    flags: view.readUInt8(1),
    credits: view.readUInt16BE(2),
    targetIomapSize: decodeIomapSize(view.readUInt8(7)),
    targetSgl: readSgeBE(view, 8),
    dataBuf: readSgeBE(view, 24),
  };
  if (data.credits === 0) throw new ProtocolError('the peer offers 0 credits: it could never receive');
  if (data.targetSgl.length < 1 || data.targetSgl.length > TARGET_SGL_ENTRIES) {
    throw new ProtocolError(`the peer's target SGL has ${data.targetSgl.length} entries; rsockets uses ${TARGET_SGL_ENTRIES}`);
  }
  if (data.dataBuf.length === 0) throw new ProtocolError('the peer offers an empty receive buffer');
  return data;
}

function writeSgeBE(out: Buffer, at: number, sge: WireSge): void {
  out.writeBigUInt64BE(sge.address, at);
  out.writeUInt32BE(sge.key, at + 8);
  out.writeUInt32BE(sge.length, at + 12);
}

function readSgeBE(view: Buffer, at: number): WireSge {
  return { address: view.readBigUInt64BE(at), key: view.readUInt32BE(at + 8), length: view.readUInt32BE(at + 12) };
}

/**
 * An SGL entry as RDMA-written into the peer's target SGL, in the byte order
 * the peer declared (big-endian when its flags have NET). `address` is split
 * so the data path needs no BigInt.
 */
export function writeSge(view: DataView, at: number, address: number, key: number, length: number, bigEndian: boolean): void {
  const low = address % 2 ** 32;
  const high = Math.floor(address / 2 ** 32);
  const le = !bigEndian;
  view.setUint32(at + (bigEndian ? 0 : 4), high, le);
  view.setUint32(at + (bigEndian ? 4 : 0), low, le);
  view.setUint32(at + 8, key, le);
  view.setUint32(at + 12, length, le);
}

/** Reads an SGL entry from this side's target SGL, in the order it declared. Addresses fit a double (user space is 47 bits). */
export function readSgeAddress(view: DataView, at: number, bigEndian: boolean): number {
  const le = !bigEndian;
  const high = view.getUint32(at + (bigEndian ? 0 : 4), le);
  const low = view.getUint32(at + (bigEndian ? 4 : 0), le);
  return high * 2 ** 32 + low;
}
export function readSgeKey(view: DataView, at: number, bigEndian: boolean): number {
  return view.getUint32(at + 8, !bigEndian);
}
export function readSgeLength(view: DataView, at: number, bigEndian: boolean): number {
  return view.getUint32(at + 12, !bigEndian);
}
export function writeSgeLength(view: DataView, at: number, length: number, bigEndian: boolean): void {
  view.setUint32(at + 12, length, !bigEndian);
}

/** An iomap entry {offset, addr, key, length}, in the reader's declared order. */
export interface WireIomap {
  readonly offset: number;
  readonly address: number;
  readonly key: number;
  readonly length: number;
}

export function writeIomap(view: DataView, at: number, entry: WireIomap, bigEndian: boolean): void {
  writeU64(view, at, entry.offset, bigEndian);
  writeU64(view, at + 8, entry.address, bigEndian);
  view.setUint32(at + 16, entry.key, !bigEndian);
  view.setUint32(at + 20, entry.length, !bigEndian);
}

export function readIomap(view: DataView, at: number, bigEndian: boolean): WireIomap {
  return {
    offset: readU64(view, at, bigEndian),
    address: readU64(view, at + 8, bigEndian),
    key: view.getUint32(at + 16, !bigEndian),
    length: view.getUint32(at + 20, !bigEndian),
  };
}

function writeU64(view: DataView, at: number, value: number, bigEndian: boolean): void {
  const low = value % 2 ** 32;
  const high = Math.floor(value / 2 ** 32);
  view.setUint32(at + (bigEndian ? 0 : 4), high, !bigEndian);
  view.setUint32(at + (bigEndian ? 4 : 0), low, !bigEndian);
}

function readU64(view: DataView, at: number, bigEndian: boolean): number {
  const high = view.getUint32(at + (bigEndian ? 0 : 4), !bigEndian);
  const low = view.getUint32(at + (bigEndian ? 4 : 0), !bigEndian);
  return high * 2 ** 32 + low;
}

/** This host's order as rs_conn_data's NET flag states it (x86 and arm64: little-endian, 0). */
export const HOST_IS_BIG_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 0;
