// `rdmacm bench lat|bw`: RC send/recv latency (ping-pong) and bandwidth
// (streamed sends with a window), like perftest's ib_send_lat / ib_send_bw.
// This file is the command: its options, the connection setup (the
// asynchronous API on the event loop) and the output. The measured loops are
// a benchmark, not a command: src/bench/loops.ts (which imports nothing of the CLI).
import { Buffer } from 'node:buffer';
import { performance } from 'node:perf_hooks';
import process from 'node:process';
import { integerOption, parseCommandArgs, spinOptionGiven, usageError } from './arguments.js';
import { runBenchStream } from './bench-stream.js';
import { noDeviceExit } from './device-check.js';
import { createId, type CmId } from '../api/cm/cm-id.js';
import { ConnectionError } from '../api/cm/cm-event.js';
import { EventChannel } from '../api/cm/event-channel.js';
import { COMPLETION_MODES, MAX_SPIN_BUDGET_US, type CompletionMode } from '../api/work/completion-queue.js';
import { TimerProbe, timerLine, type TimerLateness } from '../bench/timer-probe.js';
import {
  BenchError, LAT_RECV_DEPTH, Progress, RECV_DEPTH, BW_SIGNAL_EVERY, WINDOW,
  DEFAULT_MAX_INLINE, bandwidthClient, bandwidthClientOnEvents, bandwidthServer, bandwidthServerOnEvents, buildLink, latencyClient, latencyClientOnEvents, latencyClientOnListener, latencyServer, latencyServerOnEvents, latencyServerOnListener,
  postReceives, waitForSends,
  type BandwidthResult, type LatencyResult, type Link, type Mode, type Plan,
} from '../bench/loops.js';

const usage = `Usage: rdmacm bench lat|bw [-s SIZE] [-n ITERS] [-w ITERS] [-D SECONDS] [-p PORT] [-I BYTES] [-e | --wait MODE] [--spin US] [--max-spin US] [--listener] [--timer] [--json] [SERVER_ADDR]
       rdmacm bench stream [options] SERVER_ADDR | -l [BIND_ADDR]   (rdmacm bench stream --help)

Measures RC send/recv between two rdmacm bench processes, as perftest's
ib_send_lat and ib_send_bw do. Without SERVER_ADDR it serves one client and
exits; with it, it is the client. The client's size, iterations and duration
travel in the connection's private data, so both sides run the same test.

  lat   ping-pong; reports half the round trip in µs: min, p50, avg, p99, p99.9, max
  bw    the client streams SIZE-byte sends (window ${WINDOW}, 1 in ${BW_SIGNAL_EVERY} signaled);
        reports MB/s (1e6 bytes/s) and million messages per second
  stream  rstream's ping-pong and throughput runs over rdmacm/net sockets, against
        another rdmacm bench stream or rstream itself (rdmacm bench stream --help)

Options:
  -s, --size SIZE        message size in bytes (default 2 for lat, 65536 for bw)
  -n, --iters ITERS      measured iterations (default 10000 for lat, 1000 for bw),
                         after warm-up iterations that are not measured
  -w, --warmup ITERS     warm-up iterations before measuring, to let V8 optimize the
                         loop (default 20000 for lat; for bw 20000 messages, or
                         64 MiB when that is fewer, and at least 256)
  -D, --duration SECONDS measure for this long instead of ITERS iterations
  -p, --port PORT        the rdma_cm port (default 7480)
  -I, --inline BYTES     send messages of up to BYTES inline, copied into the work
                         request (default ${DEFAULT_MAX_INLINE}); 0 sends from registered memory.
                         Each side chooses for itself, as with perftest's -I
  -e, --events           lat: await each receive with cq.next() on completion events
                         (the CQ's channel, watched by libuv) instead of busy-polling,
                         as ib_send_lat -e does; each side chooses for itself.
                         Defaults: 1000 iterations after 10000 warm-up (V8 goes on
                         compiling the loop for thousands of round trips)
      --wait MODE        lat: await each receive with cq.next() in MODE: events (as
                         -e), adaptive (the API's default: poll 50 µs after a
                         completion, or the longer budget it learns, then sleep) or
                         busy-poll; same defaults as -e.
                         bw: each side awaits cq.next() in MODE when its queue is
                         empty, then drains it with poll(); each side chooses
      --spin US          with --wait adaptive: poll for US µs after a completion before
                         sleeping (the queue's spinBudgetUs; default 50, 0 to 1000000).
                         A budget longer than a round trip never sleeps in a ping-pong
      --max-spin US      with --wait adaptive: the longest budget it learns (the
                         queue's maxSpinBudgetUs; default 5000; at or under --spin: fixed)
      --listener         lat with -e or --wait: take each receive with a completion
                         listener (cq.setListener: poll() and the *At accessors when
                         the queue calls back, as rdmacm/net does) instead of
                         cq.next(): no promise and no completion object per receive
      --timer            lat with -e or --wait: run a 1 ms interval timer beside the
                         ping-pong and report how late its ticks fire (ms) over the
                         measured round trips, and apart over the warm-up: how much
                         of the event loop the completion loop leaves to others
      --json             print one JSON object: {size, iters, min_us, p50_us, avg_us,
                         p99_us, p999_us, max_us} (lat; with --timer also timer_ticks,
                         timer_p50_ms, timer_p99_ms, timer_max_ms, timer_late_ticks,
                         timer_late_sum_ms, timer_late_queued_ms, timer_late_on_cpu_ms,
                         timer_warmup_ticks, timer_warmup_p99_ms, timer_warmup_max_ms)
                         or {size, iters, mb_per_s, msg_rate_mpps} (bw); with --wait
                         adaptive also spin_budget_us, the budget it learned by the end
  -h, --help             show this help

The server listens on every address; both sides print their own figures.
Exits 0 on success, 1 on a bad option or a failed run, 2 when there is no RDMA device.
`;

const MAGIC = 0x4e424452; // "RDBN"
const VERSION = 1;
const DEFAULT_PORT = 7480;
const WARMUP_BYTES = 64 * 1024 * 1024; // bw warm-up with large messages
// lat on events: round trips before measuring. V8 compiles the loop's functions for thousands of
// them (TurboFan until ~8000 on Node 20, ~6000 on Node 26: performance-notes.md), each compile a stall.
const EVENTS_WARMUP = 10_000;

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

// ---------------------------------------------------------------- connection setup

async function connectClient(channel: EventChannel, address: string, port: number, plan: Plan, maxInline: number): Promise<Link> {
  const giveUp = performance.now() + 15_000;
  for (;;) {
    const id = createId(channel);
    try {
      await id.resolveAddr({ address, port }, { timeoutMs: 5000 });
      await id.resolveRoute({ timeoutMs: 5000 });
      const link = buildLink(id, plan, false, maxInline);
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

async function acceptClient(channel: EventChannel, port: number, mode: Mode, maxInline: number): Promise<{ listener: CmId; link: Link; plan: Plan }> {
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
      const link = buildLink(id, plan, true, maxInline);
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

/** --spin and --max-spin: adaptive mode's budget on the link's queues (one CQ or two). */
function setSpinBudget(link: Link, spin: SpinOptions): void {
  for (const cq of new Set([link.qp.recvCq, link.qp.sendCq])) {
    if (spin.spinUs !== undefined) cq.spinBudgetUs = spin.spinUs;
    if (spin.maxSpinUs !== undefined) cq.maxSpinBudgetUs = spin.maxSpinUs;
  }
}

interface SpinOptions {
  readonly spinUs: number | undefined;
  readonly maxSpinUs: number | undefined;
}

/** ", spin 50 µs, max spin 5000 µs" for the options given. */
function spinWords({ spinUs, maxSpinUs }: SpinOptions): string {
  return `${spinUs !== undefined ? `, spin ${spinUs} µs` : ''}${maxSpinUs !== undefined ? `, max spin ${maxSpinUs} µs` : ''}`;
}

function humanLatency(r: LatencyResult & Partial<TimerLateness>, plan: Plan, role: string, inline: boolean, wait: CompletionMode | undefined, spin: SpinOptions, onListener: boolean): string {
  const cols = ['min', 'p50', 'avg', 'p99', 'p99.9', 'max'];
  const vals = [r.min_us, r.p50_us, r.avg_us, r.p99_us, r.p999_us, r.max_us];
  const timer = r.timer_ticks === undefined ? '' : timerLine(r as TimerLateness);
  return `rdmacm bench lat (${role}): ${r.size} B, ${r.iters} iterations after ${plan.warmup} warm-up, RC send/recv${inline ? ', inline' : ''}${wait ? `, on the event loop (${wait}${spinWords(spin)}${onListener ? ', listener' : ''})` : ''}\n` +
    `  ${cols.map((c) => c.padStart(9)).join('')}   µs, half round trip\n` +
    `  ${vals.map((v) => v.toFixed(2).padStart(9)).join('')}\n` + timer;
}

function humanBandwidth(r: BandwidthResult, plan: Plan, role: string, inline: boolean): string {
  return `rdmacm bench bw (${role}): ${r.size} B × ${r.iters} after ${plan.warmup} warm-up, window ${WINDOW}, 1 in ${BW_SIGNAL_EVERY} signaled${inline ? ', inline' : ''}\n` +
    `  ${'MB/s'.padStart(12)}${'Mpps'.padStart(12)}\n` +
    `  ${r.mb_per_s.toFixed(2).padStart(12)}${r.msg_rate_mpps.toFixed(6).padStart(12)}\n`;
}

// ---------------------------------------------------------------- the command

/** Runs `rdmacm bench`; resolves to the exit code. */
export async function runBench(argv: string[]): Promise<number> {
  if (argv[0] === 'stream') return runBenchStream(argv.slice(1));
  const fail = (message: string) => usageError('bench', usage, message);
  const parsed = parseCommandArgs('bench', usage, argv, {
    size: { type: 'string', short: 's' },
    iters: { type: 'string', short: 'n' },
    warmup: { type: 'string', short: 'w' },
    duration: { type: 'string', short: 'D' },
    port: { type: 'string', short: 'p' },
    inline: { type: 'string', short: 'I' },
    events: { type: 'boolean', short: 'e' },
    wait: { type: 'string' },
    spin: { type: 'string' },
    'max-spin': { type: 'string' },
    listener: { type: 'boolean' },
    timer: { type: 'boolean' },
    json: { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  }, true);
  if (typeof parsed === 'number') return parsed;
  const { values, positionals } = parsed;
  const [modeArg, address, ...extra] = positionals;
  if (modeArg === 'stream') return fail('options of bench stream go after the word stream: rdmacm bench stream [options]');
  if (modeArg !== 'lat' && modeArg !== 'bw') return fail(modeArg === undefined ? 'say lat, bw or stream' : `unknown test '${modeArg}' (lat, bw or stream)`);
  if (extra.length > 0) return fail(`unexpected argument '${extra[0]}'`);
  const mode: Mode = modeArg;
  if (values.events === true && values.wait !== undefined) return fail('-e is --wait events: give one of them');
  if (values.wait !== undefined && !COMPLETION_MODES.includes(values.wait as CompletionMode)) {
    return fail(`--wait takes ${COMPLETION_MODES.join(', ')} (got '${values.wait}')`);
  }
  const wait = values.events === true ? 'events' : (values.wait as CompletionMode | undefined);
  const onEvents = wait !== undefined;
  if (values.events === true && mode !== 'lat') return fail('-e is for lat (bw takes --wait)');
  if (onEvents && mode === 'bw' && values.duration !== undefined) return fail('bw with --wait counts messages: give -n, not -D');
  if (values.timer === true && !onEvents) return fail('--timer needs the event loop: give -e or --wait');
  const onListener = values.listener === true;
  if (onListener && (mode !== 'lat' || !onEvents)) return fail('--listener is for lat on the event loop: give -e or --wait');
  const spinOption = spinOptionGiven(values);
  if (spinOption && wait !== 'adaptive') return fail(`${spinOption} is adaptive mode's budget: give --wait adaptive`);
  let size: number, iters: number, warmup: number, durationMs: number, port: number, maxInline: number, spin: SpinOptions;
  try {
    size = integerOption(values.size, '--size', 0x7fffffff) ?? (mode === 'lat' ? 2 : 65536);
    iters = integerOption(values.iters, '--iters', 100_000_000) ?? (mode === 'lat' && !onEvents ? 10_000 : 1000);
    warmup = integerOption(values.warmup, '--warmup', 100_000_000) ?? (onEvents && mode === 'lat' ? EVENTS_WARMUP : warmupFor(mode, size));
    durationMs = (integerOption(values.duration, '--duration', 3600) ?? 0) * 1000;
    port = integerOption(values.port, '--port', 65535) ?? DEFAULT_PORT;
    maxInline = integerOption(values.inline, '--inline', 65536, 0) ?? DEFAULT_MAX_INLINE;
    spin = {
      spinUs: integerOption(values.spin, '--spin', MAX_SPIN_BUDGET_US, 0),
      maxSpinUs: integerOption(values['max-spin'], '--max-spin', MAX_SPIN_BUDGET_US, 0),
    };
  } catch (error) {
    return fail((error as Error).message);
  }
  if (address !== undefined && !/^[\d.]+$|:/.test(address)) return fail(`SERVER_ADDR must be an IP address (got '${address}')`);

  const noDevice = noDeviceExit('bench');
  if (noDevice !== undefined) return noDevice;

  const json = values.json === true;
  const showProgress = !json && process.stderr.isTTY === true;
  const channel = new EventChannel();
  let listener: CmId | undefined;
  let link: Link | undefined;
  try {
    let plan: Plan;
    let result: (LatencyResult | BandwidthResult) & { spin_budget_us?: number };
    if (address !== undefined) {
      plan = { mode, size, iters, warmup, durationMs };
      link = await connectClient(channel, address, port, plan, maxInline);
      setSpinBudget(link, spin);
      // A -D run has no known iteration count: no progress line.
      const progress = showProgress && durationMs === 0 ? new Progress(true, `bench ${mode} ${size} B`, iters) : undefined;
      const probe = values.timer === true ? new TimerProbe() : undefined;
      probe?.start();
      result = mode === 'bw' ? (wait ? await bandwidthClientOnEvents(link, plan, progress, wait) : bandwidthClient(link, plan, progress))
        : onListener ? await latencyClientOnListener(link, plan, progress, wait!, (from) => probe?.measuredFrom(from))
        : onEvents ? await latencyClientOnEvents(link, plan, progress, wait, (from) => probe?.measuredFrom(from)) : latencyClient(link, plan, progress);
      if (probe) result = { ...result, ...probe.stop() } as LatencyResult & TimerLateness;
      progress?.done();
      link.stop.post();
      waitForSends(link, 1);
    } else {
      if (!json) process.stderr.write(`rdmacm bench ${mode}: waiting for a client on port ${port}\n`);
      ({ listener, link, plan } = await acceptClient(channel, port, mode, maxInline));
      setSpinBudget(link, spin);
      result = plan.mode === 'bw' ? (wait ? await bandwidthServerOnEvents(link, plan, wait) : bandwidthServer(link, plan))
        : onListener ? await latencyServerOnListener(link, plan, wait!)
        : onEvents ? await latencyServerOnEvents(link, plan, wait) : latencyServer(link, plan);
    }
    // What adaptive mode learned, on the queue this side waited on (a bw client waits for its sends).
    if (wait === 'adaptive') {
      const waitedOn = plan.mode === 'bw' && address !== undefined ? link.qp.sendCq : link.qp.recvCq;
      result = { ...result, spin_budget_us: Math.round(waitedOn.learnedSpinBudgetUs) };
    }
    await hangUp(link, address !== undefined);
    const role = address !== undefined ? 'client' : 'server';
    if (json) process.stdout.write(JSON.stringify(result) + '\n');
    else if (plan.mode === 'lat') process.stdout.write(humanLatency(result as LatencyResult, plan, role, link.inline, wait, spin, onListener));
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
