// The public heads of verbs objects (context, PD, MR, CQ, QP, SRQ, channels)
// and the attributes that create and modify them, from infiniband/verbs.h.
import process from 'node:process';
import koffi from 'koffi';
import { cStruct } from './registry.js';
import { runningCLibrary } from '../c-library.js';
import { ibv_gid } from './verbs-device.js';
import type { Pointer } from './pointer.js';

/**
 * pthread_mutex_t and pthread_cond_t: opaque, sized and aligned. glibc's mutex
 * is 40 bytes on x86-64 and 48 on aarch64 (__SIZEOF_PTHREAD_MUTEX_T); musl's
 * is ten ints wherever a long is 64 bits (40 bytes on both). The condition
 * variable is 48 bytes in each. The layout tests check them against the headers
 * on x86-64 (glibc and musl) and aarch64 (glibc); aarch64 with musl is unchecked.
 */
const pthread_mutex_t = koffi.array('uint64_t', process.arch === 'arm64' && runningCLibrary().family !== 'musl' ? 6 : 5);
const pthread_cond_t = koffi.array('uint64_t', 6);

/** struct ibv_context_ops: function pointers; the data-path verbs live here. */
export const ibv_context_ops = cStruct('ibv_context_ops', {
  _compat_query_device: 'void *',
  _compat_query_port: 'void *',
  _compat_alloc_pd: 'void *',
  _compat_dealloc_pd: 'void *',
  _compat_reg_mr: 'void *',
  _compat_rereg_mr: 'void *',
  _compat_dereg_mr: 'void *',
  alloc_mw: 'void *',
  bind_mw: 'void *',
  dealloc_mw: 'void *',
  _compat_create_cq: 'void *',
  poll_cq: 'void *',
  req_notify_cq: 'void *',
  _compat_cq_event: 'void *',
  _compat_resize_cq: 'void *',
  _compat_destroy_cq: 'void *',
  _compat_create_srq: 'void *',
  _compat_modify_srq: 'void *',
  _compat_query_srq: 'void *',
  _compat_destroy_srq: 'void *',
  post_srq_recv: 'void *',
  _compat_create_qp: 'void *',
  _compat_query_qp: 'void *',
  _compat_modify_qp: 'void *',
  _compat_destroy_qp: 'void *',
  post_send: 'void *',
  post_recv: 'void *',
  _compat_create_ah: 'void *',
  _compat_destroy_ah: 'void *',
  _compat_attach_mcast: 'void *',
  _compat_detach_mcast: 'void *',
  _compat_async_event: 'void *',
});
export type IbvContextOps = Record<keyof typeof ibv_context_ops.members & string, Pointer | null>;

/** struct ibv_context. */
export const ibv_context = cStruct('ibv_context', {
  device: 'void *',
  ops: ibv_context_ops,
  cmd_fd: 'int',
  async_fd: 'int',
  num_comp_vectors: 'int',
  mutex: pthread_mutex_t,
  abi_compat: 'void *',
});
export interface IbvContext {
  device: Pointer;
  ops: IbvContextOps;
  cmd_fd: number;
  async_fd: number;
  num_comp_vectors: number;
  abi_compat: Pointer | null;
}

/**
 * struct verbs_context: the extended context a provider allocates around every
 * struct ibv_context (when abi_compat is VERBS_ABI_IS_EXTENDED), its newer ops
 * placed before it. New ops are added at its top, so each op keeps its
 * distance below `context` in every release (rdma-core 44 to 56 declare this
 * same layout; 64 adds ops above query_port). `sz` says how far the
 * provider's copy reaches.
 */
export const verbs_context = cStruct('verbs_context', {
  query_port: 'void *',
  advise_mr: 'void *',
  alloc_null_mr: 'void *',
  read_counters: 'void *',
  attach_counters_point_flow: 'void *',
  create_counters: 'void *',
  destroy_counters: 'void *',
  reg_dm_mr: 'void *',
  alloc_dm: 'void *',
  free_dm: 'void *',
  modify_flow_action_esp: 'void *',
  destroy_flow_action: 'void *',
  create_flow_action_esp: 'void *',
  modify_qp_rate_limit: 'void *',
  alloc_parent_domain: 'void *',
  dealloc_td: 'void *',
  alloc_td: 'void *',
  modify_cq: 'void *',
  post_srq_ops: 'void *',
  destroy_rwq_ind_table: 'void *',
  create_rwq_ind_table: 'void *',
  destroy_wq: 'void *',
  modify_wq: 'void *',
  create_wq: 'void *',
  query_rt_values: 'void *',
  create_cq_ex: 'void *',
  priv: 'void *',
  query_device_ex: 'void *',
  ibv_destroy_flow: 'void *',
  ABI_placeholder2: 'void *',
  ibv_create_flow: 'void *',
  ABI_placeholder1: 'void *',
  open_qp: 'void *',
  create_qp_ex: 'void *',
  get_srq_num: 'void *',
  create_srq_ex: 'void *',
  open_xrcd: 'void *',
  close_xrcd: 'void *',
  _ABI_placeholder3: 'uint64_t',
  sz: 'size_t',
  context: ibv_context,
});
/** ibv_context.abi_compat of a context inside a verbs_context (verbs.h's __VERBS_ABI_IS_EXTENDED, (void *)UINTPTR_MAX). */
export const VERBS_ABI_IS_EXTENDED = 0xffffffffffffffffn;

/** struct ibv_pd. */
export const ibv_pd = cStruct('ibv_pd', { context: 'void *', handle: 'uint32_t' });
export interface IbvPd {
  context: Pointer;
  handle: number;
}

/** struct ibv_mr. */
export const ibv_mr = cStruct('ibv_mr', {
  context: 'void *',
  pd: 'void *',
  addr: 'void *',
  length: 'size_t',
  handle: 'uint32_t',
  lkey: 'uint32_t',
  rkey: 'uint32_t',
});
export interface IbvMr {
  context: Pointer;
  pd: Pointer;
  addr: Pointer;
  length: number | bigint;
  handle: number;
  lkey: number;
  rkey: number;
}

/** struct ibv_comp_channel. */
export const ibv_comp_channel = cStruct('ibv_comp_channel', { context: 'void *', fd: 'int', refcnt: 'int' });
export interface IbvCompChannel {
  context: Pointer;
  fd: number;
  refcnt: number;
}

/** struct ibv_cq. */
export const ibv_cq = cStruct('ibv_cq', {
  context: 'void *',
  channel: 'void *',
  cq_context: 'void *',
  handle: 'uint32_t',
  cqe: 'int',
  mutex: pthread_mutex_t,
  cond: pthread_cond_t,
  comp_events_completed: 'uint32_t',
  async_events_completed: 'uint32_t',
});
export interface IbvCq {
  context: Pointer;
  channel: Pointer | null;
  cq_context: Pointer | null;
  handle: number;
  cqe: number;
  comp_events_completed: number;
  async_events_completed: number;
}

/** struct ibv_qp. */
export const ibv_qp = cStruct('ibv_qp', {
  context: 'void *',
  qp_context: 'void *',
  pd: 'void *',
  send_cq: 'void *',
  recv_cq: 'void *',
  srq: 'void *',
  handle: 'uint32_t',
  qp_num: 'uint32_t',
  state: 'int',
  qp_type: 'int',
  mutex: pthread_mutex_t,
  cond: pthread_cond_t,
  events_completed: 'uint32_t',
});
export interface IbvQp {
  context: Pointer;
  qp_context: Pointer | null;
  pd: Pointer;
  send_cq: Pointer;
  recv_cq: Pointer;
  srq: Pointer | null;
  handle: number;
  qp_num: number;
  state: number;
  qp_type: number;
  events_completed: number;
}

/** struct ibv_srq. */
export const ibv_srq = cStruct('ibv_srq', {
  context: 'void *',
  srq_context: 'void *',
  pd: 'void *',
  handle: 'uint32_t',
  mutex: pthread_mutex_t,
  cond: pthread_cond_t,
  events_completed: 'uint32_t',
});

/** struct ibv_qp_cap: requested on create, and what the device granted on return. */
export const ibv_qp_cap = cStruct('ibv_qp_cap', {
  max_send_wr: 'uint32_t',
  max_recv_wr: 'uint32_t',
  max_send_sge: 'uint32_t',
  max_recv_sge: 'uint32_t',
  max_inline_data: 'uint32_t',
});
export interface IbvQpCap {
  max_send_wr: number;
  max_recv_wr: number;
  max_send_sge: number;
  max_recv_sge: number;
  max_inline_data: number;
}

/** struct ibv_qp_init_attr (in/out for rdma_create_qp and rdma_create_ep). */
export const ibv_qp_init_attr = cStruct('ibv_qp_init_attr', {
  qp_context: 'void *',
  send_cq: 'void *',
  recv_cq: 'void *',
  srq: 'void *',
  cap: ibv_qp_cap,
  qp_type: 'int',
  sq_sig_all: 'int',
});
export interface IbvQpInitAttr {
  qp_context: Pointer | null;
  send_cq: Pointer | null;
  recv_cq: Pointer | null;
  srq: Pointer | null;
  cap: IbvQpCap;
  qp_type: number;
  sq_sig_all: number;
}

/** struct ibv_srq_attr. */
export const ibv_srq_attr = cStruct('ibv_srq_attr', { max_wr: 'uint32_t', max_sge: 'uint32_t', srq_limit: 'uint32_t' });
export interface IbvSrqAttr {
  max_wr: number;
  max_sge: number;
  srq_limit: number;
}

/** struct ibv_srq_init_attr. */
export const ibv_srq_init_attr = cStruct('ibv_srq_init_attr', { srq_context: 'void *', attr: ibv_srq_attr });
export interface IbvSrqInitAttr {
  srq_context: Pointer | null;
  attr: IbvSrqAttr;
}

/** struct ibv_global_route. */
export const ibv_global_route = cStruct('ibv_global_route', {
  dgid: ibv_gid,
  flow_label: 'uint32_t',
  sgid_index: 'uint8_t',
  hop_limit: 'uint8_t',
  traffic_class: 'uint8_t',
});
export interface IbvGlobalRoute {
  dgid: { raw: Uint8Array };
  flow_label: number;
  sgid_index: number;
  hop_limit: number;
  traffic_class: number;
}

/** struct ibv_ah_attr. */
export const ibv_ah_attr = cStruct('ibv_ah_attr', {
  grh: ibv_global_route,
  dlid: 'uint16_t',
  sl: 'uint8_t',
  src_path_bits: 'uint8_t',
  static_rate: 'uint8_t',
  is_global: 'uint8_t',
  port_num: 'uint8_t',
});
export interface IbvAhAttr {
  grh: IbvGlobalRoute;
  dlid: number;
  sl: number;
  src_path_bits: number;
  static_rate: number;
  is_global: number;
  port_num: number;
}

/** struct ibv_qp_attr (ibv_query_qp, ibv_modify_qp, rdma_init_qp_attr). */
export const ibv_qp_attr = cStruct('ibv_qp_attr', {
  qp_state: 'int',
  cur_qp_state: 'int',
  path_mtu: 'int',
  path_mig_state: 'int',
  qkey: 'uint32_t',
  rq_psn: 'uint32_t',
  sq_psn: 'uint32_t',
  dest_qp_num: 'uint32_t',
  qp_access_flags: 'unsigned int',
  cap: ibv_qp_cap,
  ah_attr: ibv_ah_attr,
  alt_ah_attr: ibv_ah_attr,
  pkey_index: 'uint16_t',
  alt_pkey_index: 'uint16_t',
  en_sqd_async_notify: 'uint8_t',
  sq_draining: 'uint8_t',
  max_rd_atomic: 'uint8_t',
  max_dest_rd_atomic: 'uint8_t',
  min_rnr_timer: 'uint8_t',
  port_num: 'uint8_t',
  timeout: 'uint8_t',
  retry_cnt: 'uint8_t',
  rnr_retry: 'uint8_t',
  alt_port_num: 'uint8_t',
  alt_timeout: 'uint8_t',
  rate_limit: 'uint32_t',
});
export interface IbvQpAttr {
  qp_state: number;
  cur_qp_state: number;
  path_mtu: number;
  path_mig_state: number;
  qkey: number;
  rq_psn: number;
  sq_psn: number;
  dest_qp_num: number;
  qp_access_flags: number;
  cap: IbvQpCap;
  ah_attr: IbvAhAttr;
  alt_ah_attr: IbvAhAttr;
  pkey_index: number;
  alt_pkey_index: number;
  en_sqd_async_notify: number;
  sq_draining: number;
  max_rd_atomic: number;
  max_dest_rd_atomic: number;
  min_rnr_timer: number;
  port_num: number;
  timeout: number;
  retry_cnt: number;
  rnr_retry: number;
  alt_port_num: number;
  alt_timeout: number;
  rate_limit: number;
}

/** struct ibv_ece (RDMACM_1.3 ECE calls). */
export const ibv_ece = cStruct('ibv_ece', { vendor_id: 'uint32_t', options: 'uint32_t', comp_mask: 'uint32_t' });
export interface IbvEce {
  vendor_id: number;
  options: number;
  comp_mask: number;
}
