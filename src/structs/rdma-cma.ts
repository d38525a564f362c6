// Connection-manager layouts from rdma/rdma_cma.h.
import koffi from 'koffi';
import { anonymousUnion, cStruct } from './registry.js';
import { sockaddr_storage } from './socket.js';
import { ibv_gid } from './verbs-device.js';
import { ibv_ah_attr, type IbvAhAttr } from './verbs-resources.js';
import type { Pointer } from './pointer.js';

/** struct rdma_event_channel: just the fd to poll. */
export const rdma_event_channel = cStruct('rdma_event_channel', { fd: 'int' });

/** struct rdma_ib_addr. */
export const rdma_ib_addr = cStruct('rdma_ib_addr', { sgid: ibv_gid, dgid: ibv_gid, pkey: 'uint16_be_t' });

/**
 * struct rdma_addr. In C each address is an anonymous union of sockaddr
 * kinds; sockaddr_storage is its largest member, so it stands for the union.
 * Read ss_family to know which kind it holds.
 */
export const rdma_addr = cStruct('rdma_addr', {
  src_storage: sockaddr_storage,
  dst_storage: sockaddr_storage,
  addr: anonymousUnion({ ibaddr: rdma_ib_addr }),
});

/** struct ibv_sa_path_rec (infiniband/sa.h, which rdma_cma.h includes): one path of a route. */
export const ibv_sa_path_rec = cStruct('ibv_sa_path_rec', {
  dgid: ibv_gid,
  sgid: ibv_gid,
  dlid: 'uint16_be_t',
  slid: 'uint16_be_t',
  raw_traffic: 'int',
  flow_label: 'uint32_be_t',
  hop_limit: 'uint8_t',
  traffic_class: 'uint8_t',
  reversible: 'int',
  numb_path: 'uint8_t',
  pkey: 'uint16_be_t',
  sl: 'uint8_t',
  mtu_selector: 'uint8_t',
  mtu: 'uint8_t',
  rate_selector: 'uint8_t',
  rate: 'uint8_t',
  packet_life_time_selector: 'uint8_t',
  packet_life_time: 'uint8_t',
  preference: 'uint8_t',
});
export interface IbvSaPathRec {
  /** Unions: koffi decodes each as an object of its own kind; read the GIDs' bytes at their offsets instead. */
  dgid: unknown;
  sgid: unknown;
  dlid: number;
  slid: number;
  raw_traffic: number;
  flow_label: number;
  hop_limit: number;
  traffic_class: number;
  reversible: number;
  numb_path: number;
  pkey: number;
  sl: number;
  mtu_selector: number;
  mtu: number;
  rate_selector: number;
  rate: number;
  packet_life_time_selector: number;
  packet_life_time: number;
  preference: number;
}

/** struct rdma_route: path_rec points at num_paths ibv_sa_path_rec. */
export const rdma_route = cStruct('rdma_route', { addr: rdma_addr, path_rec: 'void *', num_paths: 'int' });

/** struct rdma_cm_id, through qp_type. `route.addr` is what rdma_get_local_addr/peer_addr return. */
export const rdma_cm_id = cStruct('rdma_cm_id', {
  verbs: 'void *',
  channel: 'void *',
  context: 'void *',
  qp: 'void *',
  route: rdma_route,
  ps: 'int',
  port_num: 'uint8_t',
  event: 'void *',
  send_cq_channel: 'void *',
  send_cq: 'void *',
  recv_cq_channel: 'void *',
  recv_cq: 'void *',
  srq: 'void *',
  pd: 'void *',
  qp_type: 'int',
});
export interface RdmaCmId {
  verbs: Pointer | null;
  channel: Pointer | null;
  context: Pointer | null;
  qp: Pointer | null;
  ps: number;
  port_num: number;
  event: Pointer | null;
  send_cq_channel: Pointer | null;
  send_cq: Pointer | null;
  recv_cq_channel: Pointer | null;
  recv_cq: Pointer | null;
  srq: Pointer | null;
  pd: Pointer | null;
  qp_type: number;
}

/** struct rdma_conn_param. */
export const rdma_conn_param = cStruct('rdma_conn_param', {
  private_data: 'void *',
  private_data_len: 'uint8_t',
  responder_resources: 'uint8_t',
  initiator_depth: 'uint8_t',
  flow_control: 'uint8_t',
  retry_count: 'uint8_t',
  rnr_retry_count: 'uint8_t',
  srq: 'uint8_t',
  qp_num: 'uint32_t',
});
export interface RdmaConnParam {
  private_data: Pointer | null;
  private_data_len: number;
  responder_resources: number;
  initiator_depth: number;
  flow_control: number;
  retry_count: number;
  rnr_retry_count: number;
  srq: number;
  qp_num: number;
}

/** struct rdma_ud_param. */
export const rdma_ud_param = cStruct('rdma_ud_param', {
  private_data: 'void *',
  private_data_len: 'uint8_t',
  ah_attr: ibv_ah_attr,
  qp_num: 'uint32_t',
  qkey: 'uint32_t',
});
export interface RdmaUdParam {
  private_data: Pointer | null;
  private_data_len: number;
  ah_attr: IbvAhAttr;
  qp_num: number;
  qkey: number;
}

/** struct rdma_cm_event. */
export const rdma_cm_event = cStruct('rdma_cm_event', {
  id: 'void *',
  listen_id: 'void *',
  event: 'int',
  status: 'int',
  param: koffi.union({ conn: rdma_conn_param, ud: rdma_ud_param }),
});

/** struct rdma_addrinfo. */
export const rdma_addrinfo = cStruct('rdma_addrinfo', {
  ai_flags: 'int',
  ai_family: 'int',
  ai_qp_type: 'int',
  ai_port_space: 'int',
  ai_src_len: 'uint32_t',
  ai_dst_len: 'uint32_t',
  ai_src_addr: 'void *',
  ai_dst_addr: 'void *',
  ai_src_canonname: 'void *',
  ai_dst_canonname: 'void *',
  ai_route_len: 'size_t',
  ai_route: 'void *',
  ai_connect_len: 'size_t',
  ai_connect: 'void *',
  ai_next: 'void *',
});
export interface RdmaAddrinfo {
  ai_flags: number;
  ai_family: number;
  ai_qp_type: number;
  ai_port_space: number;
  ai_src_len: number;
  ai_dst_len: number;
  ai_src_addr: Pointer | null;
  ai_dst_addr: Pointer | null;
  ai_src_canonname: Pointer | null;
  ai_dst_canonname: Pointer | null;
  ai_route_len: number | bigint;
  ai_route: Pointer | null;
  ai_connect_len: number | bigint;
  ai_connect: Pointer | null;
  ai_next: Pointer | null;
}

/** struct rdma_cm_join_mc_attr_ex (rdma_join_multicast_ex). */
export const rdma_cm_join_mc_attr_ex = cStruct('rdma_cm_join_mc_attr_ex', {
  comp_mask: 'uint32_t',
  join_flags: 'uint32_t',
  addr: 'void *',
});
