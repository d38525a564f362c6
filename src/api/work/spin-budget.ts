// Adaptive mode's spin budget, learned per queue: how long a wait polls
// before it arms the channel and sleeps.
//
// The budget starts at a floor (the queue's spinBudgetUs). A wait that slept
// and still ended within the ceiling (maxSpinBudgetUs) says a spin that long
// would have caught its completion without a wake-up; two in a row say the
// queue sleeps as a rule, not once in a while (a stream whose sender paused),
// so the budget grows to the second one's length. A grown budget stays while
// it pays for itself: while the waits it catches end in half the time of the
// wait that grew it or less, that is, while a wake-up it saves costs at least
// as much as the spin. After UNPAID_WAITS waits in a row that it does not pay
// for (caught later than that, or slept anyway: a periodic stream that
// spinning cannot hurry, an idle queue) it falls back to the floor, and holds
// off growing for twice as many waits as the last time it fell back (one
// wait again once a budget has paid).
//
// On a NIC a wake-up costs microseconds and the floor already covers what a
// spin can save. Where a wake-up costs hundreds of them (an emulated guest, a
// loaded host), a ping-pong whose two sides both sleep leaves that state: each
// side's sleeping wait (its own wake-up and the peer's) is far longer than the
// round trip that spinning then catches.

/** Waits in a row a grown budget may go without paying for itself. */
export const UNPAID_WAITS = 4;
/** The longest hold-off, in waits (spins past the floor then come on at most 4 waits in ~1000). */
export const MAX_HOLD_OFF = 1024;

export class SpinBudget {
  #floorMs = 0;
  #ceilingMs = 0;
  #budgetMs = 0;
  /** The sleeping wait that grew the budget (0: the budget is the floor). */
  #grownByMs = 0;
  #unpaid = 0;
  /** The last wait slept, within the ceiling and past the budget: one more grows the budget. */
  #sleptBefore = false;
  /** Waits to go before the budget may grow again, and the length of the next hold-off. */
  #holdOff = 0;
  #nextHoldOff = 1;

  constructor(floorMs: number, ceilingMs: number) {
    this.setBounds(floorMs, ceilingMs);
  }

  /** The current budget, in ms. */
  get ms(): number {
    return this.#budgetMs;
  }

  /** New bounds (a ceiling under the floor is the floor: a fixed budget); what was learned is forgotten. */
  setBounds(floorMs: number, ceilingMs: number): void {
    this.#floorMs = floorMs;
    this.#ceilingMs = Math.max(floorMs, ceilingMs);
    this.#fallBack(0);
    this.#nextHoldOff = 1;
  }

  /** A wait found its completion by polling, `waitedMs` after it began. */
  caught(waitedMs: number): void {
    this.#holdingOff();
    this.#sleptBefore = false;
    if (this.#grownByMs === 0) return;
    if (waitedMs <= this.#grownByMs / 2) {
      this.#unpaid = 0;
      this.#nextHoldOff = 1;
    } else this.#unpaidWait();
  }

  /** A wait armed the channel and slept; its completion was taken `waitedMs` after it began. */
  slept(waitedMs: number): void {
    const holdingOff = this.#holdingOff();
    // Within the budget, its completion came as the budget ran out (after the arming's last poll).
    if (waitedMs > this.#ceilingMs || waitedMs <= this.#budgetMs || holdingOff) {
      this.#sleptBefore = false;
      if (this.#grownByMs > 0) this.#unpaidWait();
      return;
    }
    if (!this.#sleptBefore) {
      this.#sleptBefore = true;
      if (this.#grownByMs > 0) this.#unpaidWait();
      return;
    }
    this.#sleptBefore = false;
    this.#budgetMs = this.#grownByMs = waitedMs;
    this.#unpaid = 0;
  }

  /** Counts a wait against the hold-off: whether it was held off. */
  #holdingOff(): boolean {
    if (this.#holdOff === 0) return false;
    this.#holdOff--;
    return true;
  }

  #unpaidWait(): void {
    if (++this.#unpaid < UNPAID_WAITS) return;
    this.#fallBack(this.#nextHoldOff);
    this.#nextHoldOff = Math.min(MAX_HOLD_OFF, 2 * this.#nextHoldOff);
  }

  #fallBack(holdOff: number): void {
    this.#budgetMs = this.#floorMs;
    this.#grownByMs = 0;
    this.#unpaid = 0;
    this.#sleptBefore = false;
    this.#holdOff = holdOff;
  }
}
