// A 1 ms interval timer that records how late each tick fires: how much of the
// event loop a completion loop leaves to everything else (timers, I/O).
import { performance } from 'node:perf_hooks';

const INTERVAL_MS = 1;
const MAX_TICKS = 1_000_000;

/** How late a 1 ms timer fired while the loop ran, in ms past its due time. */
export interface TimerLateness {
  timer_ticks: number;
  timer_p50_ms: number;
  timer_p99_ms: number;
  timer_max_ms: number;
}

export class TimerProbe {
  readonly #lateness = new Float64Array(MAX_TICKS);
  #ticks = 0;
  #last = 0;
  #timer: NodeJS.Timeout | undefined;

  start(): void {
    this.#last = performance.now();
    this.#timer = setInterval(() => {
      const now = performance.now();
      if (this.#ticks < MAX_TICKS) this.#lateness[this.#ticks++] = Math.max(0, now - this.#last - INTERVAL_MS);
      this.#last = now;
    }, INTERVAL_MS);
  }

  stop(): TimerLateness {
    clearInterval(this.#timer);
    const sorted = this.#lateness.subarray(0, this.#ticks).slice().sort();
    const at = (p: number) => (sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]!);
    const round = (v: number) => Math.round(v * 1000) / 1000;
    return { timer_ticks: this.#ticks, timer_p50_ms: round(at(0.5)), timer_p99_ms: round(at(0.99)), timer_max_ms: round(at(1)) };
  }
}

/** The probe's figures as one line of a command's human output. */
export function timerLine(lateness: TimerLateness): string {
  return `  a 1 ms timer beside it: ${lateness.timer_ticks} ticks, late p50 ${lateness.timer_p50_ms} ms, p99 ${lateness.timer_p99_ms} ms, max ${lateness.timer_max_ms} ms\n`;
}
