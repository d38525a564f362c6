// The JS side of the data path, without a device: ns per prepared post and per
// poll, measured through the real PreparedSend / CompletionQueue code and the
// same koffi prototypes, with the provider's function pointers replaced by a
// stand-in C function (libm's fegetround: no arguments read, no system call,
// returns 0 — so post() succeeds and poll() finds nothing).
//
//   node dist/bench/overhead.js [--json]
//
// What this gives is the binding's own cost per crossing (JS checks + koffi
// marshalling + an indirect call); a C program pays only the indirect call.
// Bound calls are opt-in (src/ffi/bound-call.ts): this process turns them on,
// and measures the same post and poll with plain calls, as every user gets
// them by default, in a second process started with RDMACM_BOUND_CALLS=0, as a
// process that mixes both kinds of call slows its call sites.
import { execFileSync } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import koffi from 'koffi';
import { ibv_context, ibv_context_ops, ibv_cq, ibv_qp } from '../src/structs/verbs-resources.js';
import { CompletionQueue } from '../src/api/work/completion-queue.js';
import { QueuePair } from '../src/api/verbs/queue-pair.js';
import { internal } from '../src/api/core/internal.js';
import { Resource } from '../src/api/core/resource.js';
import type { ProtectionDomain } from '../src/api/verbs/protection-domain.js';
import { boundCallsUnavailable, setBoundCalls } from '../src/ffi/bound-call.js';
import { cFunctionAddress } from '../tests/support/c-function.js';

setBoundCalls(process.env.RDMACM_BOUND_CALLS !== '0');

const standIn = cFunctionAddress('libm.so.6', 'fegetround');

/** Zeroed native memory that lives as long as this process (kept in `keep`). */
const keep: Buffer[] = [];
function nativeBlock(size: number): { address: bigint; view: DataView } {
  const buffer = Buffer.alloc(size + 64);
  keep.push(buffer);
  return { address: koffi.address(buffer), view: new DataView(buffer.buffer, buffer.byteOffset, buffer.byteLength) };
}

// A fake struct ibv_context whose data-path ops all point at the stand-in.
const context = nativeBlock(ibv_context.size);
const opsBase = koffi.offsetof(ibv_context, 'ops');
for (const slot of ['post_send', 'post_recv', 'post_srq_recv', 'poll_cq', 'req_notify_cq']) {
  context.view.setBigUint64(opsBase + koffi.offsetof(ibv_context_ops, slot), standIn, true);
}
// A fake CQ (no completion channel) and QP on that context.
const cq = nativeBlock(ibv_cq.size);
cq.view.setBigUint64(koffi.offsetof(ibv_cq, 'context'), context.address, true);
const qp = nativeBlock(ibv_qp.size);
qp.view.setBigUint64(koffi.offsetof(ibv_qp, 'context'), context.address, true);
qp.view.setBigUint64(koffi.offsetof(ibv_qp, 'send_cq'), cq.address, true);
qp.view.setBigUint64(koffi.offsetof(ibv_qp, 'recv_cq'), cq.address, true);
qp.view.setUint32(koffi.offsetof(ibv_qp, 'qp_num'), 42, true);
qp.view.setInt32(koffi.offsetof(ibv_qp, 'qp_type'), 2, true);

class StandIn extends Resource {
  constructor() {
    super('stand-in', 1n, undefined, { warnOnLeak: false });
  }
  protected release(): void {}
}
const owner = new StandIn();
const caps = { max_send_wr: 16, max_recv_wr: 16, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 64 };
const queuePair = new QueuePair(internal, owner, qp.address, () => owner as unknown as ProtectionDomain, caps, () => {});
const send = queuePair.prepareSend(Buffer.alloc(64), { inline: true, signaled: false });
const completionQueue: CompletionQueue = queuePair.sendCq;
// The prototypes the binding's hot path uses (addresses as Numbers), and the
// `void *` one with BigInts, which it used before, for comparison.
const direct = koffi.decode(standIn, koffi.proto('int rdmacm_bench_post_fn(uintptr_t qp, uintptr_t wr, uintptr_t bad_wr)')) as
  (a: number, b: number, c: number) => number;
const directPoll = koffi.decode(standIn, koffi.proto('int rdmacm_bench_poll_fn(uintptr_t cq, int n, uintptr_t wc)')) as
  (a: number, n: number, c: number) => number;
const directVoidPointers = koffi.decode(standIn, koffi.proto('int rdmacm_bench_post_ptr_fn(void *qp, void *wr, void *bad_wr)')) as
  (a: bigint, b: bigint, c: bigint) => number;
// The same stand-in with fewer addresses: what each argument adds to a call.
const withNoArgument = koffi.decode(standIn, koffi.proto('int rdmacm_bench_0_fn(void)')) as () => number;
const withOneAddress = koffi.decode(standIn, koffi.proto('int rdmacm_bench_1_fn(uintptr_t a)')) as (a: number) => number;
const withTwoAddresses = koffi.decode(standIn, koffi.proto('int rdmacm_bench_2_fn(uintptr_t a, uintptr_t b)')) as
  (a: number, b: number) => number;
const wcArea = Number(nativeBlock(48 * 16).address);
const [qpAt, contextAt, cqAt] = [qp.address, context.address, cq.address].map(Number) as [number, number, number];

/** ns per call of `body`, the median of 7 rounds of `n` calls after a warm-up. */
function measure(n: number, body: (n: number) => number): number {
  body(n / 4);
  const rounds: number[] = [];
  for (let r = 0; r < 7; r++) {
    const started = process.hrtime.bigint();
    body(n);
    rounds.push(Number(process.hrtime.bigint() - started) / n);
  }
  rounds.sort((a, b) => a - b);
  return Math.round(rounds[3]! * 10) / 10;
}

const N = 1_000_000;
let sink = 0;
const figures = {
  prepared_post_ns: measure(N, (n) => {
    for (let i = 0; i < n; i++) send.post();
    return n;
  }),
  cq_poll_empty_ns: measure(N, (n) => {
    for (let i = 0; i < n; i++) sink += completionQueue.poll(16);
    return n;
  }),
  koffi_call_post_proto_ns: measure(N, (n) => {
    for (let i = 0; i < n; i++) sink += direct(qpAt, contextAt, cqAt);
    return n;
  }),
  koffi_call_post_void_ptr_ns: measure(N, (n) => {
    for (let i = 0; i < n; i++) sink += directVoidPointers(qp.address, context.address, cq.address);
    return n;
  }),
  koffi_call_poll_proto_ns: measure(N, (n) => {
    for (let i = 0; i < n; i++) sink += directPoll(cqAt, 16, wcArea);
    return n;
  }),
  koffi_call_no_argument_ns: measure(N, (n) => {
    for (let i = 0; i < n; i++) sink += withNoArgument();
    return n;
  }),
  koffi_call_one_address_ns: measure(N, (n) => {
    for (let i = 0; i < n; i++) sink += withOneAddress(qpAt);
    return n;
  }),
  koffi_call_two_addresses_ns: measure(N, (n) => {
    for (let i = 0; i < n; i++) sink += withTwoAddresses(qpAt, contextAt);
    return n;
  }),
  // The latency loops read it once per round trip. (Its result needs no sink:
  // V8 cannot drop a call into Node's binding.)
  performance_now_ns: measure(N, (n) => {
    for (let i = 0; i < n; i++) performance.now();
    return n;
  }),
  status_wrid_read_ns: measure(N, (n) => {
    for (let i = 0; i < n; i++) sink += completionQueue.statusAt(i & 15) + completionQueue.wrIdAt(i & 15);
    return n;
  }),
};
if (sink !== 0) console.error('unexpected: the stand-in returned non-zero');
// Per ping-pong half round trip, the JS side adds one send post, one receive
// re-post and at least one poll that finds the completion (the extra empty
// polls of a busy-wait only spin while the wire is busy anyway).
const perHalfRoundTrip = figures.prepared_post_ns * 2 + figures.cq_poll_empty_ns + figures.status_wrid_read_ns;
// Per streamed message: one post; 1 poll in 16 on the sender; on the receiver
// one poll per up-to-16 completions and one re-post.
const perMessage = figures.prepared_post_ns * 2 + figures.cq_poll_empty_ns / 8;
/** The plain calls' post and poll, from a second process of this script without bound calls. */
function plainCallFigures(): { prepared_post_plain_call_ns?: number; cq_poll_plain_call_ns?: number } {
  if (process.env.RDMACM_BOUND_CALLS === '0') return {};
  const output = execFileSync(process.execPath, [...process.execArgv, process.argv[1]!, '--json'], {
    env: { ...process.env, RDMACM_BOUND_CALLS: '0' }, encoding: 'utf8',
  });
  const plain = JSON.parse(output) as typeof figures;
  return { prepared_post_plain_call_ns: plain.prepared_post_ns, cq_poll_plain_call_ns: plain.cq_poll_empty_ns };
}

const result = {
  ...figures,
  ...plainCallFigures(),
  js_overhead_per_half_rtt_ns: Math.round(perHalfRoundTrip),
  js_overhead_per_message_ns: Math.round(perMessage),
  bound_calls: boundCallsUnavailable() ?? 'on',
  node: process.version,
  koffi: (koffi as unknown as { version?: string }).version ?? 'unknown',
};
if (process.argv.includes('--json')) console.log(JSON.stringify(result));
else for (const [key, value] of Object.entries(result)) console.log(`${key.padEnd(32)} ${value}`);
owner.close();
