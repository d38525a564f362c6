// A real link: two guests (scripts/rxe-vm.sh --hosts 2), host 0 the server,
// host 1 the client, RoCE v2 crossing a virtual wire between them (over IPv4,
// and in one test over IPv6). An RDMA round trip must cost about what a TCP
// one does over the same wire. With 5 %
// and 20 % packet loss (tc netem) every RC message must arrive intact and in
// order; with the link taken down and up mid-transfer, both sides must resume
// or end with a typed error, and nothing may hang.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { checkRstream, rstreamExchange } from '../support/rstream-peer.js';
import { rdmaListening } from '../support/processes.js';
import {
  createId, connect, createServer, EventChannel, WorkCompletionError, ConnectionError, RdmaError, type CmId, type RdmaServer, type RdmaSocket, type WorkCompletion,
} from '../../src/index.js';

const hostIndex = Number(process.env.RDMACM_HOST_INDEX);
const [serverAddress, clientAddress] = (process.env.RDMACM_TEST_ADDRS ?? '').split(' ');
const shared = process.env.RDMACM_SHARED_DIR ?? '';
const netdev = process.env.RDMACM_TEST_NETDEV ?? 'eth0';
const device = process.env.RDMACM_TEST_DEVICE ?? 'rxe0';
if (!serverAddress || !clientAddress || !shared || Number.isNaN(hostIndex)) {
  console.error('twohost: run through scripts/rxe-vm.sh --hosts 2');
  process.exit(1);
}

const SIZE = 1024;
const DIGEST = 32;

/** Waits (bounded) for the peer to drop a file in the shared folder. */
async function meet(name: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!existsSync(join(shared, name))) {
    if (Date.now() > deadline) throw new Error(`the peer never reached ${name}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
const signal = (name: string) => writeFileSync(join(shared, name), '');
const sh = (...args: string[]) => execFileSync(args[0]!, args.slice(1), { stdio: 'pipe' });

/** A message: sequence number, payload, and the SHA-256 of both. */
function fill(buffer: Buffer, sequence: number): void {
  buffer.writeUInt32BE(sequence, 0);
  for (let i = 4; i < SIZE - DIGEST; i++) buffer[i] = (sequence * 31 + i) & 0xff;
  createHash('sha256').update(buffer.subarray(0, SIZE - DIGEST)).digest().copy(buffer, SIZE - DIGEST);
}
function intact(buffer: Buffer): boolean {
  return createHash('sha256').update(buffer.subarray(0, SIZE - DIGEST)).digest().equals(buffer.subarray(SIZE - DIGEST, SIZE));
}

/** Server side of one scenario: receive `count` messages, checking order and checksum; returns how many arrived. */
async function serve(port: number, count: number, scenario: string): Promise<{ received: number; outcome: string }> {
  using channel = new EventChannel();
  using listener = createId(channel);
  listener.bindAddr({ address: serverAddress!, port });
  listener.listen();
  signal(`${scenario}-listening`);
  using id: CmId = await listener.nextRequest({ timeoutMs: 60_000 });
  id.createQp({ sendWr: 4, recvWr: 16 });
  const inbox = id.regMsgs(Buffer.alloc(16 * SIZE));
  for (let slot = 0; slot < 16; slot++) id.postRecv(inbox, { offset: slot * SIZE, length: SIZE, context: slot });
  // As long as the client's connect may take: under loss the CM resends a lost REP or RTU only after seconds.
  await id.accept({ retryCount: 7, rnrRetryCount: 7 }, { timeoutMs: 30_000 });
  let received = 0;
  const hungUp = id.waitForDisconnect().then(() => undefined);
  hungUp.catch(() => undefined);
  const never = new Promise<undefined>(() => undefined);
  let peerGone = false;
  try {
    while (received < count) {
      const next = id.queuePair.nextRecvCompletion();
      let completion: WorkCompletion | undefined = await Promise.race([
        next,
        peerGone ? never : hungUp,
        new Promise<never>((_, reject) => setTimeout(() => reject(new Error('no message for 60 s')), 60_000).unref()),
      ]);
      if (!completion) {
        // The hang-up can overtake messages that already completed: those sit in
        // the queue ahead of the flushed receives, so take them before concluding.
        peerGone = true;
        completion = await Promise.race([
          next,
          new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 5000).unref()),
        ]).catch((error: unknown) => {
          if (error instanceof WorkCompletionError) return undefined; // flushed: nothing more was sent
          throw error;
        });
        if (!completion) return { received, outcome: 'peer disconnected' };
      }
      const slot = completion.context as number;
      const message = inbox.buffer.subarray(slot * SIZE, (slot + 1) * SIZE);
      assert.equal(completion.byteLen, SIZE);
      assert.ok(intact(message), `message ${received} intact`);
      assert.equal(message.readUInt32BE(0), received, 'messages arrive in order');
      received++;
      id.postRecv(inbox, { offset: slot * SIZE, length: SIZE, context: slot });
    }
    if (!peerGone) await Promise.race([hungUp, new Promise((_, reject) => setTimeout(() => reject(new Error('no disconnect for 60 s')), 60_000).unref())]);
    await id.disconnect();
    return { received, outcome: 'complete' };
  } catch (error) {
    if (error instanceof WorkCompletionError || error instanceof ConnectionError || error instanceof RdmaError) {
      return { received, outcome: `typed error: ${error.name} ${error.message}` };
    }
    throw error;
  }
}

/** Client side: stream `count` messages (one outstanding), calling `during` after `at` of them. */
async function stream(port: number, count: number, scenario: string, during?: { at: number; run: () => Promise<void> }) {
  await meet(`${scenario}-listening`);
  using channel = new EventChannel();
  using id = createId(channel);
  await id.resolveAddr({ address: serverAddress!, port }, { timeoutMs: 10_000 });
  await id.resolveRoute({ timeoutMs: 10_000 });
  id.setOption({ option: 'ACK_TIMEOUT', value: 16 }); // ~268 ms per try, 7 retries: rides out a short outage
  id.createQp({ sendWr: 4, recvWr: 1 });
  await id.connect({ retryCount: 7, rnrRetryCount: 7 }, { timeoutMs: 30_000 });
  const outbox = id.regMsgs(Buffer.alloc(SIZE));
  let sent = 0;
  try {
    for (; sent < count; sent++) {
      if (during && sent === during.at) await during.run();
      fill(outbox.buffer, sent);
      id.postSend(outbox);
      await id.queuePair.nextSendCompletion();
    }
    await id.disconnect({ timeoutMs: 30_000 });
    return { sent, outcome: 'complete' };
  } catch (error) {
    if (error instanceof WorkCompletionError || error instanceof ConnectionError || error instanceof RdmaError) {
      return { sent, outcome: `typed error: ${error.name} ${error.message}` };
    }
    throw error;
  }
}

const execFileAsync = promisify(execFile);

/** The longest a tool's run may take here: a few seconds as a rule, 20 s on a loaded host. */
const TOOL_MS = 90_000;

/** Runs a tool to completion and returns its stdout; a client retries while its server is still starting, all attempts within `timeoutMs`. */
async function runTool(args: string[], { attempts = 1, timeoutMs = TOOL_MS } = {}): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (let attempt = 1; ; attempt++) {
    try {
      const { stdout } = await execFileAsync(args[0]!, args.slice(1), { timeout: Math.max(1000, deadline - Date.now()) });
      return stdout;
    } catch (error) {
      if (attempt >= attempts || Date.now() + 1000 >= deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
}

/** ib_send_lat's t_typical (the median half round trip, µs): 5th column of the row under the '#bytes' header. */
function typicalLatency(output: string): number {
  const lines = output.split('\n');
  const header = lines.findIndex((line) => line.includes('#bytes'));
  const value = Number(lines[header + 1]?.trim().split(/\s+/)[4]);
  assert.ok(header >= 0 && Number.isFinite(value), `no latency row in ib_send_lat's output:\n${output}`);
  return value;
}

/** rstream's usec/xfer (half a round trip with -C 1): the last column of its last line. */
function rstreamLatency(output: string): number {
  const value = Number(output.trim().split('\n').at(-1)?.trim().split(/\s+/).at(-1));
  assert.ok(Number.isFinite(value), `no result in rstream's output:\n${output}`);
  return value;
}

// Two bounds, because the guests are emulated (TCG) on a shared machine and every absolute time here
// follows its load. TCP is rstream's socket mode, which spins on its socket as ib_send_lat spins on its
// completion queue, so load slows both alike; its figure is a mean, ib_send_lat's a median. 64 B half
// round trips measured on this machine (load average 4 to 12):
//   old link, a TCP socket netdev with Nagle at its listening end: ib_send_lat 24.0 to 32.0 ms, TCP 0.8
//     to 3.5 ms measured just before it, 7.5 to 29 times;
//   datagram link: ib_send_lat 0.2 to 3.6 ms, TCP 1.0 to 20 ms, 0.07 to 0.9 times;
//   one guest, both ends on one rxe device: ib_send_lat 18 µs (not measurable inside this run).
// The old link's stall waited for the peer's delayed ACK (40 ms at least on Linux) and its median never
// went below 24 ms, so the ceiling catches it even when a loaded machine slows TCP too.
const RDMA_OVER_TCP_LIMIT = 4;
const RDMA_CEILING_MICROS = 10_000;

/**
 * `attempt` on each port in turn until one run ends well: a pair that has not
 * ended in 45 s (it takes seconds) gets one more try on a fresh port, as the
 * bench's pairs do. Once in CI both ends of the first still ran at the 90 s
 * limit, and a perftest server whose client is gone waits for ever.
 */
async function onFreshPorts<T>(side: string, ports: readonly number[], attempt: (port: number) => Promise<T>): Promise<T> {
  for (let index = 0; ; index++) {
    try {
      return await attempt(ports[index]!);
    } catch (error) {
      if (index === ports.length - 1) throw error;
      console.log(`twohost: ib_send_lat ${side} on port ${ports[index]} failed, once more: ${(error as Error).message.split('\n')[0]}`);
    }
  }
}

test('an RDMA round trip across the link costs about what a TCP one does', { timeout: 300_000 }, async () => {
  const pingPong = ['-S', '64', '-C', '1', '-I', '1000'];
  const latency = (port: number) => ['-R', '-d', device, '-F', '-n', '2000', '-s', '64', '-p', String(port)];
  const ports = [18520, 18522];
  if (hostIndex === 0) {
    const tcp = runTool(['rstream', '-T', 's', '-b', serverAddress!, '-p', '18521', ...pingPong]);
    setTimeout(() => signal('tcp-listening'), 500);
    await tcp;
    const serverMicros = await onFreshPorts('server', ports, async (port) => {
      const rdma = runTool(['ib_send_lat', ...latency(port)], { timeoutMs: 45_000 });
      // Never listening: the server's own end (its 45 s at most) comes first, so no run is left behind.
      await rdmaListening(port).catch(async (error: unknown) => {
        await rdma.catch(() => undefined);
        throw error;
      });
      signal(`latency-listening-${port}`);
      return typicalLatency(await rdma);
    });
    console.log(`twohost: ib_send_lat server: ${serverMicros} µs`);
  } else {
    await meet('tcp-listening');
    const tcpMicros = rstreamLatency(await runTool(['rstream', '-T', 's', '-s', serverAddress!, '-p', '18521', ...pingPong], { attempts: 10 }));
    const rdmaMicros = await onFreshPorts('client', ports, async (port) => {
      await meet(`latency-listening-${port}`, 90_000);
      return typicalLatency(await runTool(['ib_send_lat', ...latency(port), serverAddress!], { attempts: 10, timeoutMs: 45_000 }));
    });
    const ratio = rdmaMicros / tcpMicros;
    console.log(`twohost: 64 B half round trip: ib_send_lat ${rdmaMicros} µs, TCP ${tcpMicros} µs, ${ratio.toFixed(2)} times`);
    assert.ok(ratio < RDMA_OVER_TCP_LIMIT, `ib_send_lat ${rdmaMicros} µs is ${ratio.toFixed(1)} times TCP's ${tcpMicros} µs (limit ${RDMA_OVER_TCP_LIMIT})`);
    assert.ok(rdmaMicros < RDMA_CEILING_MICROS, `ib_send_lat ${rdmaMicros} µs (ceiling ${RDMA_CEILING_MICROS} µs)`);
  }
});

const scenarios = [
  { name: 'loss-5', port: 18515, count: 300, loss: 5 },
  { name: 'loss-20', port: 18516, count: 100, loss: 20 },
];

for (const { name, port, count, loss } of scenarios) {
  test(`${loss} % packet loss: every RC message arrives intact and in order`, { timeout: 300_000 }, async () => {
    const started = Date.now();
    if (hostIndex === 0) {
      const { received, outcome } = await serve(port, count, name);
      console.log(`twohost: ${name}: server received ${received}/${count} (${outcome}) in ${Date.now() - started} ms`);
      assert.equal(outcome, 'complete');
      assert.equal(received, count);
    } else {
      sh('tc', 'qdisc', 'replace', 'dev', netdev, 'root', 'netem', 'loss', `${loss}%`);
      try {
        const { sent, outcome } = await stream(port, count, name);
        console.log(`twohost: ${name}: client sent ${sent}/${count} (${outcome}) in ${Date.now() - started} ms`);
        assert.equal(outcome, 'complete');
      } finally {
        sh('tc', 'qdisc', 'del', 'dev', netdev, 'root');
      }
    }
  });
}

// One second down is shorter than RC's retransmission budget (7 retries of an
// ack timeout of half a second or more on RoCE), so the transfer must resume:
// it did on both sides in each of the 16 runs logged before this was required.
test('the link goes down for a second mid-transfer: RC retransmits, both sides finish, nothing hangs', { timeout: 300_000 }, async () => {
  const started = Date.now();
  const count = 100;
  if (hostIndex === 0) {
    const { received, outcome } = await serve(18517, count, 'flap');
    console.log(`twohost: flap: server received ${received}/${count} (${outcome}) in ${Date.now() - started} ms`);
    assert.equal(outcome, 'complete');
    assert.equal(received, count);
  } else {
    const { sent, outcome } = await stream(18517, count, 'flap', {
      at: 30,
      run: async () => {
        sh('ip', 'link', 'set', netdev, 'down');
        await new Promise((resolve) => setTimeout(resolve, 1000));
        sh('ip', 'link', 'set', netdev, 'up');
      },
    });
    console.log(`twohost: flap: client sent ${sent}/${count} (${outcome}) in ${Date.now() - started} ms`);
    assert.equal(outcome, 'complete');
    assert.equal(sent, count);
  }
});

// rdmacm/net against rdma-core's own rsocket tool across the link, both ways:
// rstream's custom run (-T v: every byte checked on both sides) at 4 KiB.
const ACROSS = { size: 4096, count: 100, iterations: 4 };
const rstreamAcross = ['-S', String(ACROSS.size), '-C', String(ACROSS.count), '-I', String(ACROSS.iterations), '-T', 'b', '-T', 'v'];

test('across the link: a TypeScript client against an rstream server, and rstream against a TypeScript server (4 KiB, -T v)', { timeout: 300_000 }, async () => {
  // Part one: rstream serves on host 0, the TypeScript client runs on host 1.
  if (hostIndex === 0) {
    const tool = runTool(['rstream', '-b', serverAddress!, '-p', '18530', ...rstreamAcross]);
    setTimeout(() => signal('rstream-listening'), 1000);
    checkRstream({ code: 0, stdout: await tool, stderr: '' }); // runTool throws on a non-zero exit
  } else {
    await meet('rstream-listening');
    let socket: RdmaSocket | undefined;
    for (let attempt = 0; !socket; attempt++) {
      const candidate = connect({ port: 18530, host: serverAddress! });
      const outcome = await new Promise<Error | undefined>((resolve) => {
        candidate.once('connect', () => resolve(undefined));
        candidate.once('error', resolve);
      });
      if (!outcome) socket = candidate;
      else if (attempt >= 20) throw outcome;
      else await new Promise((resolve) => setTimeout(resolve, 500));
    }
    await rstreamExchange(socket, 'client', ACROSS);
    socket.end();
    // rstream's disconnect may have closed the socket already (allowHalfOpen is off).
    if (!socket.closed) await new Promise((resolve) => socket!.once('close', resolve));
    console.log('twohost: TypeScript client → rstream server across the link: 4 KiB × 100 × 4 each way, verified');
  }
  // Part two: a TypeScript server on host 0, rstream's client on host 1.
  if (hostIndex === 0) {
    const server = createServer();
    const served = new Promise<void>((resolve, reject) => {
      server.once('connection', (socket) => {
        socket.on('error', reject);
        rstreamExchange(socket, 'server', ACROSS).then(() => socket.end(), reject);
        socket.on('close', () => resolve());
      });
    });
    server.listen(18531, serverAddress!);
    await new Promise((resolve) => server.once('listening', resolve));
    signal('ts-listening');
    try {
      await served;
      console.log('twohost: rstream client → TypeScript server across the link: 4 KiB × 100 × 4 each way, verified');
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  } else {
    await meet('ts-listening');
    checkRstream({ code: 0, stdout: await runTool(['rstream', '-s', serverAddress!, '-p', '18531', ...rstreamAcross], { attempts: 10 }), stderr: '' });
  }
});

// A client writes before it is connected, on a fresh connection each time. Across the link the
// server's first buffer offer (and the client's own offer's send completion) can all land before
// the client emits 'connect'; a client that let those early completions pass while it counted as
// connecting left its write queued for ever (the net-demo hang). Over this link that code hung 5
// times in about 2,500 connections (2026-12-06): 800 catch it in most runs, not in every one; the
// fixed code answered all of 5,600 (seven runs, three of them CI's).
const FRESH = { port: 18533, lanes: 4, perLane: 200, answerMs: 10_000 };

/** One connection of the fresh-connection test: connects, writes at once, and waits for the echo. */
async function answeredWhileFresh(name: string): Promise<void> {
  const request = `request ${name}\n`;
  const socket = connect({ port: FRESH.port, host: serverAddress! });
  socket.write(request);
  let answer = '';
  const answered = await new Promise<boolean>((resolve, reject) => {
    const timer = setTimeout(() => resolve(false), FRESH.answerMs);
    socket.on('data', (chunk: Buffer) => {
      answer += chunk.toString();
      if (answer.length >= request.length) {
        clearTimeout(timer);
        resolve(true);
      }
    });
    socket.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
  const state = `bytesWritten ${socket.bytesWritten}, writableLength ${socket.writableLength}, bytesRead ${socket.bytesRead}`;
  socket.destroy();
  assert.ok(answered, `connection ${name}: no answer in ${FRESH.answerMs} ms (${state})`);
  assert.equal(answer, request);
}

const freshTotal = FRESH.lanes * FRESH.perLane;

test(`rdmacm/net across the link: ${freshTotal} fresh connections, each written to before it connects, are each answered`, { timeout: 300_000 }, async () => {
  if (hostIndex === 0) {
    const server = createServer((socket) => {
      socket.on('error', () => undefined); // the client closes first, and may reset its side: nothing to answer
      socket.pipe(socket);
    });
    server.listen(FRESH.port, serverAddress!);
    await new Promise((resolve) => server.once('listening', resolve));
    signal('fresh-listening');
    try {
      await meet('fresh-done', 280_000);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
    return;
  }
  await meet('fresh-listening');
  const started = Date.now();
  try {
    // A few connections at a time: more of them in the time, and a client loop busy as a server's is.
    // The first failure stops every lane, so none goes on into the next test.
    let failed = false;
    await Promise.all(Array.from({ length: FRESH.lanes }, async (_, lane) => {
      for (let index = 0; index < FRESH.perLane && !failed; index++) {
        await answeredWhileFresh(`${lane}.${index}`).catch((error: unknown) => {
          failed = true;
          throw error;
        });
      }
    }));
    console.log(`twohost: ${freshTotal} fresh connections (${FRESH.lanes} at a time), each written to while connecting, answered in ${Date.now() - started} ms`);
  } finally {
    signal('fresh-done');
  }
});

const [serverAddress6, clientAddress6] = (process.env.RDMACM_TEST_ADDRS6 ?? '').split(' ');

test('across the link over IPv6: rdmacm/net from host 1 to a server with no host (::) on host 0, 1 MiB each way, sha256 compared', { timeout: 300_000 }, async () => {
  assert.ok(serverAddress6 && clientAddress6, `RDMACM_TEST_ADDRS6 names both guests' IPv6 addresses (it is '${process.env.RDMACM_TEST_ADDRS6 ?? ''}')`);
  const port = 18532;
  if (hostIndex === 0) {
    const server = createServer((socket) => socket.pipe(socket));
    const peer = new Promise<RdmaSocket>((resolve) => server.once('connection', resolve));
    server.listen(port);
    await new Promise((resolve) => server.once('listening', resolve));
    assert.equal(server.address()?.address, '::');
    signal('v6-listening');
    try {
      const socket = await peer;
      assert.equal(socket.remoteFamily, 'IPv6');
      assert.equal(socket.remoteAddress, clientAddress6);
      assert.equal(socket.localAddress, serverAddress6);
      if (!socket.closed) await new Promise((resolve) => socket.once('close', resolve));
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  } else {
    await meet('v6-listening');
    const payload = Buffer.alloc(1 << 20);
    for (let i = 0; i < payload.length; i += 4) payload.writeUInt32LE((i * 2654435761) >>> 0, i);
    const socket = connect({ port, host: serverAddress6! });
    await new Promise((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    assert.equal(socket.remoteFamily, 'IPv6');
    assert.equal(socket.remoteAddress, serverAddress6);
    assert.equal(socket.localAddress, clientAddress6);
    const echoed: Buffer[] = [];
    let length = 0;
    const done = new Promise<void>((resolve, reject) => {
      socket.on('data', (chunk: Buffer) => {
        echoed.push(chunk);
        length += chunk.length;
        if (length >= payload.length) resolve();
      });
      socket.once('error', reject);
    });
    socket.write(payload);
    await done;
    const digest = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
    assert.equal(digest(Buffer.concat(echoed)), digest(payload));
    socket.end();
    if (!socket.closed) await new Promise((resolve) => socket.once('close', resolve));
    console.log(`twohost: rdmacm/net over IPv6 across the link (${clientAddress6} → ${serverAddress6}): 1 MiB each way, sha256 equal`);
  }
});

test('rdmacm/net with keepalive: the link goes down for good, each side reports an error and closes within 10 s', { timeout: 120_000 }, async () => {
  const port = 18519;
  const keepalive = { keepAlive: true, keepAliveInitialDelay: 1000 };
  let socket: RdmaSocket;
  let server: RdmaServer | undefined;
  if (hostIndex === 0) {
    server = createServer(keepalive);
    const accepted = new Promise<RdmaSocket>((resolve) => server!.once('connection', resolve));
    server.listen(port, serverAddress!);
    await new Promise((resolve) => server!.once('listening', resolve));
    signal('net-listening');
    socket = await accepted;
  } else {
    await meet('net-listening');
    socket = connect({ port, host: serverAddress!, ...keepalive });
    await new Promise((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
  }
  const errors: (Error & { code?: string })[] = [];
  socket.on('error', (error) => errors.push(error));
  const closed = new Promise((resolve) => socket.once('close', resolve));
  // Both ends echo a byte first: the connection works before the link goes.
  socket.write('x');
  await new Promise((resolve) => socket.once('data', resolve));
  signal(`net-ready-${hostIndex}`);
  await meet(`net-ready-${1 - hostIndex}`);
  const downAt = Date.now();
  if (hostIndex === 1) sh('ip', 'link', 'set', netdev, 'down');
  try {
    await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, 30_000))]);
    const elapsed = Date.now() - downAt;
    console.log(`twohost: net keepalive: host${hostIndex} closed ${elapsed} ms after the link went down (${errors.map((e) => e.code).join(', ')})`);
    assert.ok(socket.closed, 'the socket closed');
    assert.ok(elapsed < 10_000, `closed after ${elapsed} ms`);
    assert.equal(errors.length, 1);
    // The side whose link went down fails its own sends at once; the other hears nothing and times out its keepalive.
    assert.ok(['ECONNRESET', 'ETIMEDOUT'].includes(errors[0]!.code!), errors[0]!.code);
  } finally {
    if (hostIndex === 1) sh('ip', 'link', 'set', netdev, 'up');
    socket.destroy();
    if (server) await new Promise((resolve) => server!.close(resolve));
  }
});
