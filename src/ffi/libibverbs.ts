// libibverbs.so.1: the verbs the binding calls by symbol. The data-path verbs
// (post/poll/notify) are static inline in verbs.h; see inline-verbs.ts.
import { defineLibrary, fn, type FunctionSpec } from './library.js';

export const libibverbsFunctions = Object.freeze({
  // devices
  ibv_get_device_list: fn('struct ibv_device **', ['int *num_devices']),
  ibv_free_device_list: fn('void', ['struct ibv_device **list']),
  ibv_get_device_name: fn('const char *', ['struct ibv_device *device']),
  ibv_get_device_guid: fn('__be64', ['struct ibv_device *device']),
  ibv_open_device: fn('struct ibv_context *', ['struct ibv_device *device']),
  ibv_close_device: fn('int', ['struct ibv_context *context']),
  ibv_query_device: fn('int', ['struct ibv_context *context', 'struct ibv_device_attr *device_attr']),
  // The exported symbol fills struct _compat_ibv_port_attr (ibv_port_attr up to `flags`);
  // inline-verbs.ts's queryPort, like verbs.h's inline, calls the provider's verbs_context op first.
  ibv_query_port: fn('int', ['struct ibv_context *context', 'uint8_t port_num', 'struct _compat_ibv_port_attr *port_attr']),
  ibv_query_gid: fn('int', ['struct ibv_context *context', 'uint8_t port_num', 'int index', 'union ibv_gid *gid']),
  _ibv_query_gid_ex: fn('int', ['struct ibv_context *context', 'uint32_t port_num', 'uint32_t gid_index', 'struct ibv_gid_entry *entry', 'uint32_t flags', 'size_t entry_size'], 'IBVERBS_1.11'),
  ibv_query_pkey: fn('int', ['struct ibv_context *context', 'uint8_t port_num', 'int index', '__be16 *pkey']),
  ibv_get_async_event: fn('int', ['struct ibv_context *context', 'struct ibv_async_event *event']),
  ibv_ack_async_event: fn('void', ['struct ibv_async_event *event']),
  // protection domains and memory
  ibv_alloc_pd: fn('struct ibv_pd *', ['struct ibv_context *context']),
  ibv_dealloc_pd: fn('int', ['struct ibv_pd *pd']),
  ibv_reg_mr: fn('struct ibv_mr *', ['struct ibv_pd *pd', 'void *addr', 'size_t length', 'int access']),
  ibv_dereg_mr: fn('int', ['struct ibv_mr *mr']),
  // completion queues and channels
  ibv_create_comp_channel: fn('struct ibv_comp_channel *', ['struct ibv_context *context']),
  ibv_destroy_comp_channel: fn('int', ['struct ibv_comp_channel *channel']),
  ibv_create_cq: fn('struct ibv_cq *', ['struct ibv_context *context', 'int cqe', 'void *cq_context', 'struct ibv_comp_channel *channel', 'int comp_vector']),
  ibv_resize_cq: fn('int', ['struct ibv_cq *cq', 'int cqe']),
  ibv_destroy_cq: fn('int', ['struct ibv_cq *cq']),
  ibv_get_cq_event: fn('int', ['struct ibv_comp_channel *channel', 'struct ibv_cq **cq', 'void **cq_context']),
  ibv_ack_cq_events: fn('void', ['struct ibv_cq *cq', 'unsigned int nevents']),
  // queue pairs and shared receive queues
  ibv_create_qp: fn('struct ibv_qp *', ['struct ibv_pd *pd', 'struct ibv_qp_init_attr *qp_init_attr']),
  ibv_query_qp: fn('int', ['struct ibv_qp *qp', 'struct ibv_qp_attr *attr', 'int attr_mask', 'struct ibv_qp_init_attr *init_attr']),
  ibv_modify_qp: fn('int', ['struct ibv_qp *qp', 'struct ibv_qp_attr *attr', 'int attr_mask']),
  ibv_destroy_qp: fn('int', ['struct ibv_qp *qp']),
  ibv_create_srq: fn('struct ibv_srq *', ['struct ibv_pd *pd', 'struct ibv_srq_init_attr *srq_init_attr']),
  ibv_modify_srq: fn('int', ['struct ibv_srq *srq', 'struct ibv_srq_attr *srq_attr', 'int srq_attr_mask']),
  ibv_query_srq: fn('int', ['struct ibv_srq *srq', 'struct ibv_srq_attr *srq_attr']),
  ibv_destroy_srq: fn('int', ['struct ibv_srq *srq']),
  // address handles and multicast
  ibv_create_ah: fn('struct ibv_ah *', ['struct ibv_pd *pd', 'struct ibv_ah_attr *attr']),
  ibv_init_ah_from_wc: fn('int', ['struct ibv_context *context', 'uint8_t port_num', 'struct ibv_wc *wc', 'struct ibv_grh *grh', 'struct ibv_ah_attr *ah_attr']),
  ibv_destroy_ah: fn('int', ['struct ibv_ah *ah']),
  ibv_attach_mcast: fn('int', ['struct ibv_qp *qp', 'const union ibv_gid *gid', 'uint16_t lid']),
  ibv_detach_mcast: fn('int', ['struct ibv_qp *qp', 'const union ibv_gid *gid', 'uint16_t lid']),
  // text
  ibv_wc_status_str: fn('const char *', ['enum ibv_wc_status status']),
  ibv_node_type_str: fn('const char *', ['enum ibv_node_type node_type']),
  ibv_port_state_str: fn('const char *', ['enum ibv_port_state port_state']),
  ibv_event_type_str: fn('const char *', ['enum ibv_event_type event']),
  // process
  ibv_fork_init: fn('int', []),
  /** enum ibv_fork_status: 0 DISABLED, 1 ENABLED, 2 UNNEEDED (the kernel copies pinned pages at fork, 5.13+). */
  ibv_is_fork_initialized: fn('int', [], 'IBVERBS_1.13'),
} as const satisfies Record<string, FunctionSpec>);

/** The first rdma-core release of each symbol version `since` names (libibverbs/libibverbs.map.in's history). */
export const libibverbsReleases = Object.freeze({ 'IBVERBS_1.11': '32', 'IBVERBS_1.13': '35' } as const);

export const libibverbs = defineLibrary(
  { name: 'libibverbs', sonames: ['libibverbs.so.1'], envOverride: 'RDMACM_LIBIBVERBS', releases: libibverbsReleases },
  libibverbsFunctions,
);
