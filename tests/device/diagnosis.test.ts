// What a user is told when a piece of the RDMA stack is missing, next to a real
// device: each case runs a child node in its own mount namespace (unshare -m)
// where that piece is hidden by an empty tmpfs, so the kernel, the device and
// everything else stay as they are.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import process from 'node:process';
import { packageRoot } from '../../src/package-info.js';
import { deviceName, hasDevice } from '../support/device.js';
import { start } from '../support/processes.js';

// The checkout's root, whether this runs from tests/ (tsx) or dist/tests/ (built).
const repoRoot = packageRoot();
const device = hasDevice() ? deviceName() : '';

// Mount namespaces need root (the VM runs the tier as root; a host's own device may not).
const needsRoot = process.getuid?.() !== 0 && 'mount namespaces need root';

/** The child's report: how an event channel fails, which devices it lists, and why none. */
interface Seen {
  readonly channel: { name: string; code: string; syscall: string; missing?: string; message: string } | 'opened';
  readonly devices: string[];
  readonly reason: string;
}

const child = `
  const m = await import(${JSON.stringify(pathToFileURL(join(repoRoot, 'dist/src/index.js')).href)});
  let channel = 'opened';
  try { new m.EventChannel().close(); } catch (e) { channel = { name: e.name, code: e.code, syscall: e.syscall, missing: e.missing, message: e.message }; }
  console.log(JSON.stringify({ channel, devices: m.listDevices().map((d) => d.name), reason: m.noDeviceFoundReason() }));`;

/** Runs the child after `setup` (shell, as root) in a fresh mount namespace; its report. */
async function run(setup: string): Promise<Seen> {
  const quoted = child.replace(/'/g, `'\\''`);
  const { code, stdout, stderr } = await start('unshare', ['--mount', '--propagation', 'private', 'sh', '-ec', `${setup}\nexec "${process.execPath}" --input-type=module -e '${quoted}'`], {
    cwd: repoRoot,
  }).finished;
  assert.equal(code, 0, `exit ${code}: ${stderr}`);
  return JSON.parse(stdout) as Seen;
}

// ibverbs-providers ships the provider list (/etc/libibverbs.d) and the drivers (…/libibverbs/).
const noProviders = 'for dir in /etc/libibverbs.d "$(dirname "$(readlink -f "$(ldconfig -p | sed -n "s/.*libibverbs.so.1 .*=> //p" | head -1)")")/libibverbs"; do mount -t tmpfs none "$dir"; done';
// /dev/infiniband with its uverbs nodes remade and no rdma_cm.
const noRdmaCmNode = `
  nodes=$(for n in /dev/infiniband/uverbs*; do echo "$n $(stat -c '%t %T' "$n")"; done)
  mount -t tmpfs none /dev/infiniband
  echo "$nodes" | while read -r n major minor; do mknod "$n" c $((0x$major)) $((0x$minor)); done`;
// The kernel without rdma_ucm, as sysfs and /dev show it: no rdma_cm in either.
// (The module itself stays loaded: the rest of the tier needs it.)
const noRdmaUcm = `${noRdmaCmNode}\nmount -t tmpfs none /sys/class/misc`;

// Node starts slowly in the emulated guest: the first of these tests starts all
// three children, side by side, and each test awaits its own.
let cases: { noProviders: Promise<Seen>; noRdmaCmNode: Promise<Seen>; noRdmaUcm: Promise<Seen> } | undefined;
function started() {
  if (!cases) {
    cases = { noProviders: run(noProviders), noRdmaCmNode: run(noRdmaCmNode), noRdmaUcm: run(noRdmaUcm) };
    for (const pending of Object.values(cases)) pending.catch(() => {}); // each is awaited by its test
  }
  return cases;
}

/** The child's failure to open an event channel. */
function failure(seen: Seen): Exclude<Seen['channel'], 'opened'> {
  assert.notEqual(seen.channel, 'opened', 'the event channel opened');
  return seen.channel as Exclude<Seen['channel'], 'opened'>;
}

test('no ibverbs-providers: ENODEV names the device the kernel has and the package to install', { skip: needsRoot, timeout: 180_000 }, async () => {
  const seen = await started().noProviders;
  const error = failure(seen);
  assert.deepEqual([error.name, error.code, error.syscall, error.missing], ['RdmaError', 'ENODEV', 'rdma_create_event_channel', 'ibverbs-provider']);
  assert.match(error.message, new RegExp(`the kernel has RDMA device ${device}, but libibverbs has no userspace driver \\(provider\\) for it`));
  assert.match(error.message, /apt-get install ibverbs-providers/);
  assert.doesNotMatch(error.message, /setup-rxe|soft-RoCE/, 'not told to create a device it has');
  assert.deepEqual(seen.devices, []);
  assert.ok(seen.reason.startsWith(`no RDMA device found: the kernel has RDMA device ${device}, but libibverbs has no userspace driver`), seen.reason);
  assert.match(seen.reason, /apt-get install ibverbs-providers/);
});

test('no /dev/infiniband/rdma_cm: ENOENT says which node is missing and how to pass it into a container', { skip: needsRoot, timeout: 180_000 }, async () => {
  const seen = await started().noRdmaCmNode;
  const error = failure(seen);
  assert.deepEqual([error.name, error.code, error.syscall, error.missing], ['RdmaError', 'ENOENT', 'rdma_create_event_channel', 'device-node']);
  assert.match(error.message, /\/dev\/infiniband\/rdma_cm is missing: in a container, pass it in \(docker run --device=\/dev\/infiniband\/rdma_cm\)/);
  assert.ok(seen.devices.includes(device), 'the verbs, whose nodes are there, still list the device');
});

test('no rdma_cm in the kernel: the error says to load rdma_ucm', { skip: needsRoot, timeout: 180_000 }, async () => {
  const error = failure(await started().noRdmaUcm);
  assert.deepEqual([error.code, error.missing], ['ENOENT', 'rdma_ucm']);
  assert.match(error.message, new RegExp(`the kernel has RDMA device ${device} but not its connection manager .*: load it with \`sudo modprobe rdma_ucm\``));
});
