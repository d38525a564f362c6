// rdmacm/net against rdma-core's own rsocket tools, both ways: rstream's
// custom runs (-S -C -I, verified with -T v on both sides) as latency and
// bandwidth tests at 64 B, 4 KiB and 1 MiB, and rcopy with the file's sha256
// compared. Counts are small: the guest is emulated.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, type RdmaSocket } from '../../src/net/index.js';
import { deviceAddress, deviceAddress6, freshPort } from '../support/device.js';
import { start, type Finished } from '../support/processes.js';
import { checkRstream, rstreamExchange } from '../support/rstream-peer.js';
import { rcopyClient, rcopyServe } from '../support/rcopy-peer.js';
import { riostreamExchange, type ExchangeProgress } from '../support/riostream-peer.js';
import { connectWhenListening } from '../support/tool-connect.js';
import { within } from '../support/within.js';

/** rstream's custom runs: latency (count 1) and bandwidth (iterations 1) at each size. */
const PLANS = [
  { name: '64 B latency', size: 64, count: 1, iterations: 500 },
  { name: '64 B bandwidth', size: 64, count: 500, iterations: 1 },
  { name: '4 KiB latency', size: 4096, count: 1, iterations: 200 },
  { name: '4 KiB bandwidth', size: 4096, count: 200, iterations: 1 },
  { name: '1 MiB latency', size: 1 << 20, count: 1, iterations: 4 },
  { name: '1 MiB bandwidth', size: 1 << 20, count: 4, iterations: 1 },
];

const rstreamArgs = (plan: (typeof PLANS)[number]) => ['-S', String(plan.size), '-C', String(plan.count), '-I', String(plan.iterations), '-T', 'b', '-T', 'v'];

/** How long a run may go without ending before it reports where it stood (the tests' timeout is 180 s). */
const STALL_MS = 120_000;

/** How long the tool may take to exit once the socket closed. */
const TOOL_EXIT_MS = 150_000;

/** How long the exchange may go on after the tool exited (its last write may still be unread here). */
const TOOL_EXIT_GRACE_MS = 5_000;

/** One of rdma-core's tools and this side of its application protocol. */
interface ToolPeer {
  readonly tool: 'rstream' | 'riostream';
  readonly exchange: (socket: RdmaSocket, role: 'client' | 'server', plan: Plan, progress: ExchangeProgress) => Promise<void>;
  /** Iomap entries this side offers (riostream maps into its peer). */
  readonly iomapEntries: number;
}
type Plan = (typeof PLANS)[number];

/**
 * The tools' rings (-B 512 KiB, doubled by rsockets: 1 MiB), on this side
 * too: then its writes go out in messages of the default 256 KiB, four
 * times the most rsockets sends, which the tool must take and verify.
 */
const TOOL_RINGS = { recvBufferSize: 1 << 20, sendBufferSize: 1 << 20 };

const RSTREAM: ToolPeer = { tool: 'rstream', exchange: (socket, role, plan) => rstreamExchange(socket, role, plan), iomapEntries: 0 };
const RIOSTREAM: ToolPeer = { tool: 'riostream', exchange: riostreamExchange, iomapEntries: 1 };

/** The tool as client, a TypeScript server serving its custom run (on `host`, by default the device's IPv4 address). */
async function toolClientToServer(peer: ToolPeer, plan: Plan, host = deviceAddress()): Promise<void> {
  const progress: ExchangeProgress = { phase: 'not connected' };
  const server = createServer({ rdma: { ...TOOL_RINGS, iomapEntries: peer.iomapEntries } });
  const served = new Promise<void>((resolve, reject) => {
    server.once('connection', (socket) => {
      peer.exchange(socket, 'server', plan, progress).then(() => socket.end(), reject);
      socket.on('error', reject);
      socket.on('close', () => resolve());
    });
  });
  server.listen(0, host);
  await once(server, 'listening');
  try {
    const tool = start(peer.tool, ['-s', host, '-p', String(server.address()!.port), ...rstreamArgs(plan)]);
    const [result] = await within(Promise.all([tool.finished, served]), STALL_MS, () => `the run did not end (this side: ${progress.phase})`).catch(async (error: unknown) => {
      // Say what the tool saw: its output often names the cause.
      tool.kill();
      const ended = await tool.finished;
      throw new Error(`${String(error)} (this side: ${progress.phase}); ${peer.tool} exited ${ended.code}: ${ended.stdout} ${ended.stderr}`, { cause: error });
    });
    checkRstream(result);
  } finally {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

/** A TypeScript client running the custom run against the tool as server (on `host`); a failure says what it saw. */
async function clientToToolServer(peer: ToolPeer, plan: Plan, host = deviceAddress()): Promise<void> {
  const port = freshPort();
  const tool = start(peer.tool, ['-b', host, '-p', String(port), ...rstreamArgs(plan)]);
  const seen: string[] = [];
  const progress: ExchangeProgress = { phase: 'not connected' };
  tool.finished.then((result) => seen.push(`${peer.tool} exited ${result.code}: ${result.stdout} ${result.stderr}`), () => undefined);
  try {
    const socket = await connectWhenListening(port, { ...TOOL_RINGS, iomapEntries: peer.iomapEntries }, host);
    // If the tool gives up first, say what it printed. It also exits right after
    // its last write, which this side may not have looked for yet (under load a
    // run lost that race): the exchange gets a few seconds more.
    const toolEnded = tool.finished.then(async (result) => {
      await new Promise((resolve) => setTimeout(resolve, TOOL_EXIT_GRACE_MS).unref());
      throw new Error(`${peer.tool} exited ${TOOL_EXIT_GRACE_MS / 1000} s before this side was done: ${JSON.stringify(result)}`);
    });
    socket.on('close', () => seen.push(`socket closed (destroyed ${socket.destroyed})`));
    socket.on('error', (error) => seen.push(`socket error ${String(error)}`));
    // A stall says where it stood, where the test's own timeout would say nothing.
    const stallReport = () => `the run did not end: wrote ${socket.bytesWritten} B, read ${socket.bytesRead} B, ${socket.writableLength} B queued`;
    await within(Promise.race([peer.exchange(socket, 'client', plan, progress), toolEnded]), STALL_MS, stallReport).catch(async (error: unknown) => {
      tool.kill();
      await tool.finished;
      throw new Error(`${String(error)} (this side: ${progress.phase}); seen: ${seen.join(' | ')}`);
    });
    // The tool may have closed first: its disconnect ends this socket (allowHalfOpen is off).
    progress.phase = 'ended: awaiting the close';
    socket.end();
    if (!socket.closed) await within(new Promise((resolve) => socket.once('close', resolve)), 20_000, () => `after end(), no 'close'; seen: ${seen.join(' | ')}`);
    progress.phase = `closed: awaiting ${peer.tool}'s exit`;
    // Before the bound, rstream exited about 1 s after the close; once (a CI run, 1 MiB bandwidth) it took over 30 s.
    const exited = await within(tool.finished, TOOL_EXIT_MS, `${peer.tool} did not exit after the socket closed`).catch(async (error: unknown) => {
      tool.kill();
      const ended = await tool.finished;
      throw new Error(`${String(error)}; it printed: ${ended.stdout} ${ended.stderr}; seen: ${seen.join(' | ')}`);
    });
    checkRstream(exited);
  } finally {
    tool.kill();
  }
}

for (const plan of PLANS) {
  test(`rstream client → TypeScript server: ${plan.name}`, { timeout: 180_000 }, () => toolClientToServer(RSTREAM, plan));
  test(`TypeScript client → rstream server: ${plan.name}`, { timeout: 180_000 }, () => clientToToolServer(RSTREAM, plan));
}

// The same over IPv6: rsockets takes any address rdma_cm does, and so must this side.
const address6 = deviceAddress6();
const noIpv6 = !address6 && 'the test netdev has no IPv6 address that is not link-local (set RDMACM_TEST_ADDR6)';
const IPV6_PLANS = PLANS.filter((plan) => plan.size === 4096);
for (const plan of IPV6_PLANS) {
  test(`rstream client → TypeScript server over IPv6: ${plan.name}`, { timeout: 180_000, skip: noIpv6 }, () => toolClientToServer(RSTREAM, plan, address6));
  test(`TypeScript client → rstream server over IPv6: ${plan.name}`, { timeout: 180_000, skip: noIpv6 }, () => clientToToolServer(RSTREAM, plan, address6));
}

test('rcopy client → TypeScript server: the file arrives whole (sha256)', { timeout: 180_000 }, async () => {
  const folder = mkdtempSync(join(tmpdir(), 'rdmacm-rcopy-'));
  try {
    const source = join(folder, 'source.bin');
    const destination = join(folder, 'copy.bin');
    const payload = randomBytes(3 << 20);
    writeFileSync(source, payload);
    const server = createServer((socket) => void rcopyServe(socket));
    server.listen(0, deviceAddress());
    await once(server, 'listening');
    try {
      const tool = start('rcopy', [source, `${deviceAddress()}:${destination}`, '-p', String(server.address()!.port)]);
      const result = await tool.finished;
      assert.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);
      assert.match(result.stdout, /done/);
      assert.equal(createHash('sha256').update(readFileSync(destination)).digest('hex'), createHash('sha256').update(payload).digest('hex'));
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
});

test('TypeScript client → rcopy server: the file arrives whole (sha256)', { timeout: 180_000 }, async () => {
  const folder = mkdtempSync(join(tmpdir(), 'rdmacm-rcopy-'));
  const port = freshPort();
  const tool = start('rcopy', ['-p', String(port)]);
  try {
    const destination = join(folder, 'copy.bin');
    const payload = randomBytes(3 << 20);
    const socket = await connectWhenListening(port);
    await rcopyClient(socket, destination, payload);
    socket.end();
    await once(socket, 'close');
    assert.equal(createHash('sha256').update(readFileSync(destination)).digest('hex'), createHash('sha256').update(payload).digest('hex'));
  } finally {
    tool.kill();
    rmSync(folder, { recursive: true, force: true });
  }
});

/** riostream's custom runs: every byte after the sync moves by RDMA writes into the peer's mapped buffer. */
const IO_PLANS = [
  { name: '64 B latency', size: 64, count: 1, iterations: 200 },
  { name: '4 KiB bandwidth', size: 4096, count: 50, iterations: 2 },
  { name: '1 MiB latency', size: 1 << 20, count: 1, iterations: 3 },
];

for (const plan of IO_PLANS) {
  test(`riostream client → TypeScript server (iomap): ${plan.name}`, { timeout: 180_000 }, () => toolClientToServer(RIOSTREAM, plan));
  test(`TypeScript client → riostream server (iomap): ${plan.name}`, { timeout: 180_000 }, () => clientToToolServer(RIOSTREAM, plan));
}

