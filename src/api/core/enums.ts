// Named values for the C enums and flags the safe API speaks, both ways.

/** A C enum or flag set by name: its values, its names, and the name of a value. */
export interface NamedValues<T extends Record<string, number>> {
  readonly values: T;
  readonly names: readonly (keyof T & string)[];
  /** The name of `value`, or `UNKNOWN(value)` for one this table does not know. */
  nameOf(value: number): (keyof T & string) | `UNKNOWN(${number})`;
}

/** The names of a table: e.g. `NameOf<typeof Access>` is `'LOCAL_WRITE' | 'REMOTE_WRITE' | …`. */
export type NameOf<Table> = Table extends NamedValues<infer T> ? keyof T & string : never;

/** Builds a name→value table and its value→name inverse. */
function namedValues<const T extends Record<string, number>>(values: T): NamedValues<T> {
  const names = new Map<number, keyof T & string>();
  for (const [name, value] of Object.entries(values)) names.set(value, name as keyof T & string);
  // Frozen: the tables are shared by every caller and by the validation.
  return Object.freeze({
    values: Object.freeze(values),
    names: Object.freeze(Object.keys(values) as (keyof T & string)[]),
    nameOf: (value: number): (keyof T & string) | `UNKNOWN(${number})` =>
      names.get(value) ?? `UNKNOWN(${typeof value === 'number' ? value : Number.NaN})`,
  });
}

/** rdma_port_space, as the rdma_create_id man page names them. */
export const PortSpace = namedValues({ IPOIB: 0x0002, TCP: 0x0106, UDP: 0x0111, IB: 0x013f });
export type PortSpaceName = NameOf<typeof PortSpace>;

/** ibv_qp_type. */
export const QpType = namedValues({ RC: 2, UC: 3, UD: 4, RAW_PACKET: 8, XRC_SEND: 9, XRC_RECV: 10 });
export type QpTypeName = NameOf<typeof QpType>;

/** rdma_addrinfo ai_flags (RAI_*). */
export const AddrInfoFlag = namedValues({ PASSIVE: 0x1, NUMERICHOST: 0x2, NOROUTE: 0x4, FAMILY: 0x8 });
export type AddrInfoFlagName = NameOf<typeof AddrInfoFlag>;

/** ibv_access_flags. */
export const Access = namedValues({
  LOCAL_WRITE: 1,
  REMOTE_WRITE: 1 << 1,
  REMOTE_READ: 1 << 2,
  REMOTE_ATOMIC: 1 << 3,
  MW_BIND: 1 << 4,
  ZERO_BASED: 1 << 5,
  ON_DEMAND: 1 << 6,
  RELAXED_ORDERING: 1 << 20,
});
export type AccessName = NameOf<typeof Access>;

/** rdma_cm_event_type, named as rdma_event_str names them (without the RDMA_CM_EVENT_ prefix). */
export const CmEventType = namedValues({
  ADDR_RESOLVED: 0,
  ADDR_ERROR: 1,
  ROUTE_RESOLVED: 2,
  ROUTE_ERROR: 3,
  CONNECT_REQUEST: 4,
  CONNECT_RESPONSE: 5,
  CONNECT_ERROR: 6,
  UNREACHABLE: 7,
  REJECTED: 8,
  ESTABLISHED: 9,
  DISCONNECTED: 10,
  DEVICE_REMOVAL: 11,
  MULTICAST_JOIN: 12,
  MULTICAST_ERROR: 13,
  ADDR_CHANGE: 14,
  TIMEWAIT_EXIT: 15,
});
export type CmEventTypeName = NameOf<typeof CmEventType>;

/** ibv_wc_status. */
export const WcStatus = namedValues({
  SUCCESS: 0,
  LOC_LEN_ERR: 1,
  LOC_QP_OP_ERR: 2,
  LOC_EEC_OP_ERR: 3,
  LOC_PROT_ERR: 4,
  WR_FLUSH_ERR: 5,
  MW_BIND_ERR: 6,
  BAD_RESP_ERR: 7,
  LOC_ACCESS_ERR: 8,
  REM_INV_REQ_ERR: 9,
  REM_ACCESS_ERR: 10,
  REM_OP_ERR: 11,
  RETRY_EXC_ERR: 12,
  RNR_RETRY_EXC_ERR: 13,
  LOC_RDD_VIOL_ERR: 14,
  REM_INV_RD_REQ_ERR: 15,
  REM_ABORT_ERR: 16,
  INV_EECN_ERR: 17,
  INV_EEC_STATE_ERR: 18,
  FATAL_ERR: 19,
  RESP_TIMEOUT_ERR: 20,
  GENERAL_ERR: 21,
  TM_ERR: 22,
  TM_RNDV_INCOMPLETE: 23,
});
export type WcStatusName = NameOf<typeof WcStatus>;

/** ibv_wc_opcode. */
export const WcOpcode = namedValues({
  SEND: 0,
  RDMA_WRITE: 1,
  RDMA_READ: 2,
  COMP_SWAP: 3,
  FETCH_ADD: 4,
  BIND_MW: 5,
  LOCAL_INV: 6,
  TSO: 7,
  ATOMIC_WRITE: 9,
  RECV: 1 << 7,
  RECV_RDMA_WITH_IMM: (1 << 7) + 1,
});
export type WcOpcodeName = NameOf<typeof WcOpcode>;

/** ibv_wc_flags. */
export const WcFlag = namedValues({ GRH: 1, WITH_IMM: 2, IP_CSUM_OK: 4, WITH_INV: 8, TM_SYNC_REQ: 16, TM_MATCH: 32, TM_DATA_VALID: 64 });
export type WcFlagName = NameOf<typeof WcFlag>;

/** ibv_event_type, for rdma_notify. */
export const IbvEventType = namedValues({
  CQ_ERR: 0, QP_FATAL: 1, QP_REQ_ERR: 2, QP_ACCESS_ERR: 3, COMM_EST: 4, SQ_DRAINED: 5, PATH_MIG: 6, PATH_MIG_ERR: 7,
  DEVICE_FATAL: 8, PORT_ACTIVE: 9, PORT_ERR: 10, LID_CHANGE: 11, PKEY_CHANGE: 12, SM_CHANGE: 13, SRQ_ERR: 14,
  SRQ_LIMIT_REACHED: 15, QP_LAST_WQE_REACHED: 16, CLIENT_REREGISTER: 17, GID_CHANGE: 18, WQ_FATAL: 19,
});
export type IbvEventTypeName = NameOf<typeof IbvEventType>;

/** Flag names → bit mask. */
export function flagMask<T extends Record<string, number>>(table: { values: T }, names: readonly (keyof T)[]): number {
  return names.reduce((mask, name) => mask | table.values[name]!, 0);
}

/** Bit mask → the flag names it contains. */
export function flagNames<T extends Record<string, number>>(table: { values: T }, mask: number): (keyof T & string)[] {
  return (Object.entries(table.values) as [keyof T & string, number][]).filter(([, bit]) => (mask & bit) !== 0).map(([name]) => name);
}
