// What device-tier tests need to know about the RDMA device they run on: the
// harness (scripts/rxe-vm.sh) names it in RDMACM_TEST_DEVICE/RDMACM_TEST_ADDR;
// on a host of one's own the tier finds it by itself in /sys/class/infiniband.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { networkInterfaces } from 'node:os';

/** The RDMA devices this host's kernel has (none where it has no RDMA stack). */
export function hostRdmaDevices(): string[] {
  return existsSync('/sys/class/infiniband') ? readdirSync('/sys/class/infiniband').sort() : [];
}

/** True where this host has an RDMA device (or the harness named one). */
export function hasDevice(): boolean {
  return Boolean(process.env.RDMACM_TEST_DEVICE) || hostRdmaDevices().length > 0;
}

/** The device, port, netdev and IPv4 address the device tier runs on. */
export interface TestDevice {
  readonly device: string;
  readonly port: number;
  /** 'Ethernet' (RoCE, rxe) or 'InfiniBand' (then the netdev is IPoIB). */
  readonly linkLayer: string;
  readonly netdev: string | undefined;
  readonly address: string;
  /** True for soft-RoCE (rxe), whose quirks some assertions allow for. */
  readonly rxe: boolean;
  /** Where the choice came from. */
  readonly source: 'environment' | 'discovered';
}

/** One port of one device as /sys describes it, with its netdevs' IPv4 addresses. */
export interface PortCandidate {
  readonly device: string;
  readonly port: number;
  readonly state: string;
  readonly linkLayer: string;
  readonly netdev: string | undefined;
  readonly address: string | undefined;
}

const SYS = '/sys/class/infiniband';

function read(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch {
    return undefined; // an unused GID entry reads EINVAL
  }
}

function ipv4Of(netdev: string): string | undefined {
  return networkInterfaces()[netdev]?.find((a) => a.family === 'IPv4' && !a.internal)?.address;
}

/** The netdevs under a port: a RoCE port's GID table names them; an IB port's IPoIB netdev has the device as its parent. */
function netdevsOf(device: string, port: number): string[] {
  const found = new Set<string>();
  const ndevs = `${SYS}/${device}/ports/${port}/gid_attrs/ndevs`;
  if (existsSync(ndevs)) {
    for (const index of readdirSync(ndevs).sort((a, b) => Number(a) - Number(b))) {
      const name = read(`${ndevs}/${index}`);
      if (name) found.add(name);
    }
  }
  if (existsSync('/sys/class/net')) {
    for (const name of readdirSync('/sys/class/net')) {
      if (!existsSync(`/sys/class/net/${name}/device/infiniband/${device}`)) continue;
      const devPort = Number(read(`/sys/class/net/${name}/dev_port`) ?? '0');
      if (devPort + 1 === port) found.add(name);
    }
  }
  return [...found];
}

/** Every port of every device here (or only of `only`), each with the first netdev under it that has an IPv4 address. */
export function portCandidates(only?: string): PortCandidate[] {
  const candidates: PortCandidate[] = [];
  for (const device of hostRdmaDevices()) {
    if (only && device !== only) continue;
    const ports = existsSync(`${SYS}/${device}/ports`) ? readdirSync(`${SYS}/${device}/ports`).map(Number).sort((a, b) => a - b) : [];
    for (const port of ports) {
      const state = (read(`${SYS}/${device}/ports/${port}/state`) ?? '').replace(/^\d+:\s*/, '');
      const linkLayer = read(`${SYS}/${device}/ports/${port}/link_layer`) ?? 'unknown';
      const netdevs = netdevsOf(device, port);
      const netdev = netdevs.find((n) => ipv4Of(n)) ?? netdevs[0];
      candidates.push({ device, port, state, linkLayer, netdev, address: netdev ? ipv4Of(netdev) : undefined });
    }
  }
  return candidates;
}

/**
 * Picks the test device from the candidates: an ACTIVE port with an IPv4
 * address (the one holding `address` when that is given), Ethernet before
 * InfiniBand, then by name. Throws, naming what to set, when none fits.
 */
export function chooseTestDevice(candidates: readonly PortCandidate[], wanted: { device?: string | undefined; address?: string | undefined } = {}): PortCandidate & { address: string } {
  const usable = candidates
    .filter((c): c is PortCandidate & { address: string } => c.state === 'ACTIVE' && c.address !== undefined)
    .filter((c) => !wanted.device || c.device === wanted.device)
    .filter((c) => !wanted.address || c.address === wanted.address)
    .sort((a, b) => Number(b.linkLayer === 'Ethernet') - Number(a.linkLayer === 'Ethernet') || a.device.localeCompare(b.device) || a.port - b.port);
  const chosen = usable[0];
  if (chosen) return chosen;
  const seen = candidates.length === 0
    ? 'no RDMA device in /sys/class/infiniband'
    : candidates.map((c) => `${c.device} port ${c.port} ${c.state || 'unknown state'} (${c.linkLayer}, ${c.netdev ? `netdev ${c.netdev}, ${c.address ?? 'no IPv4 address'}` : 'no netdev'})`).join('; ');
  const want = [wanted.device && `device ${wanted.device}`, wanted.address && `address ${wanted.address}`].filter(Boolean).join(' and ');
  throw new Error(`device tier: found no ACTIVE RDMA port with an IPv4 address${want ? ` for ${want}` : ''} (seen: ${seen}). ` +
    'Set RDMACM_TEST_DEVICE=<device> and RDMACM_TEST_ADDR=<the IPv4 address of its netdev> (RDMACM_TEST_NETDEV=<netdev> too), ' +
    'or run the tier in a soft-RoCE VM: scripts/test.sh device.');
}

let chosen: TestDevice | undefined;

/**
 * The device the tier runs on. RDMACM_TEST_DEVICE and RDMACM_TEST_ADDR (set by
 * scripts/rxe-vm.sh) win; what they leave open is found in /sys, said once on
 * stderr, and written back into process.env so child processes see the same.
 */
export function testDevice(): TestDevice {
  if (chosen) return chosen;
  const env = process.env;
  const named = env.RDMACM_TEST_DEVICE || undefined;
  const address = env.RDMACM_TEST_ADDR || undefined;
  if (named && address) {
    const port = portCandidates(named).find((c) => c.address === address) ?? portCandidates(named)[0];
    chosen = {
      device: named, port: port?.port ?? 1, linkLayer: port?.linkLayer ?? 'Ethernet', netdev: env.RDMACM_TEST_NETDEV || port?.netdev,
      address, rxe: isRxe(named), source: 'environment',
    };
  } else {
    const found = chooseTestDevice(portCandidates(), { device: named, address });
    chosen = { ...found, rxe: isRxe(found.device), source: 'discovered' };
    console.error(`device tier: testing on ${chosen.device} port ${chosen.port} (${chosen.linkLayer}${chosen.rxe ? ', soft-RoCE' : ''}), ` +
      `netdev ${chosen.netdev ?? 'none'}, address ${chosen.address}: found by itself (set RDMACM_TEST_DEVICE and RDMACM_TEST_ADDR to choose another)`);
  }
  env.RDMACM_TEST_DEVICE = chosen.device;
  env.RDMACM_TEST_ADDR = chosen.address;
  if (chosen.netdev) env.RDMACM_TEST_NETDEV = chosen.netdev;
  return chosen;
}

/** Soft-RoCE: the kernel's rxe driver, which names its netdev in a `parent` attribute (and its devices rxe* by custom). */
function isRxe(device: string): boolean {
  return device.startsWith('rxe') || read(`${SYS}/${device}/parent`) !== undefined;
}

/** The IPv4 address bound to the test device's netdev. */
export function deviceAddress(): string {
  return testDevice().address;
}

/** The test device's name. */
export function deviceName(): string {
  return testDevice().device;
}

/** True where the test port is Ethernet (RoCE): its GIDs carry IP addresses and a netdev. */
export function isRoce(): boolean {
  return testDevice().linkLayer === 'Ethernet';
}

/**
 * An IPv6 address of the test netdev that is not link-local (the VM gives
 * veth0 fd77::1), or RDMACM_TEST_ADDR6; undefined when it has none.
 */
export function deviceAddress6(): string | undefined {
  const netdev = testDevice().netdev;
  return process.env.RDMACM_TEST_ADDR6 ||
    (netdev ? networkInterfaces()[netdev]?.find((a) => a.family === 'IPv6' && !a.internal && !a.address.startsWith('fe80:'))?.address : undefined);
}

/** The test netdev's link-local IPv6 address with its zone (fe80::…%veth0); undefined when it has none. */
export function deviceLinkLocal(): string | undefined {
  const netdev = testDevice().netdev;
  const address = netdev ? networkInterfaces()[netdev]?.find((a) => a.family === 'IPv6' && a.address.startsWith('fe80:'))?.address : undefined;
  return address && `${address}%${netdev}`;
}

let nextPort = 20000 + (process.pid % 20000);
/** A fresh TCP-port-space port for each test, so tests never collide. */
export function freshPort(): number {
  return nextPort++;
}
