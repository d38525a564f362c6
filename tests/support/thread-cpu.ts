// Which of this process's threads used the CPU: an idle window's cost can be
// off the main thread (V8's workers, libuv's pool), where event-loop
// utilisation does not see it, so a miss names the threads that spent it.
import { readFileSync, readdirSync } from 'node:fs';
import process from 'node:process';

/** Each thread's time on a CPU in ns (/proc's schedstat), by thread id, with its name ("main" for the main thread). */
export type ThreadTimes = Map<string, { name: string; ns: number }>;

/**
 * Reads every thread's time. Reading them costs the main thread CPU (a few ms
 * under TCG): `mainFirst` reads its own time before the others (a window's
 * end), else after them (its start), so a window does not charge the reading.
 */
export function threadTimes(mainFirst: boolean): ThreadTimes {
  const threads: ThreadTimes = new Map();
  const main = String(process.pid);
  let ids: string[];
  try {
    ids = readdirSync('/proc/self/task').filter((id) => id !== main);
  } catch {
    return threads;
  }
  if (mainFirst) ids.unshift(main);
  else ids.push(main);
  for (const id of ids) {
    try {
      const ns = Number(readFileSync(`/proc/self/task/${id}/schedstat`, 'latin1').split(' ')[0]);
      // Node names its worker threads "node" too; the main thread's id is the process's.
      const name = id === main ? 'main' : readFileSync(`/proc/self/task/${id}/comm`, 'latin1').trim();
      threads.set(id, { name, ns });
    } catch {
      // The thread ended between the listing and the read, or the kernel keeps no schedstat.
    }
  }
  return threads;
}

/** The threads that used a CPU between two readings, most first, as "name ms". */
export function describeThreadTimes(before: ThreadTimes, after: ThreadTimes): string {
  if (after.size === 0) return 'not known (no /proc/self/task/*/schedstat)';
  const spent = new Map<string, number>();
  for (const [id, { name, ns }] of after) {
    const used = ns - (before.get(id)?.ns ?? 0);
    if (used > 0) spent.set(name, (spent.get(name) ?? 0) + used);
  }
  const busy = [...spent].filter(([, ns]) => ns >= 50_000).sort((a, b) => b[1] - a[1]);
  if (busy.length === 0) return 'none over 0.05 ms';
  return busy.map(([name, ns]) => `${name} ${(ns / 1e6).toFixed(1)} ms`).join(', ');
}
