// The JS heap across 1e5 post/poll cycles on the data path (run with
// node --expose-gc): a client and a server in this process on the test device;
// each cycle posts a prepared send, busy-polls the server's receive CQ, re-posts
// the receive and busy-polls the client's send CQ. After a warm-up it measures
// three rounds; prints one JSON object (the figure is the last round's growth).
//
//   node --expose-gc dist/bench/heap.js ADDRESS [PORT] [CYCLES]
import { getHeapSpaceStatistics } from 'node:v8';
import { createId, EventChannel } from '../src/index.js';

const [address, portArg = '7490', cyclesArg = '100000'] = process.argv.slice(2);
const gc = (globalThis as { gc?: () => void }).gc;
if (!address || !gc) {
  console.error('usage: node --expose-gc heap.js ADDRESS [PORT] [CYCLES]');
  process.exit(1);
}
const port = Number(portArg);
const cycles = Number(cyclesArg);
const WARMUP = 20_000;
const ROUNDS = 3;

const serverChannel = new EventChannel();
const clientChannel = new EventChannel();
const listener = createId(serverChannel);
listener.bindAddr({ address, port });
listener.listen(1);
const client = createId(clientChannel);
await client.resolveAddr({ address, port });
await client.resolveRoute();
client.createQp({ sendWr: 16, recvWr: 16, inlineData: 64 });
const request = listener.nextRequest({ timeoutMs: 30_000 });
const connected = client.connect(undefined, { timeoutMs: 30_000 });
const server = await request;
server.createQp({ sendWr: 16, recvWr: 16 });
const inbox = server.regMsgs(Buffer.alloc(64));
const recv = server.queuePair.prepareRecv(inbox);
for (let i = 0; i < 8; i++) recv.post();
await Promise.all([connected, server.accept()]);

const send = client.queuePair.prepareSend(Buffer.alloc(64, 1), { inline: true });
const sendCq = client.queuePair.sendCq;
const recvCq = server.queuePair.recvCq;

function run(n: number): void {
  for (let i = 0; i < n; i++) {
    send.post();
    while (recvCq.poll(1) === 0);
    if (recvCq.statusAt(0) !== 0) throw new Error(`receive failed: ${recvCq.completionAt(0).status}`);
    recv.post();
    while (sendCq.poll(1) === 0);
    if (sendCq.statusAt(0) !== 0) throw new Error(`send failed: ${sendCq.completionAt(0).status}`);
  }
}

/** Used bytes per V8 heap space after full collections (code space shows JIT work, not leaks). */
function settle(): Record<string, number> {
  for (let i = 0; i < 4; i++) gc!();
  const spaces: Record<string, number> = {};
  for (const space of getHeapSpaceStatistics()) spaces[space.space_name] = space.space_used_size;
  return spaces;
}
const total = (spaces: Record<string, number>) => Object.values(spaces).reduce((sum, used) => sum + used, 0);

// Warm-up, then ROUNDS measured rounds of `cycles` each. Under emulation the
// optimizing compiler can still be at work in the first round; the steady
// state is the last round, and every round is reported.
run(WARMUP);
const rounds: { heap_growth_bytes: number; growth_by_space: Record<string, number>; us_per_cycle: number }[] = [];
for (let round = 0; round < ROUNDS; round++) {
  const before = settle();
  const started = performance.now();
  run(cycles);
  const elapsed = performance.now() - started;
  const after = settle();
  const growthBySpace: Record<string, number> = {};
  for (const name of Object.keys(after)) {
    const growth = after[name]! - (before[name] ?? 0);
    if (growth !== 0) growthBySpace[name] = growth;
  }
  rounds.push({
    heap_growth_bytes: total(after) - total(before),
    growth_by_space: growthBySpace,
    us_per_cycle: Math.round((elapsed * 1000 / cycles) * 1000) / 1000,
  });
}

const disconnected = server.disconnect({ timeoutMs: 5000 });
await client.disconnect({ timeoutMs: 5000 });
await disconnected;
server.close();
client.close();
listener.close();
clientChannel.close();
serverChannel.close();
const last = rounds[rounds.length - 1]!;
console.log(JSON.stringify({
  cycles,
  warmup_cycles: WARMUP,
  rounds,
  // The figure: growth over the last round (the steady state).
  heap_growth_bytes: last.heap_growth_bytes,
  us_per_cycle: last.us_per_cycle,
}));
