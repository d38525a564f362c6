// `rdmacm smoke`: one pass over the whole stack on this host's RDMA device —
// device found, rdma_cm connection, send/recv both ways, RDMA write then read,
// clean teardown — with one timed line per step.
import { Buffer } from 'node:buffer';
import { performance } from 'node:perf_hooks';
import process from 'node:process';
import { parseCommandArgs } from './arguments.js';
import { randomBytes } from 'node:crypto';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { packageRoot, packageScript } from '../package-info.js';
import { listDevices, noDeviceFoundReason } from '../api/verbs/devices.js';
import { createId, type CmId } from '../api/cm/cm-id.js';
import { EventChannel } from '../api/cm/event-channel.js';
import type { MemoryRegion } from '../api/verbs/memory-region.js';

const usage = `Usage: rdmacm smoke [-a ADDRESS] [-p PORT] [-d DEVICE] [--vm] [--json] [-h]

Runs the smoke test on this host's RDMA device, client and server in one
process, and prints one line per step with its time. Exits 0 when every step
passes, 1 when one fails, 2 when there is no RDMA device.

Options:
  -a, --address ADDRESS  the IP address to use (default: $RDMACM_TEST_ADDR, else
                         the IPv4 address of the device's first RoCE v2 GID)
  -d, --device NAME      the device to use (default: $RDMACM_TEST_DEVICE, else the first)
  -p, --port PORT        the rdma_cm port (default 7474)
      --vm               run it in a throw-away QEMU guest with a soft-RoCE
                         device (scripts/rxe-vm.sh: root or sudo the first time,
                         to install QEMU; TCG, so no KVM needed); also exits
                         124 on its timeout ($RDMACM_VM_TIMEOUT s, default 600)
                         and 125 when the VM fails
      --json             print one JSON object instead of the lines
  -h, --help             show this help

Without a device: run as root on a kernel with rdma_rxe and none named, smoke
creates a soft-RoCE device with scripts/setup-rxe.sh on the default route's
interface ($RDMACM_RXE_NETDEV overrides it) and removes it at the end.
Elsewhere use --vm.
`;

const MESSAGE = 64;
const REGION = 4096;

export interface SmokeStep {
  readonly step: string;
  readonly ok: boolean;
  readonly ms: number;
  readonly detail: string;
}

class SmokeFailure extends Error {}

/** Picks the device and the address to connect on. */
function chooseTarget(deviceName: string | undefined, address: string | undefined): { device: string; address: string } {
  const devices = listDevices();
  if (devices.length === 0) throw new SmokeFailure(noDeviceFoundReason());
  const device = deviceName ? devices.find((d) => d.name === deviceName) : (devices.find((d) => !('error' in d)) ?? devices[0]);
  if (!device) throw new SmokeFailure(`no device named ${deviceName} (found: ${devices.map((d) => d.name).join(', ')})`);
  if ('error' in device) throw new SmokeFailure(`${device.name} cannot be opened: ${device.error.message}`);
  const active = device.ports.find((p) => p.state === 'ACTIVE');
  if (!active) throw new SmokeFailure(`${device.name} has no ACTIVE port`);
  const ip = address ?? active.gids.find((g) => g.type === 'RoCE v2' && g.ip && !g.ip.includes(':'))?.ip ?? undefined;
  if (!ip) throw new SmokeFailure(`${device.name} has no IPv4 address on a RoCE v2 GID; pass --address`);
  return { device: device.name, address: ip };
}

function expectEqual(actual: Buffer, expected: Buffer, what: string): void {
  if (!actual.equals(expected)) throw new SmokeFailure(`${what}: the bytes differ`);
}

/** Runs every step in order, stopping at the first failure; resources are closed whatever happens. */
export async function runSmoke(options: { device?: string; address?: string; port: number }, report: (step: SmokeStep) => void): Promise<boolean> {
  const resources: { close(): void }[] = [];
  const track = <T extends { close(): void }>(resource: T): T => (resources.push(resource), resource);
  let ok = true;
  const step = async (name: string, action: () => Promise<string> | string): Promise<void> => {
    if (!ok) return;
    const started = performance.now();
    try {
      const detail = await action();
      report({ step: name, ok: true, ms: performance.now() - started, detail });
    } catch (error) {
      ok = false;
      report({ step: name, ok: false, ms: performance.now() - started, detail: error instanceof Error ? error.message : String(error) });
    }
  };

  let target = { device: '', address: '' };
  let server: CmId | undefined;
  let client: CmId | undefined;
  let serverRecv: MemoryRegion | undefined;
  let clientRecv: MemoryRegion | undefined;

  await step('device found', () => {
    target = chooseTarget(options.device, options.address);
    return `${target.device}, address ${target.address}`;
  });

  await step('rdma_cm connects client and server', async () => {
    const serverChannel = track(new EventChannel());
    const clientChannel = track(new EventChannel());
    const listener = track(createId(serverChannel));
    listener.bindAddr({ address: target.address, port: options.port });
    listener.listen(1);
    client = track(createId(clientChannel));
    await client.resolveAddr({ address: target.address, port: options.port });
    await client.resolveRoute();
    client.createQp({ sendWr: 4, recvWr: 4 });
    clientRecv = client.regMsgs(Buffer.alloc(MESSAGE));
    client.postRecv(clientRecv);
    const request = listener.nextRequest({ timeoutMs: 10_000 });
    const connected = client.connect(undefined, { timeoutMs: 10_000 });
    server = track(await request);
    server.createQp({ sendWr: 4, recvWr: 4 });
    serverRecv = server.regMsgs(Buffer.alloc(MESSAGE));
    server.postRecv(serverRecv);
    await Promise.all([connected, server.accept()]);
    return `qp ${client.queuePair.qpNum} ↔ qp ${server.queuePair.qpNum} on port ${options.port}`;
  });

  await step('send/recv both ways', async () => {
    const ping = randomBytes(MESSAGE);
    const pong = randomBytes(MESSAGE);
    client!.postSend(client!.regMsgs(Buffer.from(ping)));
    const got = await server!.queuePair.nextRecvCompletion();
    await client!.queuePair.nextSendCompletion();
    expectEqual(serverRecv!.buffer.subarray(0, got.byteLen), ping, 'client → server');
    server!.postSend(server!.regMsgs(Buffer.from(pong)));
    const back = await client!.queuePair.nextRecvCompletion();
    await server!.queuePair.nextSendCompletion();
    expectEqual(clientRecv!.buffer.subarray(0, back.byteLen), pong, 'server → client');
    return `${MESSAGE} B each way`;
  });

  await step('RDMA write, then read, returns the bytes written', async () => {
    // The server exposes a region for remote read and write and sends its descriptor.
    const exposed = server!.pd.allocate(REGION, ['LOCAL_WRITE', 'REMOTE_READ', 'REMOTE_WRITE']);
    const descriptor = server!.regMsgs(Buffer.alloc(16));
    descriptor.buffer.writeBigUInt64LE(exposed.address, 0);
    descriptor.buffer.writeUInt32LE(exposed.rkey, 8);
    descriptor.buffer.writeUInt32LE(exposed.length, 12);
    client!.postRecv(clientRecv!);
    server!.postSend(descriptor);
    await client!.queuePair.nextRecvCompletion();
    await server!.queuePair.nextSendCompletion();
    const remote = {
      address: clientRecv!.buffer.readBigUInt64LE(0),
      rkey: clientRecv!.buffer.readUInt32LE(8),
      length: clientRecv!.buffer.readUInt32LE(12),
    };

    const written = client!.regMsgs(randomBytes(REGION));
    client!.postSend(written, { opcode: 'RDMA_WRITE', remote });
    await client!.queuePair.nextSendCompletion();
    expectEqual(exposed.buffer, written.buffer, 'the server region after the RDMA write');

    const readBack = client!.regMsgs(Buffer.alloc(REGION));
    client!.postSend(readBack, { opcode: 'RDMA_READ', remote });
    await client!.queuePair.nextSendCompletion();
    expectEqual(readBack.buffer, written.buffer, 'the RDMA read');
    return `${REGION} B written and read back`;
  });

  await step('teardown is clean', async () => {
    const disconnected = server ? server.disconnect({ timeoutMs: 5000 }) : Promise.resolve();
    await client?.disconnect({ timeoutMs: 5000 });
    await disconnected;
    for (const resource of resources.splice(0).reverse()) resource.close();
    return 'disconnected, every resource closed';
  });

  for (const resource of resources.reverse()) {
    try {
      resource.close();
    } catch {
      // already failed; the report says why
    }
  }
  return ok;
}

interface SoftRoce {
  readonly device: string;
  readonly address: string | undefined;
  /** Removes the device again; undefined when it was there before (not ours to remove). */
  readonly teardown: (() => string) | undefined;
}

function kernelHasRxe(): boolean {
  return existsSync('/sys/module/rdma_rxe') || spawnSync('modinfo', ['rdma_rxe'], { stdio: 'ignore' }).status === 0;
}

const lastLine = (text: string) => text.trim().split('\n').at(-1) ?? '';

/**
 * Where there is no device but root and a kernel with rdma_rxe, makes a
 * soft-RoCE device with scripts/setup-rxe.sh. Undefined when it does not apply
 * or fails, so the caller goes on to the usual "no RDMA device" answer.
 */
function createSoftRoce(say: (line: string) => void): SoftRoce | undefined {
  try {
    if (listDevices().length > 0 || process.getuid?.() !== 0 || !kernelHasRxe()) return undefined;
  } catch {
    return undefined; // no libibverbs at all: setup-rxe.sh could not help the binding either
  }
  const script = packageScript('setup-rxe.sh');
  const netdev = process.env.RDMACM_RXE_NETDEV;
  // --no-install: a smoke test does not install packages; the script then says what is missing.
  const setup = spawnSync('bash', [script, ...(netdev ? [netdev] : []), '--no-install'], { encoding: 'utf8', timeout: 60_000 });
  const device = setup.status === 0 ? /^device (\S+):/m.exec(setup.stdout)?.[1] : undefined;
  if (!device) {
    say(`smoke: no RDMA device, and creating a soft-RoCE one failed: ${lastLine(setup.stderr ?? '') || setup.error?.message || `exit ${setup.status}`}`);
    return undefined;
  }
  const created = /created (\S+) on (\S+)/.exec(setup.stderr)?.slice(1);
  say(`smoke: no RDMA device; ${created ? `created soft-RoCE device ${device} on ${created[1]}` : `using ${device}`} with scripts/setup-rxe.sh${created ? ' (removed at the end)' : ''}`);
  const teardown = created
    ? () => {
        const result = spawnSync('bash', [script, '--teardown', device], { encoding: 'utf8', timeout: 60_000 });
        return result.status === 0
          ? `smoke: removed soft-RoCE device ${device}`
          : `smoke: removing ${device} failed (${lastLine(result.stderr ?? '') || result.error?.message}); run: ${script} --teardown ${device}`;
      }
    : undefined;
  return { device, address: /RDMACM_TEST_ADDR=(\S+)/.exec(setup.stdout)?.[1], teardown };
}

/**
 * Runs the smoke test on the new device in a child process, then removes the
 * device: rxe cannot be deleted while a process holds it open, and librdmacm
 * keeps every device open until its process exits.
 */
async function smokeOnSoftRoce(argv: string[], softRoce: SoftRoce, say: (line: string) => void): Promise<number> {
  const env: NodeJS.ProcessEnv = { ...process.env, RDMACM_TEST_DEVICE: softRoce.device };
  if (softRoce.address) env.RDMACM_TEST_ADDR = softRoce.address;
  const child = spawn(process.execPath, [join(packageRoot(), 'bin', 'rdmacm'), 'smoke', ...argv], { stdio: 'inherit', env });
  // A signal ends the child, not this process: the device must still be removed.
  const code = await waitForChild(child, say);
  if (softRoce.teardown) say(softRoce.teardown());
  return code;
}

/** Waits for a child, passing SIGINT/SIGTERM/SIGHUP on to it rather than dying before it has cleaned up. */
async function waitForChild(child: ChildProcess, say: (line: string) => void): Promise<number> {
  const forward = (signal: NodeJS.Signals) => child.kill(signal);
  const signals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];
  for (const signal of signals) process.on(signal, forward);
  const code = await new Promise<number>((resolve) => {
    child.on('error', (error) => {
      say(`smoke: cannot start ${child.spawnfile}: ${error.message}`);
      resolve(1);
    });
    child.on('close', (exitCode) => resolve(exitCode ?? 1));
  });
  for (const signal of signals) process.off(signal, forward);
  return code;
}

/** The project rdmacm is installed in (its node_modules holds rdmacm's dependencies), or rdmacm's own clone. */
function projectRoot(): string {
  const root = packageRoot();
  const modules = dirname(root);
  return basename(modules) === 'node_modules' ? dirname(modules) : root;
}

/** --vm: the same smoke test inside a soft-RoCE VM (scripts/rxe-vm.sh), which sees this host's files. */
function smokeInVm(argv: string[], say: (line: string) => void): Promise<number> {
  const timeout = process.env.RDMACM_VM_TIMEOUT ?? '600';
  const command = [process.execPath, join(packageRoot(), 'bin', 'rdmacm'), 'smoke', ...argv.filter((arg) => arg !== '--vm')];
  // stdin is not the terminal: rxe-vm.sh then runs the command non-interactively, its output on ours.
  const child = spawn('bash', [packageScript('rxe-vm.sh'), '--timeout', timeout, '--project', projectRoot(), '--', ...command], {
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  return waitForChild(child, say);
}

export async function runSmokeCommand(argv: string[]): Promise<number> {
  const parsed = parseCommandArgs('smoke', usage, argv, {
    address: { type: 'string', short: 'a' },
    device: { type: 'string', short: 'd' },
    port: { type: 'string', short: 'p', default: '7474' },
    vm: { type: 'boolean' },
    json: { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  });
  if (typeof parsed === 'number') return parsed;
  const { values } = parsed;
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    process.stderr.write(`rdmacm smoke: --port must be 1–65535\n`);
    return 1;
  }
  // With --json, stdout holds only the JSON object.
  const say = (line: string) => (values.json ? process.stderr : process.stdout).write(line + '\n');
  if (values.vm && !process.env.RDMACM_IN_VM) return smokeInVm(argv, say);
  const device = values.device ?? process.env.RDMACM_TEST_DEVICE;
  const softRoce = device === undefined ? createSoftRoce(say) : undefined;
  if (softRoce) return smokeOnSoftRoce(argv, softRoce, say);
  const steps: SmokeStep[] = [];
  const ok = await runSmoke(
    { device, address: values.address ?? process.env.RDMACM_TEST_ADDR, port },
    (step) => {
      steps.push(step);
      if (!values.json) {
        process.stdout.write(`${step.ok ? 'ok  ' : 'FAIL'} ${step.step.padEnd(48)} ${step.ms.toFixed(1).padStart(8)} ms  ${step.detail}\n`);
      }
    },
  );
  if (values.json) process.stdout.write(JSON.stringify({ ok, steps }) + '\n');
  else process.stdout.write(ok ? 'smoke: all steps passed\n' : 'smoke: FAILED\n');
  if (!ok && steps.length === 1 && /no RDMA device/.test(steps[0]!.detail)) return 2;
  return ok ? 0 : 1;
}
