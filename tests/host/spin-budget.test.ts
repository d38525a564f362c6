// Adaptive mode's learned spin budget (src/api/work/spin-budget.ts), without a
// device: waits are simulated in ms, as a queue would report them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { MAX_HOLD_OFF, SpinBudget, UNPAID_WAITS } from '../../src/api/work/spin-budget.js';

const FLOOR = 0.05;
const CEILING = 1;
/** A wake-up in the soft-RoCE guest (docs/performance.md: 250-450 µs), and its round trip when both sides poll. */
const WAKE = 0.3;
const ROUND_TRIP = 0.055;

/**
 * A ping-pong's two sides, each waiting for the other's message: a side's
 * wait takes a round trip if the peer caught the message it answers by
 * polling, and a wake-up more if the peer slept; a side whose budget does not
 * cover its wait sleeps and pays its own wake-up too. Returns, per round trip,
 * whether both sides caught their message.
 */
function pingPong(floor: number, ceiling: number, roundTrips: number): boolean[] {
  const sides = [new SpinBudget(floor, ceiling), new SpinBudget(floor, ceiling)];
  const slept = [true, true]; // the slow state: both sides asleep
  const fast: boolean[] = [];
  for (let i = 0; i < roundTrips; i++) {
    for (const side of [0, 1]) {
      const arrives = ROUND_TRIP + (slept[1 - side] ? WAKE : 0);
      const budget = sides[side]!;
      slept[side] = budget.ms < arrives;
      if (slept[side]) budget.slept(arrives + WAKE);
      else budget.caught(arrives);
    }
    fast.push(!slept[0] && !slept[1]);
  }
  return fast;
}

test('a fixed budget (ceiling at the floor) leaves a ping-pong whose wake-ups outlast it asleep on both sides', () => {
  const fast = pingPong(FLOOR, FLOOR, 1000);
  assert.equal(fast.filter(Boolean).length, 0);
});

test('a learned budget takes both sides of that ping-pong off sleeping within a few round trips, and keeps them off', () => {
  const fast = pingPong(FLOOR, CEILING, 1000);
  const firstFast = fast.indexOf(true);
  assert.ok(firstFast >= 0 && firstFast < 5, `first fast round trip: ${firstFast}`);
  assert.ok(fast.slice(firstFast).every(Boolean), 'every round trip after it caught by polling');
});

test('two sleeping waits in a row within the ceiling grow the budget; one among caught waits does not', () => {
  const budget = new SpinBudget(FLOOR, CEILING);
  for (let i = 0; i < 1000; i++) {
    if (i % 5 === 0) budget.slept(0.6); // a stream whose sender pauses now and then
    else budget.caught(0.02);
  }
  assert.equal(budget.ms, FLOOR);
  budget.slept(0.5);
  budget.slept(0.6);
  assert.equal(budget.ms, 0.6, 'grown to the second one\'s length');
});

test('a grown budget stays while spinning pays for it, whatever the caught waits', () => {
  const budget = new SpinBudget(FLOOR, CEILING);
  budget.slept(0.6);
  budget.slept(0.6);
  assert.equal(budget.ms, 0.6);
  for (let i = 0; i < 1000; i++) budget.caught(i % 10 === 0 ? 0.25 : ROUND_TRIP);
  assert.equal(budget.ms, 0.6, 'each wait caught in half of 0.6 ms or less paid for it');
});

test('waits it does not pay for, UNPAID_WAITS in a row, return a grown budget to the floor: idle ones too', () => {
  const budget = new SpinBudget(FLOOR, CEILING);
  budget.slept(5);
  budget.slept(5);
  assert.equal(budget.ms, FLOOR, 'no growth past the ceiling');
  budget.slept(0.6);
  budget.slept(0.6);
  for (let i = 1; i < UNPAID_WAITS; i++) budget.slept(5);
  budget.caught(0.1); // paid: the count starts again
  for (let i = 1; i < UNPAID_WAITS; i++) budget.caught(0.4);
  assert.equal(budget.ms, 0.6, `${UNPAID_WAITS - 1} unpaid waits in a row`);
  budget.slept(5);
  assert.equal(budget.ms, FLOOR, `${UNPAID_WAITS} unpaid waits in a row`);
});

test('a stream that polling cannot hurry falls back each time, and spins past the floor on fewer waits each time', () => {
  // Messages every 0.8 ms, each one caught only by spinning the whole period: spinning saves no time.
  const period = 0.8;
  const budget = new SpinBudget(FLOOR, CEILING);
  const waits = 20_000;
  let spunPastFloor = 0;
  const growths: number[] = [];
  for (let i = 0; i < waits; i++) {
    if (budget.ms > FLOOR) spunPastFloor++;
    if (budget.ms >= period) budget.caught(period);
    else {
      const before = budget.ms;
      budget.slept(period + 0.015);
      if (budget.ms > before) growths.push(i);
    }
  }
  assert.ok(growths.length >= 2, 'it grew more than once');
  const gaps = growths.slice(1).map((at, i) => at - growths[i]!);
  assert.ok(gaps.every((gap, i) => i === 0 || gap >= gaps[i - 1]!), `the gaps between growths never shrink: ${gaps.join(' ')}`);
  assert.ok(gaps.at(-1)! >= MAX_HOLD_OFF, `the last gap reached the longest hold-off: ${gaps.at(-1)}`);
  assert.ok(spunPastFloor <= growths.length * UNPAID_WAITS, `${spunPastFloor} waits spun past the floor after ${growths.length} growths`);
  assert.ok(spunPastFloor / waits < 0.01, `${spunPastFloor} of ${waits} waits spun past the floor`);
});

test('a budget that paid for itself resets the hold-off to one wait', () => {
  const budget = new SpinBudget(FLOOR, CEILING);
  budget.slept(0.8);
  budget.slept(0.8);
  for (let i = 0; i < UNPAID_WAITS; i++) budget.caught(0.8); // unpaid: back to the floor, held off for one wait
  assert.equal(budget.ms, FLOOR);
  budget.slept(0.6); // held off
  budget.slept(0.6);
  assert.equal(budget.ms, FLOOR);
  budget.slept(0.6);
  assert.equal(budget.ms, 0.6);
  budget.caught(0.06); // paid
  for (let i = 0; i < UNPAID_WAITS; i++) budget.slept(5); // idle: back to the floor, held off for one wait
  budget.slept(0.7);
  budget.slept(0.7);
  assert.equal(budget.ms, FLOOR);
  budget.slept(0.7);
  assert.equal(budget.ms, 0.7);
});

test('whatever the waits, the budget stays within the floor and the ceiling', () => {
  fc.assert(fc.property(
    fc.double({ min: 0, max: 1, noNaN: true }), fc.double({ min: 0, max: 2, noNaN: true }),
    fc.array(fc.tuple(fc.boolean(), fc.double({ min: 0, max: 5, noNaN: true })), { maxLength: 200 }),
    (floor, ceiling, waits) => {
      const budget = new SpinBudget(floor, ceiling);
      for (const [slept, waited] of waits) {
        if (slept) budget.slept(waited);
        else budget.caught(waited);
        if (budget.ms < floor || budget.ms > Math.max(floor, ceiling)) return false;
      }
      return true;
    },
  ));
});
