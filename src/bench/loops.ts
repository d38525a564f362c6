// What `rdmacm bench` runs on a connection: its resources (a Link), the
// measured loops, synchronous busy-polls over prepared work requests and
// cq.poll() that allocate nothing per iteration (on the event loop, awaits of
// cq.next() or a completion listener), and the figures they report. A benchmark, not a command: the
// CLI's bench.ts imports it, and it imports only the safe API (src/bench sits
// between the entry points and src/cli in the layering).
import { performance } from 'node:perf_hooks';
import { writeSync } from 'node:fs';
import type { CmId } from '../api/cm/cm-id.js';
import type { CompletionMode, CompletionQueue } from '../api/work/completion-queue.js';
import { MemoryRegion } from '../api/verbs/memory-region.js';
import type { QueuePair } from '../api/verbs/queue-pair.js';
import type { PreparedRecv, PreparedRecvChain, PreparedSend } from '../api/work/work-request.js';

export const WINDOW = 128; // bw: sends outstanding (perftest's TX depth)
export const SIGNAL_EVERY = 16; // lat: 1 send in 16 is signaled
// bw: 1 send in 100 is signaled, as perftest's CQ moderation (its default for
// a TX depth of 128): a signaled send is a completion to reap.
export const BW_SIGNAL_EVERY = 100;
// Receives kept posted by a bw server (bench/guest.sh gives ib_send_bw the
// same -r). Deeper than perftest's default 512: a receiver that falls a few
// hundred messages behind gets RNR NAKs, and rdma_cm's QPs back off 655 ms on each.
export const RECV_DEPTH = 2048;
const RECV_CHAIN = 16; // receives re-posted together
// Receives posted before a ping-pong: its loops refill them a chain at a time,
// so at least one chain's worth stays posted.
export const LAT_RECV_DEPTH = 2 * RECV_CHAIN;
/** Sends up to this size go inline unless --inline says otherwise (perftest's -I on NICs that take it). */
export const DEFAULT_MAX_INLINE = 236;
const STALL_MS = 15_000; // a loop with no completion for this long gives up
const DURATION_CAPACITY = 2_000_000; // latency samples kept in a -D run

export type Mode = 'lat' | 'bw';

/** What both sides agree on; the client sends it in the connect private data. */
export interface Plan {
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

export class BenchError extends Error {}

/** A percentage line on stderr while a loop runs (TTY only). */
export class Progress {
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
export interface Link {
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

/**
 * Creates the QP (inline when the message fits in `maxInline` bytes and the
 * device takes it), registers the buffers and prepares the work requests.
 */
export function buildLink(id: CmId, plan: Plan, server: boolean, maxInline: number): Link {
  const recvWr = plan.mode === 'bw' && server ? RECV_DEPTH : LAT_RECV_DEPTH;
  const sendWr = plan.mode === 'bw' ? WINDOW + 2 : 4 * SIGNAL_EVERY + 2;
  let qp: QueuePair;
  let inline = false;
  if (maxInline > 0 && plan.size <= maxInline) {
    try {
      qp = id.createQp({ sendWr, recvWr, inlineData: maxInline });
      inline = qp.caps.maxInlineData >= plan.size;
    } catch {
      qp = id.createQp({ sendWr, recvWr });
    }
  } else {
    qp = id.createQp({ sendWr, recvWr });
  }
  // Page-aligned, as perftest allocates its own. A small Buffer.alloc lands
  // among malloc's other small blocks; in the guest, p50 at 2 B read 0.59 µs
  // lower page-aligned (docs/performance-notes.md, "The bench's settings").
  const recvRegion = id.regMsgs(MemoryRegion.pageAligned(plan.size));
  const sendRegion = id.regMsgs(MemoryRegion.pageAligned(plan.size).fill(0x5a));
  const recv = qp.prepareRecv(recvRegion);
  const recvChain = qp.prepareRecvChain(recvRegion, { count: RECV_CHAIN, stride: 0, length: plan.size });
  const source = inline ? sendRegion.buffer : sendRegion;
  const sendSignaled = qp.prepareSend(source, { inline, signaled: true });
  const sendUnsignaled = qp.prepareSend(source, { inline, signaled: false });
  const stop = qp.prepareSend(source, { inline, signaled: true, length: 0 });
  return { id, qp, recvRegion, sendRegion, recv, recvChain, sendSignaled, sendUnsignaled, stop, inline };
}

/** Posts `count` receives (a multiple of RECV_CHAIN, or fewer than one chain) of the same buffer. */
export function postReceives(link: Link, count: number): void {
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

// ---------------------------------------------------------------- the ping-pong

// The ping-pong loops below repeat each other on purpose: with the sends and the
// samples in shared helper classes, p99.9 doubled in the guest
// (docs/performance-notes.md, "The four ping-pong loops").

/**
 * The client's ping-pong: post a ping, spin on the receive CQ for the pong,
 * re-post the receive. 1 ping in 16 is signaled; its completion is reaped
 * without waiting once the pong is in.
 */
export function latencyClient(link: Link, plan: Plan, progress: Progress | undefined): LatencyResult {
  const { qp, recvChain, sendSignaled, sendUnsignaled } = link;
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
    if ((i & (RECV_CHAIN - 1)) === RECV_CHAIN - 1) recvChain.post(); // see latencyServer
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
 * The client's ping-pong on the event loop: the same exchange as
 * latencyClient, but each receive is awaited with `cq.next()` in `wait` mode:
 * 'events' sleeps on the CQ's completion channel, as ib_send_lat -e does;
 * 'adaptive' (the API's default) polls a while first; 'busy-poll' never sleeps.
 * `onMeasured` learns when the measured round trips began (performance.now()).
 */
export async function latencyClientOnEvents(
  link: Link, plan: Plan, progress: Progress | undefined, wait: CompletionMode = 'events', onMeasured?: (from: number) => void,
): Promise<LatencyResult> {
  const { qp, recv, sendSignaled, sendUnsignaled } = link;
  const recvCq = qp.recvCq;
  const sendCq = qp.sendCq;
  recvCq.mode = wait;
  const timed = plan.durationMs > 0;
  const capacity = timed ? DURATION_CAPACITY : plan.iters;
  const samples = new Float64Array(capacity);
  let pendingSignaled = 0;
  let measured = 0;
  const total = plan.warmup + capacity;
  const runFor = timed ? plan.durationMs : Number.POSITIVE_INFINITY;
  let deadline = Number.POSITIVE_INFINITY;
  let measuredFrom = Number.POSITIVE_INFINITY;
  for (let i = 0; i < total; i++) {
    const start = performance.now();
    measuredFrom = i === plan.warmup ? start : measuredFrom; // no branch the warm-up skips (see latencyClient)
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
  onMeasured?.(measuredFrom);
  return latencyStats(samples, measured, plan.size);
}

/** The server's side of the ping-pong: answer each ping at once; stop at the zero-byte message. */
export function latencyServer(link: Link, plan: Plan): LatencyResult {
  const { qp, recvChain, sendSignaled, sendUnsignaled } = link;
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
    // Receives go back a chain at a time: one crossing per 16 round trips. In
    // the soft-RoCE guest a round trip read 24.4–25.8 µs so, against 26.1–26.9
    // with a post per round trip (docs/performance-notes.md).
    if ((i & (RECV_CHAIN - 1)) === RECV_CHAIN - 1) recvChain.post();
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

/** latencyServer on the event loop: each ping is awaited with `cq.next()` in `wait` mode (see latencyClientOnEvents). */
export async function latencyServerOnEvents(link: Link, plan: Plan, wait: CompletionMode = 'events'): Promise<LatencyResult> {
  const { qp, recv, sendSignaled, sendUnsignaled } = link;
  const recvCq = qp.recvCq;
  const sendCq = qp.sendCq;
  recvCq.mode = wait;
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
 * The client's ping-pong on the event loop with a CompletionListener instead
 * of next(): the receive queue calls back when the pong may be in, in `wait`
 * mode, and the callback reads it with poll() and the *At accessors, as the
 * busy loop does: no promise and no completion object per round trip (the
 * socket layer's way). Receives go back a chain at a time, as in latencyClient.
 */
export function latencyClientOnListener(
  link: Link, plan: Plan, progress: Progress | undefined, wait: CompletionMode, onMeasured?: (from: number) => void,
): Promise<LatencyResult> {
  const { qp, recvChain, sendSignaled, sendUnsignaled } = link;
  const recvCq = qp.recvCq;
  const sendCq = qp.sendCq;
  recvCq.mode = wait;
  const timed = plan.durationMs > 0;
  const capacity = timed ? DURATION_CAPACITY : plan.iters;
  const samples = new Float64Array(capacity);
  let pendingSignaled = 0;
  let measured = 0;
  const total = plan.warmup + capacity;
  const runFor = timed ? plan.durationMs : Number.POSITIVE_INFINITY;
  let deadline = Number.POSITIVE_INFINITY;
  let measuredFrom = Number.POSITIVE_INFINITY;
  let i = 0;
  let start = 0;
  const ping = (): void => {
    start = performance.now();
    measuredFrom = i === plan.warmup ? start : measuredFrom;
    const signaled = (i & (SIGNAL_EVERY - 1)) === SIGNAL_EVERY - 1;
    (signaled ? sendSignaled : sendUnsignaled).post();
    pendingSignaled += signaled ? 1 : 0;
  };
  return new Promise<LatencyResult>((resolve, reject) => {
    const finish = (): void => {
      recvCq.setListener(undefined);
      waitForSends(link, pendingSignaled);
      onMeasured?.(measuredFrom);
      resolve(latencyStats(samples, measured, plan.size));
    };
    ping();
    recvCq.setListener({
      onCompletions(): number {
        const got = recvCq.poll(1);
        if (got === 0) return 0;
        const end = performance.now();
        checkStatuses(recvCq, got, 'receive');
        if ((i & (RECV_CHAIN - 1)) === RECV_CHAIN - 1) recvChain.post();
        samples[measured] = (end - start) * 500;
        measured += i >= plan.warmup ? 1 : 0;
        progress?.tick(measured);
        deadline = Math.min(deadline, end + (i >= plan.warmup ? runFor : Number.POSITIVE_INFINITY));
        if (pendingSignaled > 0) pendingSignaled = reapSends(sendCq, pendingSignaled);
        if (++i === total || end > deadline) finish();
        else ping();
        return got;
      },
      onCompletionError: reject,
    });
  });
}

/** latencyServer with a CompletionListener on the event loop (see latencyClientOnListener). */
export function latencyServerOnListener(link: Link, plan: Plan, wait: CompletionMode): Promise<LatencyResult> {
  const { qp, recvChain, sendSignaled, sendUnsignaled } = link;
  const recvCq = qp.recvCq;
  const sendCq = qp.sendCq;
  recvCq.mode = wait;
  const capacity = plan.durationMs > 0 ? DURATION_CAPACITY : plan.iters;
  const samples = new Float64Array(capacity + 1);
  let measured = 0;
  let pendingSignaled = 0;
  let last = 0;
  let i = 0;
  return new Promise<LatencyResult>((resolve, reject) => {
    recvCq.setListener({
      onCompletions(): number {
        const got = recvCq.poll(1);
        if (got === 0) return 0;
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
        if (stop) {
          recvCq.setListener(undefined);
          waitForSends(link, pendingSignaled);
          if (measured === 0) reject(new BenchError('the client sent no measured iterations'));
          else resolve(latencyStats(samples, measured, plan.size));
          return got;
        }
        if ((i & (RECV_CHAIN - 1)) === RECV_CHAIN - 1) recvChain.post();
        samples[measured] = (now - last) * 500;
        measured += (i > plan.warmup ? 1 : 0) & (measured < capacity ? 1 : 0);
        last = now;
        if (pendingSignaled > 0) pendingSignaled = reapSends(sendCq, pendingSignaled);
        i++;
        return got;
      },
      onCompletionError: reject,
    });
  });
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

// ---------------------------------------------------------------- the stream

/**
 * Room for the sequence numbers of the signaled sends a window can hold: one
 * per BW_SIGNAL_EVERY, plus the warm-up's last send, the run's last and a
 * timed run's closing one.
 */
const SIGNALED_IN_FLIGHT = Math.ceil(WINDOW / BW_SIGNAL_EVERY) + 3;

/** Whether send number `posted` (from 1) is signaled: every BW_SIGNAL_EVERY-th, the run's last and the warm-up's last (its completion starts the clock). */
function signals(posted: number, total: number, warmup: number): boolean {
  return posted % BW_SIGNAL_EVERY === 0 || posted === total || posted === warmup;
}

/**
 * The client's stream: keep up to WINDOW sends outstanding, 1 in BW_SIGNAL_EVERY signaled
 * (and the last one); a signaled completion retires every send before it.
 * Warm-up and measurement are one loop in one call, so the loop V8 optimized
 * during the warm-up is the loop that is measured.
 */
export function bandwidthClient(link: Link, plan: Plan, progress: Progress | undefined): BandwidthResult {
  const { qp, sendSignaled, sendUnsignaled } = link;
  const sendCq = qp.sendCq;
  const timed = plan.durationMs > 0;
  // Sequence numbers (+1) of the signaled sends in flight, oldest first: a ring, allocated once per run.
  const ring = new Float64Array(SIGNALED_IN_FLIGHT);
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
      if (signals(posted, total, plan.warmup)) {
        sendSignaled.post();
        ring[tail] = posted;
        tail = tail + 1 === ring.length ? 0 : tail + 1;
      } else {
        sendUnsignaled.post();
      }
      if (timed && (posted & 255) === 0 && performance.now() > deadline) {
        // Time is up: this send ends the run; it must be signaled.
        if (posted % BW_SIGNAL_EVERY !== 0) {
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
export function bandwidthServer(link: Link, plan: Plan): BandwidthResult {
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
 * bandwidthClient on the event loop: the same stream, but when the send queue
 * has nothing to reap the client awaits `sendCq.next()` in `wait` mode (one
 * promise per wake-up, not per completion) and then drains with poll().
 */
export async function bandwidthClientOnEvents(link: Link, plan: Plan, progress: Progress | undefined, wait: CompletionMode): Promise<BandwidthResult> {
  const { qp, sendSignaled, sendUnsignaled } = link;
  const sendCq = qp.sendCq;
  sendCq.mode = wait;
  const ring = new Float64Array(SIGNALED_IN_FLIGHT);
  let head = 0;
  let tail = 0;
  let posted = 0;
  let completed = 0;
  const total = plan.warmup + plan.iters;
  let startedAt = performance.now();
  const retire = (now: number): void => {
    completed = ring[head]!;
    head = head + 1 === ring.length ? 0 : head + 1;
    startedAt = completed === plan.warmup ? now : startedAt;
  };
  while (completed < total) {
    while (posted < total && posted - completed < WINDOW) {
      posted++;
      if (signals(posted, total, plan.warmup)) {
        sendSignaled.post();
        ring[tail] = posted;
        tail = tail + 1 === ring.length ? 0 : tail + 1;
      } else {
        sendUnsignaled.post();
      }
    }
    const done = sendCq.poll(16);
    if (done === 0) {
      await sendCq.next(); // a failed send rejects with WorkCompletionError
      retire(performance.now());
      continue;
    }
    checkStatuses(sendCq, done, 'send');
    const now = performance.now();
    for (let i = 0; i < done; i++) retire(now);
    progress?.tick(Math.max(0, completed - plan.warmup));
  }
  return bandwidthResult(plan.size, completed - plan.warmup, (performance.now() - startedAt) * 1000);
}

/** bandwidthServer on the event loop: an empty receive queue is awaited with `recvCq.next()` in `wait` mode, then drained with poll(). */
export async function bandwidthServerOnEvents(link: Link, plan: Plan, wait: CompletionMode): Promise<BandwidthResult> {
  const { qp, recvChain } = link;
  const recvCq = qp.recvCq;
  recvCq.mode = wait;
  let received = 0;
  let consumed = 0;
  let started = 0;
  let ended = 0;
  const measureFrom = plan.warmup;
  const measureTo = plan.durationMs > 0 ? Number.POSITIVE_INFINITY : plan.warmup + plan.iters;
  /** One receive: false for the client's zero-byte stop message. */
  const count = (byteLen: number, now: number): boolean => {
    if (byteLen === 0) return false;
    received++;
    if (received === measureFrom) started = now;
    if (received <= measureTo) ended = now;
    return true;
  };
  for (;;) {
    let got = recvCq.poll(16);
    let stop = false;
    if (got === 0) {
      const completion = await recvCq.next();
      got = 1;
      stop = !count(completion.byteLen, performance.now());
    } else {
      const now = performance.now();
      for (let i = 0; i < got && !stop; i++) {
        if (recvCq.statusAt(i) !== 0) checkStatuses(recvCq, got, 'receive');
        stop = !count(recvCq.byteLenAt(i), now);
      }
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

/** Waits for the completions of the last `pendingSignaled` signaled sends (a loop's last ones, or the stop message). */
export function waitForSends(link: Link, pendingSignaled: number): void {
  const sendCq = link.qp.sendCq;
  while (pendingSignaled > 0) {
    const done = spinFor(sendCq, 16, 'send');
    checkStatuses(sendCq, done, 'send');
    pendingSignaled -= done;
  }
}

