// What bench/connsetup.ts and bench/connsetup-raw.ts print: µs per connection
// for each of cmtime's steps, for the warm-up rounds and the measured rounds.

/**
 * Untimed rounds before the measured ones (BENCH_CONN_WARMUP overrides it). A C
 * client is compiled before it starts; V8 compiles the setup path while it
 * runs, and under TCG each optimization takes tens of milliseconds of a helper
 * thread, while even the native calls run slower (rdma_create_qp 139–498 µs
 * in rounds 8–11, about 120 µs from round 31 on). In the guest on
 * 2026-11-23 (`--trace-opt`, 40 rounds of 100 connections), V8 finished 1–7
 * optimizations in nearly every round up to round 22 and one or two now and
 * then after it, and the safe API's setup fell from a median of 1801 µs per
 * connection over rounds 5–13 to 1208 over rounds 21–30.
 */
export const WARMUP_ROUNDS = Number(process.env.BENCH_CONN_WARMUP ?? 30);

/**
 * Measured rounds per process (BENCH_CONN_ROUNDS overrides it); bench/guest.sh
 * runs cmtime's client as many times against one server. Single rounds of 100
 * connections spread by ±30 % on both sides in the guest, so one round per
 * process left the ratio to chance.
 */
export const MEASURED_ROUNDS = Number(process.env.BENCH_CONN_ROUNDS ?? 5);

/** What cmtime's steps add up to before a connection carries data: create id through connect. */
export const setupTotal = (steps: Record<string, number>) =>
  Math.round((steps.create_id! + steps.resolve_addr! + steps.resolve_route! + steps.create_qp! + steps.connect!) * 100) / 100;

/** µs per connection, to 0.01 µs, for a step that took `ms` for `count` connections. */
export const perConnection = (ms: number, count: number) => Math.round(((ms * 1000) / count) * 100) / 100;

/** One round as printed: µs per connection by step, and their setup total. */
export interface ConnRound {
  us_per_conn: Record<string, number>;
  setup_us_per_conn: number;
}

const summary = (steps: Record<string, number>): ConnRound => ({ us_per_conn: steps, setup_us_per_conn: setupTotal(steps) });

/** Runs `round` WARMUP_ROUNDS times untimed, then MEASURED_ROUNDS times; prints one JSON object with every round. */
export async function measureRounds(count: number, round: () => Promise<Record<string, number>> | Record<string, number>): Promise<void> {
  const warmup: Record<string, number>[] = [];
  for (let i = 0; i < WARMUP_ROUNDS; i++) warmup.push(await round());
  const measured: Record<string, number>[] = [];
  for (let i = 0; i < MEASURED_ROUNDS; i++) measured.push(await round());
  console.log(JSON.stringify({
    connections: count,
    measured_rounds: measured.map(summary),
    warmup_rounds: warmup.map(summary),
  }));
}
