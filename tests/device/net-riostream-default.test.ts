// riostream's default run (no -S) against rdmacm/net, both ways: on one
// connection the latency tests at 64 B, 4 KiB, 64 KiB and 1 MiB (100 000 to
// 100 round trips), then the bandwidth tests on a second; the tool formats
// nothing without -T v, so this side checks the markers and the tool's rows.
// About 100 s a direction in the emulated guest: CI runs it in one pass.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type RdmaSocket } from '../../src/net/index.js';
import { deviceAddress, freshPort } from '../support/device.js';
import { start, type Finished } from '../support/processes.js';
import { DEFAULT_RUN, riostreamExchange, type ExchangeProgress } from '../support/riostream-peer.js';
import { connectWhenListening } from '../support/tool-connect.js';
import { within } from '../support/within.js';

/** riostream exited 0 having printed every row of its default run (it exits 0 even when a test failed); the rows go to the log. */
function checkRiostreamDefault(result: Finished, title: string): void {
  console.log(`# ${title}:\n${result.stdout.trim().replace(/^/gm, '#   ')}`);
  const context = `exit ${result.code}\n${result.stdout}\n${result.stderr}`;
  assert.equal(result.code, 0, context);
  for (const row of ['64_lat', '4k_lat', '64k_lat', '1m_lat', '64_bw', '4k_bw', '64k_bw', '1m_bw']) {
    assert.match(result.stdout, new RegExp(`^${row}\\s+\\S+\\s+\\S+\\s+\\S+\\s+\\S+\\s+[\\d.]+s\\s+[\\d.]+\\s+[\\d.]+$`, 'm'), context);
  }
}

/** riostream's default run takes about 45 s with C on both sides in the guest; this side is slower at 64 B. */
const DEFAULT_RUN_MS = 540_000;
const PHASES = ['latency', 'bandwidth'] as const;

/** `run`, bounded; a failure says where this side stood and what riostream printed. */
async function boundedRun<T>(run: Promise<T>, tool: ReturnType<typeof start>, progress: ExchangeProgress): Promise<T> {
  return within(run, DEFAULT_RUN_MS, () => `the run did not end (this side: ${progress.phase})`).catch(async (error: unknown) => {
    tool.kill();
    const ended = await tool.finished;
    throw new Error(`${String(error)} (this side: ${progress.phase}); riostream exited ${ended.code}: ${ended.stdout} ${ended.stderr}`, { cause: error });
  });
}

test('riostream client → TypeScript server (iomap): its default run, latency then bandwidth on a second connection, 64 B to 1 MiB', { timeout: DEFAULT_RUN_MS + 60_000 }, async () => {
  const progress: ExchangeProgress = { phase: 'not connected' };
  const server = createServer({ rdma: { iomapEntries: 1 } });
  const accepted: RdmaSocket[] = [];
  let wake: (() => void) | undefined;
  server.on('connection', (socket) => {
    accepted.push(socket);
    wake?.();
  });
  const nextConnection = async () => {
    while (accepted.length === 0) await new Promise<void>((resolve) => (wake = resolve));
    return accepted.shift()!;
  };
  const served = (async () => {
    for (const phase of PHASES) {
      progress.phase = `${phase}: awaiting the connection`;
      const socket = await nextConnection();
      const closed = new Promise((resolve) => socket.once('close', resolve));
      const failed = new Promise<never>((_resolve, reject) => socket.once('error', reject));
      for (const plan of DEFAULT_RUN[phase]) {
        await Promise.race([riostreamExchange(socket, 'server', plan, progress), failed]);
      }
      socket.end();
      await Promise.race([closed, failed]);
    }
  })();
  server.listen(0, deviceAddress());
  await once(server, 'listening');
  try {
    const tool = start('riostream', ['-s', deviceAddress(), '-p', String(server.address()!.port)]);
    const [result] = await boundedRun(Promise.all([tool.finished, served]), tool, progress);
    checkRiostreamDefault(result, 'riostream client, default run against this server');
  } finally {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});

test('TypeScript client → riostream server (iomap): its default run, latency then bandwidth on a second connection, 64 B to 1 MiB', { timeout: DEFAULT_RUN_MS + 60_000 }, async () => {
  const port = freshPort();
  const tool = start('riostream', ['-b', deviceAddress(), '-p', String(port)]);
  const progress: ExchangeProgress = { phase: 'not connected' };
  const run = async () => {
    for (const phase of PHASES) {
      progress.phase = `${phase}: connecting`;
      const socket = await connectWhenListening(port, { iomapEntries: 1 });
      for (const plan of DEFAULT_RUN[phase]) await riostreamExchange(socket, 'client', plan, progress);
      progress.phase = `${phase}: ended, awaiting the close`;
      socket.end();
      if (!socket.closed) await new Promise((resolve) => socket.once('close', resolve));
    }
    progress.phase = 'closed: awaiting riostream\'s exit';
    return tool.finished;
  };
  try {
    const result = await boundedRun(run(), tool, progress);
    checkRiostreamDefault(result, 'riostream server, default run against this client');
  } finally {
    tool.kill();
  }
});
