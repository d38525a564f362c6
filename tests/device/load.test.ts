// Load: many connections made, used and torn down one after another must leave
// nothing behind — no file descriptors, no kernel RDMA objects (cm_id, qp, cq,
// mr, pd as `rdma resource show` lists them for this process), no fd watchers
// and no growth of the JavaScript heap.
// RDMACM_LOAD_CYCLES sets the number of cycles (default 2000).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { MemoryRegion } from '../../src/index.js';
import { FdWatcher } from '../../src/api/core/fd-watcher.js';
import { connectPair } from '../support/pair.js';
import { openFds, rdmaCounts, type RdmaCounts } from '../support/resources.js';

const MESSAGE = 64;
const WARM_UP = 5;
const CYCLES = Number(process.env.RDMACM_LOAD_CYCLES ?? 2000);
/**
 * Heap tolerance after a full GC: V8's heap is not byte-exact between two
 * points (compiled code, inline caches, feature flags settle over time), so a
 * leak is growth beyond 4 MiB. A leak of even one small object per cycle would
 * pass that at 2000 cycles only if it were under ~2 KiB, so the per-cycle
 * figure is printed too.
 */
const HEAP_TOLERANCE = 4 * 1024 * 1024;

/** global.gc, whether or not node was started with --expose-gc. */
function getGc(): () => void {
  const existing = (globalThis as { gc?: () => void }).gc;
  if (existing) return existing;
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

/** Connect, one message each way (contents checked), disconnect on both sides, close. */
async function cycle(round: number, whileConnected?: () => void): Promise<void> {
  const inboxes = new Map<string, MemoryRegion>();
  const pair = await connectPair({
    qp: { sendWr: 2, recvWr: 2, inlineData: MESSAGE },
    beforeConnect: (id, side) => {
      const inbox = id.regMsgs(Buffer.alloc(MESSAGE));
      id.postRecv(inbox);
      inboxes.set(side, inbox);
    },
  });
  try {
    const { client, server } = pair;
    client.postSend(Buffer.alloc(MESSAGE, round & 0xff), { inline: true });
    const atServer = await server.queuePair.nextRecvCompletion();
    assert.equal(atServer.byteLen, MESSAGE);
    assert.equal(inboxes.get('server')!.buffer[MESSAGE - 1], round & 0xff);
    server.postSend(Buffer.alloc(MESSAGE, (round + 1) & 0xff), { inline: true });
    const atClient = await client.queuePair.nextRecvCompletion();
    assert.equal(atClient.byteLen, MESSAGE);
    assert.equal(inboxes.get('client')!.buffer[0], (round + 1) & 0xff);
    await Promise.all([client.queuePair.nextSendCompletion(), server.queuePair.nextSendCompletion()]);
    whileConnected?.();
    // The client hangs up; the server answers with its own disconnect (README: two calls).
    const serverDone = server.waitForDisconnect({ timeoutMs: 10_000 }).then(() => server.disconnect());
    await client.disconnect({ timeoutMs: 10_000 });
    await serverDone;
    assert.ok(client.disconnected && server.disconnected, 'both sides saw DISCONNECTED');
  } finally {
    pair.close();
  }
}

interface Snapshot {
  readonly fds: number;
  readonly watchers: number;
  readonly rdma: RdmaCounts;
  readonly heap: number;
}

function snapshot(gc: () => void): Snapshot {
  for (let i = 0; i < 3; i++) gc();
  return { fds: openFds(), watchers: FdWatcher.open, rdma: rdmaCounts(), heap: process.memoryUsage().heapUsed };
}

const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(2)} MiB`;

test(`${CYCLES} connect/transfer/disconnect/close cycles leave nothing behind`, { timeout: 900_000 }, async () => {
  const gc = getGc();
  // The counts must see this process's objects, or "back at the baseline" would prove nothing.
  let connected: RdmaCounts | undefined;
  await cycle(0, () => (connected = rdmaCounts()));
  console.log(`load: while one pair is connected: rdma ${JSON.stringify(connected)}`);
  assert.ok(connected!.cm_id >= 3, 'rdma resource show lists the listener, server and client cm_ids of this process');
  assert.ok(connected!.qp >= 2 && connected!.cq >= 2 && connected!.mr >= 2 && connected!.pd >= 1, 'and their qp, cq, mr and pd');
  for (let round = 1; round < WARM_UP; round++) await cycle(round);
  // Let librdmacm's timewait and the kernel's deferred frees settle before the baseline.
  await new Promise((resolve) => setTimeout(resolve, 200));
  const before = snapshot(gc);
  console.log(`load: baseline after ${WARM_UP} warm-up cycles: fds ${before.fds}, fd watchers ${before.watchers}, `
    + `rdma ${JSON.stringify(before.rdma)}, heap ${mib(before.heap)}`);

  const started = performance.now();
  for (let round = 0; round < CYCLES; round++) await cycle(round);
  const elapsed = performance.now() - started;

  // rdma_destroy_id returns before the kernel has freed everything for some kinds: give it a moment.
  let after = snapshot(gc);
  for (let i = 0; i < 20 && JSON.stringify(after.rdma) !== JSON.stringify(before.rdma); i++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    after = snapshot(gc);
  }
  const growth = after.heap - before.heap;
  console.log(`load: ${CYCLES} cycles in ${(elapsed / 1000).toFixed(1)} s, ${(elapsed / Math.max(CYCLES, 1)).toFixed(1)} ms per cycle`);
  console.log(`load: after: fds ${after.fds} (before ${before.fds}), fd watchers ${after.watchers} (before ${before.watchers}), `
    + `rdma ${JSON.stringify(after.rdma)} (before ${JSON.stringify(before.rdma)}), `
    + `heap ${mib(after.heap)} (before ${mib(before.heap)}, growth ${mib(growth)}, ${(growth / Math.max(CYCLES, 1)).toFixed(0)} B per cycle, tolerance ${mib(HEAP_TOLERANCE)})`);

  assert.ok(CYCLES > 0, 'RDMACM_LOAD_CYCLES must be a positive number');
  assert.equal(after.fds, before.fds, 'open file descriptors are back at the baseline');
  assert.equal(after.watchers, before.watchers, 'fd watchers are back at the baseline');
  assert.deepEqual(after.rdma, before.rdma, 'rdma resource counts (cm_id, qp, cq, mr, pd) are back at the baseline');
  assert.ok(growth < HEAP_TOLERANCE, `the heap grew by ${mib(growth)} (tolerance ${mib(HEAP_TOLERANCE)})`);
});
