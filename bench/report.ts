// Turns bench/guest.sh's raw outputs into the comparison: medians over the
// repetitions, TS/C ratios against the targets, a table on stdout,
// bench/results/<stamp>.json + latest.json and a hand-written latest.svg.
//
//   node dist/bench/report.js RAW_DIR STAMP WHERE
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setupTotal, type ConnRound } from './conn-rounds.js';

const [raw, stamp = new Date().toISOString(), where = 'unknown'] = process.argv.slice(2);
if (!raw) {
  console.error('usage: report RAW_DIR [STAMP] [WHERE]');
  process.exit(1);
}
const results = join(raw, '..');
const files = readdirSync(raw);
const read = (name: string) => readFileSync(join(raw, name), 'utf8');

const median = (values: number[]): number | null => {
  const v = values.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (v.length === 0) return null;
  return v.length % 2 ? v[(v.length - 1) / 2]! : (v[v.length / 2 - 1]! + v[v.length / 2]!) / 2;
};

/** perftest's result table: the header's column names (read from the output) mapped to the data row's numbers. */
function perftest(text: string): Record<string, number> | undefined {
  const lines = text.split('\n');
  const at = lines.findIndex((line) => line.trim().startsWith('#bytes'));
  if (at < 0) return undefined;
  const names = lines[at]!.match(/#\w+|[\w.%]+(?: \w+)?\[[^\]]+\]/g) ?? [];
  const values = (lines[at + 1] ?? '').trim().split(/\s+/).map(Number);
  // A run that failed after its header (perftest: "Can't produce a report") has no data row: it does not count.
  if (values.length < names.length || !values.every(Number.isFinite)) return undefined;
  const row: Record<string, number> = {};
  names.forEach((name, i) => (row[name] = values[i]!));
  return row;
}

/** cmtime's step tables, one per client run: "step : total_ms max_ms min_us us/conn" → us per connection by step. */
function cmtime(text: string): Record<string, number>[] {
  const tables: Record<string, number>[] = [];
  for (const line of text.split('\n')) {
    const m = /^(create id|resolve addr|resolve route|create qp|connect|disconnect|destroy)\s*:\s*([\d.\s]+)$/.exec(line.trim());
    if (!m) continue;
    const step = m[1]!.replace(/ /g, '_');
    if (step === 'create_id') tables.push({});
    tables.at(-1)![step] = Number(m[2]!.trim().split(/\s+/).pop());
  }
  return tables.filter((steps) => steps.connect !== undefined);
}

function collect<T>(pattern: RegExp, parse: (text: string, name: string) => T | undefined): T[] {
  const out: T[] = [];
  for (const name of files.filter((f) => pattern.test(f)).sort()) {
    try {
      const value = parse(read(name), name);
      if (value !== undefined) out.push(value);
    } catch {
      // a failed run leaves an empty or partial file: it simply does not count
    }
  }
  return out;
}
const json = (text: string) => (text.trim() ? (JSON.parse(text.trim().split('\n').pop()!) as Record<string, number>) : undefined);

const tsLat = (size: number) => collect(new RegExp(`^ts-lat-${size}-r\\d+\\.json$`), json);
const cLat = (size: number) => collect(new RegExp(`^c-lat-${size}-r\\d+\\.txt$`), perftest);
const tsBw = (size: number) => collect(new RegExp(`^ts-bw-${size}-r\\d+\\.json$`), json);
const cBw = (size: number) => collect(new RegExp(`^c-bw-${size}-r\\d+\\.txt$`), perftest);
const pick = (rows: Record<string, number>[], key: string) => median(rows.map((r) => r[key]!));
/** The runs of `name` (a ping-pong alone, no timer beside it), or `withTimer` where a raw folder has none. */
const aloneOr = (name: string, withTimer: Record<string, number>[]) => {
  const alone = collect(new RegExp(`^${name}-r\\d+\\.json$`), json);
  return alone.length > 0 ? alone : withTimer;
};
/** Whether `runs` had the 1 ms timer beside them (the listener and fixed-budget rows did until they ran alone). */
const ranWithTimer = (runs: Record<string, number>[]) => runs.some((run) => run.timer_ticks !== undefined);
/** The lowest or highest of the repetitions' values (null without any). */
const extreme = (rows: Record<string, number>[], key: string, which: 'lowest' | 'highest'): number | null => {
  const values = rows.map((r) => r[key]!).filter((x) => Number.isFinite(x));
  if (values.length === 0) return null;
  return which === 'lowest' ? Math.min(...values) : Math.max(...values);
};

interface Row {
  figure: string;
  unit: string;
  ts: number | null;
  c: number | null;
  ratio: number | null;
  target: string;
  met: boolean | null;
  runs: string;
}
const rows: Row[] = [];
function row(figure: string, unit: string, ts: number | null, c: number | null, target: string, check: ((ratio: number, ts: number) => boolean) | null, runs: string): void {
  const ratio = ts !== null && c !== null && c !== 0 ? ts / c : null;
  const met = check === null ? null : ratio !== null ? check(ratio, ts!) : ts !== null && c === null && target.startsWith('none') ? check(0, ts) : null;
  rows.push({ figure, unit, ts, c, ratio, target, met, runs });
}

const raw_: Record<string, unknown> = {};
/** A raw file's text, or undefined when the run left no file. */
const readIfLeft = (name: string) => (existsSync(join(raw, name)) ? read(name) : undefined);
/** A one-line file bench/guest.sh leaves beside the runs, or `fallback` when there is none. */
const readLine = (name: string, fallback: string) => readIfLeft(name)?.trim() ?? fallback;
/** A raw file's JSON line, or undefined when the run left no file. */
const readJson = (name: string) => json(readIfLeft(name) ?? '');
/** The Node line of the events and socket rows run on a second Node (bench/guest.sh's NEXT_NODE). */
const nextNodeVersion = readLine('next-node-version.txt', 'the newest line');
for (const size of [2, 4096]) {
  const t = tsLat(size);
  const c = cLat(size);
  raw_[`lat_${size}`] = { ts: t, c };
  const runs = `${t.length} TS, ${c.length} C`;
  row(`lat p50 ${size} B (C: t_typical)`, 'µs', pick(t, 'p50_us'), pick(c, 't_typical[usec]'), '≤ 1.15×', (r) => r <= 1.15, runs);
  // Each connection settles at its own level (docs/performance-notes.md): the spread behind the median.
  for (const which of ['lowest', 'highest'] as const) {
    row(`  p50, ${which} repetition`, 'µs', extreme(t, 'p50_us', which), extreme(c, 't_typical[usec]', which), '—', null, runs);
  }
  row(`lat p99 ${size} B`, 'µs', pick(t, 'p99_us'), pick(c, '99% percentile[usec]'), '≤ 2×', (r) => r <= 2, runs);
  row(`lat min ${size} B`, 'µs', pick(t, 'min_us'), pick(c, 't_min[usec]'), '—', null, runs);
  row(`lat p99.9 ${size} B`, 'µs', pick(t, 'p999_us'), pick(c, '99.9% percentile[usec]'), '—', null, runs);
}
// Bound calls are opt-in: their ratio to C beside the plain calls' (the 'lat p50 2 B' row, same run).
{
  const bound = collect(/^ts-lat-bound-2-r\d+\.json$/, json);
  const c = cLat(2);
  raw_.lat_bound_2 = bound;
  const runs = `${bound.length} TS, ${c.length} C`;
  row('lat p50 2 B, bound calls (RDMACM_BOUND_CALLS=1)', 'µs', pick(bound, 'p50_us'), pick(c, 't_typical[usec]'), '—', null, runs);
}
// The busy-poll tail with V8's helper threads off the pinned CPU (node --single-threaded).
{
  const single = collect(/^ts-lat-single-2-r\d+\.json$/, json);
  const c = cLat(2);
  raw_.lat_single_2 = single;
  const runs = `${single.length} TS, ${c.length} C`;
  row('lat p50 2 B, node --single-threaded', 'µs', pick(single, 'p50_us'), pick(c, 't_typical[usec]'), '—', null, runs);
  row('lat p99.9 2 B, node --single-threaded', 'µs', pick(single, 'p999_us'), pick(c, '99.9% percentile[usec]'), '≤ 3× (busy-poll)', (r) => r <= 3, runs);
}
/** Of the runs' timer ticks 2 ms late or more, the share of those intervals (1 ms + lateness each) the thread sat runnable on a run queue, in %. */
function queuedShare(runs: Record<string, number>[]): number | null {
  const total = (key: string) => runs.reduce((sum, r) => sum + (r[key] ?? 0), 0);
  const span = total('timer_late_sum_ms') + total('timer_late_ticks');
  return runs.length > 0 && span > 0 ? (100 * total('timer_late_queued_ms')) / span : null;
}

// The event-loop modes (`await cq.next()`): events against ib_send_lat -e,
// adaptive (the API's default) and busy-poll against the busy ib_send_lat,
// each ping-pong alone as its C reference runs; then again with a 1 ms timer
// beside the client (TCP ping-pong in the guest: 1.1–1.9 ms), as
// bench/uv-pingpong.c's client runs one in events and busy mode (C on the
// same loop). A raw folder from before the runs alone has only the timer's
// runs, which then stand in for them.
{
  const c = collect(/^c-latev-2-r\d+\.txt$/, perftest);
  const cBusy = cLat(2);
  const uvTimer: Record<string, Record<string, number>[]> = {
    events: collect(/^c-uvlat-2-r\d+\.json$/, json), 'busy-poll': collect(/^c-uvbusy-2-r\d+\.json$/, json),
  };
  raw_.lat_uv_busy_2 = uvTimer['busy-poll'];
  const modes = { events: 'ib_send_lat -e', adaptive: 'ib_send_lat', 'busy-poll': 'ib_send_lat' } as const;
  const tsByMode = Object.fromEntries(Object.keys(modes).map((wait) => [wait, collect(new RegExp(`^ts-lat-${wait}-2-r\\d+\\.json$`), json)]));
  for (const [wait, reference] of Object.entries(modes)) {
    const t = tsByMode[wait]!;
    const alone = aloneOr(`ts-lat-alone-${wait}-2`, t);
    const versus = wait === 'events' ? c : cBusy;
    raw_[`lat_${wait.replace('-', '_')}_2`] = { ts: alone, ts_with_timer: t, c: versus };
    const runs = `${alone.length} TS, ${versus.length} C`;
    const p50Target = wait === 'events' ? 1.5 : wait === 'adaptive' ? 1.3 : null;
    row(`${wait}: lat p50 2 B (C: ${reference} t_typical)`, 'µs', pick(alone, 'p50_us'), pick(versus, 't_typical[usec]'),
      p50Target ? `≤ ${p50Target}×` : '—', p50Target ? (r) => r <= p50Target : null, runs);
    row(`${wait}: lat p99 2 B`, 'µs', pick(alone, 'p99_us'), pick(versus, '99% percentile[usec]'), wait === 'events' ? '≤ 2×' : '—', wait === 'events' ? (r) => r <= 2 : null, runs);
    if (wait === 'busy-poll') row('busy-poll: lat p99.9 2 B', 'µs', pick(alone, 'p999_us'), pick(versus, '99.9% percentile[usec]'), '≤ 3×', (r) => r <= 3, runs);
    if (alone !== t) {
      const timedRuns = `${t.length} TS, ${versus.length} C`;
      row(`  p50 2 B with the 1 ms timer beside it`, 'µs', pick(t, 'p50_us'), pick(versus, 't_typical[usec]'), '—', null, timedRuns);
      row(`  p99 2 B with the 1 ms timer beside it`, 'µs', pick(t, 'p99_us'), pick(versus, '99% percentile[usec]'), '—', null, timedRuns);
    }
    // Over the measured round trips; the warm-up's ticks (V8 compiling on helper threads) apart, below.
    const cTimer = uvTimer[wait] ?? [];
    const timerRuns = cTimer.length > 0 ? `${t.length} TS, ${cTimer.length} C on libuv` : `${t.length} TS`;
    row(`${wait}: 1 ms timer's p99 lateness beside it${cTimer.length > 0 ? ' (C: uv-pingpong -T)' : ''}`, 'ms', pick(t, 'timer_p99_ms'),
      cTimer.length > 0 ? pick(cTimer, 'timer_p99_ms') : null, 'none (< 2 ms)', (_r, ts) => ts < 2, timerRuns);
    row(`  its ticks ≥ 2 ms late: % of those intervals queued to run`, '%', queuedShare(t), cTimer.length > 0 ? queuedShare(cTimer) : null, '—', null, timerRuns);
    row(`  over the warm-up (V8 compiling)`, 'ms', pick(t, 'timer_warmup_p99_ms'), null, '—', null, `${t.length} TS`);
    const single = collect(new RegExp(`^ts-lat-single-${wait}-2-r\\d+\\.json$`), json);
    raw_[`lat_${wait.replace('-', '_')}_single_2`] = single;
    row(`  both sides in node --single-threaded (no V8 helper threads)`, 'ms', pick(single, 'timer_p99_ms'), null, '—', null, `${single.length} TS`);
    if (wait === 'busy-poll') {
      // The guest's own floor for the modes that spin (bench/spin-floor.ts, bench/spin-gaps.c): two loops that
      // only spin, no RDMA, keep both CPUs busy as a busy pair does; what the timer and a C loop lose to the guest.
      const floor = collect(/^ts-spin-floor-r\d+\.json$/, json);
      const gaps = collect(/^c-spin-gaps-r\d+\.json$/, json);
      raw_.spin_floor = { ts: floor, c: gaps };
      row(`  the guest's floor: the timer beside two Node loops that only spin`, 'ms', pick(floor, 'timer_p99_ms'), null, '—', null, `${floor.length} TS`);
      row(`  the guest's floor: two C loops that only spin: CPU lost ≥ 2 ms`, '/s', null, pick(gaps, 'gaps_2ms_per_s'), '—', null, `${gaps.length} C`);
      row(`  the same C loops: time lost in gaps ≥ 0.1 ms`, '%', null, pick(gaps, 'lost_percent'), '—', null, `${gaps.length} C`);
    }
  }
  // Adaptive with a spin budget longer than this guest's round trip (bench/guest.sh's BENCH_LAT_SPIN_US), against the busy C:
  // what the mode does once its budget covers a round trip (the default, 50 µs, is sized for a NIC's).
  const spinUs = readLine('lat-spin-us.txt', '?');
  const spun = collect(/^ts-lat-adaptive-spin-2-r\d+\.json$/, json);
  raw_.lat_adaptive_spin_2 = { spin_us: Number(spinUs), ts: spun };
  const spunRuns = `${spun.length} TS, ${cBusy.length} C`;
  row(`adaptive, spin ${spinUs} µs: lat p50 2 B (C: ib_send_lat t_typical)`, 'µs', pick(spun, 'p50_us'), pick(cBusy, 't_typical[usec]'), '—', null, spunRuns);
  row(`adaptive, spin ${spinUs} µs: lat p99 2 B`, 'µs', pick(spun, 'p99_us'), pick(cBusy, '99% percentile[usec]'), '—', null, spunRuns);
  if (ranWithTimer(spun)) row(`adaptive, spin ${spinUs} µs: 1 ms timer's p99 lateness beside it`, 'ms', pick(spun, 'timer_p99_ms'), null, '—', null, `${spun.length} TS`);
  // Events and adaptive with a completion listener instead of next() (as rdmacm/net takes completions): what
  // the modes cost without a promise and a completion object per receive. The targets stay on next()'s rows.
  const listenerByWait: Record<string, Record<string, number>[]> = {};
  for (const [wait, reference] of [['events', 'ib_send_lat -e'], ['adaptive', 'ib_send_lat']] as const) {
    const t = collect(new RegExp(`^ts-lat-listener-${wait}-2-r\\d+\\.json$`), json);
    const versus = wait === 'events' ? c : cBusy;
    raw_[`lat_listener_${wait}_2`] = listenerByWait[wait] = t;
    const runs = `${t.length} TS, ${versus.length} C`;
    row(`${wait}, listener: lat p50 2 B (C: ${reference} t_typical)`, 'µs', pick(t, 'p50_us'), pick(versus, 't_typical[usec]'), '—', null, runs);
    row(`${wait}, listener: lat p99 2 B`, 'µs', pick(t, 'p99_us'), pick(versus, '99% percentile[usec]'), '—', null, runs);
    if (ranWithTimer(t)) row(`${wait}, listener: 1 ms timer's p99 lateness beside it`, 'ms', pick(t, 'timer_p99_ms'), null, '—', null, `${t.length} TS`);
  }
  // The events mode on the newest Node line (bench/guest.sh's NEXT_NODE), against the same C.
  const next = collect(/^ts-lat-events-next-2-r\d+\.json$/, json);
  const nextAlone = aloneOr('ts-lat-alone-events-next-2', next);
  raw_.lat_events_next_node_2 = { node: nextNodeVersion, ts: nextAlone, ts_with_timer: next };
  const nextRuns = `${nextAlone.length} TS, ${c.length} C`;
  row(`events on Node ${nextNodeVersion}: lat p50 2 B (C: ib_send_lat -e t_typical)`, 'µs', pick(nextAlone, 'p50_us'), pick(c, 't_typical[usec]'), '≤ 1.5×', (r) => r <= 1.5, nextRuns);
  row(`events on Node ${nextNodeVersion}: lat p99 2 B`, 'µs', pick(nextAlone, 'p99_us'), pick(c, '99% percentile[usec]'), '≤ 2×', (r) => r <= 2, nextRuns);
  row(`events on Node ${nextNodeVersion}: 1 ms timer's p99 lateness beside it`, 'ms', pick(next, 'timer_p99_ms'), null, 'none (< 2 ms)', (_r, ts) => ts < 2, `${next.length} TS`);
  // The same ping-pong in C on libuv (bench/uv-pingpong.c): what waiting on an event loop costs without Node.
  const events = tsByMode.events!;
  const eventsAlone = aloneOr('ts-lat-alone-events-2', events);
  const uv = collect(/^c-uvlat-2-r\d+\.json$/, json);
  raw_.lat_uv_2 = uv;
  const uvRuns = `${events.length} TS, ${uv.length} C on libuv`;
  // Both with the 1 ms timer beside the client.
  row('events: lat p50 2 B vs C on libuv (bench/uv-pingpong.c), both with the timer', 'µs', pick(events, 'p50_us'), pick(uv, 'p50_us'), '—', null, uvRuns);
  row('events: lat p99 2 B vs C on libuv, both with the timer', 'µs', pick(events, 'p99_us'), pick(uv, 'p99_us'), '—', null, uvRuns);
  row(`events on Node ${nextNodeVersion}: lat p50 2 B vs C on libuv, both with the timer`, 'µs', pick(next, 'p50_us'), pick(uv, 'p50_us'), '—', null, `${next.length} TS, ${uv.length} C on libuv`);
  row('  C on libuv\'s p50 2 B with its timer (TS column) vs ib_send_lat -e', 'µs', pick(uv, 'p50_us'), pick(c, 't_typical[usec]'), '—', null, `${uv.length} C on libuv, ${c.length} C`);
  // Both alone, as the latency targets run: how far an event loop in C gets toward ib_send_lat -e, and Node beside it.
  const uvAlone = collect(/^c-uvlat-alone-2-r\d+\.json$/, json);
  if (uvAlone.length > 0) {
    raw_.lat_uv_alone_2 = uvAlone;
    const aloneRuns = `${eventsAlone.length} TS, ${uvAlone.length} C on libuv`;
    row('events: lat p50 2 B vs C on libuv, both alone', 'µs', pick(eventsAlone, 'p50_us'), pick(uvAlone, 'p50_us'), '—', null, aloneRuns);
    row('events: lat p99 2 B vs C on libuv, both alone', 'µs', pick(eventsAlone, 'p99_us'), pick(uvAlone, 'p99_us'), '—', null, aloneRuns);
    row(`events on Node ${nextNodeVersion}: lat p50 2 B vs C on libuv, both alone`, 'µs', pick(nextAlone, 'p50_us'), pick(uvAlone, 'p50_us'), '—', null, `${nextAlone.length} TS, ${uvAlone.length} C on libuv`);
    const cRuns = `${uvAlone.length} C on libuv, ${c.length} C`;
    row('  C on libuv alone: p50 2 B (TS column) vs ib_send_lat -e', 'µs', pick(uvAlone, 'p50_us'), pick(c, 't_typical[usec]'), '—', null, cRuns);
    row('  C on libuv alone: p99 2 B (TS column) vs ib_send_lat -e', 'µs', pick(uvAlone, 'p99_us'), pick(c, '99% percentile[usec]'), '—', null, cRuns);
  }
  // The same ping-pong in Node over the raw layer alone (bench/events-raw.ts), in the safe API's order: the floor
  // under the safe API's events rows, so what Node and koffi cost a wake-up apart from what the safe API adds.
  const raw = collect(/^ts-lat-raw-events-2-r\d+\.json$/, json);
  if (raw.length > 0) {
    raw_.lat_raw_events_2 = raw;
    const rawRuns = `${raw.length} raw, ${c.length} C`;
    row('events, raw layer only (no safe API): lat p50 2 B (C: ib_send_lat -e t_typical)', 'µs', pick(raw, 'p50_us'), pick(c, 't_typical[usec]'), '—', null, rawRuns);
    row('events, raw layer only: lat p99 2 B', 'µs', pick(raw, 'p99_us'), pick(c, '99% percentile[usec]'), '—', null, rawRuns);
    const listener = listenerByWait.events!;
    row('  events p50 2 B (TS column) vs the raw layer (C column)', 'µs', pick(eventsAlone, 'p50_us'), pick(raw, 'p50_us'), '—', null, `${eventsAlone.length} TS, ${raw.length} raw`);
    row('  events, listener: p50 2 B (TS column) vs the raw layer (C column)', 'µs', pick(listener, 'p50_us'), pick(raw, 'p50_us'), '—', null, `${listener.length} TS, ${raw.length} raw`);
    // C on libuv in the same order (uv-pingpong -D): what Node and koffi cost a wake-up at equal steps.
    const uvDrain = collect(/^c-uvlat-drain-alone-2-r\d+\.json$/, json);
    raw_.lat_uv_drain_alone_2 = uvDrain;
    row('  the raw layer\'s p50 2 B (TS column) vs C on libuv in the same order (uv-pingpong -D)', 'µs', pick(raw, 'p50_us'), pick(uvDrain, 'p50_us'), '—', null, `${raw.length} raw, ${uvDrain.length} C on libuv`);
    row('  C on libuv in that order: p50 2 B (TS column) vs ib_send_lat -e', 'µs', pick(uvDrain, 'p50_us'), pick(c, 't_typical[usec]'), '—', null, `${uvDrain.length} C on libuv, ${c.length} C`);
  }
}
for (const size of [64, 65536]) {
  const t = tsBw(size);
  const c = cBw(size);
  raw_[`bw_${size}`] = { ts: t, c };
  const runs = `${t.length} TS, ${c.length} C`;
  row(`send bw ${size} B`, 'MB/s', pick(t, 'mb_per_s'), pick(c, 'BW average[MB/sec]'), size === 65536 ? '≥ 0.95×' : '—', size === 65536 ? (r) => r >= 0.95 : null, runs);
  row(`msg rate ${size} B`, 'Mpps', pick(t, 'msg_rate_mpps'), pick(c, 'MsgRate[Mpps]'), size === 64 ? '≥ 0.7×' : '—', size === 64 ? (r) => r >= 0.7 : null, runs);
  // Adaptive mode (await cq.next() when a queue is empty, then drain): issue 31's target against the busy ib_send_bw.
  const a = collect(new RegExp(`^ts-bw-adaptive-${size}-r\\d+\\.json$`), json);
  raw_[`bw_adaptive_${size}`] = a;
  const adaptiveRuns = `${a.length} TS, ${c.length} C`;
  if (size === 64) {
    row('adaptive: msg rate 64 B', 'Mpps', pick(a, 'msg_rate_mpps'), pick(c, 'MsgRate[Mpps]'), '≥ 0.9×', (r) => r >= 0.9, adaptiveRuns);
    const bound = collect(/^ts-bw-adaptive-bound-64-r\d+\.json$/, json);
    raw_.bw_adaptive_bound_64 = bound;
    row('  the same with bound calls (RDMACM_BOUND_CALLS=1)', 'Mpps', pick(bound, 'msg_rate_mpps'), pick(c, 'MsgRate[Mpps]'), '—', null, `${bound.length} TS, ${c.length} C`);
  } else row(`adaptive: send bw ${size} B`, 'MB/s', pick(a, 'mb_per_s'), pick(c, 'BW average[MB/sec]'), '≥ 0.9×', (r) => r >= 0.9, adaptiveRuns);
}
const writeBw = collect(/^c-wbw-65536-r\d+\.txt$/, perftest);
raw_.write_bw_65536 = writeBw;
row('ib_write_bw 65536 B (C only, reference)', 'MB/s', null, pick(writeBw, 'BW average[MB/sec]'), '—', null, `${writeBw.length} C`);

// Where a completion's time goes on the event loop (bench/event-path.ts): for the record, no targets.
{
  const path = readJson('event-path.json');
  raw_.event_path = path ?? null;
  const one = path ? '1 TS' : '0';
  const figure = (label: string, key: string) => row(`event path: ${label}`, 'µs', path?.[key] ?? null, null, '—', null, one);
  figure('ibv_poll_cq, empty, one call', 'poll_empty_us');
  figure('ibv_req_notify_cq, one call', 'req_notify_cq_us');
  figure('a microtask hop (await)', 'microtask_hop_us');
  figure('a setImmediate turn of the loop', 'set_immediate_turn_us');
  figure('adaptive mode\'s spin, one empty poll (its round included)', 'adaptive_spin_poll_us');
  figure('libuv wakes a watch for a fd written by another thread, p50', 'fd_wake_p50_us');
  figure('a thread woken from a futex by another (the floor of any sleep), p50', 'futex_wake_p50_us');
  figure('in-process ping-pong on events, half round trip', 'pingpong_half_round_trip_us');
  figure('  post → the peer\'s listener, p50', 'post_to_peer_listener_p50_us');
  figure('  the listener\'s work up to its reply, p50', 'listener_to_reply_p50_us');
}

interface TsConnRun {
  /** The rounds after the warm-up (bench/conn-rounds.ts: MEASURED_ROUNDS). */
  measured_rounds: ConnRound[];
  /** The rounds before them; the first is the cold start. */
  warmup_rounds: ConnRound[];
}
const tsConn = collect(/^ts-conn-r\d+\.json$/, (text) => json(text) as unknown as TsConnRun | undefined);
// Every cmtime run of every repetition: bench/guest.sh runs its client as often as the binding's clients measure rounds.
const cConn = collect(/^c-cmtime-r\d+\.txt$/, (text) => {
  const tables = cmtime(text);
  return tables.length ? tables : undefined;
}).flat();
// The same steps through the raw layer alone (bench/connsetup-raw.ts): what Node and koffi cost without the safe API.
const rawConn = collect(/^raw-conn-r\d+\.json$/, (text) => json(text) as unknown as TsConnRun | undefined);
raw_.connection_setup = { ts: tsConn, c: cConn, raw_layer: rawConn };
const tsRounds = tsConn.flatMap((t) => t.measured_rounds);
const rawRounds = rawConn.flatMap((t) => t.measured_rounds);
const connRuns = `${tsRounds.length} TS, ${cConn.length} C rounds`;
const perProcessRuns = `${tsConn.length} TS runs, ${cConn.length} C rounds`;
const cSetup = median(cConn.map(setupTotal));
// Connection setup = every step before the connection carries data (create id → connect), summed as the binding's clients sum it.
row('connection setup per conn (create id→connect)', 'µs', median(tsRounds.map((t) => t.setup_us_per_conn)), cSetup, '≤ 1.2×', (r) => r <= 1.2, connRuns);
for (const step of ['create_id', 'resolve_addr', 'resolve_route', 'create_qp', 'connect']) {
  row(`  step ${step.replace('_', ' ')}`, 'µs', median(tsRounds.map((t) => t.us_per_conn[step]!)), median(cConn.map((c) => c[step]!)), '—', null, connRuns);
}
row('connection setup, raw layer only (no safe API)', 'µs', median(rawRounds.map((t) => t.setup_us_per_conn)), cSetup, '—', null, `${rawRounds.length} raw, ${cConn.length} C rounds`);
row('connection setup, cold first round (TS)', 'µs', median(tsConn.map((t) => t.warmup_rounds[0]?.setup_us_per_conn ?? NaN)), cSetup, '—', null, perProcessRuns);
// While V8 still optimizes the setup path (see WARMUP_ROUNDS): rounds 2–13, where the measured round was until 2026-11-23.
const warming = (t: TsConnRun) => median(t.warmup_rounds.slice(1, 13).map((round) => round.setup_us_per_conn)) ?? NaN;
row('connection setup, warming rounds 2–13 (TS)', 'µs', median(tsConn.map(warming)), cSetup, '—', null, perProcessRuns);

const heap = readJson('heap.json');
raw_.heap = heap;
// "None": what a loop that allocates nothing leaves after gc(); 4 KiB allows for the heap's own bookkeeping.
const heapRounds = (heap as unknown as { rounds?: { heap_growth_bytes: number }[] } | undefined)?.rounds ?? [];
row('JS heap growth, 1e5 post/poll cycles (last round)', 'B', heap?.heap_growth_bytes ?? null, null, 'none (≤ 4 KiB)', (_r, ts) => ts <= 4096, heap ? '1 TS' : '0');
heapRounds.forEach((round, i) => row(`  heap growth, round ${i + 1} of ${heapRounds.length}`, 'B', round.heap_growth_bytes, null, '—', null, '1 TS'));

// ---- sockets: rdmacm/net (`rdmacm bench stream`) against rstream -T b and node:net TCP, rstream's custom runs
/** rstream's result line: "custom  SIZE  XFERS  ITERS  TOTAL  TIMEs  Gb/sec  usec/xfer". */
function rstreamLine(text: string): Record<string, number> | undefined {
  const line = text.split('\n').find((l) => /^custom\s/.test(l));
  if (!line) return undefined;
  const fields = line.trim().split(/\s+/);
  // rstream prints counts of 1000 and more shortened (cnt_str: "1k", "2m", "1b", rounded down).
  const count = (field: string) => Number.parseInt(field, 10) * ({ k: 1e3, m: 1e6, b: 1e9 }[field.slice(-1)] ?? 1);
  return { xfers: count(fields[2]!), iters: count(fields[3]!), gbps: Number(fields.at(-2)), usec_per_xfer: Number(fields.at(-1)) };
}
/** Both sides' CPU seconds per GiB, per repetition, of the `rdmacm bench stream` pairs named PREFIX-rN.json (the client's JSON; its server's is in .server). */
const streamPairCpuPerGib = (prefix: string) => collect(new RegExp(`^${prefix}-r\\d+\\.json$`), (text, name) => {
  const perGib = json(text)!.cpu_s_per_gib! + json(read(`${name}.server`))!.cpu_s_per_gib!;
  return Number.isFinite(perGib) ? perGib : undefined; // NaN: a run from before the figure existed
});
/**
 * Both sides' CPU seconds per GiB, per repetition, of rstream's throughput
 * pair: bench/cpu-time.sh's figures ("USER SYSTEM", OUT.cpu-server and
 * OUT.cpu-client) of the long run (sock-clong-…) less the short one's, over
 * the bytes the long run moved beyond the short one.
 */
function rstreamCpuPerGib(size: number): number[] {
  const cpu = (name: string) => ['server', 'client']
    .map((side) => read(`${name}.cpu-${side}`).trim().split(/\s+/).map(Number))
    .reduce((sum, [user, system]) => sum + user! + system!, 0);
  return collect(new RegExp(`^sock-c-bw-${size}-r\\d+\\.txt$`), (text, short) => {
    const long = short.replace('sock-c-', 'sock-clong-');
    const [a, b] = [rstreamLine(text), rstreamLine(read(long))];
    if (!a || !b || b.iters! <= a.iters!) return undefined;
    const extraBytes = (b.iters! - a.iters!) * b.xfers! * size * 2;
    const perGib = (cpu(long) - cpu(short)) / (extraBytes / 2 ** 30);
    return Number.isFinite(perGib) ? perGib : undefined;
  });
}
/** The client JSONs of the `rdmacm bench stream` pairs named PREFIX-KIND-SIZE-rN.json. */
const streamRuns = (prefix: string, kind: string, size: number) => collect(new RegExp(`^${prefix}-${kind}-${size}-r\\d+\\.json$`), json);
/** rstream's result lines of the pairs named PREFIX-KIND-SIZE-rN.txt. */
const rstreamRuns = (prefix: string, kind: string, size: number) => collect(new RegExp(`^${prefix}-${kind}-${size}-r\\d+\\.txt$`), rstreamLine);
/** One socket run's three pairs (bench/socket-runs.sh): rdmacm/net, rstream -T b and node:net TCP; WHERE is '' in one guest, 'link-' across two. */
const socketRuns = (where: '' | 'link-', kind: string, size: number) => ({
  ts: streamRuns(`${where}sock-ts`, kind, size), rstream: rstreamRuns(`${where}sock-c`, kind, size), tcp: streamRuns(`${where}sock-tcp`, kind, size),
});
const sockets: Record<string, unknown> = {};
raw_.sockets = sockets;
const bwEvents = collect(/^c-bwev-65536-r\d+\.txt$/, perftest);
sockets.ib_send_bw_events_65536 = bwEvents;
for (const [size, label] of [[65536, '64 KiB'], [1048576, '1 MiB']] as const) {
  const { ts: t, rstream: c, tcp: n } = (sockets[`bw_${size}`] = socketRuns('', 'bw', size));
  // rstream prints Gb/sec to two decimals; its usec/xfer is finer: SIZE bytes per xfer time is its MB/s.
  const rstreamMbps = median(c.map((row) => size / row.usec_per_xfer!));
  const runs = `${t.length} TS, ${c.length} rstream, ${n.length} TCP`;
  row(`sockets: throughput, ${label} writes (C: rstream -T b)`, 'MB/s', pick(t, 'mb_per_s'), rstreamMbps, '≥ 1.0×', (r) => r >= 1.0, runs);
  if (size === 65536) {
    row('  vs ib_send_bw -e 64 KiB (C: verbs on events)', 'MB/s', pick(t, 'mb_per_s'), pick(bwEvents, 'BW average[MB/sec]'), '≥ 0.9×', (r) => r >= 0.9, `${t.length} TS, ${bwEvents.length} C`);
  }
  row(`  vs node:net TCP, ${label} writes (C column: TCP)`, 'MB/s', pick(t, 'mb_per_s'), pick(n, 'mb_per_s'), '—', null, runs);
  // What the bytes cost: both processes' user + system time per GiB moved (rxe's work in kernel threads not counted).
  const cpu = { ts: streamPairCpuPerGib(`sock-ts-bw-${size}`), rstream: rstreamCpuPerGib(size), tcp: streamPairCpuPerGib(`sock-tcp-bw-${size}`) };
  sockets[`cpu_per_gib_${size}`] = cpu;
  const cpuRuns = `${cpu.ts.length} TS, ${cpu.rstream.length} rstream, ${cpu.tcp.length} TCP`;
  row(`sockets: CPU s per GiB, ${label} writes, both sides (C: rstream -T b)`, 's', median(cpu.ts), median(cpu.rstream), '—', null, cpuRuns);
  row(`  vs node:net TCP (C column: TCP)`, 's', median(cpu.ts), median(cpu.tcp), '—', null, cpuRuns);
  // The same pairs reading with onread (one buffer reused, no Buffer per read), as rstream reads.
  const o = streamRuns('sock-tsonread', 'bw', size);
  const onreadCpu = streamPairCpuPerGib(`sock-tsonread-bw-${size}`);
  sockets[`onread_${size}`] = { ts: o, cpu_per_gib: onreadCpu };
  const onreadRuns = `${o.length} TS onread, ${c.length} rstream`;
  row(`sockets with onread: throughput, ${label} writes (C: rstream -T b)`, 'MB/s', pick(o, 'mb_per_s'), rstreamMbps, '—', null, onreadRuns);
  row(`  CPU s per GiB, both sides (C: rstream -T b)`, 's', median(onreadCpu), median(cpu.rstream), '—', null, `${onreadCpu.length} TS onread, ${cpu.rstream.length} rstream`);
}
for (const size of [64, 4096]) {
  const { ts: t, rstream: c, tcp: n } = socketRuns('', 'lat', size);
  const cTcp = rstreamRuns('sock-ctcp', 'lat', size);
  sockets[`lat_${size}`] = { ts: t, rstream: c, tcp: n, rstream_tcp: cTcp };
  const runs = `${t.length} TS, ${c.length} rstream, ${n.length} TCP`;
  // rstream prints only its mean (usec/xfer: half the round trip with -C 1): the p50 is held against that.
  row(`sockets: ping-pong p50 ${size} B (C: rstream's mean)`, 'µs', pick(t, 'p50_us'), pick(c, 'usec_per_xfer'), '≤ 1.3×', (r) => r <= 1.3, runs);
  row(`  mean ${size} B (both: usec/xfer)`, 'µs', pick(t, 'usec_per_xfer'), pick(c, 'usec_per_xfer'), '—', null, runs);
  row(`  p99 ${size} B (rstream prints none)`, 'µs', pick(t, 'p99_us'), null, '—', null, runs);
  row(`  p50 ${size} B vs node:net TCP p50`, 'µs', pick(t, 'p50_us'), pick(n, 'p50_us'), '—', null, runs);
  row(`  p99 ${size} B vs node:net TCP p99`, 'µs', pick(t, 'p99_us'), pick(n, 'p99_us'), '—', null, runs);
  // No RDMA on either side: what the guest charges a Node socket against C's over the same TCP.
  row(`  node:net TCP's mean ${size} B (TS column) vs rstream -T s (C over TCP)`, 'µs', pick(n, 'usec_per_xfer'), pick(cTcp, 'usec_per_xfer'), '—', null, `${n.length} TCP, ${cTcp.length} rstream -T s`);
  if (size !== 64) continue;
  // The 64 B ping-pong on the newest Node line too (bench/guest.sh's NEXT_NODE), against the same rstream runs.
  const next = streamRuns('sock-tsnext', 'lat', 64);
  sockets.lat_64_next_node = { node: nextNodeVersion, ts: next };
  const nextRuns = `${next.length} TS, ${c.length} rstream`;
  row(`sockets on Node ${nextNodeVersion}: ping-pong p50 64 B (C: rstream's mean)`, 'µs', pick(next, 'p50_us'), pick(c, 'usec_per_xfer'), '≤ 1.3×', (r) => r <= 1.3, nextRuns);
  row(`  p99 64 B on Node ${nextNodeVersion} (rstream prints none)`, 'µs', pick(next, 'p99_us'), null, '—', null, `${next.length} TS`);
}
{
  // Across the link between two guests (bench/link.sh): the same pairs, host 0 serving, host 1 the client.
  const link: Record<string, unknown> = {};
  sockets.link = link;
  const bwEventsLink = collect(/^link-c-bwev-65536-r\d+\.txt$/, perftest);
  link.ib_send_bw_events_65536 = bwEventsLink;
  for (const [size, label] of [[65536, '64 KiB'], [1048576, '1 MiB']] as const) {
    const { ts: t, rstream: c, tcp: n } = (link[`bw_${size}`] = socketRuns('link-', 'bw', size));
    if (!t.length && !c.length && !n.length) continue;
    const runs = `${t.length} TS, ${c.length} rstream, ${n.length} TCP`;
    row(`two guests: throughput, ${label} writes (C: rstream -T b)`, 'MB/s', pick(t, 'mb_per_s'), median(c.map((line) => size / line.usec_per_xfer!)), '≥ 1.0×', (r) => r >= 1.0, runs);
    if (size === 65536) {
      row('  vs ib_send_bw -e 64 KiB (C: verbs on events)', 'MB/s', pick(t, 'mb_per_s'), pick(bwEventsLink, 'BW average[MB/sec]'), '≥ 0.9×', (r) => r >= 0.9, `${t.length} TS, ${bwEventsLink.length} C`);
    }
    row(`  vs node:net TCP, ${label} writes (C column: TCP)`, 'MB/s', pick(t, 'mb_per_s'), pick(n, 'mb_per_s'), '—', null, runs);
    row(`  CPU s per GiB, the client (TS column) vs node:net TCP's`, 's', pick(t, 'cpu_s_per_gib'), pick(n, 'cpu_s_per_gib'), '—', null, runs);
  }
  for (const size of [64, 4096]) {
    const { ts: t, rstream: c, tcp: n } = (link[`lat_${size}`] = socketRuns('link-', 'lat', size));
    if (!t.length && !c.length && !n.length) continue;
    const runs = `${t.length} TS, ${c.length} rstream, ${n.length} TCP`;
    row(`two guests: ping-pong p50 ${size} B (C: rstream's mean)`, 'µs', pick(t, 'p50_us'), pick(c, 'usec_per_xfer'), '≤ 1.3×', (r) => r <= 1.3, runs);
    row(`  p50 ${size} B vs node:net TCP's`, 'µs', pick(t, 'p50_us'), pick(n, 'p50_us'), '—', null, runs);
    row(`  p99 ${size} B vs node:net TCP's`, 'µs', pick(t, 'p99_us'), pick(n, 'p99_us'), '—', null, runs);
  }
}
{
  // The same pair of TCP ping-pongs on the host's loopback, natively (bench/run.sh, where rstream is installed).
  const n = collect(/^host-tcp-64-r\d+\.json$/, json);
  const c = collect(/^host-ctcp-64-r\d+\.txt$/, rstreamLine);
  sockets.host_tcp_64 = { tcp: n, rstream_tcp: c };
  if (n.length || c.length) row('host: node:net TCP\'s mean 64 B (TS column) vs rstream -T s, loopback', 'µs', pick(n, 'usec_per_xfer'), pick(c, 'usec_per_xfer'), '—', null, `${n.length} TCP, ${c.length} rstream -T s`);
}
{
  const t = readJson('sock-conns-rdma.json');
  const n = readJson('sock-conns-tcp.json');
  const c = readJson('sock-conns-rsocket.json');
  sockets.connections = { ts: t, tcp: n, rsocket: c };
  row('sockets: connections per second, open + close (C: rsockets)', 'conn/s', t?.per_second ?? null, c?.per_second ?? null, '—', null, `${t ? 1 : 0} TS, ${c ? 1 : 0} C`);
  row('  the same vs node:net TCP', 'conn/s', t?.per_second ?? null, n?.per_second ?? null, '—', null, `${t ? 1 : 0} TS, ${n ? 1 : 0} TCP`);
}
{
  const heap = readJson('sock-heap.json');
  sockets.heap = heap;
  // A leak of even 4 B per 64 KiB chunk read would grow it by 64 KiB over 1 GiB; collections leave tens of KiB of noise either way.
  row(`sockets: JS heap growth over ${heap?.mib ?? '?'} MiB streamed`, 'B', heap?.heap_growth_bytes ?? null, null, 'none (≤ 64 KiB)', (_r, ts) => ts <= 65536, heap ? '1 TS' : '0');
  const rounds = (heap as unknown as { rounds?: { mib: number; heap_growth_bytes: number }[] } | undefined)?.rounds ?? [];
  rounds.forEach((round, i) => row(`  heap growth, round ${i + 1} of ${rounds.length} (${round.mib} MiB)`, 'B', round.heap_growth_bytes, null, '—', null, '1 TS'));
}

const overhead = readJson('overhead.json');
raw_.overhead = overhead;
if (overhead) {
  // Bound calls are opt-in (RDMACM_BOUND_CALLS=1): the plain rows are what a user gets by default.
  row('host: ns per prepared post (JS+FFI), bound call', 'ns', overhead.prepared_post_ns!, null, 'estimate', null, 'host');
  row('host: ns per cq.poll() (JS+FFI), bound call', 'ns', overhead.cq_poll_empty_ns!, null, 'estimate', null, 'host');
  if (overhead.prepared_post_plain_call_ns !== undefined) {
    row('host: ns per prepared post, plain call (the default)', 'ns', overhead.prepared_post_plain_call_ns, null, 'estimate', null, 'host');
    row('host: ns per cq.poll(), plain call (the default)', 'ns', overhead.cq_poll_plain_call_ns!, null, 'estimate', null, 'host');
  }
  row('host: JS overhead per half round trip', 'ns', overhead.js_overhead_per_half_rtt_ns!, null, 'estimate', null, 'host');
  row('host: JS overhead per streamed message', 'ns', overhead.js_overhead_per_message_ns!, null, 'estimate', null, 'host');
}

// ---------------------------------------------------------------- output
const fmt = (v: number | null, unit = '') => (v === null ? '—' : unit === 'Mpps' ? v.toFixed(4) : Math.abs(v) >= 100 ? v.toFixed(0) : v.toFixed(2));
const header = ['figure', 'unit', 'TS', 'C', 'TS/C', 'target', 'met', 'runs'];
const body = rows.map((r) => [r.figure, r.unit, fmt(r.ts, r.unit), fmt(r.c, r.unit), r.ratio === null ? '—' : `${r.ratio.toFixed(2)}×`, r.target,
  r.met === null ? '' : r.met ? 'met' : 'MISSED', r.runs]);
const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
const line = (cells: string[]) => '| ' + cells.map((c, i) => (i >= 2 && i <= 4 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join(' | ') + ' |';
const table = [line(header), '|' + widths.map((w, i) => (i >= 2 && i <= 4 ? '-'.repeat(w + 1) + ':' : '-'.repeat(w + 2))).join('|') + '|', ...body.map(line)].join('\n');
console.log(`rdmacm bench, ${stamp}, ${where} (medians; 2-core host shared with other VMs: noisy)\n`);
console.log(table);
const missed = rows.filter((r) => r.met === false).map((r) => r.figure);
const unknown = rows.filter((r) => r.met === null && r.target !== '—' && r.target !== 'estimate').map((r) => r.figure);
console.log(`\ntargets: ${rows.filter((r) => r.met === true).length} met, ${missed.length} missed${missed.length ? ` (${missed.join('; ')})` : ''}` +
  `${unknown.length ? `, ${unknown.length} not measured (${unknown.join('; ')})` : ''}`);

const document = { stamp, where, node: process.version, rows, raw: raw_ };
writeFileSync(join(results, `${stamp}.json`), JSON.stringify(document, null, 2) + '\n');
writeFileSync(join(results, 'latest.json'), JSON.stringify(document, null, 2) + '\n');
writeFileSync(join(results, 'latest.svg'), svg());
writeFileSync(join(results, `${stamp}.svg`), svg());
writeFileSync(join(results, 'latest-table.md'), table + '\n');

/** Paired horizontal bars, TS above C, each pair scaled to its larger value. */
function svg(): string {
  const pairs = rows.filter((r) => (r.figure.startsWith('lat p50') || r.figure.startsWith('lat p99 ') || r.figure.startsWith('lat min') ||
    r.figure.startsWith('send bw') || r.figure.startsWith('msg rate 64 ')) && (r.ts !== null || r.c !== null));
  const W = 760, left = 250, barMax = 400, rowH = 44, top = 50;
  const H = top + pairs.length * rowH + 40;
  const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="#fff"/>`,
    `<text x="${W / 2}" y="22" text-anchor="middle" font-size="15" font-weight="bold">rdmacm (TS) vs perftest (C): latency percentiles and bandwidth by message size</text>`,
    `<text x="${W / 2}" y="38" text-anchor="middle" fill="#555">${esc(`${where}, ${stamp}; medians; latency: lower is better, bandwidth: higher is better`)}</text>`,
  ];
  pairs.forEach((r, i) => {
    const y = top + i * rowH;
    const max = Math.max(r.ts ?? 0, r.c ?? 0) || 1;
    parts.push(`<text x="${left - 8}" y="${y + 20}" text-anchor="end">${esc(`${r.figure.replace(' (C: t_typical)', '')} (${r.unit})`)}</text>`);
    [['TS', r.ts, '#3b6fb6'], ['C', r.c, '#d9822b']].forEach(([name, value, color], k) => {
      const v = value as number | null;
      const w = v === null ? 0 : Math.max(1, (v / max) * barMax);
      const by = y + 4 + k * 17;
      parts.push(`<rect x="${left}" y="${by}" width="${w.toFixed(1)}" height="14" fill="${color}"/>`);
      parts.push(`<text x="${left + w + 5}" y="${by + 11}">${name} ${v === null ? 'n/a' : fmt(v, r.unit)}</text>`);
    });
    if (r.ratio !== null) parts.push(`<text x="${W - 10}" y="${y + 20}" text-anchor="end" fill="${r.met === false ? '#b00' : '#333'}">${r.ratio.toFixed(2)}×</text>`);
  });
  parts.push(`<rect x="${left}" y="${H - 26}" width="12" height="12" fill="#3b6fb6"/><text x="${left + 16}" y="${H - 16}">rdmacm bench (TypeScript)</text>`);
  parts.push(`<rect x="${left + 200}" y="${H - 26}" width="12" height="12" fill="#d9822b"/><text x="${left + 216}" y="${H - 16}">ib_send_lat / ib_send_bw (C)</text>`);
  parts.push('</svg>');
  return parts.join('\n') + '\n';
}
