// Work requests and completions from infiniband/verbs.h: the data path's layouts.
import { anonymousStruct, anonymousUnion, cStruct, memberOffset } from './registry.js';
import { ibv_gid } from './verbs-device.js';
import type { Pointer } from './pointer.js';

/** struct ibv_sge: one scatter/gather element. */
export const ibv_sge = cStruct('ibv_sge', { addr: 'uint64_t', length: 'uint32_t', lkey: 'uint32_t' });
export interface IbvSge {
  addr: number | bigint;
  length: number;
  lkey: number;
}

/** struct ibv_mw_bind_info. */
export const ibv_mw_bind_info = cStruct('ibv_mw_bind_info', {
  mr: 'void *',
  addr: 'uint64_t',
  length: 'uint64_t',
  mw_access_flags: 'unsigned int',
});

/**
 * struct ibv_send_wr, all 128 bytes: the rdma/atomic/ud union (`wr`), the
 * imm_data/invalidate_rkey union (declared as imm_data; both are 32-bit) and
 * the bind_mw/tso union (declared as bind_mw).
 */
export const ibv_send_wr = cStruct('ibv_send_wr', {
  wr_id: 'uint64_t',
  next: 'void *',
  sg_list: 'void *',
  num_sge: 'int',
  opcode: 'int',
  send_flags: 'unsigned int',
  imm_data: 'uint32_t',
  wr: anonymousUnion({
    rdma: anonymousStruct({ remote_addr: 'uint64_t', rkey: 'uint32_t' }),
    atomic: anonymousStruct({ remote_addr: 'uint64_t', compare_add: 'uint64_t', swap: 'uint64_t', rkey: 'uint32_t' }),
    ud: anonymousStruct({ ah: 'void *', remote_qpn: 'uint32_t', remote_qkey: 'uint32_t' }),
  }),
  qp_type: anonymousUnion({ xrc: anonymousStruct({ remote_srqn: 'uint32_t' }) }),
  bind_mw: anonymousStruct({ mw: 'void *', rkey: 'uint32_t', bind_info: ibv_mw_bind_info }),
});

/** struct ibv_recv_wr. */
export const ibv_recv_wr = cStruct('ibv_recv_wr', {
  wr_id: 'uint64_t',
  next: 'void *',
  sg_list: 'void *',
  num_sge: 'int',
});
export interface IbvRecvWr {
  wr_id: number | bigint;
  next: Pointer | null;
  sg_list: Pointer | null;
  num_sge: number;
}

/**
 * Byte offsets of the work-request fields written straight into native memory
 * (prepared requests and the rdma_verbs.h helpers), read from the layouts above.
 */
export const SGE_OFFSET = Object.freeze({
  addr: memberOffset(ibv_sge, 'addr'),
  length: memberOffset(ibv_sge, 'length'),
  lkey: memberOffset(ibv_sge, 'lkey'),
});
export const SEND_WR_OFFSET = Object.freeze({
  wrId: memberOffset(ibv_send_wr, 'wr_id'),
  next: memberOffset(ibv_send_wr, 'next'),
  sgList: memberOffset(ibv_send_wr, 'sg_list'),
  numSge: memberOffset(ibv_send_wr, 'num_sge'),
  opcode: memberOffset(ibv_send_wr, 'opcode'),
  sendFlags: memberOffset(ibv_send_wr, 'send_flags'),
  immData: memberOffset(ibv_send_wr, 'imm_data'),
  remoteAddr: memberOffset(ibv_send_wr, 'wr.rdma.remote_addr'),
  rkey: memberOffset(ibv_send_wr, 'wr.rdma.rkey'),
  atomicRemoteAddr: memberOffset(ibv_send_wr, 'wr.atomic.remote_addr'),
  compareAdd: memberOffset(ibv_send_wr, 'wr.atomic.compare_add'),
  swap: memberOffset(ibv_send_wr, 'wr.atomic.swap'),
  atomicRkey: memberOffset(ibv_send_wr, 'wr.atomic.rkey'),
  udAh: memberOffset(ibv_send_wr, 'wr.ud.ah'),
  udRemoteQpn: memberOffset(ibv_send_wr, 'wr.ud.remote_qpn'),
  udRemoteQkey: memberOffset(ibv_send_wr, 'wr.ud.remote_qkey'),
});
export const RECV_WR_OFFSET = Object.freeze({
  wrId: memberOffset(ibv_recv_wr, 'wr_id'),
  next: memberOffset(ibv_recv_wr, 'next'),
  sgList: memberOffset(ibv_recv_wr, 'sg_list'),
  numSge: memberOffset(ibv_recv_wr, 'num_sge'),
});

/** struct ibv_wc: one work completion. imm_data is in network byte order (union with invalidated_rkey). */
export const ibv_wc = cStruct('ibv_wc', {
  wr_id: 'uint64_t',
  status: 'int',
  opcode: 'int',
  vendor_err: 'uint32_t',
  byte_len: 'uint32_t',
  imm_data: 'uint32_t',
  qp_num: 'uint32_t',
  src_qp: 'uint32_t',
  wc_flags: 'unsigned int',
  pkey_index: 'uint16_t',
  slid: 'uint16_t',
  sl: 'uint8_t',
  dlid_path_bits: 'uint8_t',
});
export interface IbvWc {
  wr_id: number | bigint;
  status: number;
  opcode: number;
  vendor_err: number;
  byte_len: number;
  imm_data: number;
  qp_num: number;
  src_qp: number;
  wc_flags: number;
  pkey_index: number;
  slid: number;
  sl: number;
  dlid_path_bits: number;
}

/** struct ibv_grh: the 40-byte global route header at the start of every UD receive. */
export const ibv_grh = cStruct('ibv_grh', {
  version_tclass_flow: 'uint32_be_t',
  paylen: 'uint16_be_t',
  next_hdr: 'uint8_t',
  hop_limit: 'uint8_t',
  sgid: ibv_gid,
  dgid: ibv_gid,
});
export interface IbvGrh {
  version_tclass_flow: number;
  paylen: number;
  next_hdr: number;
  hop_limit: number;
  sgid: { raw: Uint8Array };
  dgid: { raw: Uint8Array };
}
