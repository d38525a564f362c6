// The completion path as an event-loop citizen, in one process: adaptive mode
// is the default and its budget's bounds are checked; a wait polls for its
// budget and then sleeps; queues that have gone quiet cost no CPU. (A 1 ms
// timer beside ping-pongs in each mode: event-loop-ping-pong.test.ts.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Buffer } from 'node:buffer';
import { setTimeout as sleep } from 'node:timers/promises';
import type { CompletionMode } from '../../src/index.js';
import { supportProgramJson } from '../support/child-module.js';
import { connectPair } from '../support/pair.js';
import { settleGarbage } from '../support/gc.js';
import { describeThreadTimes, threadTimes } from '../support/thread-cpu.js';

test('adaptive is the default, with its budget\'s bounds; bad values are refused by name', { timeout: 60_000 }, async () => {
  const pair = await connectPair();
  try {
    const served = pair.server.queuePair.recvCq;
    assert.equal(served.mode, 'adaptive', 'adaptive is the default');
    assert.equal(served.spinBudgetUs, 50);
    assert.equal(served.maxSpinBudgetUs, 5000);
    assert.equal(served.learnedSpinBudgetUs, 50, 'a queue starts at its floor');
    assert.throws(() => (served.mode = 'spin' as CompletionMode), { code: 'ERR_INVALID_ARG_VALUE', message: /'adaptive', 'events', 'busy-poll'/ });
    assert.throws(() => (served.spinBudgetUs = 1.5), { code: 'ERR_OUT_OF_RANGE' });
    assert.throws(() => (served.maxSpinBudgetUs = -1), { code: 'ERR_OUT_OF_RANGE' });
    assert.throws(() => (served.timeSliceMs = Number.NaN), { code: 'ERR_OUT_OF_RANGE' });
    assert.throws(() => (served.timeSliceMs = '1' as never), { code: 'ERR_INVALID_ARG_TYPE' });
  } finally {
    pair.close();
  }
});

test('100 armed queues and one that just spun in adaptive mode: idle, the process costs ≤ 1 % of a CPU over 10 s', { timeout: 150_000 }, async () => {
  // In a process of its own (tests/support/idle-queues.ts): this one's earlier tests go on costing it CPU for a while.
  const idle = await supportProgramJson<{ share: number; describe: string }>('idle-queues', 120_000);
  console.log(`# 101 armed queues idle: ${idle.describe}`);
  assert.ok(idle.share <= 0.01, `idle armed queues used ${(idle.share * 100).toFixed(2)} % of a CPU`);
});

test('adaptive: a wait polls for its budget before it sleeps, also when poll() took the last completion (drain, then wait), and sleeps after it', { timeout: 120_000 }, async () => {
  // The CPU windows below are the whole process's: the tests before are let finish their aftermath first
  // (right after the 50 ping-pongs, the window after the budget read 33.5 % once).
  await settleGarbage();
  const pair = await connectPair({
    beforeConnect: (id, side) => {
      if (side === 'server') for (let i = 0; i < 2; i++) id.postRecv(id.regMsgs(Buffer.alloc(64)));
    },
  });
  try {
    const cq = pair.server.queuePair.recvCq;
    cq.spinBudgetUs = 400_000;
    pair.client.postSend(Buffer.alloc(64), { inline: true });
    let drained = 0;
    for (let i = 0; i < 2000 && drained === 0; i++) {
      drained = cq.poll();
      if (drained === 0) await sleep(1);
    }
    assert.equal(drained, 1, 'poll() took the first message');
    // Judged by the event loop's utilisation: a wait that polls keeps the loop turning (setImmediate), a sleeping
    // one leaves it blocked in epoll. CPU time is only printed: the process's counts V8's threads (one CI run read
    // 14.1 % after the budget), and the main thread's alone lost to them (29.0 % within the budget, while a V8
    // thread used 401 ms of the window).
    const window = async (ms: number) => {
      const threads = threadTimes(false);
      const loop = performance.eventLoopUtilization();
      await sleep(ms);
      const utilisation = performance.eventLoopUtilization(loop).utilization;
      return { utilisation, threads: describeThreadTimes(threads, threadTimes(true)) };
    };
    const wait = cq.next();
    wait.catch(() => undefined); // if an assertion below fails first, close() ends it
    const spinning = await window(200);
    await sleep(400); // the budget is over
    const asleep = await window(500);
    const percent = (share: number) => `${(share * 100).toFixed(1)} %`;
    console.log(`# drain, then wait: event-loop utilisation ${percent(spinning.utilisation)} within the budget (CPU by thread: ${spinning.threads}), ` +
      `${percent(asleep.utilisation)} after it (${asleep.threads})`);
    assert.ok(spinning.utilisation >= 0.5, `the wait polled within its budget (event-loop utilisation ${percent(spinning.utilisation)})`);
    assert.ok(asleep.utilisation <= 0.1, `the wait sleeps after its budget (event-loop utilisation ${percent(asleep.utilisation)})`);
    pair.client.postSend(Buffer.alloc(64), { inline: true });
    assert.equal((await wait).status, 'SUCCESS', 'the sleeping wait wakes for the next message');
  } finally {
    pair.close();
  }
});
