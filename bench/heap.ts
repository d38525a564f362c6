// The JS heap across 1e5 post/poll cycles on the data path (run with
// node --expose-gc): a client and a server in this process on the test device;
// each cycle posts a prepared send, busy-polls the server's receive CQ, re-posts
// the receive and busy-polls the client's send CQ. Prints one JSON object.
//
//   node --expose-gc dist/bench/heap.js ADDRESS [PORT] [CYCLES]
import { createId, EventChannel } from '../src/index.js';

const [address, portArg = '7490', cyclesArg = '100000'] = process.argv.slice(2);
const gc = (globalThis as { gc?: () => void }).gc;
if (!address || !gc) {
  console.error('usage: node --expose-gc heap.js ADDRESS [PORT] [CYCLES]');
  process.exit(1);
}
const port = Number(portArg);
const cycles = Number(cyclesArg);

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

const settle = () => {
  for (let i = 0; i < 4; i++) gc();
  return process.memoryUsage().heapUsed;
};
run(Math.min(10_000, cycles)); // warm-up: JIT, lazily created objects
const before = settle();
const started = performance.now();
run(cycles);
const elapsed = performance.now() - started;
const after = settle();

const disconnected = server.disconnect({ timeoutMs: 5000 });
await client.disconnect({ timeoutMs: 5000 });
await disconnected;
server.close();
client.close();
listener.close();
clientChannel.close();
serverChannel.close();
console.log(JSON.stringify({
  cycles,
  heap_before: before,
  heap_after: after,
  heap_growth_bytes: after - before,
  us_per_cycle: Math.round((elapsed * 1000 / cycles) * 1000) / 1000,
}));
