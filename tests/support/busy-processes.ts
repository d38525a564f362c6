// Which other processes of this machine use a CPU: a timing check between
// two processes is only as fair as the CPUs they get, and under TCG a guest
// has two. A miss names what else ran.
import { readFileSync, readdirSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

/** /proc's clock ticks a second (USER_HZ: 100 on every Linux architecture Node runs on). */
const TICKS_PER_SECOND = 100;

/** Each process's CPU time so far in ticks (user + system), with its name, by pid. */
function processTimes(): Map<number, { name: string; ticks: number }> {
  const times = new Map<number, { name: string; ticks: number }>();
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
      // The name is in parentheses and may hold spaces; the fields after it are space-separated.
      const close = stat.lastIndexOf(')');
      const fields = stat.slice(close + 2).split(' ');
      // Fields 14 and 15 of stat(5), utime and stime: the 12th and 13th after the name.
      times.set(pid, { name: stat.slice(stat.indexOf('(') + 1, close), ticks: Number(fields[11]) + Number(fields[12]) });
    } catch {
      // gone meanwhile
    }
  }
  return times;
}

/** The other processes that used more than `minShare` of a CPU over `windowMs`, busiest first, e.g. "node (pid 312) 97 %". */
export async function busyProcesses(windowMs = 1000, minShare = 0.05): Promise<string[]> {
  const before = processTimes();
  await sleep(windowMs);
  const busy: { label: string; share: number }[] = [];
  for (const [pid, { name, ticks }] of processTimes()) {
    const share = (ticks - (before.get(pid)?.ticks ?? ticks)) / TICKS_PER_SECOND / (windowMs / 1000);
    if (share > minShare) busy.push({ label: `${name} (pid ${pid}) ${(share * 100).toFixed(0)} %`, share });
  }
  return busy.sort((a, b) => b.share - a.share).map(({ label }) => label);
}
