// What bench/connsetup.ts and bench/connsetup-raw.ts print: µs per connection
// for each of cmtime's steps, for the warm-up rounds and the measured round.

/** What cmtime's steps add up to before a connection carries data: create id through connect. */
export const setupTotal = (steps: Record<string, number>) =>
  Math.round((steps.create_id! + steps.resolve_addr! + steps.resolve_route! + steps.create_qp! + steps.connect!) * 100) / 100;

/** µs per connection, to 0.01 µs, for a step that took `ms` for `count` connections. */
export const perConnection = (ms: number, count: number) => Math.round(((ms * 1000) / count) * 100) / 100;

/** One JSON object on stdout: the measured round and the warm-up rounds before it. */
export function printRounds(count: number, warmup: Record<string, number>[], warm: Record<string, number>): void {
  console.log(JSON.stringify({
    connections: count,
    us_per_conn: warm,
    setup_us_per_conn: setupTotal(warm),
    warmup_rounds: warmup.map((steps) => ({ us_per_conn: steps, setup_us_per_conn: setupTotal(steps) })),
  }));
}
