// Which piece of the RDMA stack is missing when a call finds no device: the
// device itself, a kernel module, a device node under /dev/infiniband, or
// libibverbs' userspace driver (the provider). Read from sysfs, /dev and
// libibverbs' own device list, at the moment an error needs it.
import { Buffer } from 'node:buffer';
import { existsSync, readdirSync } from 'node:fs';
import { libibverbs } from './libibverbs.js';
import { noDeviceAdvice } from '../package-info.js';

/** A piece of the RDMA stack that calls need and this host lacks. */
export type MissingPiece =
  /** no RDMA device in the kernel (/sys/class/infiniband is empty) */
  | 'rdma-device'
  /** the kernel's connection manager, rdma_ucm: no /sys/class/misc/rdma_cm */
  | 'rdma_ucm'
  /** the kernel's verbs interface, ib_uverbs: no uverbs device in /sys/class/infiniband_verbs */
  | 'ib_uverbs'
  /** the kernel has them, but /dev/infiniband lacks their nodes (a container started without them) */
  | 'device-node'
  /** libibverbs has no userspace driver for the kernel's devices (no ibverbs-providers) */
  | 'ibverbs-provider';

export interface Diagnosis {
  readonly missing: MissingPiece;
  /** What is missing, and the command or package that supplies it. */
  readonly advice: string;
}

const PROVIDER_PACKAGES = 'Debian/Ubuntu `apt-get install ibverbs-providers`, Fedora/RHEL `dnf install libibverbs`, Alpine `apk add rdma-core`';

function entries(folder: string): string[] {
  try {
    return readdirSync(folder);
  } catch {
    return [];
  }
}

/** How many devices libibverbs lists (it lists only those it has a provider for); undefined where it does not load. */
function listedVerbsDevices(): number | undefined {
  try {
    const count = Buffer.alloc(4);
    const list = libibverbs.ibv_get_device_list(count);
    if (list === null || list === 0n) return 0;
    libibverbs.ibv_free_device_list(list);
    return count.readInt32LE(0);
  } catch {
    return undefined; // libibverbs itself does not load: its LibraryLoadError says so where it is used
  }
}

/**
 * The first piece of the stack this host lacks, in the order calls need them,
 * or undefined when every piece is there.
 */
export function diagnoseRdmaStack(): Diagnosis | undefined {
  const devices = entries('/sys/class/infiniband');
  if (devices.length === 0) return { missing: 'rdma-device', advice: `no RDMA device: ${noDeviceAdvice()}` };
  const named = `RDMA device${devices.length > 1 ? 's' : ''} ${devices.join(', ')}`;
  const rdmaCmNode = '/dev/infiniband/rdma_cm';
  if (!existsSync('/sys/class/misc/rdma_cm') && !existsSync(rdmaCmNode)) {
    return {
      missing: 'rdma_ucm',
      advice: `the kernel has ${named} but not its connection manager (no /sys/class/misc/rdma_cm, no ${rdmaCmNode}): load it with \`sudo modprobe rdma_ucm\``,
    };
  }
  const uverbs = entries('/sys/class/infiniband_verbs').filter((name) => name.startsWith('uverbs'));
  if (uverbs.length === 0) {
    return {
      missing: 'ib_uverbs',
      advice: `the kernel has ${named} but no verbs interface for it (no uverbs device in /sys/class/infiniband_verbs): load it with \`sudo modprobe ib_uverbs\``,
    };
  }
  const nodes = [rdmaCmNode, ...uverbs.map((name) => `/dev/infiniband/${name}`)].filter((node) => !existsSync(node));
  if (nodes.length > 0) {
    return {
      missing: 'device-node',
      advice: `the kernel has ${named}, but ${nodes.join(' and ')} ${nodes.length > 1 ? 'are' : 'is'} missing: ` +
        `in a container, pass ${nodes.length > 1 ? 'them' : 'it'} in (docker run ${nodes.map((node) => `--device=${node}`).join(' ')}); ` +
        `elsewhere udev creates ${nodes.length > 1 ? 'them' : 'it'} (\`sudo udevadm trigger\`)`,
    };
  }
  if (listedVerbsDevices() === 0) {
    return {
      missing: 'ibverbs-provider',
      advice: `the kernel has ${named}, but libibverbs has no userspace driver (provider) for ${devices.length > 1 ? 'them' : 'it'}: install the providers — ${PROVIDER_PACKAGES}`,
    };
  }
  return undefined;
}
