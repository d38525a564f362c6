// `rdmacm devices`: the RDMA devices here, as ibv_devices (a table), ibv_devinfo -v
// (-v) or JSON (--json).
import process from 'node:process';
import { parseCommandArgs } from './arguments.js';
import { listDevices, noDeviceFoundReason, type DeviceInfo, type PortInfo, type UnavailableDevice } from '../api/verbs/devices.js';

const usage = `Usage: rdmacm devices [-v] [--json] [-h]

List the RDMA devices on this host. A device that cannot be opened (no access
to its /dev/infiniband/uverbsN, say) is listed with its error, which also goes
to stderr. Exits 0 when at least one device could be opened, 1 on a bad option
or when none could, 2 when there is none (nothing on stdout, even with --json).

Options:
  -v, --verbose   every device's attributes, limits, ports and GIDs (like ibv_devinfo -v)
      --json      print one JSON array of devices on stdout
  -h, --help      show this help
`;

/** Like ibv_devices: one line per device. */
function table(devices: (DeviceInfo | UnavailableDevice)[]): string {
  const width = Math.max(16, ...devices.map((d) => d.name.length));
  const lines = [`    ${'device'.padEnd(width)}  node GUID`, `    ${'------'.padEnd(width)}  -------------------`];
  for (const device of devices) {
    lines.push(`    ${device.name.padEnd(width)}  ${'error' in device ? `(cannot be opened: ${device.error.code})` : device.nodeGuid}`);
  }
  return lines.join('\n') + '\n';
}

const hex = (value: number) => `0x${value.toString(16)}`;

/** Aligned "key: value" lines under an indent. */
function fields(indent: string, entries: [string, string | number][]): string[] {
  const width = Math.max(...entries.map(([key]) => key.length)) + 1;
  return entries.map(([key, value]) => `${indent}${`${key}:`.padEnd(width)} ${value}`);
}

function portLines(port: PortInfo): string[] {
  const lines = [`\tport ${port.port}:`];
  lines.push(
    ...fields('\t\t', [
      ['state', port.state],
      ['physical state', port.physicalState],
      ['max MTU', port.maxMtu],
      ['active MTU', port.activeMtu],
      ['link layer', port.linkLayer],
      ['active width', port.activeWidth],
      ['active speed', port.activeSpeed],
      ['lid', port.lid],
      ['sm lid', port.smLid],
      ['lmc', port.lmc],
      ['max VL num', port.maxVlNum],
      ['max message size', hex(port.maxMessageSize)],
      ['port cap flags', hex(port.portCapFlags)],
      ['gid table length', port.gidTableLength],
      ['pkey table length', port.pkeyTableLength],
    ]),
  );
  for (const gid of port.gids) {
    const where = [gid.netdev, gid.ip].filter((part) => part !== null).join(' ');
    lines.push(`\t\tGID[${String(gid.index).padStart(3)}]: ${gid.gid}, ${gid.type}${where ? `, ${where}` : ''}`);
  }
  return lines;
}

/** Like ibv_devinfo -v: the device, its limits, then each port with its GIDs. */
function details(devices: (DeviceInfo | UnavailableDevice)[]): string {
  const blocks = devices.map((device) => {
    if ('error' in device) return `hca_id: ${device.name}\n\tcannot be opened: ${device.error.message}`;
    const { limits } = device;
    return [
      `hca_id: ${device.name}`,
      ...fields('\t', [
        ['transport', device.transport],
        ['node type', device.nodeType],
        ['node GUID', device.nodeGuid],
        ['system image GUID', device.systemImageGuid],
        ['firmware version', device.firmwareVersion || '(none)'],
        ['vendor id', hex(device.vendorId)],
        ['vendor part id', device.vendorPartId],
        ['hw version', hex(device.hwVersion)],
        ['physical ports', device.physicalPortCount],
        ['page size cap', device.pageSizeCap],
        ['device cap flags', hex(device.deviceCapFlags)],
        ['atomic capability', device.atomicCapability],
        ['max mr size', limits.maxMrSize],
        ['max qp', limits.maxQp],
        ['max qp wr', limits.maxQpWr],
        ['max sge', limits.maxSge],
        ['max sge rd', limits.maxSgeRd],
        ['max cq', limits.maxCq],
        ['max cqe', limits.maxCqe],
        ['max mr', limits.maxMr],
        ['max pd', limits.maxPd],
        ['max mw', limits.maxMw],
        ['max qp rd atom', limits.maxQpRdAtom],
        ['max qp init rd atom', limits.maxQpInitRdAtom],
        ['max res rd atom', limits.maxResRdAtom],
        ['max srq', limits.maxSrq],
        ['max srq wr', limits.maxSrqWr],
        ['max srq sge', limits.maxSrqSge],
        ['max ah', limits.maxAh],
        ['max mcast grp', limits.maxMcastGrp],
        ['max mcast qp attach', limits.maxMcastQpAttach],
        ['max total mcast qp attach', limits.maxTotalMcastQpAttach],
        ['max pkeys', limits.maxPkeys],
      ]),
      ...device.ports.flatMap(portLines),
    ].join('\n');
  });
  return blocks.join('\n\n') + '\n';
}

/** Runs `rdmacm devices`; resolves to the exit code (2: no device). */
export async function runDevices(argv: string[]): Promise<number> {
  const parsed = parseCommandArgs('devices', usage, argv, {
    verbose: { type: 'boolean', short: 'v' }, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' },
  });
  if (typeof parsed === 'number') return parsed;
  const { values } = parsed;
  let devices: (DeviceInfo | UnavailableDevice)[];
  try {
    devices = listDevices();
  } catch (error) {
    process.stderr.write(`rdmacm devices: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
  if (devices.length === 0) {
    process.stderr.write(`rdmacm: ${noDeviceFoundReason()}\n`);
    return 2;
  }
  if (values.json) process.stdout.write(JSON.stringify(devices, null, 2) + '\n');
  else process.stdout.write(values.verbose ? details(devices) : table(devices));
  const unavailable = devices.filter((device) => 'error' in device);
  for (const device of unavailable) process.stderr.write(`rdmacm devices: ${device.name}: ${device.error.message}\n`);
  return unavailable.length === devices.length ? 1 : 0;
}
