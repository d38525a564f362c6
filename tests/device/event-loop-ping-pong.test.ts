// Ping-pongs on the event loop, each mode against the same guest's node:net
// TCP with a 1 ms timer beside them: the timer still fires on time (no mode
// starves the loop), also with 50 ping-pongs over 100 queues in one process;
// and adaptive mode's learned spin budget pays where a wake-up is dear. These
// are the device tier's long runs of `rdmacm bench`: the second device pass
// (scripts/test.sh) leaves them to the first.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Buffer } from 'node:buffer';
import process from 'node:process';
import { COMPLETION_MODES, type CmId, type PreparedRecv } from '../../src/index.js';
import { TimerProbe } from '../../src/bench/timer-probe.js';
import { benchPair } from '../support/bench-pair.js';
import { busyProcesses } from '../support/busy-processes.js';
import { connectPair, type Pair } from '../support/pair.js';

// The target, 2 ms p99 late, is the bench's (`npm run bench` reports it per
// mode). Here the guard is against starvation, judged against the same guest's
// node:net TCP ping-pong with the same timer, measured first in this run: a
// loaded emulator makes every p99 noise (TCP's read 10–31 ms with other VMs
// running), while a starved loop shows in the median (busy-poll's was tens of
// ms before its time slice) and in the ticks.
/** A mode's median lateness may exceed TCP's by this factor plus this many ms. */
const MEDIAN_FACTOR = 2;
const MEDIAN_SLACK_MS = 1;
const MESSAGE = 64;
const ROUNDS_EACH = 40;
const receives = new Map<CmId, PreparedRecv>();
const PING_PONGS = ['-n', '2000', '-w', '200', '-s', '64'];
interface Lateness { timer_ticks: number; timer_p50_ms: number; timer_p99_ms: number; timer_max_ms: number }
const describe = (figures: Lateness) =>
  `1 ms timer: ${figures.timer_ticks} ticks, late p50 ${figures.timer_p50_ms} ms, p99 ${figures.timer_p99_ms} ms, max ${figures.timer_max_ms} ms`;

let tcpP50Ms = Number.NaN;

/** `sliceMs`: the time slices a loop that completions keep busy spends in a turn, so its timers may wait that long on top. */
function assertNotStarved(figures: Lateness, sliceMs = 0): void {
  const bound = MEDIAN_FACTOR * tcpP50Ms + MEDIAN_SLACK_MS + sliceMs;
  const slice = sliceMs > 0 ? `, ${sliceMs} ms of time slices among them` : '';
  assert.ok(figures.timer_p50_ms <= bound, `the timer's median lateness was ${figures.timer_p50_ms} ms (bound ${bound} ms${slice}; TCP's ${tcpP50Ms} ms)`);
}

test('node:net TCP ping-pong in this guest with a 1 ms timer beside it (the reference)', { timeout: 300_000 }, async () => {
  const { client } = await benchPair(['stream', '--tcp', '-S', '64', '-C', '1', '-I', '2000', '-w', '200'], { server: ['-l'], client: ['--timer'] });
  const figures = client as unknown as Lateness & { p50_us: number };
  console.log(`# tcp: half round trip p50 ${figures.p50_us} µs; ${describe(figures)}`);
  assert.ok(figures.timer_ticks >= 100, `the timer ticked ${figures.timer_ticks} times`);
  tcpP50Ms = figures.timer_p50_ms;
});

for (const mode of COMPLETION_MODES) {
  test(`${mode}: a 1 ms timer beside a 64 B ping-pong fires on time (median lateness within ${MEDIAN_FACTOR}× TCP's + ${MEDIAN_SLACK_MS} ms)`, { timeout: 300_000 }, async () => {
    const { client } = await benchPair(['lat', '--wait', mode, ...PING_PONGS], { client: ['--timer'] });
    const figures = client as unknown as Lateness & { iters: number; p50_us: number; p99_us: number };
    console.log(`# ${mode}: half round trip p50 ${figures.p50_us} µs p99 ${figures.p99_us} µs; ${describe(figures)}`);
    assert.equal(figures.iters, 2000);
    // Without starvation a 1 ms timer ticks through the run, warm-up included: 538-2429 times in two runs of 2026-12-02, busy-poll the fewest.
    assert.ok(figures.timer_ticks >= 100, `the timer ticked ${figures.timer_ticks} times`);
    assertNotStarved(figures);
  });
}

test('100 queues in adaptive mode, 50 ping-pongs at once in this process: a 1 ms timer still fires on time', { timeout: 300_000 }, async () => {
  const pairs: Pair[] = [];
  try {
    for (let i = 0; i < 50; i++) {
      pairs.push(await connectPair({
        beforeConnect: (id) => {
          const recv = id.queuePair.prepareRecv(id.regMsgs(Buffer.alloc(MESSAGE)));
          for (let r = 0; r < 8; r++) recv.post();
          receives.set(id, recv);
        },
      }));
    }
    const probe = new TimerProbe();
    probe.start();
    const started = performance.now();
    await Promise.all(pairs.map(async ({ client, server }) => {
      const ping = client.queuePair.prepareSend(Buffer.alloc(MESSAGE), { inline: true, signaled: false });
      const pong = server.queuePair.prepareSend(Buffer.alloc(MESSAGE), { inline: true, signaled: false });
      const pingSignaled = client.queuePair.prepareSend(Buffer.alloc(MESSAGE), { inline: true });
      const pongSignaled = server.queuePair.prepareSend(Buffer.alloc(MESSAGE), { inline: true });
      for (let round = 0; round < ROUNDS_EACH; round++) {
        // An unsignaled send's slot is freed by a later signaled one: every 4th is signaled and reaped.
        const signaled = (round & 3) === 3;
        (signaled ? pingSignaled : ping).post();
        await server.queuePair.recvCq.next();
        receives.get(server)!.post();
        (signaled ? pongSignaled : pong).post();
        await client.queuePair.recvCq.next();
        receives.get(client)!.post();
        if (signaled) await Promise.all([client.queuePair.nextSendCompletion(), server.queuePair.nextSendCompletion()]);
      }
    }));
    const elapsed = performance.now() - started;
    const lateness = probe.stop();
    console.log(`# 100 adaptive queues, 50 ping-pongs × ${ROUNDS_EACH}: ${(elapsed / 1000).toFixed(1)} s; ${describe(lateness)}`);
    assert.ok(lateness.timer_ticks >= 100, `the timer ticked ${lateness.timer_ticks} times`);
    // 50 ping-pongs never let the loop idle: a turn may spend a slice on channel wake-ups
    // in its poll phase and another on scheduled polls in its check phase before timers
    // run again. Medians read 0.97-2.10 ms in the guests; before there was a slice the
    // loop's delay read 94-135 ms p50 (performance-notes.md).
    assertNotStarved(lateness, 2 * pairs[0]!.client.queuePair.recvCq.timeSliceMs);
  } finally {
    for (const pair of pairs) pair.close();
  }
});

test('adaptive learns its budget: where a wake-up outlasts a fixed 50 µs budget, the learned one takes a ping-pong off sleeping', { timeout: 600_000 }, async () => {
  // The same ping-pong with the budget fixed at its floor (--max-spin 50), then learned (the default, up to 5000 µs).
  // 2000 warm-up round trips: V8 compiles the loop through the first thousands, and each compile's stall is a wait
  // the budget did not pay for. Spinning takes a vCPU of two, so another busy process in the guest can make the
  // learned budget lose (one clean-clone CI run: 6034 µs against 2534, budgets fallen back; alone, the same host
  // read 0.37 twice): what else ran is printed, and a miss gets one more pair of runs (performance-notes.md).
  const pingPongs = ['-n', '2000', '-w', '2000', '-s', '64'];
  let verdict = '';
  for (let attempt = 1; attempt <= 2; attempt++) {
    const othersBusy = await busyProcesses();
    const cpuBefore = process.cpuUsage();
    const started = performance.now();
    const fixed = (await benchPair(['lat', '--wait', 'adaptive', '--max-spin', '50', ...pingPongs])).client as { p50_us: number; spin_budget_us: number };
    const learned = await benchPair(['lat', '--wait', 'adaptive', ...pingPongs]);
    const cpu = process.cpuUsage(cpuBefore);
    const ownShare = (cpu.user + cpu.system) / 1000 / (performance.now() - started);
    const client = learned.client as { p50_us: number; spin_budget_us: number };
    const server = learned.server as { spin_budget_us: number };
    console.log(`# attempt ${attempt}: half round trip p50: fixed 50 µs budget ${fixed.p50_us} µs, learned ${client.p50_us} µs (budgets at the end: ` +
      `client ${client.spin_budget_us} µs, server ${server.spin_budget_us} µs); this test process meanwhile ${(ownShare * 100).toFixed(2)} % of a CPU; ` +
      `other processes over 5 % of a CPU just before: ${othersBusy.join(', ') || 'none'}`);
    assert.equal(fixed.spin_budget_us, 50, 'a ceiling at the floor fixes the budget');
    verdict = `learned p50 ${client.p50_us} µs against the fixed budget's ${fixed.p50_us}, budgets at the end ${client.spin_budget_us} and ${server.spin_budget_us} µs`;
    // Sleeping every round trip, as in the soft-RoCE guest (a wake-up there costs hundreds of µs): spinning pays.
    // The learned budget still falls back now and then (26-46 times in 2200 waits in a Debian 13 guest), so the
    // ratio moves: 0.17-0.41 alone there, 0.56 and 0.62 in clean-clone CI runs' Debian 13 passes (performance-notes.md).
    // The budgets at the end are printed, not judged: a budget that paid through the run may fall back in its last
    // waits (one clean-clone CI run's Debian 13 pass: learned 0.68× the fixed p50, both budgets back at 50 µs).
    // A wake-up within the floor (a NIC): the floor already caught what spinning could, and learning costs nothing.
    const learnedPaid = fixed.p50_us > 200 ? client.p50_us < 0.75 * fixed.p50_us : client.p50_us <= 1.5 * fixed.p50_us + 5;
    if (learnedPaid) return;
  }
  assert.fail(`in both attempts: ${verdict}`);
});
