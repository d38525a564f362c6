// Where the time of a completion on the event loop goes, one hop at a time: the
// native crossings a wake-up makes, each timed alone in a loop; the event
// loop's own hops (a microtask, a setImmediate turn, an empty poll of adaptive
// mode's spin, libuv waking a watched fd written by another thread, against a
// thread woken from a futex); and a ping-pong in this process whose two sides
// listen for completions in events mode, split into the path from a post to
// the peer's listener (device, kernel, libuv, koffi, ibv_get_cq_event, poll)
// and the listener's own work up to its reply. Prints one JSON object.
//
//   node dist/bench/event-path.js ADDRESS [PORT] [ROUND_TRIPS]
import { Buffer } from 'node:buffer';
import { openSync, readSync, closeSync, constants } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { setTimeout as sleep } from 'node:timers/promises';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createId, EventChannel, type CompletionListener, type CompletionQueue, type PreparedSend, type PreparedRecv } from '../src/index.js';
import { FdWatcher } from '../src/api/core/fd-watcher.js';
import { contextOps } from '../src/ffi/inline-verbs.js';

const [address, portArg = '7495', tripsArg = '2000'] = process.argv.slice(2);
if (!address) {
  console.error('usage: node event-path.js ADDRESS [PORT] [ROUND_TRIPS]');
  process.exit(1);
}
const trips = Number(tripsArg);
const CALLS = 100_000;

const median = (values: Float64Array | number[]): number => {
  const sorted = Float64Array.from(values).sort();
  return Math.round(sorted[Math.floor(sorted.length / 2)]! * 1000) / 1000;
};
const percentile = (values: Float64Array, p: number): number => {
  const sorted = Float64Array.from(values).sort();
  return Math.round(sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]! * 1000) / 1000;
};
/** µs per call of `body`, the median of five timed batches after one untimed. */
function perCall(body: () => void, calls = CALLS): number {
  const batches: number[] = [];
  for (let batch = 0; batch < 6; batch++) {
    const started = performance.now();
    for (let i = 0; i < calls; i++) body();
    if (batch > 0) batches.push(((performance.now() - started) * 1000) / calls);
  }
  return median(batches);
}

// ---- a connected pair in this process, each side's CQ its own
const serverChannel = new EventChannel();
const clientChannel = new EventChannel();
const listener = createId(serverChannel);
listener.bindAddr({ address, port: Number(portArg) });
listener.listen(1);
const client = createId(clientChannel);
await client.resolveAddr({ address, port: Number(portArg) });
await client.resolveRoute();
client.createQp({ sendWr: 64, recvWr: 64, inlineData: 64 });
const request = listener.nextRequest({ timeoutMs: 30_000 });
const connected = client.connect(undefined, { timeoutMs: 30_000 });
const server = await request;
server.createQp({ sendWr: 64, recvWr: 64, inlineData: 64 });
const sides = [client, server].map((id) => {
  const inbox = id.regMsgs(Buffer.alloc(64));
  const recv = id.queuePair.prepareRecv(inbox);
  for (let i = 0; i < 32; i++) recv.post();
  return { id, recv, send: id.queuePair.prepareSend(Buffer.alloc(2), { inline: true }), cq: id.queuePair.recvCq, sendCq: id.queuePair.sendCq };
});
await Promise.all([connected, server.accept()]);

// ---- crossings, each alone
const emptyCq = sides[0]!.cq;
const ops = contextOps(client.device!.unsafeHandle);
const cqHandle = emptyCq.unsafeHandle;
const crossings = {
  poll_empty_us: perCall(() => emptyCq.poll()),
  req_notify_cq_us: perCall(() => ops.reqNotifyCq(cqHandle, 0)),
  performance_now_us: perCall(() => performance.now()),
};

/**
 * Adaptive mode's spin that catches nothing: µs per poll, from 600 to 800 ms
 * into a wait with a fixed 1 s budget, on a queue of its own (the first
 * 0.6 s pay the queue's set-up and V8's compiles). Counted by wrapping the
 * queue's poll(), which the spin calls once a poll; 0 if it polled none.
 */
async function spinPollUs(): Promise<number> {
  const cq = client.device!.createCq({ entries: 16 });
  cq.mode = 'adaptive';
  cq.maxSpinBudgetUs = 1_000_000;
  cq.spinBudgetUs = 1_000_000;
  let polls = 0;
  const poll = cq.poll;
  cq.poll = function countedPoll(this: CompletionQueue, ...args: Parameters<CompletionQueue['poll']>) {
    polls++;
    return poll.apply(this, args);
  };
  const waited = cq.next().catch(() => undefined);
  await sleep(600);
  const [fromPolls, from] = [polls, performance.now()];
  await sleep(200);
  const perPoll = polls > fromPolls ? ((performance.now() - from) * 1000) / (polls - fromPolls) : 0;
  cq.close();
  await waited;
  return perPoll;
}

// ---- the loop's own hops
async function microtaskHop(): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < CALLS; i++) await undefined;
  return ((performance.now() - started) * 1000) / CALLS;
}
function immediateHop(turns: number): Promise<number> {
  return new Promise((resolve) => {
    let left = turns;
    const started = performance.now();
    const step = (): void => {
      if (--left === 0) resolve(((performance.now() - started) * 1000) / turns);
      else setImmediate(step);
    };
    setImmediate(step);
  });
}

/** libuv waking this thread for a FIFO another thread writes: write time to the watch's callback, µs. */
async function fdWake(samples: number): Promise<Float64Array> {
  const dir = mkdtempSync(join(tmpdir(), 'rdmacm-wake-'));
  const path = join(dir, 'fifo');
  execFileSync('mkfifo', [path]);
  const fd = openSync(path, constants.O_RDWR | constants.O_NONBLOCK);
  const shared = new SharedArrayBuffer(16);
  const flag = new Int32Array(shared, 0, 1);
  const writtenAt = new BigInt64Array(shared, 8, 1);
  const worker = new Worker(`
    const { workerData } = require('node:worker_threads');
    const { openSync, writeSync } = require('node:fs');
    const fd = openSync(workerData.path, 'w');
    const flag = new Int32Array(workerData.shared, 0, 1);
    const writtenAt = new BigInt64Array(workerData.shared, 8, 1);
    for (let i = 0; i < workerData.samples; i++) {
      Atomics.wait(flag, 0, 0, 5000);
      Atomics.store(flag, 0, 0);
      // Let the reader fall asleep in epoll first.
      const until = Date.now() + 1; while (Date.now() < until);
      writtenAt[0] = process.hrtime.bigint();
      writeSync(fd, 'x');
    }`, { eval: true, workerData: { path, shared, samples } });
  const wakes = new Float64Array(samples);
  const scratch = Buffer.alloc(16);
  await new Promise<void>((resolve) => {
    let taken = 0;
    const watcher = new FdWatcher(fd, () => {
      const now = process.hrtime.bigint();
      readSync(fd, scratch);
      wakes[taken++] = Number(now - writtenAt[0]!) / 1000;
      if (taken === samples) {
        watcher.close();
        resolve();
      } else {
        Atomics.store(flag, 0, 1);
        Atomics.notify(flag, 0);
      }
    });
    watcher.setInterest(true);
    Atomics.store(flag, 0, 1);
    Atomics.notify(flag, 0);
  });
  await worker.terminate();
  closeSync(fd);
  rmSync(dir, { recursive: true });
  return wakes;
}

/**
 * The floor any sleeping wait pays here: this thread blocked in a futex
 * (Atomics.wait), woken by another thread; from its notify to the waiter
 * running, µs. No epoll, libuv or koffi on the way: what C's blocking
 * ibv_get_cq_event pays for its wake-up too, near enough.
 */
async function futexWake(samples: number): Promise<Float64Array> {
  const shared = new SharedArrayBuffer(16);
  const flag = new Int32Array(shared, 0, 1);
  const notifiedAt = new BigInt64Array(shared, 8, 1);
  const ready = new Int32Array(new SharedArrayBuffer(4));
  const worker = new Worker(`
    const { workerData } = require('node:worker_threads');
    const flag = new Int32Array(workerData.shared, 0, 1);
    const notifiedAt = new BigInt64Array(workerData.shared, 8, 1);
    const ready = new Int32Array(workerData.ready);
    for (let i = 0; i < workerData.samples; i++) {
      Atomics.wait(ready, 0, 0, 5000);
      Atomics.store(ready, 0, 0);
      const until = Date.now() + 1; while (Date.now() < until);
      notifiedAt[0] = process.hrtime.bigint();
      Atomics.store(flag, 0, 1);
      Atomics.notify(flag, 0);
    }`, { eval: true, workerData: { shared, ready: ready.buffer, samples } });
  await new Promise((resolve) => worker.once('online', resolve));
  const wakes = new Float64Array(samples);
  for (let i = 0; i < samples; i++) {
    Atomics.store(flag, 0, 0);
    Atomics.store(ready, 0, 1);
    Atomics.notify(ready, 0);
    Atomics.wait(flag, 0, 0, 5000);
    wakes[i] = Number(process.hrtime.bigint() - notifiedAt[0]!) / 1000;
  }
  await worker.terminate();
  return wakes;
}

const loop = {
  microtask_hop_us: Math.round((await microtaskHop()) * 1000) / 1000,
  set_immediate_turn_us: Math.round((await immediateHop(20_000)) * 1000) / 1000,
  adaptive_spin_poll_us: Math.round((await spinPollUs()) * 1000) / 1000,
};
const wakes = await fdWake(500);
const futexWakes = await futexWake(500);
const fdWakeFigures = {
  fd_wake_p50_us: median(wakes), fd_wake_p99_us: percentile(wakes, 0.99),
  futex_wake_p50_us: median(futexWakes), futex_wake_p99_us: percentile(futexWakes, 0.99),
};

// ---- the ping-pong, both sides listening in events mode
/** Per round trip: post → the peer's listener, and the listener's work up to its reply, each side. */
const toPeer = new Float64Array(2 * trips);
const inListener = new Float64Array(2 * trips);
let hops = 0;
let postedAt = 0;
let done: () => void;
const finished = new Promise<void>((resolve) => (done = resolve));

function side(cq: CompletionQueue, sendCq: CompletionQueue, recv: PreparedRecv, reply: PreparedSend, isClient: boolean): CompletionListener {
  return {
    onCompletions(): number {
      const entered = performance.now();
      const count = cq.poll();
      if (count === 0) return 0;
      if (cq.statusAt(0) !== 0) throw new Error(`receive failed: ${cq.completionAt(0).status}`);
      recv.post();
      sendCq.poll(); // the previous reply's completion: the send queue never fills
      if (hops < toPeer.length) toPeer[hops] = (entered - postedAt) * 1000;
      if (isClient && hops + 1 >= toPeer.length) {
        done();
        return count;
      }
      postedAt = performance.now();
      reply.post();
      if (hops < inListener.length) inListener[hops] = (postedAt - entered) * 1000;
      hops++;
      return count;
    },
    onCompletionError(error: unknown) {
      throw error;
    },
  };
}
const [clientSide] = sides;
for (const { cq } of sides) cq.mode = 'events';
// Sends complete on the QPs' own send CQs, reaped by the listeners: nothing else wakes them.
for (const [at, { cq, sendCq, recv, send }] of sides.entries()) cq.setListener(side(cq, sendCq, recv, send, at === 0));
const started = performance.now();
postedAt = started;
clientSide!.send.post();
await finished;
const elapsedUs = (performance.now() - started) * 1000;
for (const { cq } of sides) cq.setListener(undefined);

console.log(JSON.stringify({
  ...crossings,
  ...loop,
  ...fdWakeFigures,
  pingpong_half_round_trip_us: Math.round((elapsedUs / (2 * trips)) * 1000) / 1000,
  post_to_peer_listener_p50_us: median(toPeer.subarray(100, hops)),
  post_to_peer_listener_p99_us: percentile(toPeer.subarray(100, hops), 0.99),
  listener_to_reply_p50_us: median(inListener.subarray(100, hops)),
  round_trips: trips,
}));
await client.disconnect({ timeoutMs: 5000 }).catch(() => undefined);
for (const resource of [client, server, listener, clientChannel, serverChannel]) resource.close();
