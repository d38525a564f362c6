// A full garbage collection on demand, for tests that measure idle CPU: what
// an earlier test left to collect is collected before the window, not in it.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { PerformanceObserver, performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import process from 'node:process';
import { describeThreadTimes, threadTimes } from './thread-cpu.js';

export function collectGarbage(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

/** V8's memory reducer looks again every 8 s (kLongDelayMs): a quiet stretch longer than that means it has finished. */
const REDUCER_QUIET_MS = 9_000;

/**
 * collectGarbage(), then waits (at most `limitMs`) until V8 has collected
 * nothing for longer than its memory reducer's period. After a burst of
 * activity Node 26's V8 runs the reducer's incremental mark-compacts
 * ("(reduce)" in --trace-gc) about 8 s later, some 100 ms of the main thread
 * each: a one-off cost of any Node process, which an idle window opened in
 * the meantime would charge to what it measures (a Debian 13 guest read
 * 3.8–4.9 % for 101 idle queues that way, 2 such collections in the window).
 * Returns the collections waited out.
 */
export async function settleGarbage(limitMs = 40_000): Promise<{ collections: number; waitedMs: number }> {
  let collections = 0;
  let lastAt = performance.now();
  const observer = new PerformanceObserver((list) => {
    collections += list.getEntries().length;
    lastAt = performance.now();
  });
  observer.observe({ entryTypes: ['gc'] });
  const started = performance.now();
  collectGarbage();
  try {
    while (performance.now() - lastAt < REDUCER_QUIET_MS && performance.now() - started < limitMs) await sleep(250);
  } finally {
    observer.disconnect();
  }
  return { collections, waitedMs: performance.now() - started };
}

/** What an idle window cost: the CPU share (of one CPU), the event loop's utilisation, V8's collections in it, and which threads spent it. */
export interface IdleCost {
  readonly share: number;
  readonly describe: string;
}

/**
 * settleGarbage(), then `windowMs` of doing nothing, measured: CPU (user and
 * system) and event-loop utilisation, with the window's own collections
 * beside them, so a miss says whether they were its cost. A window that V8
 * collected in is measured once more, after settling again: the memory
 * reducer can still come back past its quiet period (a Debian 13 guest on
 * Node 26 read 12.9 % for 101 idle queues once, 2 collections and 7.6 % of
 * event-loop time in the window, where its other runs read 0.04–0.16 %). The
 * cost returned is the quieter window's; both are described.
 */
export async function measureIdle(windowMs: number): Promise<IdleCost> {
  const first = await idleWindow(windowMs);
  if (first.collections === 0) return first;
  const second = await idleWindow(windowMs);
  const quieter = second.share < first.share ? second : first;
  return { share: quieter.share, describe: `${quieter.describe} (windows: ${first.describe}; then ${second.describe})` };
}

async function idleWindow(windowMs: number): Promise<IdleCost & { collections: number }> {
  const settled = await settleGarbage();
  const collections: number[] = [];
  const observer = new PerformanceObserver((list) => collections.push(...list.getEntries().map((entry) => entry.duration)));
  observer.observe({ entryTypes: ['gc'] });
  const threadsBefore = threadTimes(false);
  const cpuBefore = process.cpuUsage();
  const loopBefore = performance.eventLoopUtilization();
  await sleep(windowMs);
  const cpu = process.cpuUsage(cpuBefore);
  const loop = performance.eventLoopUtilization(loopBefore);
  const threads = describeThreadTimes(threadsBefore, threadTimes(true));
  observer.disconnect();
  const share = (cpu.user + cpu.system) / (windowMs * 1000);
  const gcMs = collections.reduce((sum, ms) => sum + ms, 0);
  return {
    share,
    collections: collections.length,
    describe: `${(share * 100).toFixed(2)} % of a CPU over ${windowMs / 1000} s (user ${(cpu.user / 1000).toFixed(0)} ms, system ${(cpu.system / 1000).toFixed(0)} ms), ` +
      `event-loop utilisation ${(loop.utilization * 100).toFixed(2)} %; ${collections.length} collections in the window (${gcMs.toFixed(1)} ms), ` +
      `${settled.collections} waited out before it (${(settled.waitedMs / 1000).toFixed(1)} s); by thread: ${threads}`,
  };
}
