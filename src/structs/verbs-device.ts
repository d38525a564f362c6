// Device, port and GID layouts from infiniband/verbs.h.
import koffi, { type TypeObject } from 'koffi';
import { anonymousStruct, cStruct, cStructOfReleases, cUnion } from './registry.js';
import type { Pointer } from './pointer.js';

/** union ibv_gid: 16 raw bytes (subnet prefix and interface id, big-endian). */
export const ibv_gid = cUnion('ibv_gid', {
  raw: koffi.array('uint8_t', 16),
  global: anonymousStruct({ subnet_prefix: 'uint64_be_t', interface_id: 'uint64_be_t' }),
});

/** struct ibv_gid_entry, filled by _ibv_query_gid_ex (IBVERBS_1.11). */
export const ibv_gid_entry = cStruct('ibv_gid_entry', {
  gid: ibv_gid,
  gid_index: 'uint32_t',
  port_num: 'uint32_t',
  gid_type: 'uint32_t',
  ndev_ifindex: 'uint32_t',
});
export interface IbvGidEntry {
  gid: { raw: Uint8Array };
  gid_index: number;
  port_num: number;
  gid_type: number;
  ndev_ifindex: number;
}

/** struct ibv_device: the public head of a device-list entry. */
export const ibv_device = cStruct('ibv_device', {
  _ops: anonymousStruct({ _dummy1: 'void *', _dummy2: 'void *' }),
  node_type: 'int',
  transport_type: 'int',
  name: koffi.array('char', 64, 'String'),
  dev_name: koffi.array('char', 64, 'String'),
  dev_path: koffi.array('char', 256, 'String'),
  ibdev_path: koffi.array('char', 256, 'String'),
});
export interface IbvDevice {
  node_type: number;
  transport_type: number;
  name: string;
  dev_name: string;
  dev_path: string;
  ibdev_path: string;
}

/** struct ibv_device_attr, filled by ibv_query_device. */
export const ibv_device_attr = cStruct('ibv_device_attr', {
  fw_ver: koffi.array('char', 64, 'String'),
  node_guid: 'uint64_be_t',
  sys_image_guid: 'uint64_be_t',
  max_mr_size: 'uint64_t',
  page_size_cap: 'uint64_t',
  vendor_id: 'uint32_t',
  vendor_part_id: 'uint32_t',
  hw_ver: 'uint32_t',
  max_qp: 'int',
  max_qp_wr: 'int',
  device_cap_flags: 'unsigned int',
  max_sge: 'int',
  max_sge_rd: 'int',
  max_cq: 'int',
  max_cqe: 'int',
  max_mr: 'int',
  max_pd: 'int',
  max_qp_rd_atom: 'int',
  max_ee_rd_atom: 'int',
  max_res_rd_atom: 'int',
  max_qp_init_rd_atom: 'int',
  max_ee_init_rd_atom: 'int',
  atomic_cap: 'int',
  max_ee: 'int',
  max_rdd: 'int',
  max_mw: 'int',
  max_raw_ipv6_qp: 'int',
  max_raw_ethy_qp: 'int',
  max_mcast_grp: 'int',
  max_mcast_qp_attach: 'int',
  max_total_mcast_qp_attach: 'int',
  max_ah: 'int',
  max_fmr: 'int',
  max_map_per_fmr: 'int',
  max_srq: 'int',
  max_srq_wr: 'int',
  max_srq_sge: 'int',
  max_pkeys: 'uint16_t',
  local_ca_ack_delay: 'uint8_t',
  phys_port_cnt: 'uint8_t',
});
export interface IbvDeviceAttr {
  fw_ver: string;
  node_guid: number | bigint;
  sys_image_guid: number | bigint;
  max_mr_size: number | bigint;
  page_size_cap: number | bigint;
  vendor_id: number;
  vendor_part_id: number;
  hw_ver: number;
  max_qp: number;
  max_qp_wr: number;
  device_cap_flags: number;
  max_sge: number;
  max_sge_rd: number;
  max_cq: number;
  max_cqe: number;
  max_mr: number;
  max_pd: number;
  max_qp_rd_atom: number;
  max_ee_rd_atom: number;
  max_res_rd_atom: number;
  max_qp_init_rd_atom: number;
  max_ee_init_rd_atom: number;
  atomic_cap: number;
  max_ee: number;
  max_rdd: number;
  max_mw: number;
  max_raw_ipv6_qp: number;
  max_raw_ethy_qp: number;
  max_mcast_grp: number;
  max_mcast_qp_attach: number;
  max_total_mcast_qp_attach: number;
  max_ah: number;
  max_fmr: number;
  max_map_per_fmr: number;
  max_srq: number;
  max_srq_wr: number;
  max_srq_sge: number;
  max_pkeys: number;
  local_ca_ack_delay: number;
  phys_port_cnt: number;
}

const portAttrFields = {
  state: 'int',
  max_mtu: 'int',
  active_mtu: 'int',
  gid_tbl_len: 'int',
  port_cap_flags: 'uint32_t',
  max_msg_sz: 'uint32_t',
  bad_pkey_cntr: 'uint32_t',
  qkey_viol_cntr: 'uint32_t',
  pkey_tbl_len: 'uint16_t',
  lid: 'uint16_t',
  sm_lid: 'uint16_t',
  lmc: 'uint8_t',
  max_vl_num: 'uint8_t',
  sm_sl: 'uint8_t',
  subnet_timeout: 'uint8_t',
  init_type_reply: 'uint8_t',
  active_width: 'uint8_t',
  active_speed: 'uint8_t',
  phys_state: 'uint8_t',
  link_layer: 'uint8_t',
  flags: 'uint8_t',
  port_cap_flags2: 'uint16_t',
} as const;

/** The rdma-core release that added ibv_port_attr.active_speed_ex (XDR speeds), making it 56 bytes instead of 52. */
export const ACTIVE_SPEED_EX_RELEASE = 49;

/**
 * struct ibv_port_attr since rdma-core 49: active_speed_ex carries speeds that
 * do not fit active_speed's 8 bits (XDR, 200 Gbps a lane); 0 where the kernel
 * or provider does not report it.
 */
export const ibv_port_attr = cStructOfReleases('ibv_port_attr', 'ibv_port_attr', { from: ACTIVE_SPEED_EX_RELEASE }, {
  ...portAttrFields,
  active_speed_ex: 'uint32_t',
});
/** struct ibv_port_attr before rdma-core 49 (Debian 12's 44): 52 bytes, no active_speed_ex. */
export const ibv_port_attr_before_49 = cStructOfReleases('ibv_port_attr_before_49', 'ibv_port_attr', { before: ACTIVE_SPEED_EX_RELEASE }, portAttrFields);

/**
 * The struct ibv_port_attr that libibverbs of rdma-core `release` fills (its
 * release as read from its file name). An unknown release gets the older,
 * smaller layout: every libibverbs fills it, and none writes past a buffer it
 * is told is that small.
 */
export function ibvPortAttrFor(release: string | undefined): TypeObject {
  return release !== undefined && Number.parseInt(release, 10) >= ACTIVE_SPEED_EX_RELEASE ? ibv_port_attr : ibv_port_attr_before_49;
}
export interface IbvPortAttr {
  state: number;
  max_mtu: number;
  active_mtu: number;
  gid_tbl_len: number;
  port_cap_flags: number;
  max_msg_sz: number;
  bad_pkey_cntr: number;
  qkey_viol_cntr: number;
  pkey_tbl_len: number;
  lid: number;
  sm_lid: number;
  lmc: number;
  max_vl_num: number;
  sm_sl: number;
  subnet_timeout: number;
  init_type_reply: number;
  active_width: number;
  active_speed: number;
  phys_state: number;
  link_layer: number;
  flags: number;
  port_cap_flags2: number;
  /** Since rdma-core 49 (absent from the older layout). */
  active_speed_ex?: number;
}

/** struct ibv_async_event. */
export const ibv_async_event = cStruct('ibv_async_event', {
  element: koffi.union({ cq: 'void *', qp: 'void *', srq: 'void *', wq: 'void *', port_num: 'int' }),
  event_type: 'int',
});
export interface IbvAsyncEvent {
  element: { cq: Pointer | null; qp: Pointer | null; srq: Pointer | null; wq: Pointer | null; port_num: number };
  event_type: number;
}
