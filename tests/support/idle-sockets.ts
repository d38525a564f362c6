// Run as a program (`node idle-sockets.js`): a fresh process opens 1000
// sockets (500 connections, both ends here; RDMACM_IDLE_SOCKETS sets another
// even number), each echoes once, then it
// measures its idle CPU over 5 s, closes them all, and prints what it saw as
// JSON. A fresh process, because a test process's earlier work goes on costing
// it CPU for a while: a clean-clone CI run read 4.05 % for these sockets as the
// 29th file of the device tier, 0 collections in the window and the event loop
// 0.35 % busy, where they read 0.74-1.19 % alone or after nine files
// (performance-notes.md, 2026-12-02).
import process from 'node:process';
import { once } from 'node:events';
import { connect, createServer, type RdmaSocket } from '../../src/net/index.js';
import { deviceAddress } from './device.js';
import { measureIdle } from './gc.js';

/** What the program prints (its last line of output). */
export interface IdleSocketsReport {
  readonly sockets: number;
  readonly echoed: number;
  readonly setupMs: number;
  readonly rssPerSocket: number;
  readonly bufferBytes: number;
  readonly idleShare: number;
  readonly idleDescribe: string;
  readonly leftOpen: number;
}

const PAIRS = Number(process.env.RDMACM_IDLE_SOCKETS ?? 1000) / 2;
const SIZES = { recvBufferSize: 16384, sendBufferSize: 16384, sendQueueDepth: 16, recvQueueDepth: 16 };

const serverSockets: RdmaSocket[] = [];
const server = createServer({ rdma: SIZES }, (socket) => {
  serverSockets.push(socket);
  socket.on('error', () => undefined);
  socket.pipe(socket);
});
server.listen(0, deviceAddress());
await once(server, 'listening');
const port = server.address()!.port;
const clients: RdmaSocket[] = [];
let report: Omit<IdleSocketsReport, 'leftOpen'>;
try {
  const rssBefore = process.memoryUsage().rss;
  const started = performance.now();
  for (let batch = 0; batch < PAIRS; batch += 25) {
    await Promise.all(Array.from({ length: Math.min(25, PAIRS - batch) }, async () => {
      const socket = connect({ port, host: deviceAddress(), rdma: SIZES });
      clients.push(socket);
      await once(socket, 'connect');
    }));
  }
  while (serverSockets.length < PAIRS) await once(server, 'connection');
  const setupMs = performance.now() - started;
  const rssPerSocket = (process.memoryUsage().rss - rssBefore) / (PAIRS * 2);
  // Every connection carries bytes both ways.
  const echoes = await Promise.all(clients.map(async (socket, i) => {
    const echoed = once(socket, 'data');
    socket.write(`ping ${i}`);
    return String((await echoed)[0]) === `ping ${i}`;
  }));
  // measureIdle settles V8's collections of the set-up's garbage before the window.
  const idle = await measureIdle(5000);
  report = {
    sockets: PAIRS * 2, echoed: echoes.filter(Boolean).length, setupMs, rssPerSocket,
    bufferBytes: SIZES.recvBufferSize + SIZES.sendBufferSize, idleShare: idle.share, idleDescribe: idle.describe,
  };
} finally {
  await Promise.all(clients.map((socket) => (socket.destroyed ? undefined : socket[Symbol.asyncDispose]())));
  await new Promise<void>((resolve) => server.close(() => resolve()));
}
const leftOpen = serverSockets.filter((socket) => !socket.closed).length;
process.stdout.write(JSON.stringify({ ...report, leftOpen } satisfies IdleSocketsReport) + '\n');
