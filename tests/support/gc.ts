// A full garbage collection on demand, for tests that measure idle CPU: what
// an earlier test left to collect is collected before the window, not in it.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { PerformanceObserver, performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';

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
