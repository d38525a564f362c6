// The JS heap while rdmacm/net streams (run with node --expose-gc): a server
// and a client in this process on the test device; the client writes 1 MiB
// chunks (one Buffer, written again and again, as the stream takes them), the
// server counts what arrives. After a warm-up, the heap is measured after full
// collections before and after each round; the figure is the growth over all
// rounds together.
//
//   node --expose-gc dist/bench/socket-heap.js ADDRESS [PORT] [MIB]
import { Buffer } from 'node:buffer';
import { once } from 'node:events';
import { performance } from 'node:perf_hooks';
import process from 'node:process';
import { getHeapSpaceStatistics } from 'node:v8';
import { connect, createServer, type RdmaSocket } from '../src/net/index.js';

const [address, portArg = '7495', mibArg = '1024'] = process.argv.slice(2);
const gc = (globalThis as { gc?: () => void }).gc;
if (!address || !gc) {
  console.error('usage: node --expose-gc socket-heap.js ADDRESS [PORT] [MIB]');
  process.exit(1);
}
const MIB = 1 << 20;
const total = Number(mibArg) * MIB;
const ROUNDS = 4;
const WARMUP = 32 * MIB;
// rstream's sizes (its 512 KiB socket buffers, which rsockets doubles).
const rdma = { recvBufferSize: MIB, sendBufferSize: MIB };

const server = createServer({ rdma });
server.listen(Number(portArg), address);
await once(server, 'listening');
const accepted = once(server, 'connection') as Promise<[RdmaSocket]>;
const client = connect({ port: Number(portArg), host: address, rdma });
await once(client, 'connect');
const [peer] = await accepted;
server.close();

let received = 0;
let want = 0;
let arrived: (() => void) | undefined;
peer.on('data', (chunk: Buffer) => {
  received += chunk.length;
  if (arrived && received >= want) {
    const done = arrived;
    arrived = undefined;
    done();
  }
});

const chunk = Buffer.alloc(MIB, 0x5a);
/** Writes `bytes` in 1 MiB writes, as the stream takes them; resolves once the server has them all. */
function transfer(bytes: number): Promise<void> {
  want = received + bytes;
  const all = new Promise<void>((resolve) => (arrived = resolve));
  let left = bytes / MIB;
  const pump = () => {
    while (left > 0) {
      left--;
      if (!client.write(chunk) && left > 0) return void client.once('drain', pump);
    }
  };
  pump();
  return all;
}

function settle(): { used: number; bySpace: Record<string, number>; external: number } {
  for (let i = 0; i < 4; i++) gc!();
  const bySpace: Record<string, number> = {};
  for (const space of getHeapSpaceStatistics()) bySpace[space.space_name] = space.space_used_size;
  const used = Object.values(bySpace).reduce((sum, v) => sum + v, 0);
  return { used, bySpace, external: process.memoryUsage().arrayBuffers };
}

await transfer(WARMUP);
const rounds: { mib: number; heap_growth_bytes: number; array_buffers_growth_bytes: number; mb_per_s: number }[] = [];
const first = settle();
let before = first;
let elapsed = 0;
for (let round = 0; round < ROUNDS; round++) {
  const bytes = Math.max(MIB, Math.floor(total / ROUNDS / MIB) * MIB);
  const started = performance.now();
  await transfer(bytes);
  const ms = performance.now() - started;
  elapsed += ms;
  const after = settle();
  rounds.push({
    mib: bytes / MIB,
    heap_growth_bytes: after.used - before.used,
    array_buffers_growth_bytes: after.external - before.external,
    mb_per_s: Math.round((bytes / (ms * 1000)) * 100) / 100,
  });
  before = after;
}
const last = before;
const growthBySpace: Record<string, number> = {};
for (const name of Object.keys(last.bySpace)) {
  const growth = last.bySpace[name]! - (first.bySpace[name] ?? 0);
  if (growth !== 0) growthBySpace[name] = growth;
}
const streamed = rounds.reduce((sum, r) => sum + r.mib, 0);

const closed = once(peer, 'close');
client.resume(); // its 'end' (and so its close) comes only to a reader
client.end();
peer.end();
await Promise.all([once(client, 'close'), closed]);
console.log(JSON.stringify({
  mib: streamed,
  warmup_mib: WARMUP / MIB,
  write_bytes: MIB,
  rounds,
  // The figure: growth of the used JS heap over everything after the warm-up.
  heap_growth_bytes: last.used - first.used,
  growth_by_space: growthBySpace,
  array_buffers_growth_bytes: last.external - first.external,
  mb_per_s: Math.round(((streamed * MIB) / (elapsed * 1000)) * 100) / 100,
}));
