// Connections per second through rdmacm/net or node:net, in one process on
// the test device's address: a server and a client, one connection at a time,
// each opened, then ended by the client (the server ends its side when it sees
// that) until both sides have closed. Warm-up connections first, unmeasured.
//
//   node dist/bench/socket-conns.js rdma|tcp ADDRESS PORT [COUNT] [WARMUP]
import { once } from 'node:events';
import { performance } from 'node:perf_hooks';
import process from 'node:process';
import * as tcp from 'node:net';
import type { Duplex } from 'node:stream';
import { connect, createServer } from '../src/net/index.js';

const [transport, address, portArg, countArg = '100', warmupArg = '20'] = process.argv.slice(2);
if ((transport !== 'rdma' && transport !== 'tcp') || !address || !portArg) {
  console.error('usage: node socket-conns.js rdma|tcp ADDRESS PORT [COUNT] [WARMUP]');
  process.exit(1);
}
const port = Number(portArg);
const count = Number(countArg);
const warmup = Number(warmupArg);

const server = transport === 'rdma' ? createServer() : tcp.createServer();
let serverClosed: (() => void) | undefined;
server.on('connection', (socket: Duplex) => {
  socket.resume(); // reads to the end; allowHalfOpen false: the end is answered with this side's
  socket.on('close', () => serverClosed?.());
});
server.listen(port, address);
await once(server, 'listening');

/** One connection, opened and closed on both sides. */
async function cycle(): Promise<void> {
  const bothClosed = new Promise<void>((resolve) => (serverClosed = resolve));
  const socket: Duplex = transport === 'rdma' ? connect({ port, host: address }) : tcp.connect({ port, host: address });
  await once(socket, 'connect');
  socket.resume();
  socket.end();
  await Promise.all([once(socket, 'close'), bothClosed]);
}

for (let i = 0; i < warmup; i++) await cycle();
const started = performance.now();
for (let i = 0; i < count; i++) await cycle();
const ms = performance.now() - started;
server.close();
console.log(JSON.stringify({
  transport,
  connections: count,
  warmup,
  seconds: Math.round(ms) / 1000,
  per_second: Math.round((count / ms) * 1000 * 10) / 10,
  ms_per_connection: Math.round((ms / count) * 1000) / 1000,
}));
