// Hostile fuzzing of real resources' methods (issue 32): a connected pair (the
// server's QP on a shared receive queue), a device context of our own with a
// PD, a CQ, a completion channel, registered memory and prepared requests are
// built once, then their methods get forged instances, lying buffers, hostile
// numbers and enum names outside their set. Contract: each call returns or
// throws a typed error; a forged instance or a lying buffer is refused with an
// RdmaArgumentError naming its parameter; nothing hostile is accepted. After
// the fuzzing the pair still carries a send to a receive, and everything
// closes cleanly. Bounded: about 2 500 calls. RDMACM_FUZZ_SEED replays a run.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeSync } from 'node:fs';
import fc from 'fast-check';
import {
  AddressHandle, COMPLETION_MODES, CompletionChannel, CompletionQueue, createId, DeviceContext, EventChannel, MemoryRegion,
  ProtectionDomain, type CmId, type PreparedSend,
} from '../../src/index.js';
import { deviceAddress, deviceName, freshPort } from '../support/device.js';
import { connectPair } from '../support/pair.js';
import { badEnum, forged, FuzzLedger, honestCopy, hostileNumber, lyingBuffer, refused, refusedAs, show, type Verdict } from '../support/fuzz.js';

/** Methods that throw untyped exceptions for some hostile input (src/ bugs, reported). */
const KNOWN_UNTYPED: Record<string, string> = {};
/** Methods that return a result for hostile input they should refuse (src/ bugs, reported). */
const KNOWN_ACCEPTED: Record<string, string> = {};

const SEED = Number(process.env.RDMACM_FUZZ_SEED ?? Date.now() % 2 ** 31);
const RUNS = { forged: 600, buffers: 500, numbers: 1000, enums: 300, async: 100 } as const;

const u32 = (v: unknown): boolean => Number.isInteger(v) && (v as number) >= 0 && (v as number) <= 0xffffffff;
/** A hostile number that is not a valid value of a u32 field. */
const notU32 = hostileNumber.filter((v) => !u32(v));

test('hostile input to real resources\' methods: typed errors only; the resources still work and close cleanly', { timeout: 240_000 }, async () => {
  const ledger = new FuzzLedger({ untyped: KNOWN_UNTYPED, accepted: KNOWN_ACCEPTED });
  // endOnFailure: no shrinking (each shrink step would repeat calls on the live resources).
  const params = { seed: SEED, verbose: 1, endOnFailure: true } as const;
  const phase = (name: string) => writeSync(2, `fuzz-hostile: ${name} at ${((performance.now() - started) / 1000).toFixed(1)} s (seed ${SEED})\n`);
  const started = performance.now();
  const pair = await connectPair({ beforeQp: (id, side) => { if (side === 'server') id.createSrq({ maxWr: 16 }); } });
  const context = DeviceContext.open(deviceName());
  const pd = context.allocPd();
  const channel = context.createCompletionChannel();
  const cq = context.createCq({ entries: 16, channel });
  const eventChannel = new EventChannel();
  // A resolved id without a QP: createQp/createSrq reach their argument checks.
  const bare: CmId = createId(eventChannel);
  let failed: unknown;
  try {
    await bare.resolveAddr({ address: deviceAddress(), port: freshPort() });
    const qp = pair.client.queuePair;
    const srq = pair.server.srq!;
    const region = pair.client.regMsgs(Buffer.alloc(256));
    const ownRegion = pd.regMsgs(Buffer.alloc(256));
    const prepared: PreparedSend = qp.prepareSend(region, { length: 16, immediate: 1 });
    const write = qp.prepareSend(region, { opcode: 'RDMA_WRITE', remote: { address: 4096n, rkey: 1 }, length: 8 });
    const reals = [pair.client, context, pd, cq, channel, region, eventChannel];
    /** Real instances of the other classes: right kind of thing, wrong class. */
    const others = (but: object) => reals.filter((r) => Object.getPrototypeOf(r) !== Object.getPrototypeOf(but));
    const mk = <T,>(a: fc.Arbitrary<T>, name: string, parameter: string, fn: (v: T) => unknown) =>
      a.map((v) => ({ name, parameter, run: () => fn(v), input: () => show(v) }));

    // ---------------------------------------------------------------- forged instances
    phase('forged instances');
    const forgedCases = fc.oneof(
      mk(forged(CompletionQueue, others(cq)), 'createQp(attr.sendCq)', 'attr.sendCq', (f) => bare.createQp({ sendCq: f as never, recvCq: cq })),
      mk(forged(CompletionQueue, others(cq)), 'createQp(attr.recvCq)', 'attr.recvCq', (f) => bare.createQp({ sendCq: cq, recvCq: f as never })),
      mk(forged(ProtectionDomain, others(pd)), 'createQp(pd)', 'pd', (f) => bare.createQp({}, f as never)),
      mk(forged(ProtectionDomain, others(pd)), 'createSrq(pd)', 'pd', (f) => bare.createSrq({}, f as never)),
      mk(forged(CompletionChannel, others(channel)), 'createCq(options.channel)', 'options.channel', (f) => context.createCq({ channel: f as never })),
      // The same keys as the real createCq above: the parse memo must not pass a forgery of the remembered instance's prototype.
      mk(forged(CompletionChannel, others(channel)), 'createCq(options.channel) after a real one', 'options.channel', (f) => context.createCq({ entries: 16, channel: f as never })),
      mk(forged(MemoryRegion, others(region)), 'postSend(region)', 'region', (f) => qp.postSend(f as never)),
      mk(forged(MemoryRegion, others(region)), 'prepareSend(region)', 'region', (f) => qp.prepareSend(f as never)),
      mk(forged(MemoryRegion, others(region)), 'prepareSendChain(region)', 'region', (f) => qp.prepareSendChain(f as never, { count: 2, length: 8 })),
      mk(forged(MemoryRegion, others(region)), 'srq.postRecv(region)', 'region', (f) => srq.postRecv(f as never)),
      mk(forged(MemoryRegion, others(region)), 'srq.prepareRecvChain(region)', 'region', (f) => srq.prepareRecvChain(f as never, { count: 2, length: 8 })),
      mk(forged(AddressHandle, others(region)), 'postSend(options.ud.ah)', 'options.ud.ah', (f) => qp.postSend(region, { ud: { ah: f as never, remoteQpn: 1 } })),
      mk(forged(EventChannel, others(eventChannel)), 'migrateId(channel)', 'channel', (f) => bare.migrateId(f as never)),
    );
    fc.assert(fc.property(forgedCases, (c) => ledger.call(`forged ${c.name}`, refusedAs(c.parameter, c.run), refused, c.input)), { ...params, numRuns: RUNS.forged });

    // ---------------------------------------------------------------- lying buffers
    phase('lying buffers');
    const dishonest = lyingBuffer.filter((b) => honestCopy(b) === undefined);
    const bufferCases = fc.oneof(
      mk(lyingBuffer, 'pd.register(buffer)', 'buffer', (b) => pd.register(b as never)),
      mk(lyingBuffer, 'pd.regMsgs(buffer)', 'buffer', (b) => pd.regMsgs(b as never)),
      mk(lyingBuffer, 'id.regMsgs(buffer)', 'buffer', (b) => pair.client.regMsgs(b as never)),
      // Only views that lie: a one-shot post copies an honest view's bytes at once (a resizable one too), and would really send.
      mk(dishonest, 'postSend(inline buffer)', 'region', (b) => qp.postSend(b as never, { inline: true })),
      mk(lyingBuffer, 'prepareSend(inline buffer)', 'region', (b) => qp.prepareSend(b as never, { inline: true })),
      mk(lyingBuffer, 'prepareSendChain(inline buffer)', 'region', (b) => qp.prepareSendChain(b as never, { inline: true, count: 1, length: 1 })),
    );
    fc.assert(fc.property(bufferCases, (c) => ledger.call(`lying ${c.name}`, () => {
      // A view that tells the truth and is of fixed length may register or be refused for other reasons (too small, detached):
      // only a lie or a resizable view must be refused by name.
      const value = c.run();
      return value;
    }, (value): Verdict => {
      // Whatever was accepted must be a region over real memory of the length the view truly has.
      if (value instanceof MemoryRegion) {
        const ok = value.length === value.buffer.byteLength;
        value.close();
        return ok ? 'accepted-junk' : false;
      }
      return 'accepted-junk';
    }, c.input)), { ...params, numRuns: RUNS.buffers });

    // ---------------------------------------------------------------- numbers
    phase('numbers');
    const numberCases = fc.oneof(
      // Above 16, poll() polls 16: a large integer is valid.
      mk(hostileNumber.filter((v) => !(Number.isInteger(v) && (v as number) >= 1)), 'cq.poll(max)', 'max', (v) => cq.poll(v as never)),
      ...(['statusAt', 'wrIdAt', 'byteLenAt', 'opcodeAt', 'immDataAt', 'completionAt', 'contextAt'] as const)
        .map((m) => mk(hostileNumber, `cq.${m}(index)`, 'index', (v) => (cq[m] as (i: unknown) => unknown)(v))),
      mk(hostileNumber, 'qp.recvCq.statusAt(index)', 'index', (v) => pair.client.queuePair.recvCq.statusAt(v as never)),
      mk(hostileNumber, 'cq.spinBudgetUs =', 'spinBudgetUs', (v) => { cq.spinBudgetUs = v as never; }),
      mk(hostileNumber, 'cq.maxSpinBudgetUs =', 'maxSpinBudgetUs', (v) => { cq.maxSpinBudgetUs = v as never; }),
      mk(hostileNumber.filter((v) => !(typeof v === 'number' && v >= 0.05 && v <= 1000)), 'cq.timeSliceMs =', 'timeSliceMs', (v) => { cq.timeSliceMs = v as never; }),
      mk(hostileNumber, 'createCq(options.entries)', 'options.entries', (v) => context.createCq({ entries: v as never, channel: false })),
      mk(hostileNumber, 'createCq(options.compVector)', 'options.compVector', (v) => context.createCq({ compVector: v as never, channel: false })),
      mk(hostileNumber.filter((v) => !(Number.isInteger(v) && (v as number) > 0)), 'pd.allocate(size)', 'size', (v) => pd.allocate(v as never)),
      ...(['offset', 'length'] as const).map((key) =>
        mk(hostileNumber, `postSend(options.${key})`, `options.${key}`, (v) => qp.postSend(region, { [key]: v }))),
      mk(notU32, 'postSend(options.immediate)', 'options.immediate', (v) => qp.postSend(region, { immediate: v as never })),
      ...(['offset', 'length'] as const).map((key) =>
        mk(hostileNumber, `srq.postRecv(options.${key})`, `options.${key}`, (v) => srq.postRecv(region, { [key]: v }))),
      ...(['count', 'offset', 'length', 'stride'] as const).map((key) =>
        mk(hostileNumber, `prepareSendChain(options.${key})`, `options.${key}`, (v) => qp.prepareSendChain(region, { count: 2, length: 8, [key]: v }))),
      mk(hostileNumber, 'prepared.setLength(length)', 'length', (v) => prepared.setLength(v as never)),
      mk(hostileNumber, 'prepared.setRange(offset)', 'offset', (v) => prepared.setRange(v as never, 8)),
      mk(hostileNumber, 'prepared.setRange(length)', 'length', (v) => prepared.setRange(0, v as never)),
      mk(notU32, 'prepared.setImmediate(value)', 'value', (v) => prepared.setImmediate(v as never)),
      mk(hostileNumber.filter((v) => !(Number.isSafeInteger(v) && (v as number) >= 0)), 'write.setRemote(address)', 'address', (v) => write.setRemote(v as never, 1)),
      mk(notU32, 'write.setRemote(rkey)', 'rkey', (v) => write.setRemote(4096, v as never)),
      mk(hostileNumber, 'qp.setMinRnrTimer(code)', 'code', (v) => qp.setMinRnrTimer(v as never)),
      mk(hostileNumber, 'createQp(attr.sendWr)', 'attr.sendWr', (v) => bare.createQp({ sendWr: v as never })),
      mk(hostileNumber, 'createSrq(attr.maxWr)', 'attr.maxWr', (v) => bare.createSrq({ maxWr: v as never })),
    );
    fc.assert(fc.property(numberCases, (c) => ledger.call(c.name, c.run, refused, c.input)), { ...params, numRuns: RUNS.numbers });

    // ---------------------------------------------------------------- enums and modes
    phase('enums and modes');
    const enumCases = fc.oneof(
      mk(badEnum(COMPLETION_MODES), 'cq.mode =', 'mode', (v) => { cq.mode = v as never; }),
      mk(badEnum(['SEND', 'RDMA_WRITE', 'RDMA_READ', 'ATOMIC_CMP_AND_SWP', 'ATOMIC_FETCH_AND_ADD']), 'postSend(options.opcode)', 'options.opcode', (v) => qp.postSend(region, { opcode: v as never })),
      mk(badEnum(['last', 'all', 'none']), 'prepareSendChain(options.signaled)', 'options.signaled', (v) => qp.prepareSendChain(region, { count: 2, length: 8, signaled: v as never })),
      mk(badEnum(['LOCAL_WRITE', 'REMOTE_WRITE', 'REMOTE_READ', 'REMOTE_ATOMIC']), 'pd.register(access)', 'access', (v) => pd.register(Buffer.alloc(64), [v as never])),
      mk(badEnum(['RC', 'UC', 'UD']), 'createQp(attr.qpType)', 'attr.qpType', (v) => bare.createQp({ qpType: v as never })),
      mk(badEnum(['TOS', 'REUSEADDR', 'AFONLY', 'ACK_TIMEOUT']), 'setOption(option)', 'option', (v) => bare.setOption({ option: v, value: 1 } as never)),
    );
    fc.assert(fc.property(enumCases, (c) => ledger.call(c.name, refusedAs(c.parameter, c.run), refused, c.input)), { ...params, numRuns: RUNS.enums });

    // ---------------------------------------------------------------- async: waits with hostile options
    phase('async waits');
    const asyncCases = fc.oneof(
      mk(fc.oneof(hostileNumber, forged(AbortSignal)), 'listener.nextRequest(options)', 'options', (v) => pair.listener.nextRequest(typeof v === 'object' && v !== null ? { signal: v as never } : { timeoutMs: v as never })),
      mk(hostileNumber, 'bare.resolveRoute(options.timeoutMs)', 'options.timeoutMs', (v) => bare.resolveRoute({ timeoutMs: v as never })),
    );
    await fc.assert(fc.asyncProperty(asyncCases, (c) => ledger.callAsync(c.name, c.run, refused, c.input, 2000)), { ...params, numRuns: RUNS.async });

    // ---------------------------------------------------------------- the resources still work
    phase('the round trip');
    assert.equal(cq.mode, 'adaptive');
    const inbox = pair.server.regMsgs(Buffer.alloc(64));
    srq.postRecv(inbox);
    const received = pair.server.queuePair.nextRecvCompletion();
    pair.client.postSend(pair.client.regMsgs(Buffer.from('after the fuzzing')));
    const [completion] = await Promise.all([received, qp.nextSendCompletion()]);
    assert.equal(completion.status, 'SUCCESS');
    assert.equal(inbox.buffer.subarray(0, completion.byteLen).toString(), 'after the fuzzing');
    assert.equal(ownRegion.closed, false);

    assert.deepEqual(ledger.problems(5000), [], `seed ${SEED}`);
    assert.equal(ledger.totalCalls, Object.values(RUNS).reduce((a, b) => a + b, 0));
  } catch (error) {
    failed = error;
    console.log(`fuzz-hostile: failed with seed ${SEED} (RDMACM_FUZZ_SEED=${SEED} replays it)`);
    throw error;
  } finally {
    for (const line of ledger.report('fuzz-hostile', (performance.now() - started) / 1000, SEED)) console.log(line);
    // Everything closes cleanly, children first.
    try {
      bare.close();
      eventChannel.close();
      cq.close();
      channel.close();
      pd.close();
      context.close();
      await pair.hangUp();
    } catch (error) {
      if (failed === undefined) throw error;
    }
  }
});
