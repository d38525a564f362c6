// A 1 ms interval timer that records how late each tick fires: how much of the
// event loop a completion loop leaves to everything else (timers, I/O). For
// the ticks 2 ms late or more it also sums how long the thread sat runnable on
// a run queue and how long it ran (/proc/thread-self/schedstat): lateness the
// scheduler caused (other threads had the CPUs) against the loop's own work.
// The figures cover the measured phase of a run; the warm-up's (V8 compiling
// the loop on helper threads) are kept apart.
import { Buffer } from 'node:buffer';
import { closeSync, openSync, readSync } from 'node:fs';
import { performance } from 'node:perf_hooks';

const INTERVAL_MS = 1;
const MAX_TICKS = 1_000_000;
/** A tick this late (ms) counts as late: twice the interval. */
const LATE_MS = 2;

/** How late a 1 ms timer fired while the loop ran, in ms past its due time. */
export interface TimerLateness {
  timer_ticks: number;
  timer_p50_ms: number;
  timer_p99_ms: number;
  timer_max_ms: number;
  /** Ticks 2 ms late or more; their lateness summed; the thread's run-queue wait and CPU time over those intervals. */
  timer_late_ticks: number;
  timer_late_sum_ms: number;
  timer_late_queued_ms: number;
  timer_late_on_cpu_ms: number;
  /** The ticks before the measured phase (none without measuredFrom()). */
  timer_warmup_ticks: number;
  timer_warmup_p99_ms: number;
  timer_warmup_max_ms: number;
}

/** Reads this thread's CPU and run-queue times (ns) without allocating: one pread a call. */
class SchedStat {
  readonly #text = Buffer.alloc(96);
  readonly #fd: number;
  onCpuNs = 0;
  queuedNs = 0;

  constructor() {
    let fd = -1;
    try {
      fd = openSync('/proc/thread-self/schedstat', 'r');
    } catch {
      // No schedstat (another OS, or a kernel without it): the figures stay 0.
    }
    this.#fd = fd;
  }

  read(): void {
    if (this.#fd < 0) return;
    const length = readSync(this.#fd, this.#text, 0, this.#text.length, 0);
    let field = 0;
    let value = 0;
    for (let i = 0; i < length && field < 2; i++) {
      const digit = this.#text[i]! - 48;
      if (digit >= 0 && digit <= 9) {
        value = value * 10 + digit;
        continue;
      }
      if (field === 0) this.onCpuNs = value;
      else this.queuedNs = value;
      field++;
      value = 0;
    }
  }

  close(): void {
    if (this.#fd >= 0) closeSync(this.#fd);
  }
}

export class TimerProbe {
  // Per tick: when it fired, how late, and the thread's queued and running ms since the tick before.
  readonly #firedAt = new Float64Array(MAX_TICKS);
  readonly #lateness = new Float64Array(MAX_TICKS);
  readonly #queuedMs = new Float32Array(MAX_TICKS);
  readonly #onCpuMs = new Float32Array(MAX_TICKS);
  #ticks = 0;
  #measuredFrom = Number.NEGATIVE_INFINITY;
  #sched: SchedStat | undefined;
  #timer: NodeJS.Timeout | undefined;

  start(): void {
    const sched = (this.#sched = new SchedStat());
    sched.read();
    let last = performance.now();
    let lastOnCpuNs = sched.onCpuNs;
    let lastQueuedNs = sched.queuedNs;
    this.#timer = setInterval(() => {
      const now = performance.now();
      sched.read();
      const tick = this.#ticks;
      if (tick < MAX_TICKS) {
        this.#firedAt[tick] = now;
        this.#lateness[tick] = Math.max(0, now - last - INTERVAL_MS);
        this.#queuedMs[tick] = (sched.queuedNs - lastQueuedNs) / 1e6;
        this.#onCpuMs[tick] = (sched.onCpuNs - lastOnCpuNs) / 1e6;
        this.#ticks = tick + 1;
      }
      last = now;
      lastOnCpuNs = sched.onCpuNs;
      lastQueuedNs = sched.queuedNs;
    }, INTERVAL_MS);
  }

  /** The measured phase began at `time` (performance.now()): earlier ticks are the warm-up's. */
  measuredFrom(time: number): void {
    this.#measuredFrom = time;
  }

  stop(): TimerLateness {
    clearInterval(this.#timer);
    this.#sched?.close();
    let first = 0;
    while (first < this.#ticks && this.#firedAt[first]! < this.#measuredFrom) first++;
    const measured = this.#lateness.subarray(first, this.#ticks);
    const warmup = this.#lateness.subarray(0, first);
    let lateTicks = 0;
    let lateSumMs = 0;
    let lateQueuedMs = 0;
    let lateOnCpuMs = 0;
    for (let i = first; i < this.#ticks; i++) {
      const late = this.#lateness[i]!;
      if (late < LATE_MS) continue;
      lateTicks++;
      lateSumMs += late;
      lateQueuedMs += this.#queuedMs[i]!;
      lateOnCpuMs += this.#onCpuMs[i]!;
    }
    const at = percentiles(measured);
    const warmupAt = percentiles(warmup);
    return {
      timer_ticks: measured.length, timer_p50_ms: round(at(0.5)), timer_p99_ms: round(at(0.99)), timer_max_ms: round(at(1)),
      timer_late_ticks: lateTicks, timer_late_sum_ms: round(lateSumMs), timer_late_queued_ms: round(lateQueuedMs), timer_late_on_cpu_ms: round(lateOnCpuMs),
      timer_warmup_ticks: warmup.length, timer_warmup_p99_ms: round(warmupAt(0.99)), timer_warmup_max_ms: round(warmupAt(1)),
    };
  }
}

function percentiles(values: Float64Array): (p: number) => number {
  const sorted = values.slice().sort();
  return (p) => (sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]!);
}

function round(value: number): number {
  return Math.round(value * 1000) / 1000;
}

/** The probe's figures as lines of a command's human output. */
export function timerLine(lateness: TimerLateness): string {
  const warmup = lateness.timer_warmup_ticks === 0 ? ''
    : `  during the warm-up: ${lateness.timer_warmup_ticks} ticks, late p99 ${lateness.timer_warmup_p99_ms} ms, max ${lateness.timer_warmup_max_ms} ms\n`;
  return `  a 1 ms timer beside it: ${lateness.timer_ticks} ticks, late p50 ${lateness.timer_p50_ms} ms, p99 ${lateness.timer_p99_ms} ms, max ${lateness.timer_max_ms} ms\n` +
    `  ticks ${LATE_MS} ms late or more: ${lateness.timer_late_ticks}, ${lateness.timer_late_sum_ms} ms late in all; over them the thread waited ` +
    `${lateness.timer_late_queued_ms} ms on a run queue and ran ${lateness.timer_late_on_cpu_ms} ms\n` + warmup;
}
