// `rdmacm bench lat|bw`: RC send/recv latency (ping-pong) and bandwidth
// (streamed sends with a window), like perftest's ib_send_lat / ib_send_bw.
// Connection setup is the asynchronous API on the event loop; the measured
// loops are synchronous busy-polls over prepared work requests and cq.poll(),
// with nothing allocated per iteration.
import { Buffer } from 'node:buffer';
import { performance } from 'node:perf_hooks';
import process from 'node:process';
import { writeSync } from 'node:fs';
import { parseCommandArgs, usageError } from './arguments.js';
import { listDevices } from '../api/devices.js';
import { createId, type CmId } from '../api/cm-id.js';
import { ConnectionError } from '../api/cm-event.js';
import { EventChannel } from '../api/event-channel.js';
import type { CompletionQueue } from '../api/completion-queue.js';
import type { MemoryRegion } from '../api/memory-region.js';
import type { QueuePair } from '../api/queue-pair.js';
import type { PreparedRecv, PreparedRecvChain, PreparedSend } from '../api/work-request.js';

export const benchSummary = 'measure RC send/recv latency (lat) or bandwidth (bw) against another rdmacm bench';

const usage = `Usage: rdmacm bench lat|bw [-s SIZE] [-n ITERS] [-w ITERS] [-D SECONDS] [-p PORT] [-e] [--json] [SERVER_ADDR]

Measures RC send/recv between two rdmacm bench processes, as perftest's
ib_send_lat and ib_send_bw do. Without SERVER_ADDR it serves one client and
exits; with it, it is the client. The client's size, iterations and duration
travel in the connection's private data, so both sides run the same test.

  lat   ping-pong; reports half the round trip in µs: min, p50, avg, p99, p99.9, max
  bw    the client streams SIZE-byte sends (window ${'128'}, 1 in 16 signaled);
        reports MB/s (1e6 bytes/s) and million messages per second

Options:
  -s, --size SIZE        message size in bytes (default 2 for lat, 65536 for bw)
  -n, --iters ITERS      measured iterations (default 10000 for lat, 1000 for bw),
                         after warm-up iterations that are not measured
  -w, --warmup ITERS     warm-up iterations before measuring, to let V8 optimize the
                         loop (default 20000 for lat; for bw 20000 messages, or
                         64 MiB when that is fewer, and at least 256)
  -D, --duration SECONDS measure for this long instead of ITERS iterations
  -p, --port PORT        the rdma_cm port (default 7480)
  -e, --events           lat: await each receive with cq.next() on completion events
                         (the CQ's channel, watched by libuv) instead of busy-polling,
                         as ib_send_lat -e does; each side chooses for itself.
                         Defaults: 1000 iterations after 1000 warm-up
      --json             print one JSON object: {size, iters, min_us, p50_us, avg_us,
                         p99_us, p999_us, max_us} (lat) or {size, iters, mb_per_s,
                         msg_rate_mpps} (bw)
  -h, --help             show this help

The server listens on every address; both sides print their own figures.
Exits 0 on success, 1 on a bad option or a failed run, 2 when there is no RDMA device.
`;

const noDeviceHint =
  'rdmacm: no RDMA device found — see scripts/setup-rxe.sh to create a soft-RoCE device, or run inside scripts/rxe-vm.sh\n';

const MAGIC = 0x4e424452; // "RDBN"
const VERSION = 1;
const DEFAULT_PORT = 7480;
const WINDOW = 128; // bw: sends outstanding (perftest's TX depth)
const SIGNAL_EVERY = 16; // 1 send in 16 is signaled
// Receives kept posted by a bw server (bench/guest.sh gives ib_send_bw the
// same -r). Deeper than perftest's default 512: a receiver that falls a few
// hundred messages behind gets RNR NAKs, and rdma_cm's QPs back off 655 ms on each.
const RECV_DEPTH = 2048;
const RECV_CHAIN = 16; // receives re-posted together
const LAT_RECV_DEPTH = 16;
const MAX_INLINE = 236; // perftest's default inline size for latency tests
const STALL_MS = 15_000; // a loop with no completion for this long gives up
const DURATION_CAPACITY = 2_000_000; // latency samples kept in a -D run
const WARMUP_BYTES = 64 * 1024 * 1024; // bw warm-up with large messages
const EVENTS_WARMUP = 1000; // lat --events: round trips before measuring

type Mode = 'lat' | 'bw';

/** What both sides agree on; the client sends it in the connect private data. */
interface Plan {
  mode: Mode;
  size: number;
  iters: number;
  warmup: number;
  durationMs: number;
}

export interface LatencyResult {
  size: number;
  iters: number;
  min_us: number;
  p50_us: number;
  avg_us: number;
  p99_us: number;
  p999_us: number;
  max_us: number;
}

export interface BandwidthResult {
  size: number;
  iters: number;
  mb_per_s: number;
  msg_rate_mpps: number;
}

class BenchError extends Error {}

function encodePlan(plan: Plan): Buffer {
  const b = Buffer.alloc(24);
  b.writeUInt32LE(MAGIC, 0);
  b.writeUInt8(VERSION, 4);
  b.writeUInt8(plan.mode === 'lat' ? 0 : 1, 5);
  b.writeUInt32LE(plan.size, 8);
  b.writeUInt32LE(plan.iters, 12);
  b.writeUInt32LE(plan.warmup, 16);
  b.writeUInt32LE(plan.durationMs, 20);
  return b;
}

function decodePlan(data: Buffer | undefined): Plan | undefined {
  if (!data || data.byteLength < 24 || data.readUInt32LE(0) !== MAGIC || data.readUInt8(4) !== VERSION) return undefined;
  return {
    mode: data.readUInt8(5) === 0 ? 'lat' : 'bw',
    size: data.readUInt32LE(8),
    iters: data.readUInt32LE(12),
    warmup: data.readUInt32LE(16),
    durationMs: data.readUInt32LE(20),
  };
}

/**
 * Default warm-up iterations, never measured. V8 optimizes a loop only after
 * thousands of iterations, and under emulation its compiler threads take
 * seconds, stealing a CPU from the busy loops while they run: lat warms up for
 * 20000 round trips, bw for 20000 messages or 64 MiB, whichever is less.
 */
function warmupFor(mode: Mode, size: number): number {
  return mode === 'lat' ? 20_000 : Math.max(2 * WINDOW, Math.min(20_000, Math.floor(WARMUP_BYTES / size)));
}

/** A percentage line on stderr while a loop runs (TTY only). */
class Progress {
  #next = 0;
  #step = 1;
  #lastPercent = -1;
  constructor(private readonly enabled: boolean, private readonly label: string, private readonly total: number) {
    this.#step = Math.max(1, Math.ceil(total / 100));
    this.#next = enabled ? 0 : Number.POSITIVE_INFINITY;
  }
  /** Cheap to call every iteration: writes only every 1 %. */
  tick(done: number): void {
    if (done < this.#next) return;
    this.#next = done + this.#step;
    const percent = Math.min(100, Math.floor((done / this.total) * 100));
    if (percent !== this.#lastPercent) {
      this.#lastPercent = percent;
      writeSync(2, `\r${this.label} ${percent}%`);
    }
  }
  done(): void {
    if (this.enabled) writeSync(2, '\r\x1b[K');
  }
}

/** Throws when a busy loop sees no completion for STALL_MS. */
function stalled(since: number, what: string): void {
  if (performance.now() - since > STALL_MS) throw new BenchError(`no ${what} completion for ${STALL_MS / 1000} s: is the peer still there?`);
}

/** Checks the completions of the last poll(); a failed one ends the run. */
function checkStatuses(cq: CompletionQueue, count: number, what: string): void {
  for (let i = 0; i < count; i++) {
    if (cq.statusAt(i) !== 0) {
      const wc = cq.completionAt(i);
      throw new BenchError(`${what} completion failed: ${wc.status} (${wc.statusText})`);
    }
  }
}

/** The side's resources for one connection. */
interface Link {
  id: CmId;
  qp: QueuePair;
  recvRegion: MemoryRegion;
  sendRegion: MemoryRegion;
  recv: PreparedRecv;
  /** RECV_CHAIN receives into the same buffer, posted with one call. */
  recvChain: PreparedRecvChain;
  /** Signaled and unsignaled sends of the same message, and the zero-byte stop message. */
  sendSignaled: PreparedSend;
  sendUnsignaled: PreparedSend;
  stop: PreparedSend;
  inline: boolean;
}

/** Creates the QP (inline when the size allows it), registers the buffers and prepares the work requests. */
function buildLink(id: CmId, plan: Plan, server: boolean): Link {
  const recvWr = plan.mode === 'bw' && server ? RECV_DEPTH : LAT_RECV_DEPTH + RECV_CHAIN;
  const sendWr = plan.mode === 'bw' ? WINDOW + 2 : 4 * SIGNAL_EVERY + 2;
  let qp: QueuePair;
  let inline = false;
  if (plan.size <= MAX_INLINE) {
    try {
      qp = id.createQp({ sendWr, recvWr, inlineData: MAX_INLINE });
      inline = qp.caps.maxInlineData >= plan.size;
    } catch {
      qp = id.createQp({ sendWr, recvWr });
    }
  } else {
    qp = id.createQp({ sendWr, recvWr });
  }
  const recvRegion = id.regMsgs(Buffer.alloc(plan.size));
  const sendRegion = id.regMsgs(Buffer.alloc(plan.size, 0x5a));
  const recv = qp.prepareRecv(recvRegion);
  const recvChain = qp.prepareRecvChain(recvRegion, { count: RECV_CHAIN, stride: 0, length: plan.size });
  const source = inline ? sendRegion.buffer : sendRegion;
  const sendSignaled = qp.prepareSend(source, { inline, signaled: true });
  const sendUnsignaled = qp.prepareSend(source, { inline, signaled: false });
  const stop = qp.prepareSend(source, { inline, signaled: true, length: 0 });
  return { id, qp, recvRegion, sendRegion, recv, recvChain, sendSignaled, sendUnsignaled, stop, inline };
}

/** Posts `count` receives (a multiple of RECV_CHAIN, or fewer than one chain) of the same buffer. */
function postReceives(link: Link, count: number): void {
  for (let i = 0; i + RECV_CHAIN <= count; i += RECV_CHAIN) link.recvChain.post();
  for (let i = 0; i < count % RECV_CHAIN; i++) link.recv.post();
}

/** Waits for one completion on `cq` (busy-poll); returns how many the poll found. */
function spinFor(cq: CompletionQueue, max: number, what: string): number {
  // No clock read until the wait is long: a completion that lands during one would wait for it.
  let since = 0;
  let spins = 0;
  for (;;) {
    const count = cq.poll(max);
    if (count > 0) return count;
    if ((++spins & 0xffff) === 0) {
      if (since === 0) since = performance.now();
      else stalled(since, what);
    }
  }
}

// ---------------------------------------------------------------- statistics

function latencyStats(samples: Float64Array, count: number, size: number): LatencyResult {
  const sorted = samples.subarray(0, count).slice().sort();
  let sum = 0;
  for (let i = 0; i < count; i++) sum += sorted[i]!;
  const at = (p: number) => sorted[Math.min(count - 1, Math.max(0, Math.ceil(p * count) - 1))]!;
  const round = (v: number) => Math.round(v * 1000) / 1000;
  return {
    size,
    iters: count,
    min_us: round(sorted[0]!),
    p50_us: round(at(0.5)),
    avg_us: round(sum / count),
    p99_us: round(at(0.99)),
    p999_us: round(at(0.999)),
    max_us: round(sorted[count - 1]!),
  };
}

function bandwidthResult(size: number, messages: number, elapsedUs: number): BandwidthResult {
  return {
    size,
    iters: messages,
    mb_per_s: Math.round(((messages * size) / elapsedUs) * 1000) / 1000, // bytes per µs = MB/s
    msg_rate_mpps: Math.round((messages / elapsedUs) * 1e6) / 1e6,
  };
}

// ---------------------------------------------------------------- the loops

/**
 * The client's ping-pong: post a ping, spin on the receive CQ for the pong,
 * re-post the receive. 1 ping in 16 is signaled; its completion is reaped
 * without waiting once the pong is in.
 */
function latencyClient(link: Link, plan: Plan, progress: Progress | undefined): LatencyResult {
  const { qp, recv, sendSignaled, sendUnsignaled } = link;
  const recvCq = qp.recvCq;
  const sendCq = qp.sendCq;
  const timed = plan.durationMs > 0;
  const capacity = timed ? DURATION_CAPACITY : plan.iters;
  const samples = new Float64Array(capacity);
  let pendingSignaled = 0;
  let measured = 0;
  const total = plan.warmup + capacity;
  const runFor = timed ? plan.durationMs : Number.POSITIVE_INFINITY;
  let deadline = Number.POSITIVE_INFINITY;
  for (let i = 0; i < total; i++) {
    const start = performance.now();
    if ((i & (SIGNAL_EVERY - 1)) === SIGNAL_EVERY - 1) {
      sendSignaled.post();
      pendingSignaled++;
    } else {
      sendUnsignaled.post();
    }
    const got = spinFor(recvCq, 1, 'receive');
    const end = performance.now();
    checkStatuses(recvCq, got, 'receive');
    recv.post();
    // The warm-up runs exactly this code too: V8 deoptimizes a loop the first
    // time it takes a branch it never took, and under emulation re-optimizing
    // takes longer than a whole measured run. Warm-up samples land in slot 0,
    // which the first measured one overwrites.
    samples[measured] = (end - start) * 500; // half the round trip, in µs
    measured += i >= plan.warmup ? 1 : 0;
    progress?.tick(measured);
    deadline = Math.min(deadline, end + (i >= plan.warmup ? runFor : Number.POSITIVE_INFINITY));
    if (end > deadline) break;
    if (pendingSignaled > 0) pendingSignaled = reapSends(sendCq, pendingSignaled);
  }
  waitForSends(link, pendingSignaled);
  return latencyStats(samples, measured, plan.size);
}

/**
 * The client's ping-pong on completion events: the same exchange as
 * latencyClient, but each receive is awaited with `cq.next()`, which sleeps on
 * the CQ's completion channel (the API's default mode), as ib_send_lat -e does.
 */
async function latencyClientOnEvents(link: Link, plan: Plan, progress: Progress | undefined): Promise<LatencyResult> {
  const { qp, recv, sendSignaled, sendUnsignaled } = link;
  const recvCq = qp.recvCq;
  const sendCq = qp.sendCq;
  recvCq.mode = 'events';
  const timed = plan.durationMs > 0;
  const capacity = timed ? DURATION_CAPACITY : plan.iters;
  const samples = new Float64Array(capacity);
  let pendingSignaled = 0;
  let measured = 0;
  const total = plan.warmup + capacity;
  const runFor = timed ? plan.durationMs : Number.POSITIVE_INFINITY;
  let deadline = Number.POSITIVE_INFINITY;
  for (let i = 0; i < total; i++) {
    const start = performance.now();
    const signaled = (i & (SIGNAL_EVERY - 1)) === SIGNAL_EVERY - 1;
    (signaled ? sendSignaled : sendUnsignaled).post();
    pendingSignaled += signaled ? 1 : 0;
    await recvCq.next(); // a failed receive rejects with WorkCompletionError
    const end = performance.now();
    recv.post();
    samples[measured] = (end - start) * 500;
    measured += i >= plan.warmup ? 1 : 0;
    progress?.tick(measured);
    deadline = Math.min(deadline, end + (i >= plan.warmup ? runFor : Number.POSITIVE_INFINITY));
    if (end > deadline) break;
    if (pendingSignaled > 0) pendingSignaled = reapSends(sendCq, pendingSignaled);
  }
  waitForSends(link, pendingSignaled);
  return latencyStats(samples, measured, plan.size);
}

/** The server's side of the ping-pong: answer each ping at once; stop at the zero-byte message. */
function latencyServer(link: Link, plan: Plan): LatencyResult {
  const { qp, recv, sendSignaled, sendUnsignaled } = link;
  const recvCq = qp.recvCq;
  const sendCq = qp.sendCq;
  const capacity = plan.durationMs > 0 ? DURATION_CAPACITY : plan.iters;
  const samples = new Float64Array(capacity + 1); // + the slot warm-up samples overwrite
  let measured = 0;
  let pendingSignaled = 0;
  let last = 0;
  for (let i = 0; ; i++) {
    const got = spinFor(recvCq, 1, 'receive');
    // Answer first: everything before the post is on the round trip's path.
    // A failed receive is still caught right after.
    const stop = recvCq.statusAt(0) === 0 && recvCq.byteLenAt(0) === 0; // the client's stop message
    if (!stop) {
      if ((i & (SIGNAL_EVERY - 1)) === SIGNAL_EVERY - 1) {
        sendSignaled.post();
        pendingSignaled++;
      } else {
        sendUnsignaled.post();
      }
    }
    const now = performance.now();
    checkStatuses(recvCq, got, 'receive');
    if (stop) break;
    recv.post();
    // A round trip as the server sees it: from the previous ping to this one.
    // Same code in the warm-up and after it (see latencyClient); both tests run every time.
    samples[measured] = (now - last) * 500;
    measured += (i > plan.warmup ? 1 : 0) & (measured < capacity ? 1 : 0);
    last = now;
    if (pendingSignaled > 0) pendingSignaled = reapSends(sendCq, pendingSignaled);
  }
  waitForSends(link, pendingSignaled);
  if (measured === 0) throw new BenchError('the client sent no measured iterations');
  return latencyStats(samples, measured, plan.size);
}

/** latencyServer on completion events: each ping is awaited with `cq.next()` (see latencyClientOnEvents). */
async function latencyServerOnEvents(link: Link, plan: Plan): Promise<LatencyResult> {
  const { qp, recv, sendSignaled, sendUnsignaled } = link;
  const recvCq = qp.recvCq;
  const sendCq = qp.sendCq;
  recvCq.mode = 'events';
  const capacity = plan.durationMs > 0 ? DURATION_CAPACITY : plan.iters;
  const samples = new Float64Array(capacity + 1);
  let measured = 0;
  let pendingSignaled = 0;
  let last = 0;
  for (let i = 0; ; i++) {
    const completion = await recvCq.next();
    if (completion.byteLen === 0) break; // the client's stop message
    const signaled = (i & (SIGNAL_EVERY - 1)) === SIGNAL_EVERY - 1;
    (signaled ? sendSignaled : sendUnsignaled).post();
    pendingSignaled += signaled ? 1 : 0;
    const now = performance.now();
    recv.post();
    samples[measured] = (now - last) * 500;
    measured += (i > plan.warmup ? 1 : 0) & (measured < capacity ? 1 : 0);
    last = now;
    if (pendingSignaled > 0) pendingSignaled = reapSends(sendCq, pendingSignaled);
  }
  waitForSends(link, pendingSignaled);
  if (measured === 0) throw new BenchError('the client sent no measured iterations');
  return latencyStats(samples, measured, plan.size);
}

/**
 * The client's stream: keep up to WINDOW sends outstanding, 1 in 16 signaled
 * (and the last one); a signaled completion retires every send before it.
 * Warm-up and measurement are one loop in one call, so the loop V8 optimized
 * during the warm-up is the loop that is measured.
 */
function bandwidthClient(link: Link, plan: Plan, progress: Progress | undefined): BandwidthResult {
  const { qp, sendSignaled, sendUnsignaled } = link;
  const sendCq = qp.sendCq;
  const timed = plan.durationMs > 0;
  // Sequence numbers (+1) of the signaled sends in flight, oldest first: a ring, allocated once per run.
  const ring = new Float64Array(WINDOW / SIGNAL_EVERY + 3);
  let head = 0;
  let tail = 0;
  let posted = 0;
  let completed = 0;
  let total = timed ? Number.MAX_SAFE_INTEGER : plan.warmup + plan.iters;
  const runFor = timed ? plan.durationMs : Number.POSITIVE_INFINITY;
  let startedAt = performance.now();
  let deadline = plan.warmup === 0 ? startedAt + runFor : Number.POSITIVE_INFINITY;
  let since = startedAt;
  let spins = 0;
  while (completed < total) {
    while (posted < total && posted - completed < WINDOW) {
      posted++;
      if (posted % SIGNAL_EVERY === 0 || posted === total || posted === plan.warmup) {
        sendSignaled.post();
        ring[tail] = posted;
        tail = tail + 1 === ring.length ? 0 : tail + 1;
      } else {
        sendUnsignaled.post();
      }
      if (timed && (posted & 255) === 0 && performance.now() > deadline) {
        // Time is up: this send ends the run; it must be signaled.
        if (posted % SIGNAL_EVERY !== 0) {
          sendSignaled.post();
          posted++;
          ring[tail] = posted;
          tail = tail + 1 === ring.length ? 0 : tail + 1;
        }
        total = posted;
      }
    }
    const done = sendCq.poll(16);
    if (done === 0) {
      if ((++spins & 0xffff) === 0) stalled(since, 'send');
      continue;
    }
    since = performance.now();
    checkStatuses(sendCq, done, 'send');
    for (let i = 0; i < done; i++) {
      completed = ring[head]!;
      head = head + 1 === ring.length ? 0 : head + 1;
      // The last warm-up send is signaled: its completion starts the clock.
      // No branch that only the measured phase takes (see latencyClient).
      startedAt = completed === plan.warmup ? since : startedAt;
      deadline = Math.min(deadline, since + (completed >= plan.warmup ? runFor : Number.POSITIVE_INFINITY));
    }
    progress?.tick(Math.max(0, completed - plan.warmup));
  }
  const elapsedUs = (performance.now() - startedAt) * 1000;
  return bandwidthResult(plan.size, completed - plan.warmup, elapsedUs);
}

/** The server's side of the stream: count receives, re-post them in chains; stop at the zero-byte message. */
function bandwidthServer(link: Link, plan: Plan): BandwidthResult {
  const { qp, recvChain } = link;
  const recvCq = qp.recvCq;
  let received = 0;
  let consumed = 0;
  let started = 0;
  let ended = 0;
  const measureFrom = plan.warmup;
  const measureTo = plan.durationMs > 0 ? Number.POSITIVE_INFINITY : plan.warmup + plan.iters;
  let since = performance.now();
  let spins = 0;
  for (;;) {
    const got = recvCq.poll(16);
    if (got === 0) {
      if ((++spins & 0xffff) === 0) stalled(since, 'receive');
      continue;
    }
    since = performance.now();
    let stop = false;
    for (let i = 0; i < got; i++) {
      if (recvCq.statusAt(i) !== 0) checkStatuses(recvCq, got, 'receive');
      if (recvCq.byteLenAt(i) === 0) {
        stop = true;
        break;
      }
      received++;
      if (received === measureFrom) started = since;
      if (received <= measureTo) ended = since;
    }
    if (stop) break;
    consumed += got;
    while (consumed >= RECV_CHAIN) {
      recvChain.post();
      consumed -= RECV_CHAIN;
    }
  }
  const messages = Math.min(received, measureTo) - measureFrom;
  if (messages <= 0 || ended <= started) throw new BenchError('the client sent no measured messages');
  return bandwidthResult(plan.size, messages, (ended - started) * 1000);
}

/**
 * Reaps the completions of signaled sends in a ping-pong and returns how many
 * are still pending; it waits only when the send queue could fill.
 */
function reapSends(sendCq: CompletionQueue, pendingSignaled: number): number {
  const done = pendingSignaled >= 3 ? spinFor(sendCq, 16, 'send') : sendCq.poll(16);
  checkStatuses(sendCq, done, 'send');
  return pendingSignaled - done;
}

/** Waits for the completions of the last `pendingSignaled` signaled sends (a loop's last ones, or the stop message). */
function waitForSends(link: Link, pendingSignaled: number): void {
  const sendCq = link.qp.sendCq;
  while (pendingSignaled > 0) {
    const done = spinFor(sendCq, 16, 'send');
    checkStatuses(sendCq, done, 'send');
    pendingSignaled -= done;
  }
}

// ---------------------------------------------------------------- connection setup

async function connectClient(channel: EventChannel, address: string, port: number, plan: Plan): Promise<Link> {
  const giveUp = performance.now() + 15_000;
  for (;;) {
    const id = createId(channel);
    try {
      await id.resolveAddr({ address, port }, { timeoutMs: 5000 });
      await id.resolveRoute({ timeoutMs: 5000 });
      const link = buildLink(id, plan, false);
      postReceives(link, LAT_RECV_DEPTH);
      const { privateData } = await id.connect({ privateData: encodePlan(plan) }, { timeoutMs: 15_000 });
      const agreed = decodePlan(privateData);
      if (!agreed || agreed.mode !== plan.mode || agreed.size !== plan.size) {
        throw new BenchError('the server did not confirm the test (is it an rdmacm bench of the same version and mode?)');
      }
      return link;
    } catch (error) {
      id.close();
      // No listener yet (the server is still starting): try again for a while.
      const refused = error instanceof ConnectionError &&
        ((error.event === 'REJECTED' && error.rejectReason !== 28 /* the server's own refusal */) || error.event === 'UNREACHABLE');
      if (!refused || performance.now() > giveUp) throw error;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}

async function acceptClient(channel: EventChannel, port: number, mode: Mode): Promise<{ listener: CmId; link: Link; plan: Plan }> {
  const listener = createId(channel);
  try {
    listener.bindAddr({ address: '0.0.0.0', port });
    listener.listen(1);
    for (;;) {
      const id = await listener.nextRequest();
      const plan = decodePlan(id.request?.privateData);
      if (!plan || plan.mode !== mode) {
        id.reject(Buffer.from('rdmacm bench: wrong test'));
        id.close();
        continue;
      }
      const link = buildLink(id, plan, true);
      postReceives(link, plan.mode === 'bw' ? RECV_DEPTH : LAT_RECV_DEPTH);
      await id.accept({ privateData: encodePlan(plan) }, { timeoutMs: 15_000 });
      return { listener, link, plan };
    }
  } catch (error) {
    listener.close();
    throw error;
  }
}

/** Ends the connection: the client hangs up, the server answers. */
async function hangUp(link: Link, client: boolean): Promise<void> {
  try {
    if (client) await link.id.disconnect({ timeoutMs: 5000 });
    else {
      await link.id.waitForDisconnect({ timeoutMs: 10_000 });
      await link.id.disconnect({ timeoutMs: 5000 });
    }
  } catch {
    // The figures are in; a slow goodbye does not fail the run.
  }
}

// ---------------------------------------------------------------- output

function humanLatency(r: LatencyResult, plan: Plan, role: string, inline: boolean, onEvents: boolean): string {
  const cols = ['min', 'p50', 'avg', 'p99', 'p99.9', 'max'];
  const vals = [r.min_us, r.p50_us, r.avg_us, r.p99_us, r.p999_us, r.max_us];
  return `rdmacm bench lat (${role}): ${r.size} B, ${r.iters} iterations after ${plan.warmup} warm-up, RC send/recv${inline ? ', inline' : ''}${onEvents ? ', on completion events' : ''}\n` +
    `  ${cols.map((c) => c.padStart(9)).join('')}   µs, half round trip\n` +
    `  ${vals.map((v) => v.toFixed(2).padStart(9)).join('')}\n`;
}

function humanBandwidth(r: BandwidthResult, plan: Plan, role: string, inline: boolean): string {
  return `rdmacm bench bw (${role}): ${r.size} B × ${r.iters} after ${plan.warmup} warm-up, window ${WINDOW}, 1 in ${SIGNAL_EVERY} signaled${inline ? ', inline' : ''}\n` +
    `  ${'MB/s'.padStart(12)}${'Mpps'.padStart(12)}\n` +
    `  ${r.mb_per_s.toFixed(2).padStart(12)}${r.msg_rate_mpps.toFixed(6).padStart(12)}\n`;
}

// ---------------------------------------------------------------- the command

function positiveInteger(value: string | undefined, name: string, max: number): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n < 1 || n > max) throw new BenchError(`${name} must be an integer from 1 to ${max} (got '${value}')`);
  return n;
}

/** Runs `rdmacm bench`; resolves to the exit code. */
export async function runBench(argv: string[]): Promise<number> {
  const fail = (message: string) => usageError('bench', usage, message);
  const parsed = parseCommandArgs('bench', usage, argv, {
    size: { type: 'string', short: 's' },
    iters: { type: 'string', short: 'n' },
    warmup: { type: 'string', short: 'w' },
    duration: { type: 'string', short: 'D' },
    port: { type: 'string', short: 'p' },
    events: { type: 'boolean', short: 'e' },
    json: { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  }, true);
  if (typeof parsed === 'number') return parsed;
  const { values, positionals } = parsed;
  const [modeArg, address, ...extra] = positionals;
  if (modeArg !== 'lat' && modeArg !== 'bw') return fail(modeArg === undefined ? 'say lat or bw' : `unknown test '${modeArg}' (lat or bw)`);
  if (extra.length > 0) return fail(`unexpected argument '${extra[0]}'`);
  const mode: Mode = modeArg;
  const onEvents = values.events === true;
  if (onEvents && mode !== 'lat') return fail('--events is for lat');
  let size: number, iters: number, warmup: number, durationMs: number, port: number;
  try {
    size = positiveInteger(values.size, '--size', 0x7fffffff) ?? (mode === 'lat' ? 2 : 65536);
    iters = positiveInteger(values.iters, '--iters', 100_000_000) ?? (mode === 'lat' && !onEvents ? 10_000 : 1000);
    // A wake-up costs far more than V8's optimizing does: fewer round trips suffice.
    warmup = positiveInteger(values.warmup, '--warmup', 100_000_000) ?? (onEvents ? EVENTS_WARMUP : warmupFor(mode, size));
    durationMs = (positiveInteger(values.duration, '--duration', 3600) ?? 0) * 1000;
    port = positiveInteger(values.port, '--port', 65535) ?? DEFAULT_PORT;
  } catch (error) {
    return fail((error as Error).message);
  }
  if (address !== undefined && !/^[\d.]+$|:/.test(address)) return fail(`SERVER_ADDR must be an IP address (got '${address}')`);

  let deviceCount: number;
  try {
    deviceCount = listDevices().length;
  } catch (error) {
    process.stderr.write(`rdmacm bench: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
  if (deviceCount === 0) {
    process.stderr.write(noDeviceHint);
    return 2;
  }

  const json = values.json === true;
  const showProgress = !json && process.stderr.isTTY === true;
  const channel = new EventChannel();
  let listener: CmId | undefined;
  let link: Link | undefined;
  try {
    let plan: Plan;
    let result: LatencyResult | BandwidthResult;
    if (address !== undefined) {
      plan = { mode, size, iters, warmup, durationMs };
      link = await connectClient(channel, address, port, plan);
      // A -D run has no known iteration count: no progress line.
      const progress = showProgress && durationMs === 0 ? new Progress(true, `bench ${mode} ${size} B`, iters) : undefined;
      result = mode === 'bw' ? bandwidthClient(link, plan, progress)
        : onEvents ? await latencyClientOnEvents(link, plan, progress) : latencyClient(link, plan, progress);
      progress?.done();
      link.stop.post();
      waitForSends(link, 1);
    } else {
      if (!json) process.stderr.write(`rdmacm bench ${mode}: waiting for a client on port ${port}\n`);
      ({ listener, link, plan } = await acceptClient(channel, port, mode));
      result = plan.mode === 'bw' ? bandwidthServer(link, plan)
        : onEvents ? await latencyServerOnEvents(link, plan) : latencyServer(link, plan);
    }
    await hangUp(link, address !== undefined);
    const role = address !== undefined ? 'client' : 'server';
    if (json) process.stdout.write(JSON.stringify(result) + '\n');
    else if (plan.mode === 'lat') process.stdout.write(humanLatency(result as LatencyResult, plan, role, link.inline, onEvents));
    else process.stdout.write(humanBandwidth(result as BandwidthResult, plan, role, link.inline));
    return 0;
  } catch (error) {
    process.stderr.write(`rdmacm bench: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  } finally {
    link?.id.close();
    listener?.close();
    channel.close();
  }
}
