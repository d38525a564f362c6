// Device discovery: every RDMA device with its limits, ports and GID tables,
// as plain JSON-serialisable data (what ibv_devinfo -v shows); a device that
// cannot be opened is listed with its error instead.
import { Buffer } from 'node:buffer';
import { readdirSync, readFileSync } from 'node:fs';
import koffi, { type TypeObject } from 'koffi';
import { libibverbs } from '../../ffi/libibverbs.js';
import { queryPort as queryPortVerb } from '../../ffi/inline-verbs.js';
import { librdmacm } from '../../ffi/librdmacm.js';
import { checkVerbs, RdmaError } from '../../ffi/errors.js';
import { readPointer, readPointerArray, type Pointer } from '../../ffi/library.js';
import * as structs from '../../structs/index.js';
import { diagnoseRdmaStack } from '../../ffi/diagnosis.js';
import { noDeviceFound } from '../../package-info.js';
import { openDeviceError } from './device-context.js';

/** A value none of the tables below knows, kept with its number. */
export type Unknown = `unknown (${number})`;

export type NodeType = 'CA' | 'SWITCH' | 'ROUTER' | 'RNIC' | 'USNIC' | 'USNIC_UDP' | 'UNSPECIFIED' | Unknown;
export type Transport = 'InfiniBand' | 'iWARP' | 'usNIC' | 'usNIC UDP' | 'Unspecified' | Unknown;
export type AtomicCapability = 'none' | 'hca' | 'global' | Unknown;
export type PortState = 'NOP' | 'DOWN' | 'INIT' | 'ARMED' | 'ACTIVE' | 'ACTIVE_DEFER' | Unknown;
export type PhysicalPortState =
  | 'NO_STATE_CHANGE'
  | 'SLEEP'
  | 'POLLING'
  | 'DISABLED'
  | 'PORT_CONFIGURATION_TRAINING'
  | 'LINK_UP'
  | 'LINK_ERROR_RECOVERY'
  | 'PHY_TEST'
  | Unknown;
export type LinkLayer = 'InfiniBand' | 'Ethernet' | 'Unspecified' | Unknown;
export type GidType = 'IB' | 'RoCE v1' | 'RoCE v2';

/** One non-empty entry of a port's GID table. */
export interface GidInfo {
  index: number;
  /** Eight colon-separated 16-bit groups, as ibv_devinfo prints them. */
  gid: string;
  type: GidType;
  /** The network interface behind a RoCE GID, e.g. 'eth0'; null for IB GIDs. */
  netdev: string | null;
  /** The IP address a RoCE GID encodes ('10.0.0.1', 'fe80::1'); null for IB GIDs. */
  ip: string | null;
}

export interface PortInfo {
  /** The port number, from 1. */
  port: number;
  state: PortState;
  physicalState: PhysicalPortState;
  /** MTUs in bytes (256 … 4096); 0 when the device reports none. */
  maxMtu: number;
  activeMtu: number;
  linkLayer: LinkLayer;
  /** E.g. '4X'. */
  activeWidth: string;
  /** Per lane, e.g. '25.0 Gbps'. */
  activeSpeed: string;
  lid: number;
  smLid: number;
  lmc: number;
  maxVlNum: number;
  gidTableLength: number;
  pkeyTableLength: number;
  maxMessageSize: number;
  portCapFlags: number;
  gids: GidInfo[];
}

/** What ibv_query_device reports as the device's maxima. */
export interface DeviceInfoLimits {
  /** Decimal: a 64-bit size (often 2^64 - 1) does not fit a JS number. */
  maxMrSize: string;
  maxQp: number;
  maxQpWr: number;
  maxSge: number;
  maxSgeRd: number;
  maxCq: number;
  maxCqe: number;
  maxMr: number;
  maxPd: number;
  maxQpRdAtom: number;
  maxQpInitRdAtom: number;
  maxResRdAtom: number;
  maxMw: number;
  maxSrq: number;
  maxSrqWr: number;
  maxSrqSge: number;
  maxAh: number;
  maxMcastGrp: number;
  maxMcastQpAttach: number;
  maxTotalMcastQpAttach: number;
  maxPkeys: number;
}

export interface DeviceInfo {
  name: string;
  /** 'xxxx:xxxx:xxxx:xxxx', as ibv_devinfo prints it. */
  nodeGuid: string;
  systemImageGuid: string;
  nodeType: NodeType;
  transport: Transport;
  firmwareVersion: string;
  vendorId: number;
  vendorPartId: number;
  hwVersion: number;
  /** The supported page sizes, a bit mask in hex ('0xfffff000'). */
  pageSizeCap: string;
  deviceCapFlags: number;
  atomicCapability: AtomicCapability;
  localCaAckDelay: number;
  physicalPortCount: number;
  limits: DeviceInfoLimits;
  ports: PortInfo[];
}

/** Why a device could not be described: its RdmaError, as plain data. */
export interface DeviceError {
  /** The errno's name, e.g. 'EACCES'. */
  code: string;
  errno: number;
  /** The call that failed, e.g. 'ibv_open_device'. */
  syscall: string;
  /** The whole message, with the hint. */
  message: string;
}

/**
 * A device that ibv_get_device_list lists but this process cannot open or
 * query (e.g. EACCES: no read/write access to its /dev/infiniband/uverbsN).
 * Tell it from a DeviceInfo with `'error' in device`.
 */
export interface UnavailableDevice {
  name: string;
  nodeType: NodeType;
  transport: Transport;
  error: DeviceError;
}

// Texts for the verbs.h enums (ibv_node_type, ibv_transport_type, …).
const nodeTypes: Record<number, NodeType> = { 1: 'CA', 2: 'SWITCH', 3: 'ROUTER', 4: 'RNIC', 5: 'USNIC', 6: 'USNIC_UDP', 7: 'UNSPECIFIED' };
const transports: Record<number, Transport> = { 0: 'InfiniBand', 1: 'iWARP', 2: 'usNIC', 3: 'usNIC UDP', 4: 'Unspecified' };
const atomicCapabilities: Record<number, AtomicCapability> = { 0: 'none', 1: 'hca', 2: 'global' };
const portStates: Record<number, PortState> = { 0: 'NOP', 1: 'DOWN', 2: 'INIT', 3: 'ARMED', 4: 'ACTIVE', 5: 'ACTIVE_DEFER' };
// The IB spec's PortPhysicalState values.
const physicalStates: Record<number, PhysicalPortState> = {
  0: 'NO_STATE_CHANGE',
  1: 'SLEEP',
  2: 'POLLING',
  3: 'DISABLED',
  4: 'PORT_CONFIGURATION_TRAINING',
  5: 'LINK_UP',
  6: 'LINK_ERROR_RECOVERY',
  7: 'PHY_TEST',
};
const linkLayers: Record<number, LinkLayer> = { 0: 'Unspecified', 1: 'InfiniBand', 2: 'Ethernet' };
// As ibv_devinfo's width_str and speed_str (FDR10 runs at 10 Gbps like QDR).
const widths: Record<number, string> = { 1: '1X', 2: '4X', 4: '8X', 8: '12X', 16: '2X' };
const speeds: Record<number, string> = {
  1: '2.5 Gbps',
  2: '5.0 Gbps',
  4: '10.0 Gbps',
  8: '10.0 Gbps',
  16: '14.0 Gbps',
  32: '25.0 Gbps',
  64: '50.0 Gbps',
  128: '100.0 Gbps',
  256: '200.0 Gbps',
};
const speedOf = (speed: number): string => speeds[speed] ?? `invalid speed (${speed})`;
const gidTypes: Record<number, GidType> = { 0: 'IB', 1: 'RoCE v1', 2: 'RoCE v2' };

function textOf<T extends string>(table: Record<number, T>, value: number): T | Unknown {
  return table[value] ?? `unknown (${value})`;
}

/** enum ibv_mtu (1 … 5) in bytes. */
export const mtuBytes = (mtu: number): number => (mtu >= 1 && mtu <= 5 ? 128 << mtu : 0);

// errno values that mean "no RDMA here" rather than a failure.
const ENOENT = 2;
const ENODEV = 19;
const EINVAL = 22;
const ENOSYS = 38;
const ENODATA = 61;

/** 8 big-endian bytes as 'xxxx:xxxx:xxxx:xxxx'. */
function formatGuid(bytes: Uint8Array): string {
  return groupsOf16Bits(bytes).join(':');
}

function groupsOf16Bits(bytes: Uint8Array): string[] {
  const groups: string[] = [];
  for (let i = 0; i < bytes.length; i += 2) groups.push(((bytes[i]! << 8) | bytes[i + 1]!).toString(16).padStart(4, '0'));
  return groups;
}

/** A GID's 16 bytes as eight colon-separated 16-bit groups, as ibv_devinfo prints them. */
export function gidText(bytes: Uint8Array): string {
  return groupsOf16Bits(bytes).join(':');
}

/** RFC 5952 text of a 16-byte IPv6 address (the longest run of ≥ 2 zero groups becomes '::'). */
function ipv6Text(bytes: Uint8Array): string {
  const groups = groupsOf16Bits(bytes).map((group) => group.replace(/^0+(?=.)/, ''));
  let bestStart = -1;
  let bestLength = 1;
  for (let start = 0; start < 8; start++) {
    let length = 0;
    while (start + length < 8 && groups[start + length] === '0') length++;
    if (length > bestLength) [bestStart, bestLength] = [start, length];
  }
  if (bestStart < 0) return groups.join(':');
  return `${groups.slice(0, bestStart).join(':')}::${groups.slice(bestStart + bestLength).join(':')}`;
}

/** The IP address a RoCE GID is built from: IPv4-mapped (::ffff:a.b.c.d) or IPv6. */
function gidAddress(gid: Uint8Array): string {
  const ipv4Mapped = gid.subarray(0, 10).every((byte) => byte === 0) && gid[10] === 0xff && gid[11] === 0xff;
  return ipv4Mapped ? Array.from(gid.subarray(12)).join('.') : ipv6Text(gid);
}

function readSysfs(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch {
    return undefined;
  }
}

/** Interface index → name, from /sys/class/net. */
function netdevNames(): Map<number, string> {
  const names = new Map<number, string>();
  let entries: string[] = [];
  try {
    entries = readdirSync('/sys/class/net');
  } catch {
    return names;
  }
  for (const name of entries) {
    const index = Number(readSysfs(`/sys/class/net/${name}/ifindex`));
    if (Number.isInteger(index) && index > 0) names.set(index, name);
  }
  return names;
}

interface RawGid {
  bytes: Uint8Array;
  type: GidType;
  netdev: string | null;
}

const gidEntrySize = koffi.sizeof(structs.ibv_gid_entry);
const gidSize = koffi.sizeof(structs.ibv_gid);

/** One GID through _ibv_query_gid_ex (rdma-core v31+); undefined for an empty or invalid index. */
function queryGidEntry(context: Pointer, port: number, index: number, netdevs: Map<number, string>): RawGid | undefined {
  const buffer = Buffer.alloc(gidEntrySize);
  const result = libibverbs._ibv_query_gid_ex(context, port, index, buffer, 0, gidEntrySize);
  if ([ENODATA, EINVAL, ENOENT].includes(Math.abs(result))) return undefined;
  checkVerbs('ibv_query_gid_ex', result);
  const entry = koffi.decode(buffer, structs.ibv_gid_entry) as structs.IbvGidEntry;
  return {
    bytes: Uint8Array.from(entry.gid.raw),
    type: gidTypes[entry.gid_type] ?? 'IB',
    netdev: entry.ndev_ifindex ? (netdevs.get(entry.ndev_ifindex) ?? null) : null,
  };
}

/** One GID through ibv_query_gid and the GID attributes in sysfs (older rdma-core). */
function queryGidFromSysfs(context: Pointer, device: string, port: number, index: number, linkLayer: LinkLayer): RawGid | undefined {
  const buffer = Buffer.alloc(gidSize);
  const result = libibverbs.ibv_query_gid(context, port, index, buffer);
  if (result !== 0) return undefined;
  const attributes = `/sys/class/infiniband/${device}/ports/${port}/gid_attrs`;
  // The kernel names IB and RoCE v1 alike ('IB/RoCE v1'); the link layer tells them apart.
  const kernelType = readSysfs(`${attributes}/types/${index}`);
  const type: GidType = kernelType === 'RoCE v2' ? 'RoCE v2' : linkLayer === 'Ethernet' ? 'RoCE v1' : 'IB';
  return { bytes: Uint8Array.from(buffer), type, netdev: readSysfs(`${attributes}/ndevs/${index}`) ?? null };
}

function queryGids(context: Pointer, device: string, port: number, tableLength: number, linkLayer: LinkLayer, netdevs: Map<number, string>): GidInfo[] {
  const hasGidEx = libibverbs.has('_ibv_query_gid_ex');
  const gids: GidInfo[] = [];
  for (let index = 0; index < tableLength; index++) {
    const raw = hasGidEx ? queryGidEntry(context, port, index, netdevs) : queryGidFromSysfs(context, device, port, index, linkLayer);
    if (!raw || raw.bytes.every((byte) => byte === 0)) continue;
    const isRoce = raw.type !== 'IB';
    gids.push({
      index,
      gid: gidText(raw.bytes),
      type: raw.type,
      netdev: isRoce ? raw.netdev : null,
      ip: isRoce ? gidAddress(raw.bytes) : null,
    });
  }
  return gids;
}

let portAttr: TypeObject | undefined;
/**
 * The struct ibv_port_attr the loaded libibverbs fills: 56 bytes with
 * active_speed_ex from rdma-core 49, 52 before (chosen by the release in its
 * file name, once).
 */
export function portAttrLayout(): TypeObject {
  return (portAttr ??= structs.ibvPortAttrFor(libibverbs.release));
}

function queryPort(context: Pointer, device: string, port: number, netdevs: Map<number, string>): PortInfo {
  const layout = portAttrLayout();
  const buffer = Buffer.alloc(layout.size);
  checkVerbs('ibv_query_port', queryPortVerb(context, port, buffer));
  const attr = koffi.decode(buffer, layout) as structs.IbvPortAttr;
  const linkLayer = textOf(linkLayers, attr.link_layer);
  return {
    port,
    state: textOf(portStates, attr.state),
    physicalState: textOf(physicalStates, attr.phys_state),
    maxMtu: mtuBytes(attr.max_mtu),
    activeMtu: mtuBytes(attr.active_mtu),
    linkLayer,
    activeWidth: widths[attr.active_width] ?? `invalid width (${attr.active_width})`,
    // active_speed_ex, where the library and the kernel report it, also holds XDR (ibv_devinfo reads it first).
    activeSpeed: speedOf(attr.active_speed_ex || attr.active_speed),
    lid: attr.lid,
    smLid: attr.sm_lid,
    lmc: attr.lmc,
    maxVlNum: attr.max_vl_num,
    gidTableLength: attr.gid_tbl_len,
    pkeyTableLength: attr.pkey_tbl_len,
    maxMessageSize: attr.max_msg_sz,
    portCapFlags: attr.port_cap_flags,
    gids: queryGids(context, device, port, attr.gid_tbl_len, linkLayer, netdevs),
  };
}

const deviceAttrSize = koffi.sizeof(structs.ibv_device_attr);
const nodeGuidOffset = koffi.offsetof(structs.ibv_device_attr, 'node_guid');
const sysImageGuidOffset = koffi.offsetof(structs.ibv_device_attr, 'sys_image_guid');

function describeOpenDevice(context: Pointer, device: structs.IbvDevice, netdevs: Map<number, string>): DeviceInfo {
  const buffer = Buffer.alloc(deviceAttrSize);
  checkVerbs('ibv_query_device', libibverbs.ibv_query_device(context, buffer));
  const attr = koffi.decode(buffer, structs.ibv_device_attr) as structs.IbvDeviceAttr;
  const ports: PortInfo[] = [];
  for (let port = 1; port <= attr.phys_port_cnt; port++) ports.push(queryPort(context, device.name, port, netdevs));
  return {
    name: device.name,
    // The GUIDs are big-endian in memory: their bytes in order are the text.
    nodeGuid: formatGuid(buffer.subarray(nodeGuidOffset, nodeGuidOffset + 8)),
    systemImageGuid: formatGuid(buffer.subarray(sysImageGuidOffset, sysImageGuidOffset + 8)),
    nodeType: textOf(nodeTypes, device.node_type),
    transport: textOf(transports, device.transport_type),
    firmwareVersion: attr.fw_ver,
    vendorId: attr.vendor_id,
    vendorPartId: attr.vendor_part_id,
    hwVersion: attr.hw_ver,
    pageSizeCap: `0x${BigInt(attr.page_size_cap).toString(16)}`,
    deviceCapFlags: attr.device_cap_flags,
    atomicCapability: textOf(atomicCapabilities, attr.atomic_cap),
    localCaAckDelay: attr.local_ca_ack_delay,
    physicalPortCount: attr.phys_port_cnt,
    limits: {
      maxMrSize: BigInt(attr.max_mr_size).toString(),
      maxQp: attr.max_qp,
      maxQpWr: attr.max_qp_wr,
      maxSge: attr.max_sge,
      maxSgeRd: attr.max_sge_rd,
      maxCq: attr.max_cq,
      maxCqe: attr.max_cqe,
      maxMr: attr.max_mr,
      maxPd: attr.max_pd,
      maxQpRdAtom: attr.max_qp_rd_atom,
      maxQpInitRdAtom: attr.max_qp_init_rd_atom,
      maxResRdAtom: attr.max_res_rd_atom,
      maxMw: attr.max_mw,
      maxSrq: attr.max_srq,
      maxSrqWr: attr.max_srq_wr,
      maxSrqSge: attr.max_srq_sge,
      maxAh: attr.max_ah,
      maxMcastGrp: attr.max_mcast_grp,
      maxMcastQpAttach: attr.max_mcast_qp_attach,
      maxTotalMcastQpAttach: attr.max_total_mcast_qp_attach,
      maxPkeys: attr.max_pkeys,
    },
    ports,
  };
}

function describeDevice(devicePointer: Pointer, netdevs: Map<number, string>): DeviceInfo | UnavailableDevice {
  const device = koffi.decode(devicePointer, structs.ibv_device) as structs.IbvDevice;
  try {
    const context = libibverbs.ibv_open_device(devicePointer);
    if (context === null || context === 0n) throw openDeviceError(devicePointer);
    try {
      return describeOpenDevice(context, device, netdevs);
    } finally {
      libibverbs.ibv_close_device(context);
    }
  } catch (error) {
    if (!(error instanceof RdmaError)) throw error;
    const { code, errno, syscall, message } = error;
    return {
      name: device.name,
      nodeType: textOf(nodeTypes, device.node_type),
      transport: textOf(transports, device.transport_type),
      error: { code, errno, syscall, message },
    };
  }
}

/**
 * Why no device was found, for a message: what is missing (the device, a
 * kernel module, a device node, or libibverbs' provider) and how to add it.
 */
export function noDeviceFoundReason(): string {
  const diagnosis = diagnoseRdmaStack();
  return !diagnosis || diagnosis.missing === 'rdma-device' ? noDeviceFound() : `no RDMA device found: ${diagnosis.advice}`;
}

/**
 * `use` of ibv_get_device_list's devices, freed after; `none` where there is
 * no device, including a kernel without RDMA support.
 */
function withDeviceList<T>(use: (devices: Pointer[]) => T, none: T): T {
  const count = Buffer.alloc(4);
  const list = libibverbs.ibv_get_device_list(count);
  if (list === null || list === 0n) {
    const errno = koffi.errno();
    if (errno === ENOSYS || errno === ENODEV) return none;
    throw new RdmaError('ibv_get_device_list', errno || 5);
  }
  try {
    return use(readPointerArray(list, count.readInt32LE(0)));
  } finally {
    libibverbs.ibv_free_device_list(list);
  }
}

/**
 * How many RDMA devices libibverbs lists, opening none: what a command checks
 * before it starts (listDevices() reads every GID of every port, 1 s and more
 * for rxe's table in the emulated guest). 0 where there is none.
 */
export function countDevices(): number {
  return withDeviceList((devices) => devices.length, 0);
}

/**
 * Every RDMA device on this host, with its limits, ports and GIDs. Returns []
 * where there is none, including a kernel without RDMA support. A device that
 * cannot be opened or queried does not hide the others: it is listed as an
 * UnavailableDevice, with its error.
 */
export function listDevices(): (DeviceInfo | UnavailableDevice)[] {
  return withDeviceList((devices) => {
    const netdevs = netdevNames();
    return devices.map((device) => describeDevice(device, netdevs));
  }, []);
}

/** The names of the devices librdmacm sees (rdma_get_devices); [] where there is none. */
export function rdmaGetDevices(): string[] {
  const count = Buffer.alloc(4);
  const list = librdmacm.rdma_get_devices(count);
  if (list === null || list === 0n) {
    const errno = koffi.errno();
    if (errno === ENODEV || errno === ENOSYS) return [];
    throw new RdmaError('rdma_get_devices', errno || 5);
  }
  try {
    const deviceOffset = koffi.offsetof(structs.ibv_context, 'device');
    return readPointerArray(list, count.readInt32LE(0)).map((context) => {
      const device = readPointer(context, deviceOffset);
      return libibverbs.ibv_get_device_name(device) ?? '';
    });
  } finally {
    librdmacm.rdma_free_devices(list);
  }
}
