// librdmacm.so.1: every function rdma_cma.h (and rdma_verbs.h's SRQ calls)
// exports, with its C signature as the header writes it. Functions after
// RDMACM_1.0 carry their symbol version: an older librdmacm lacks them, and
// calling one there throws an UnsupportedError that names the release needed.
import { defineLibrary, fn, type FunctionSpec } from './library.js';


export const librdmacmFunctions = Object.freeze({
  // RDMACM_1.0
  rdma_create_event_channel: fn('struct rdma_event_channel *', []),
  rdma_destroy_event_channel: fn('void', ['struct rdma_event_channel *channel']),
  rdma_create_id: fn('int', ['struct rdma_event_channel *channel', 'struct rdma_cm_id **id', 'void *context', 'enum rdma_port_space ps']),
  rdma_create_ep: fn('int', ['struct rdma_cm_id **id', 'struct rdma_addrinfo *res', 'struct ibv_pd *pd', 'struct ibv_qp_init_attr *qp_init_attr']),
  rdma_destroy_ep: fn('void', ['struct rdma_cm_id *id']),
  rdma_destroy_id: fn('int', ['struct rdma_cm_id *id']),
  rdma_bind_addr: fn('int', ['struct rdma_cm_id *id', 'struct sockaddr *addr']),
  rdma_resolve_addr: fn('int', ['struct rdma_cm_id *id', 'struct sockaddr *src_addr', 'struct sockaddr *dst_addr', 'int timeout_ms']),
  rdma_resolve_route: fn('int', ['struct rdma_cm_id *id', 'int timeout_ms']),
  rdma_create_qp: fn('int', ['struct rdma_cm_id *id', 'struct ibv_pd *pd', 'struct ibv_qp_init_attr *qp_init_attr']),
  rdma_create_qp_ex: fn('int', ['struct rdma_cm_id *id', 'struct ibv_qp_init_attr_ex *qp_init_attr']),
  rdma_destroy_qp: fn('void', ['struct rdma_cm_id *id']),
  rdma_connect: fn('int', ['struct rdma_cm_id *id', 'struct rdma_conn_param *conn_param']),
  rdma_listen: fn('int', ['struct rdma_cm_id *id', 'int backlog']),
  rdma_get_request: fn('int', ['struct rdma_cm_id *listen', 'struct rdma_cm_id **id']),
  rdma_accept: fn('int', ['struct rdma_cm_id *id', 'struct rdma_conn_param *conn_param']),
  rdma_reject: fn('int', ['struct rdma_cm_id *id', 'const void *private_data', 'uint8_t private_data_len']),
  rdma_notify: fn('int', ['struct rdma_cm_id *id', 'enum ibv_event_type event']),
  rdma_disconnect: fn('int', ['struct rdma_cm_id *id']),
  rdma_join_multicast: fn('int', ['struct rdma_cm_id *id', 'struct sockaddr *addr', 'void *context']),
  rdma_leave_multicast: fn('int', ['struct rdma_cm_id *id', 'struct sockaddr *addr']),
  rdma_get_cm_event: fn('int', ['struct rdma_event_channel *channel', 'struct rdma_cm_event **event']),
  rdma_ack_cm_event: fn('int', ['struct rdma_cm_event *event']),
  rdma_get_src_port: fn('__be16', ['struct rdma_cm_id *id']),
  rdma_get_dst_port: fn('__be16', ['struct rdma_cm_id *id']),
  rdma_get_devices: fn('struct ibv_context **', ['int *num_devices']),
  rdma_free_devices: fn('void', ['struct ibv_context **list']),
  rdma_event_str: fn('const char *', ['enum rdma_cm_event_type event']),
  rdma_set_option: fn('int', ['struct rdma_cm_id *id', 'int level', 'int optname', 'void *optval', 'size_t optlen']),
  rdma_migrate_id: fn('int', ['struct rdma_cm_id *id', 'struct rdma_event_channel *channel']),
  rdma_getaddrinfo: fn('int', ['const char *node', 'const char *service', 'const struct rdma_addrinfo *hints', 'struct rdma_addrinfo **res']),
  rdma_freeaddrinfo: fn('void', ['struct rdma_addrinfo *res']),
  rdma_create_srq: fn('int', ['struct rdma_cm_id *id', 'struct ibv_pd *pd', 'struct ibv_srq_init_attr *attr']),
  rdma_create_srq_ex: fn('int', ['struct rdma_cm_id *id', 'struct ibv_srq_init_attr_ex *attr']),
  rdma_destroy_srq: fn('void', ['struct rdma_cm_id *id']),
  // RDMACM_1.1
  rdma_join_multicast_ex: fn('int', ['struct rdma_cm_id *id', 'struct rdma_cm_join_mc_attr_ex *mc_join_attr', 'void *context'], 'RDMACM_1.1'),
  // RDMACM_1.2
  rdma_establish: fn('int', ['struct rdma_cm_id *id'], 'RDMACM_1.2'),
  rdma_init_qp_attr: fn('int', ['struct rdma_cm_id *id', 'struct ibv_qp_attr *qp_attr', 'int *qp_attr_mask'], 'RDMACM_1.2'),
  // RDMACM_1.3
  rdma_set_local_ece: fn('int', ['struct rdma_cm_id *id', 'struct ibv_ece *ece'], 'RDMACM_1.3'),
  rdma_get_remote_ece: fn('int', ['struct rdma_cm_id *id', 'struct ibv_ece *ece'], 'RDMACM_1.3'),
  rdma_reject_ece: fn('int', ['struct rdma_cm_id *id', 'const void *private_data', 'uint8_t private_data_len'], 'RDMACM_1.3'),
  // RDMACM_1.4 (rdma-core 60): detected, absent from Debian 12's 44 and Debian 13's 56
  rdma_resolve_addrinfo: fn('int', ['struct rdma_cm_id *id', 'const char *node', 'const char *service', 'const struct rdma_addrinfo *hints'], 'RDMACM_1.4'),
  rdma_query_addrinfo: fn('int', ['struct rdma_cm_id *id', 'struct rdma_addrinfo **info'], 'RDMACM_1.4'),
  rdma_write_cm_event: fn('int', ['struct rdma_cm_id *id', 'enum rdma_cm_event_type event', 'int status', 'uint64_t arg'], 'RDMACM_1.4'),
} as const satisfies Record<string, FunctionSpec>);

/** The first rdma-core release of each symbol version (librdmacm/librdmacm.map's history). */
export const librdmacmReleases = Object.freeze({ 'RDMACM_1.1': '16', 'RDMACM_1.2': '23', 'RDMACM_1.3': '31', 'RDMACM_1.4': '60' } as const);

export const librdmacm = defineLibrary(
  { name: 'librdmacm', sonames: ['librdmacm.so.1'], envOverride: 'RDMACM_LIBRDMACM', releases: librdmacmReleases },
  librdmacmFunctions,
);
