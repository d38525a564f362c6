// Device discovery on the real (soft-RoCE) device: listDevices(), rdmaGetDevices()
// and `rdmacm devices`, against what scripts/rxe-vm.sh set up; what a wrong
// device name and a device that cannot be opened are told.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Buffer } from 'node:buffer';
import koffi from 'koffi';
import { listDevices, portAttrLayout, rdmaGetDevices, type DeviceInfo, type UnavailableDevice } from '../../src/api/verbs/devices.js';
import { libibverbs } from '../../src/ffi/libibverbs.js';
import { extendedQueryPort, queryPort } from '../../src/ffi/inline-verbs.js';
import { readPointerArray } from '../../src/ffi/library.js';
import type { IbvPortAttr } from '../../src/structs/verbs-device.js';
import { DeviceContext, RdmaError } from '../../src/index.js';
import { noDeviceAdvice, packageRoot } from '../../src/package-info.js';
import { deviceAddress, deviceName, isRoce, testDevice } from '../support/device.js';

// The checkout's root, whether this runs from tests/ (tsx) or dist/tests/ (built).
const repoRoot = packageRoot();

// RDMACM_TEST_DEVICE, else the device the tier found by itself (tests/support/device.ts).
const testDeviceName = deviceName;

// What holds only on an Ethernet (RoCE) port, such as rxe's: GIDs with IP addresses and a netdev.
const roceOnly = !isRoce() && 'the test port is not Ethernet (RoCE): its GIDs carry no IPv4 address';

function rdmacm(...args: string[]) {
  return spawnSync(process.execPath, ['bin/rdmacm', ...args], { cwd: repoRoot, encoding: 'utf8', timeout: 60_000 });
}

/** The device named `name` in `devices`, described (not an UnavailableDevice). */
function described(devices: (DeviceInfo | UnavailableDevice)[], name: string): DeviceInfo {
  const device = devices.find((d) => d.name === name);
  assert.ok(device, `${name} in ${devices.map((d) => d.name).join(', ')}`);
  assert.ok(!('error' in device), `${name} could not be opened: ${'error' in device ? device.error.message : ''}`);
  return device;
}

test('listDevices() describes the test device, its active port and (RoCE) its RoCE v2 GID', () => {
  const device = described(listDevices(), testDeviceName());
  assert.match(device.nodeGuid, /^[0-9a-f]{4}(:[0-9a-f]{4}){3}$/);
  assert.equal(device.transport, 'InfiniBand', 'RoCE devices report the IB transport');
  assert.equal(device.nodeType, 'CA');
  assert.ok(device.limits.maxQp > 0 && device.limits.maxCqe > 0 && device.limits.maxMr > 0);
  assert.match(device.limits.maxMrSize, /^[1-9]\d*$/);
  assert.ok(device.physicalPortCount >= 1);
  assert.equal(device.ports.length, device.physicalPortCount);

  const port = device.ports[0]!;
  assert.equal(port.port, 1);
  assert.equal(port.state, 'ACTIVE');
  assert.equal(port.physicalState, 'LINK_UP');
  assert.equal(port.linkLayer, testDevice().linkLayer);
  if (!isRoce()) return; // an InfiniBand port's GIDs carry no IP address
  assert.ok([256, 512, 1024, 2048, 4096].includes(port.activeMtu), `active MTU ${port.activeMtu}`);
  assert.ok(port.maxMtu >= port.activeMtu);
  assert.ok(port.gidTableLength > 0);

  const roceV2 = port.gids.find((gid) => gid.type === 'RoCE v2' && gid.ip === deviceAddress());
  assert.ok(roceV2, `a RoCE v2 GID for ${deviceAddress()} in ${JSON.stringify(port.gids)}`);
  assert.equal(roceV2.netdev, testDevice().netdev);
  const [a, b, c, d] = deviceAddress().split('.').map(Number) as [number, number, number, number];
  const mapped = `0000:0000:0000:0000:0000:ffff:${((a << 8) | b).toString(16).padStart(4, '0')}:${((c << 8) | d).toString(16).padStart(4, '0')}`;
  assert.equal(roceV2.gid, mapped, 'the GID is the IPv4-mapped address');
  // The link-local GID from the netdev's MAC, at index 0 on a RoCE port.
  const linkLocal = port.gids.find((gid) => gid.index === 0);
  assert.ok(linkLocal && linkLocal.gid.startsWith('fe80:0000:0000:0000:'), JSON.stringify(linkLocal));
  assert.match(linkLocal.ip!, /^fe80::/);
});

test('the device list is plain data: JSON round-trips it unchanged', () => {
  const devices = listDevices();
  assert.ok(devices.length > 0, 'the device tier has a device to list');
  assert.deepEqual(JSON.parse(JSON.stringify(devices)) as DeviceInfo[], devices);
});

test('rdmaGetDevices() names the devices librdmacm sees, the rxe device among them', () => {
  const names = rdmaGetDevices();
  assert.ok(names.includes(testDeviceName()), `${testDeviceName()} in ${names.join(', ')}`);
  assert.deepEqual([...names].sort(), listDevices().map((d) => d.name).sort());
});

test('rdmacm devices --json lists the test device with its port and (RoCE) GIDs', { timeout: 120_000 }, () => {
  const result = rdmacm('devices', '--json');
  assert.equal(result.status, 0, result.stderr);
  const device = described(JSON.parse(result.stdout) as DeviceInfo[], testDeviceName());
  assert.equal(device.ports[testDevice().port - 1]?.state, 'ACTIVE');
  if (isRoce()) assert.ok(device.ports[testDevice().port - 1]!.gids.some((gid) => gid.ip === deviceAddress() && gid.type === 'RoCE v2'));
});

test('rdmacm devices (table) and -v (details) print the device, its port and its GIDs', { timeout: 120_000 }, () => {
  const plain = rdmacm('devices');
  assert.equal(plain.status, 0, plain.stderr);
  assert.match(plain.stdout, new RegExp(`^\\s+${testDeviceName()}\\s+[0-9a-f]{4}(:[0-9a-f]{4}){3}$`, 'm'));

  const verbose = rdmacm('devices', '-v');
  assert.equal(verbose.status, 0, verbose.stderr);
  assert.match(verbose.stdout, new RegExp(`^hca_id: ${testDeviceName()}$`, 'm'));
  assert.match(verbose.stdout, new RegExp(`^\\tport ${testDevice().port}:$`, 'm'));
  assert.match(verbose.stdout, /^\t\tstate:\s+ACTIVE$/m);
  if (isRoce()) assert.match(verbose.stdout, new RegExp(`^\\t\\tGID\\[\\s*\\d+\\]: [0-9a-f:]+, RoCE v2, ${testDevice().netdev} ${deviceAddress().replace(/\./g, '\\.')}$`, 'm'));
});

test('a port is read through the provider\'s verbs_context query_port, in the layout of the loaded libibverbs, as ibv_devinfo reads it', { timeout: 120_000 }, () => {
  const count = Buffer.alloc(4);
  const list = libibverbs.ibv_get_device_list(count)!;
  const device = readPointerArray(list, count.readInt32LE(0)).find((d) => libibverbs.ibv_get_device_name(d) === testDeviceName())!;
  const context = libibverbs.ibv_open_device(device)!;
  libibverbs.ibv_free_device_list(list);
  try {
    assert.notEqual(extendedQueryPort(context), 0n, 'rxe\'s context is extended and has query_port');
    const layout = portAttrLayout();
    assert.equal(layout.size, libibverbs.release && Number.parseInt(libibverbs.release, 10) >= 49 ? 56 : 52);
    const throughOp = Buffer.alloc(layout.size, 0xa5);
    assert.equal(queryPort(context, 1, throughOp), 0);
    const throughExport = Buffer.alloc(layout.size);
    assert.equal(libibverbs.ibv_query_port(context, 1, throughExport), 0);
    const viaOp = koffi.decode(throughOp, layout) as IbvPortAttr;
    const viaExport = koffi.decode(throughExport, layout) as IbvPortAttr;
    // The exported symbol fills everything up to `flags`; the op fills the rest too.
    const { port_cap_flags2: _flags2, active_speed_ex: _speedEx, ...compatPart } = viaOp;
    const { port_cap_flags2: _exportFlags2, active_speed_ex: _exportSpeedEx, ...exportCompatPart } = viaExport;
    assert.deepEqual(compatPart, exportCompatPart);

    const devinfo = spawnSync('ibv_devinfo', ['-v', '-d', testDeviceName(), '-i', '1'], { encoding: 'utf8' });
    assert.equal(devinfo.status, 0, devinfo.stderr);
    const field = (name: string) => Number(new RegExp(`^\\s+${name}:\\s+(0x[0-9a-f]+|\\d+)`, 'm').exec(devinfo.stdout)?.[1]);
    assert.equal(viaOp.port_cap_flags2, field('port_cap_flags2'));
    assert.equal(viaOp.port_cap_flags, field('port_cap_flags'));
    assert.equal(viaOp.max_msg_sz, field('max_msg_sz'));
  } finally {
    libibverbs.ibv_close_device(context);
  }
});

// Debian 13's libc6 and libibverbs1, unpacked into a cache by scripts/debian-packages.sh
// (scripts/test.sh fetches them on the host first: the guest has no network).
const noDebian = spawnSync('sh', ['-c', 'command -v dpkg-deb']).status !== 0 && !process.env.CI && 'not a Debian system';

test("Debian 13's libibverbs (rdma-core 56), on its own glibc, reads the port in its 56-byte layout as this process reads it with its own (44 in the bookworm guest)", { skip: noDebian, timeout: 180_000 }, () => {
  const root = execFileSync('bash', [join(repoRoot, 'scripts/debian-packages.sh'), 'trixie', 'libc6', 'libibverbs1'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
  const libraries = join(root, 'usr/lib/x86_64-linux-gnu');
  const child = `
    const { listDevices, portAttrLayout } = await import(${JSON.stringify(pathToFileURL(join(repoRoot, 'dist/src/api/verbs/devices.js')).href)});
    const { libibverbs } = await import(${JSON.stringify(pathToFileURL(join(repoRoot, 'dist/src/ffi/libibverbs.js')).href)});
    const devices = listDevices();
    console.log(JSON.stringify({ release: libibverbs.release, size: portAttrLayout().size, devices }));`;
  const result = spawnSync(join(root, 'usr/lib64/ld-linux-x86-64.so.2'), ['--library-path', `${libraries}:/usr/lib/x86_64-linux-gnu:/lib/x86_64-linux-gnu`, process.execPath, '--input-type=module', '-e', child], {
    cwd: repoRoot, encoding: 'utf8', timeout: 150_000,
  });
  assert.equal(result.status, 0, result.stderr);
  const seen = JSON.parse(result.stdout) as { release: string; size: number; devices: DeviceInfo[] };
  assert.equal(seen.release, '56.1');
  assert.equal(seen.size, 56);
  const theirs = seen.devices.find((d) => d.name === testDeviceName());
  const ours = listDevices().find((d) => d.name === testDeviceName());
  assert.ok(theirs && ours && !('error' in ours), JSON.stringify(ours));
  assert.equal(theirs.ports[0]!.state, 'ACTIVE');
  assert.deepEqual(theirs.ports, ours.ports, `every port field, read through libibverbs 56 and ${libibverbs.release}, agrees`);
});

test('DeviceContext.open(name) with a name no device has: ENODEV that names the devices there are, not "no RDMA device"', () => {
  assert.throws(() => DeviceContext.open('no-such-device'), (error: unknown) => {
    assert.ok(error instanceof RdmaError, String(error));
    assert.equal(error.code, 'ENODEV');
    assert.equal(error.syscall, 'ibv_open_device');
    assert.match(error.message, /no device named no-such-device/);
    assert.ok(error.hint?.includes(testDeviceName()), error.hint);
    assert.match(error.hint!, /pass one of those names/);
    assert.ok(!error.message.includes(noDeviceAdvice()), `no advice to create a device: ${error.message}`);
    assert.doesNotMatch(error.message, /no RDMA device/);
    assert.equal(error.missing, undefined, 'not diagnosed as a missing piece of the stack');
    return true;
  });
  // The right name still opens.
  using context = DeviceContext.open(testDeviceName());
  assert.equal(context.name, testDeviceName());
});

/** The /dev/infiniband/uverbsN of the device `name`. */
function uverbsOf(name: string): string {
  for (const entry of readdirSync('/sys/class/infiniband_verbs')) {
    const ibdev = `/sys/class/infiniband_verbs/${entry}/ibdev`;
    if (existsSync(ibdev) && readFileSync(ibdev, 'utf8').trim() === name) return `/dev/infiniband/${entry}`;
  }
  throw new Error(`no uverbs device for ${name}`);
}

// A second soft-RoCE device, on the other end of the guest's veth pair, that a
// process without root cannot open (root opens any device file), next to the
// test device it can. Needs root and the VM's one-guest veth pair: scripts/test.sh
// runs the device tier that way; on a host's own device there is no veth1.
const canMakeSecondDevice = process.getuid?.() === 0 && existsSync('/sys/class/net/veth1');
test('a device that cannot be opened is listed with its error (EACCES), and the others are still described', {
  timeout: 120_000,
  skip: !canMakeSecondDevice && 'needs root and the VM\'s veth pair (scripts/rxe-vm.sh)',
}, () => {
  const second = 'rxe_closed';
  execFileSync('rdma', ['link', 'add', second, 'type', 'rxe', 'netdev', 'veth1']);
  const restore: [string, number][] = [];
  try {
    const open = uverbsOf(testDeviceName());
    const closed = uverbsOf(second);
    for (const [file, mode] of [[open, 0o666], [closed, 0o600]] as const) {
      restore.push([file, statSync(file).mode & 0o777]);
      chmodSync(file, mode);
    }
    const devices = fileURLToPath(new URL('../../src/api/verbs/devices.js', import.meta.url));
    const script = `const { listDevices } = await import(${JSON.stringify(devices)}); console.log(JSON.stringify(listDevices()));`;
    const nobody = 65534;
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: '/', uid: nobody, gid: nobody, encoding: 'utf8', timeout: 60_000 });
    assert.equal(child.status, 0, child.stderr);
    const listed = JSON.parse(child.stdout) as (DeviceInfo | UnavailableDevice)[];
    assert.deepEqual(listed.map((d) => d.name).sort(), [testDeviceName(), second].sort(), 'both devices are listed');
    const usable = described(listed, testDeviceName());
    assert.equal(usable.ports[0]?.state, 'ACTIVE');
    const unavailable = listed.find((d) => d.name === second);
    assert.ok(unavailable && 'error' in unavailable, JSON.stringify(unavailable));
    assert.equal(unavailable.error.code, 'EACCES');
    assert.equal(unavailable.error.syscall, 'ibv_open_device');
    // libibverbs itself reports ENOENT here (its search for the device file after the failed open); the binding names the file.
    assert.match(unavailable.error.message, new RegExp(`device ${second}: this process may not read and write ${closed}`));
    assert.match(unavailable.error.message, /RDMA devices under \/dev\/infiniband need read\/write access/);
    assert.equal(unavailable.transport, 'InfiniBand');
    assert.equal(unavailable.nodeType, 'CA');
    assert.ok(!('ports' in unavailable), 'nothing made up for what could not be read');

    // rdmacm devices lists it too, says why on stderr, and succeeds: one device opened.
    const cli = spawnSync(process.execPath, [`${repoRoot}/bin/rdmacm`, 'devices'], { cwd: '/', uid: nobody, gid: nobody, encoding: 'utf8', timeout: 60_000 });
    assert.equal(cli.status, 0, cli.stderr);
    assert.match(cli.stdout, new RegExp(`^\\s+${second}\\s+\\(cannot be opened: EACCES\\)$`, 'm'));
    assert.match(cli.stdout, new RegExp(`^\\s+${testDeviceName()}\\s+[0-9a-f]{4}(:[0-9a-f]{4}){3}$`, 'm'));
    assert.match(cli.stderr, new RegExp(`^rdmacm devices: ${second}: ibv_open_device failed: EACCES`, 'm'));
  } finally {
    for (const [file, mode] of restore) chmodSync(file, mode);
    execFileSync('rdma', ['link', 'delete', second]);
  }
});
