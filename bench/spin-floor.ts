// The guest's own floor for the 1 ms timer rows, in Node: a loop that only
// spins, with no RDMA and no library, shaped as busy-poll's spin is: it reads
// the clock until a 1 ms slice is spent, then hands the loop a turn with
// setImmediate. bench/guest.sh runs two at once, as a busy pair keeps both of
// the guest's CPUs busy; the one given --timer runs the bench's 1 ms timer
// (src/bench/timer-probe.ts) and prints its figures after a 2 s warm-up.
//
//   node dist/bench/spin-floor.js SECONDS [--timer]
import { performance } from 'node:perf_hooks';
import { TimerProbe } from '../src/bench/timer-probe.js';

const SLICE_MS = 1;
const WARMUP_MS = 2000;

const seconds = Number(process.argv[2]);
if (!(seconds > 0 && seconds <= 600)) {
  process.stderr.write('usage: spin-floor.js SECONDS (0-600) [--timer]\n');
  process.exit(2);
}
const probe = process.argv.includes('--timer') ? new TimerProbe() : undefined;
probe?.start();
const measuredFrom = performance.now() + WARMUP_MS;
const endAt = measuredFrom + seconds * 1000;
probe?.measuredFrom(measuredFrom);

function slice(): void {
  const sliceStart = performance.now();
  let now = sliceStart;
  while (now - sliceStart < SLICE_MS) now = performance.now();
  if (now < endAt) setImmediate(slice);
  else if (probe) process.stdout.write(JSON.stringify({ seconds, ...probe.stop() }) + '\n');
}
setImmediate(slice);
