// The asynchronous API on the event loop: ping-pong, completion waits in either
// mode, a server with hundreds of connections on one thread, timeouts, aborts,
// peer disconnects and events of many ids interleaved on one channel.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import {
  createId, ConnectionError, EventChannel, RdmaError, WorkCompletionError, type CmId, type ConnectionEvent, type MemoryRegion, type PreparedRecv, type QpAttr,
} from '../../src/index.js';
import { FdWatcher, blockUntilReadable } from '../../src/api/core/fd-watcher.js';
import { deviceAddress, freshPort } from '../support/device.js';
import { connectPair } from '../support/pair.js';
import { assertAbortedWith } from '../support/errors.js';

const MESSAGE = 64;

/**
 * Resolves address and route and gives the id a small QP; `opened` gets the id at once, for the caller to close.
 * The timeouts are the connection's: hundreds dialled at once share one loop with each other's QP set-up.
 */
async function dial(channel: EventChannel, address: string, port: number, context: unknown, opened: CmId[]): Promise<CmId> {
  const id = createId(channel, { context });
  opened.push(id);
  await id.resolveAddr({ address, port }, { timeoutMs: 60_000 });
  await id.resolveRoute({ timeoutMs: 60_000 });
  id.createQp({ sendWr: 4, recvWr: 4, inlineData: MESSAGE });
  return id;
}

test('async ping-pong: 200 round trips, contents checked', { timeout: 120_000 }, async () => {
  // Each side's receive is prepared once and posted before the connection exists.
  const receives = new Map<CmId, { inbox: MemoryRegion; recv: PreparedRecv }>();
  const pair = await connectPair({
    qp: { sendWr: 4, recvWr: 4, inlineData: MESSAGE },
    beforeConnect: (id) => {
      const inbox = id.regMsgs(Buffer.alloc(MESSAGE));
      const recv = id.queuePair.prepareRecv(inbox);
      recv.post();
      receives.set(id, { inbox, recv });
    },
  });
  const { client, server } = pair;
  const { inbox: serverInbox, recv: serverRecv } = receives.get(server)!;
  const { inbox: clientInbox, recv: clientRecv } = receives.get(client)!;

  const ping = Buffer.alloc(MESSAGE);
  const pong = Buffer.alloc(MESSAGE);
  const sendPing = client.queuePair.prepareSend(ping, { inline: true });
  const sendPong = server.queuePair.prepareSend(pong, { inline: true });
  for (let round = 0; round < 200; round++) {
    ping.writeUInt32LE(round, 0);
    sendPing.post();
    await server.queuePair.nextRecvCompletion();
    assert.equal(serverInbox.buffer.readUInt32LE(0), round);
    serverRecv.post();
    pong.writeUInt32LE(round * 2, 0);
    sendPong.post();
    await client.queuePair.nextRecvCompletion();
    assert.equal(clientInbox.buffer.readUInt32LE(0), round * 2);
    clientRecv.post();
    await Promise.all([client.queuePair.nextSendCompletion(), server.queuePair.nextSendCompletion()]);
  }
  await pair.hangUp();
});

/** A connected pair whose server has `count` receives of MESSAGE bytes posted, receive i into slot i with context i. */
async function pairWithReceives(count: number, qp?: QpAttr) {
  let inbox!: MemoryRegion;
  const pair = await connectPair({
    ...(qp ? { qp } : {}),
    beforeConnect: (id, side) => {
      if (side !== 'server') return;
      inbox = id.regMsgs(Buffer.alloc(MESSAGE * count));
      for (let i = 0; i < count; i++) id.postRecv(inbox, { offset: i * MESSAGE, length: MESSAGE, context: i });
    },
  });
  return { pair, inbox };
}

test('waits that each find a completion at once: served in order, and their chain hands the loop a turn within its time slice', { timeout: 60_000 }, async () => {
  const COUNT = 400;
  const { pair } = await pairWithReceives(COUNT, { sendWr: COUNT, recvWr: COUNT, inlineData: MESSAGE });
  try {
    const { client, server } = pair;
    const cq = server.queuePair.recvCq;
    cq.timeSliceMs = 0.05;
    const payload = Buffer.alloc(MESSAGE);
    for (let i = 0; i < COUNT; i++) client.postSend(payload, { inline: true, signaled: i === COUNT - 1 });
    // Every receive is on the queue before the first wait: each wait finds its completion at once.
    assert.equal((await client.queuePair.nextSendCompletion()).status, 'SUCCESS');
    await new Promise((resolve) => setTimeout(resolve, 100));
    let taken = 0;
    for (const mode of ['adaptive', 'events'] as const) {
      cq.mode = mode;
      const first = taken;
      let takenWhenLoopTurned = -1;
      setImmediate(() => {
        takenWhenLoopTurned = taken;
      });
      for (const end = first + COUNT / 2; taken < end; taken++) assert.equal((await cq.next()).context, taken, `${mode}: completions in order`);
      // A turn spent before the chain may end its slice at the first wait.
      const turned = takenWhenLoopTurned < 0 ? 'not within the chain' : `after ${takenWhenLoopTurned - first} of ${COUNT / 2} waits`;
      assert.ok(takenWhenLoopTurned >= first && takenWhenLoopTurned < taken, `${mode}: the loop turned ${turned}`);
    }
  } finally {
    await pair.hangUp();
  }
});

test('events mode: a wait that begins past its time slice with nothing ready sleeps at once, its channel watched', { timeout: 60_000 }, async () => {
  const { pair } = await pairWithReceives(2, { sendWr: 4, recvWr: 4, inlineData: MESSAGE });
  try {
    const { client, server } = pair;
    const cq = server.queuePair.recvCq;
    cq.mode = 'events';
    client.postSend(Buffer.from('first'), { inline: true, signaled: true });
    assert.equal((await client.queuePair.nextSendCompletion()).status, 'SUCCESS');
    await new Promise((resolve) => setTimeout(resolve, 50)); // the connection's channels stop their watches
    const watchingBefore = FdWatcher.watching;
    assert.equal((await cq.next()).byteLen, 5, 'the first wait finds its completion at once, opening the turn\'s slice');
    const spentAt = performance.now() + 3 * cq.timeSliceMs;
    while (performance.now() < spentAt); // the code after it spends the slice
    const second = cq.next();
    second.catch(() => undefined); // awaited below; closing the pair rejects it if an assertion fails first
    assert.equal(FdWatcher.watching, watchingBefore + 1, 'the wait armed the CQ and watches its channel in this turn, not a turn later');
    client.postSend(Buffer.from('second'), { inline: true, signaled: false });
    assert.equal((await second).byteLen, 6);
  } finally {
    await pair.hangUp();
  }
});

test('busy-poll mode and the async iterator of completions', { timeout: 60_000 }, async () => {
  const { pair, inbox } = await pairWithReceives(8);
  const { client, server } = pair;

  server.queuePair.recvCq.mode = 'busy-poll';
  const payload = Buffer.alloc(MESSAGE);
  for (let i = 0; i < 8; i++) {
    payload.writeUInt32LE(i * 7, 0);
    client.postSend(payload, { inline: true, signaled: i === 7 });
  }
  const seen: unknown[] = [];
  for await (const completion of server.queuePair.recvCq) {
    assert.equal(completion.opcode, 'RECV');
    assert.equal(inbox.buffer.readUInt32LE((completion.context as number) * MESSAGE), (completion.context as number) * 7);
    seen.push(completion.context);
    if (seen.length === 8) break;
  }
  assert.deepEqual(seen, [0, 1, 2, 3, 4, 5, 6, 7]);
  assert.equal((await client.queuePair.nextSendCompletion()).status, 'SUCCESS', 'only the last send was signaled');
  await pair.hangUp();
});

test('events mode: waiters queued at once are served in order, and a wait survives a change of mode either way', { timeout: 60_000 }, async () => {
  const { pair, inbox } = await pairWithReceives(11, { sendWr: 16, recvWr: 16, inlineData: MESSAGE });
  const { client, server } = pair;
  const cq = server.queuePair.recvCq;
  const payload = Buffer.alloc(MESSAGE);
  const send = (from: number, count: number, signalLast = false) => {
    for (let i = from; i < from + count; i++) {
      payload.writeUInt32LE(i * 3, 0);
      client.postSend(payload, { inline: true, signaled: signalLast && i === from + count - 1 });
    }
  };
  const received = async (waits: Promise<{ context: unknown }>[]) => {
    const contexts = (await Promise.all(waits)).map((completion) => completion.context as number);
    for (const i of contexts) assert.equal(inbox.buffer.readUInt32LE(i * MESSAGE), i * 3, `message ${i}`);
    return contexts;
  };

  cq.mode = 'events';
  const queued = Array.from({ length: 8 }, () => cq.next());
  send(0, 8);
  assert.deepEqual(await received(queued), [0, 1, 2, 3, 4, 5, 6, 7], 'eight waiters, served in order');

  const sleeping = cq.next();
  cq.mode = 'busy-poll';
  const spinning = cq.next();
  send(8, 2);
  assert.deepEqual(await received([sleeping, spinning]), [8, 9], 'events → busy-poll mid-wait');

  const spunThenSleeping = cq.next();
  cq.mode = 'events';
  await new Promise((resolve) => setTimeout(resolve, 20)); // the spin hands over; the wait now sleeps on the channel
  send(10, 1, true);
  assert.deepEqual(await received([spunThenSleeping]), [10], 'busy-poll → events mid-wait');
  assert.equal((await client.queuePair.nextSendCompletion()).status, 'SUCCESS');
  await pair.hangUp();
});

test('a completion already queued settles next() at once in adaptive and events modes: a success resolves, an error status rejects with WorkCompletionError', { timeout: 60_000 }, async () => {
  const { pair, inbox } = await pairWithReceives(2, { sendWr: 8, recvWr: 8, inlineData: MESSAGE });
  try {
    const { client, server } = pair;
    const pending = Symbol('pending');
    /** `wait`'s outcome if it was settled when made (it wins the race against one already settled after it), else `pending`. */
    const settledAtOnce = async (wait: Promise<unknown>): Promise<{ value: unknown } | { error: unknown }> => {
      try {
        return { value: await Promise.race([wait, Promise.resolve(pending)]) };
      } catch (error) {
        return { error };
      }
    };
    const landed = () => new Promise((resolve) => setTimeout(resolve, 300)); // rxe completes a loopback send well within this
    const payload = Buffer.alloc(MESSAGE);
    for (const [index, mode] of (['adaptive', 'events'] as const).entries()) {
      server.queuePair.recvCq.mode = mode;
      payload.writeUInt32LE(index * 5, 0);
      client.postSend(payload, { inline: true, signaled: false });
      await landed();
      const outcome = await settledAtOnce(server.queuePair.recvCq.next());
      assert.ok('value' in outcome && outcome.value !== pending, `${mode}: the queued receive resolved next() at once`);
      const completion = outcome.value as { status: string; context: unknown };
      assert.equal(completion.status, 'SUCCESS');
      assert.equal(inbox.buffer.readUInt32LE((completion.context as number) * MESSAGE), index * 5, `${mode}: the message`);
    }
    // Disconnected, the QP is in the error state: a send is flushed at once.
    const disconnected = server.disconnect();
    await client.disconnect();
    await disconnected;
    const sendCq = client.queuePair.sendCq;
    for (const mode of ['adaptive', 'events'] as const) {
      sendCq.mode = mode;
      client.postSend(client.regMsgs(Buffer.alloc(MESSAGE)));
      await landed();
      const outcome = await settledAtOnce(sendCq.next());
      assert.ok('error' in outcome, `${mode}: the flushed send rejected next() at once`);
      assert.ok(outcome.error instanceof WorkCompletionError, String(outcome.error));
      assert.equal(outcome.error.completion.status, 'WR_FLUSH_ERR');
    }
  } finally {
    pair.close();
  }
});

test('a blocking waitOne that takes the event a pending next() armed for leaves that next() a working wake-up', { timeout: 60_000 }, async () => {
  let inbox!: MemoryRegion;
  const pair = await connectPair({
    qp: { sendWr: 4, recvWr: 4, inlineData: MESSAGE },
    beforeConnect: (id, side) => {
      if (side === 'server') inbox = id.regMsgs(Buffer.alloc(MESSAGE * 2));
    },
  });
  try {
    const { client, server } = pair;
    const cq = server.queuePair.recvCq;
    // No receive posted yet: the send is refused (RNR) and retried after rdma_cm's 655 ms RNR
    // timer, so its completion lands while waitOne below blocks on the channel.
    client.postSend(Buffer.from('first'), { inline: true, signaled: false });
    const pending = cq.next(); // armed, watching the channel
    server.postRecv(inbox, { offset: 0, length: MESSAGE });
    assert.equal(cq.waitOne().byteLen, 5, 'waitOne blocked, took the event and the first completion');
    server.postRecv(inbox, { offset: MESSAGE, length: MESSAGE });
    client.postSend(Buffer.from('second'), { inline: true, signaled: false });
    let timer: NodeJS.Timeout | undefined;
    const stalled = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('the pending next() never woke: nothing re-armed the CQ')), 10_000);
    });
    const second = await Promise.race([pending, stalled]).finally(() => clearTimeout(timer));
    assert.equal(second.byteLen, 6);
  } finally {
    await pair.hangUp();
  }
});

test('a wait switched from events to busy-poll leaves no channel watch behind to keep the process alive', { timeout: 60_000 }, async () => {
  const { pair } = await pairWithReceives(2, { sendWr: 4, recvWr: 4, inlineData: MESSAGE });
  try {
    const { client, server } = pair;
    const cq = server.queuePair.recvCq;
    cq.mode = 'events';
    await new Promise((resolve) => setTimeout(resolve, 50)); // the connection's channels stop their watches
    const watchingBefore = FdWatcher.watching;
    const sleeping = cq.next(); // events mode: the CQ is armed and its channel watched
    assert.equal(FdWatcher.watching, watchingBefore + 1);
    for (const text of ['first', 'second']) client.postSend(Buffer.from(text), { inline: true, signaled: false });
    // Both land (and raise the armed event) while the loop is held, so the spin, not the channel, serves them.
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 300);
    cq.mode = 'busy-poll';
    const spinning = cq.next(); // starts the spin, which serves both waits at once
    assert.deepEqual((await Promise.all([sleeping, spinning])).map((c) => c.byteLen), [5, 6]);
    // The stop is due at the end of a turn of the loop; the leftover event may come first.
    for (let turn = 0; turn < 50 && FdWatcher.watching > watchingBefore; turn++) await new Promise((resolve) => setTimeout(resolve, 10));
    assert.equal(FdWatcher.watching, watchingBefore, 'the CQ\'s channel is no longer watched');
  } finally {
    await pair.hangUp();
  }
});

test('one thread serves 200 concurrent RC connections, then shuts down in order', { timeout: 600_000 }, async () => {
  const address = deviceAddress();
  const port = freshPort();
  const CLIENTS = Number(process.env.RDMACM_ASYNC_CLIENTS ?? 200);
  const serverChannel = new EventChannel();
  const clientChannel = new EventChannel();
  const listener = createId(serverChannel);
  // Every id made here, closed at the end even when a step fails: a failure leaves nothing to the tests after it.
  const served: CmId[] = [];
  const dialled: CmId[] = [];
  let serving: Promise<void> | undefined;
  try {
    listener.bindAddr({ address, port });
    listener.listen(256);

    // The server: accept every request, echo one message back, +1 on each byte.
    serving = (async () => {
      const handlers: Promise<void>[] = [];
      for (let i = 0; i < CLIENTS; i++) {
        const id = await listener.nextRequest({ timeoutMs: 60_000 });
        served.push(id);
        handlers.push((async () => {
          id.createQp({ sendWr: 2, recvWr: 2, inlineData: MESSAGE });
          const inbox = id.regMsgs(Buffer.alloc(MESSAGE));
          id.postRecv(inbox);
          await id.accept();
          const got = await id.queuePair.nextRecvCompletion();
          const reply = Buffer.from(inbox.buffer.subarray(0, got.byteLen).map((b) => (b + 1) & 0xff));
          id.postSend(reply, { inline: true });
          await id.queuePair.nextSendCompletion();
          // The client hangs up first; the server answers with its own disconnect.
          await id.waitForDisconnect({ timeoutMs: 120_000 });
          await id.disconnect();
        })());
      }
      await Promise.all(handlers);
    })();

    const clients = await Promise.all(Array.from({ length: CLIENTS }, async (_, index) => {
      const id = await dial(clientChannel, address, port, index, dialled);
      const inbox = id.regMsgs(Buffer.alloc(MESSAGE));
      id.postRecv(inbox);
      await id.connect(undefined, { timeoutMs: 60_000 });
      const message = Buffer.alloc(MESSAGE, index & 0xff);
      id.postSend(message, { inline: true });
      await id.queuePair.nextSendCompletion();
      await id.queuePair.nextRecvCompletion();
      assert.ok(inbox.buffer.equals(Buffer.alloc(MESSAGE, (index + 1) & 0xff)), `client ${index} got its echo`);
      return id;
    }));
    // Clean shutdown: every client hangs up, every server id answers; then close all in order.
    await Promise.all(clients.map((id) => id.disconnect({ timeoutMs: 60_000 })));
    await serving;
    assert.equal(served.length, CLIENTS);
    assert.equal(new Set(clients.map((c) => c.context)).size, CLIENTS);
    assert.ok([...clients, ...served].every((id) => id.disconnected));
  } finally {
    for (const id of [...dialled, ...served]) id.close();
    listener.close();
    clientChannel.close();
    serverChannel.close();
    // After a failure the server's handlers end on their closed ids; the failure reported is the first one.
    await serving?.catch(() => undefined);
  }
  assert.equal(FdWatcher.open, 0, 'every fd watcher is closed');
});

test('resolving an address nobody answers times out with a typed error', { timeout: 60_000 }, async () => {
  using channel = new EventChannel();
  using id = createId(channel);
  // On the rxe subnet, but no host has it: neighbour resolution fails.
  const nobody = deviceAddress().replace(/\.\d+$/, '.250');
  const started = Date.now();
  await assert.rejects(id.resolveAddr({ address: nobody, port: 7471 }, { timeoutMs: 1000 }), (error: unknown) => {
    assert.ok(error instanceof ConnectionError || error instanceof RdmaError, String(error));
    if (error instanceof ConnectionError) assert.equal(error.code, 'ERR_RDMACM_ADDR_ERROR');
    return true;
  });
  assert.ok(Date.now() - started < 15_000, 'it did not hang');
});

test('waits with their own timeouts on one channel each end at theirs (ETIMEDOUT), and an untimed one waits on', { timeout: 60_000 }, async () => {
  using channel = new EventChannel();
  using listener = createId(channel);
  listener.bindAddr({ address: deviceAddress(), port: freshPort() });
  listener.listen();
  using idle = createId(channel);
  const untimed = new AbortController();
  const reason = new Error('nobody will come');
  const started = performance.now();
  const elapsedWhenRejected = async (waiting: Promise<unknown>) => {
    const error = await waiting.then(() => undefined, (e: unknown) => e);
    return { error, ms: performance.now() - started };
  };
  // Nothing will ever come: no client dials, and `idle` was never connected.
  const [later, sooner, aborted] = await Promise.all([
    elapsedWhenRejected(idle.waitForDisconnect({ timeoutMs: 900 })),
    elapsedWhenRejected(listener.nextRequest({ timeoutMs: 300 })),
    elapsedWhenRejected(idle.waitForDisconnect({ signal: untimed.signal })),
    new Promise<void>((resolve) => setTimeout(() => { untimed.abort(reason); resolve(); }, 2000)),
  ]);
  for (const [result, timeoutMs, operation] of [[sooner, 300, 'nextRequest'], [later, 900, 'waitForDisconnect']] as const) {
    assert.ok(result.error instanceof RdmaError, String(result.error));
    assert.equal(result.error.code, 'ETIMEDOUT');
    assert.equal(result.error.syscall, operation);
    assert.ok(result.ms >= timeoutMs, `${operation} gave up after ${result.ms.toFixed(0)} ms, before its ${timeoutMs} ms`);
    assert.ok(result.ms < timeoutMs + 10_000, `${operation} gave up only after ${result.ms.toFixed(0)} ms`);
  }
  assert.ok(sooner.ms < later.ms, 'the shorter timeout ended first');
  assertAbortedWith(aborted.error, reason); // the untimed wait lasted until its abort
  assert.ok(aborted.ms >= 2000);
});

test('an event unread when its deadline passes, the loop busy meanwhile, settles its wait: it is not ETIMEDOUT', { timeout: 60_000 }, async () => {
  using channel = new EventChannel();
  using id = createId(channel);
  // From here in the loop's check phase, its next turn runs due timers before it polls for I/O.
  await new Promise((resolve) => setImmediate(resolve));
  // librdmacm's own timeout is 20 ms; the wait's deadline is a second after it (the C timeout reports first).
  const issued = performance.now();
  const resolving = id.resolveAddr({ address: deviceAddress(), port: freshPort() }, { timeoutMs: 20 });
  // Busy until ADDR_RESOLVED is there and the deadline has passed: then the deadline's timer runs before the fd's callback.
  assert.ok(blockUntilReadable(channel.fd, 10_000), 'ADDR_RESOLVED came');
  while (performance.now() - issued < 1100);
  await resolving;
  await id.resolveRoute({ timeoutMs: 10_000 }); // the address is resolved: the route's step follows it
});

test('a peer disconnects and the survivor gets DISCONNECTED', { timeout: 60_000 }, async () => {
  const pair = await connectPair();
  const { client, server } = pair;
  const clientChannel = client.channel!;

  const events = clientChannel[Symbol.asyncIterator]();
  const serverDone = server.disconnect();
  let event: ConnectionEvent | undefined;
  for (let i = 0; i < 4 && event?.type !== 'DISCONNECTED'; i++) event = (await events.next()).value;
  await events.return?.();
  assert.equal(event?.type, 'DISCONNECTED');
  assert.equal(event?.id, client);
  assert.equal(client.disconnected, true);
  // The survivor answers; only then does the initiator see its own DISCONNECTED.
  await client.disconnect();
  await serverDone;
  pair.close();
});

test('an abort mid-connect leaves nothing behind', { timeout: 60_000 }, async () => {
  const before = FdWatcher.open;
  const channel = new EventChannel();
  const id = createId(channel);
  await id.resolveAddr({ address: deviceAddress(), port: freshPort() });
  await id.resolveRoute();
  id.createQp();
  const controller = new AbortController();
  const connecting = id.connect(undefined, { signal: controller.signal });
  queueMicrotask(() => controller.abort()); // before any event can arrive
  await assert.rejects(connecting, (error) => {
    assertAbortedWith(error, controller.signal.reason);
    return true;
  });
  id.close();
  channel.close();
  assert.equal(FdWatcher.open, before);
});

test('events of many ids interleave on one channel and reach their own ids', { timeout: 60_000 }, async () => {
  const address = deviceAddress();
  using channel = new EventChannel();
  const ids = Array.from({ length: 24 }, (_, i) => createId(channel, { context: i }));
  try {
    await Promise.all(ids.map(async (id, i) => {
      await id.resolveAddr({ address, port: 9000 + i });
      await id.resolveRoute();
      assert.equal(id.peerAddress?.port, 9000 + i);
    }));
  } finally {
    for (const id of ids) id.close();
  }
});

test('the process exits by itself once its resources are closed', { timeout: 150_000 }, () => {
  const entry = fileURLToPath(new URL('../../src/index.js', import.meta.url));
  const script = `
    const { createId, EventChannel } = await import(${JSON.stringify(entry)});
    const channel = new EventChannel();
    const id = createId(channel);
    await id.resolveAddr({ address: ${JSON.stringify(deviceAddress())}, port: 7471 });
    const abandoned = createId(channel);
    await abandoned.resolveAddr({ address: '192.0.2.1', port: 7471 }, { timeoutMs: 300 }).catch(() => {});
    abandoned.close();
    id.close();
    channel.close();
    console.log('closed');`;
  // A hang is what this catches: the bound is generous, as a loaded emulated guest took 17–40 s just to import the package.
  const result = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 120_000 });
  assert.equal(result.signal, null, 'it was not killed by the timeout');
  assert.equal(result.status, 0, result.stderr);
  assert.match(result.stdout, /closed/);
});
