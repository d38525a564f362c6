// An id's route as paths (struct ibv_sa_path_rec): what rdma_resolve_route
// found, or what a connection request carried to the passive side.
import koffi from 'koffi';
import { nativeBytes } from '../../ffi/native-copy.js';
import { readPointer, type Pointer } from '../../ffi/library.js';
import { ibv_sa_path_rec, rdma_cm_id, rdma_route, type IbvSaPathRec } from '../../structs/rdma-cma.js';
import { gidText, mtuBytes } from '../verbs/devices.js';

/** One path of a connection's route. */
export interface PathRecord {
  /** The local and remote GIDs: eight colon-separated 16-bit groups. */
  readonly sgid: string;
  readonly dgid: string;
  /** The local and remote LIDs (InfiniBand; 0 on RoCE). */
  readonly slid: number;
  readonly dlid: number;
  readonly flowLabel: number;
  readonly hopLimit: number;
  /**
   * The traffic class, 0–255: on RoCE the type of service the connection
   * was made with (RDMA_OPTION_ID_TOS before its route resolved, else the
   * device's default_roce_tos); on the passive side, the active side's.
   */
  readonly trafficClass: number;
  readonly pkey: number;
  /** The service level, 0–15. */
  readonly serviceLevel: number;
  /** The path MTU in bytes (256 … 4096); 0 when unset. */
  readonly mtu: number;
  /** enum ibv_rate, as the path record holds it (e.g. 3 for 10 Gb/s). */
  readonly rate: number;
  /** The packet life time as the path record holds it: 4.096 µs × 2^value. */
  readonly packetLifeTime: number;
}

const ROUTE = koffi.offsetof(rdma_cm_id, 'route');
const PATHS = ROUTE + koffi.offsetof(rdma_route, 'path_rec');
const PATH_COUNT = ROUTE + koffi.offsetof(rdma_route, 'num_paths');
const PATH_SIZE = ibv_sa_path_rec.size;
const SGID = koffi.offsetof(ibv_sa_path_rec, 'sgid');
const DGID = koffi.offsetof(ibv_sa_path_rec, 'dgid');

/** The paths of the rdma_cm_id at `id` (none before its route is resolved). */
export function pathRecordsOf(id: Pointer): PathRecord[] {
  const paths = readPointer(id, PATHS);
  const count = koffi.decode(id, PATH_COUNT, 'int') as number;
  const records: PathRecord[] = [];
  if (paths === 0n) return records;
  for (let i = 0; i < count; i++) {
    const at = paths + BigInt(i * PATH_SIZE);
    // The GIDs are unions, read as bytes: koffi decodes a union as an object of its own kind.
    const bytes = nativeBytes(at, PATH_SIZE);
    const path = koffi.decode(bytes, ibv_sa_path_rec) as IbvSaPathRec;
    records.push({
      sgid: gidText(bytes.subarray(SGID, SGID + 16)),
      dgid: gidText(bytes.subarray(DGID, DGID + 16)),
      slid: path.slid,
      dlid: path.dlid,
      flowLabel: path.flow_label,
      hopLimit: path.hop_limit,
      trafficClass: path.traffic_class,
      pkey: path.pkey,
      serviceLevel: path.sl,
      mtu: mtuBytes(path.mtu),
      rate: path.rate,
      packetLifeTime: path.packet_life_time,
    });
  }
  return records;
}
