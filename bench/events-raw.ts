// The Node floor of `rdmacm bench lat --wait events`: bench/uv-pingpong.c's
// ping-pong (its flags, its JSON line, its steps), in JavaScript over the raw
// layer only: the C functions through koffi, work requests encoded once, the
// channel's fd watched by the libuv handle the safe API uses, and no
// validation, resource objects, promises or listeners. Each wake-up drains,
// re-arms, then drains again, in the safe API's order (uv-pingpong -D);
// --arm-first re-arms before draining, as uv-pingpong does by default. What a
// Node process and koffi cost a wake-up by themselves: against uv-pingpong,
// Node's share; against the safe API's rows, the safe API's.
//
//   node dist/bench/events-raw.js -s [--arm-first] [-p PORT] [-n ITERS] [-w WARMUP] [-z SIZE]
//   node dist/bench/events-raw.js    [--arm-first] [-p PORT] [-n ITERS] [-w WARMUP] [-z SIZE] SERVER
import { parseArgs } from 'node:util';
import koffi, { type TypeObject } from 'koffi';
import { contextOps, librdmacm, libibverbs, readPointer, structs, toAddress, IBV_ACCESS_LOCAL_WRITE, IBV_SEND_SIGNALED, IBV_WR_SEND, type Address, type Pointer } from '../src/raw.js';
import { libc, F_GETFL, F_SETFL, O_NONBLOCK } from '../src/ffi/libc.js';
import { openPollHandle } from '../src/ffi/poll-handle.js';

const DEPTH = 64;
const SIGNAL_EVERY = 16;
const RAI_PASSIVE = 1;
const RDMA_PS_TCP = 0x106;
const IBV_QPT_RC = 2;

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    server: { type: 'boolean', short: 's', default: false },
    port: { type: 'string', short: 'p', default: '7480' },
    iters: { type: 'string', short: 'n', default: '1000' },
    warmup: { type: 'string', short: 'w', default: '1000' },
    size: { type: 'string', short: 'z', default: '2' },
    'arm-first': { type: 'boolean', default: false },
  },
});
const server = values.server;
const iters = Number(values.iters);
const warmup = Number(values.warmup);
const size = Number(values.size);
const armFirst = values['arm-first'];
const serverAddress = positionals[0];
if (!server && !serverAddress) fail('the client needs the server\'s address');
if (!(size >= 1 && size <= 4096) || !(iters >= 1) || !(warmup >= 0)) fail('-z takes 1–4096, -n at least 1, -w at least 0');

function fail(what: string): never {
  console.error(`events-raw: ${what}`);
  process.exit(2);
}

function check(call: string, result: number | Pointer | null): void {
  if (result === null || result === 0n || (typeof result === 'number' && result !== 0)) {
    console.error(`events-raw: ${call} failed: errno ${koffi.errno()}`);
    process.exit(1);
  }
}

/** A pointer a call returned, or the process ends with the call's errno. */
function need(call: string, pointer: Pointer | null): Pointer {
  check(call, pointer);
  return pointer!;
}

const pointerSlot = () => Buffer.alloc(8);
const at = (struct: TypeObject, field: string) => koffi.offsetof(struct, field);

// Connect, as uv-pingpong does: rdma_create_ep, then the queues, then accept or connect.
const hints = Buffer.alloc(structs.rdma_addrinfo.size);
hints.writeInt32LE(server ? RAI_PASSIVE : 0, at(structs.rdma_addrinfo, 'ai_flags'));
hints.writeInt32LE(RDMA_PS_TCP, at(structs.rdma_addrinfo, 'ai_port_space'));
const infoSlot = pointerSlot();
check('rdma_getaddrinfo', librdmacm.rdma_getaddrinfo(server ? null : serverAddress!, values.port, hints, infoSlot));
const info = infoSlot.readBigUInt64LE(0);
const idSlot = pointerSlot();
let id: Pointer;
if (server) {
  check('rdma_create_ep', librdmacm.rdma_create_ep(idSlot, info, null, null));
  const listener = idSlot.readBigUInt64LE(0);
  check('rdma_listen', librdmacm.rdma_listen(listener, 1));
  check('rdma_get_request', librdmacm.rdma_get_request(listener, idSlot));
  id = idSlot.readBigUInt64LE(0);
} else {
  check('rdma_create_ep', librdmacm.rdma_create_ep(idSlot, info, null, null));
  id = idSlot.readBigUInt64LE(0);
}

const verbs = readPointer(id, at(structs.rdma_cm_id, 'verbs'));
const pd = need('ibv_alloc_pd', libibverbs.ibv_alloc_pd(verbs));
const channel = need('ibv_create_comp_channel', libibverbs.ibv_create_comp_channel(verbs));
const recvCq = need('ibv_create_cq', libibverbs.ibv_create_cq(verbs, DEPTH, null, channel, 0));
const sendCq = need('ibv_create_cq', libibverbs.ibv_create_cq(verbs, DEPTH, null, null, 0));
const initAttr = Buffer.alloc(structs.ibv_qp_init_attr.size);
koffi.encode(initAttr, structs.ibv_qp_init_attr, {
  qp_context: null, send_cq: sendCq, recv_cq: recvCq, srq: null,
  cap: { max_send_wr: DEPTH, max_recv_wr: DEPTH, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 },
  qp_type: IBV_QPT_RC, sq_sig_all: 0,
});
check('rdma_create_qp', librdmacm.rdma_create_qp(id, pd, initAttr));
const qp = readPointer(id, at(structs.rdma_cm_id, 'qp'));

// Every Buffer the device or a verb writes into or reads from after this
// point. Only the addresses are used on the hot path, and V8 may collect a
// module's variable that no function refers to once the module has run: held
// that way, the registered buffer was freed while the device still wrote
// replies into it (glibc aborted the process at exit). finish() lets go of
// them once the queue pair and the registration are gone.
const nativeMemory: Buffer[] = [];
/** `memory`, kept alive until finish(). Over 64 bytes, so off V8's heap, where it never moves. */
function pinned(memory: Buffer): Buffer {
  nativeMemory.push(memory);
  return memory;
}

// Sends from the first page, receives into the second.
const buffer = pinned(Buffer.alloc(8192));
const bufferAddress = koffi.address(buffer) as bigint;
const mr = need('ibv_reg_mr', libibverbs.ibv_reg_mr(pd, bufferAddress, buffer.byteLength, IBV_ACCESS_LOCAL_WRITE));
const lkey = koffi.decode(mr, at(structs.ibv_mr, 'lkey'), 'uint32_t') as number;

/** One work request and its one gather entry, encoded once in native memory; its address as a Number. */
function prepared(struct: TypeObject, fields: Record<string, unknown>, sge: { addr: bigint; length: number }): Address {
  const memory = pinned(Buffer.alloc(Math.max(128, struct.size + structs.ibv_sge.size)));
  const sgeAddress = koffi.address(memory) + BigInt(struct.size);
  koffi.encode(memory, struct.size, structs.ibv_sge, { ...sge, lkey });
  koffi.encode(memory, struct, { next: null, sg_list: sgeAddress, num_sge: 1, ...fields });
  return toAddress(koffi.address(memory));
}
const recvWr = prepared(structs.ibv_recv_wr, { wr_id: 1 }, { addr: bufferAddress + 4096n, length: 4096 });
const sendWr = prepared(structs.ibv_send_wr, { wr_id: 2, opcode: IBV_WR_SEND, send_flags: 0 }, { addr: bufferAddress, length: size });
const signaledSendWr = prepared(structs.ibv_send_wr, { wr_id: 2, opcode: IBV_WR_SEND, send_flags: IBV_SEND_SIGNALED }, { addr: bufferAddress, length: size });
const badWr = pinned(Buffer.alloc(128));
const badWrAddress = toAddress(koffi.address(badWr));
const completions = pinned(Buffer.alloc(8 * structs.ibv_wc.size));
const completionsAddress = toAddress(koffi.address(completions));
const WC_SIZE = structs.ibv_wc.size;
const WC_STATUS = at(structs.ibv_wc, 'status');

const ops = contextOps(verbs);
const qpAddress = toAddress(qp);
const recvCqAddress = toAddress(recvCq);
const sendCqAddress = toAddress(sendCq);
const cqSlot = pointerSlot();
const cqContextSlot = pointerSlot();

let sent = 0;
let received = 0;
let pendingSignaled = 0;
let startMs = 0;
const samples = new Float64Array(iters);

function postRecv(): void {
  if (ops.postRecvAt(qpAddress, recvWr, badWrAddress) !== 0) check('ibv_post_recv', -1);
}

function postSend(): void {
  const signaled = sent % SIGNAL_EVERY === SIGNAL_EVERY - 1;
  if (ops.postSendAt(qpAddress, signaled ? signaledSendWr : sendWr, badWrAddress) !== 0) check('ibv_post_send', -1);
  sent++;
  if (signaled) pendingSignaled++;
}

function reapSends(): void {
  while (pendingSignaled > 0) {
    const n = ops.pollCqAt(sendCqAddress, 8, completionsAddress);
    if (n < 0) check('ibv_poll_cq (sends)', -1);
    if (n <= 0) return;
    for (let i = 0; i < n; i++) if (completions.readInt32LE(i * WC_SIZE + WC_STATUS) !== 0) check('a send', -1);
    pendingSignaled -= n;
  }
}

/** A receive arrived: the server answers it, the client times it and pings again. false when the run is over. */
function onReceive(): boolean {
  if (server) {
    postSend();
    postRecv();
    reapSends();
    return ++received < warmup + iters;
  }
  const endMs = performance.now();
  postRecv();
  if (received >= warmup) samples[received - warmup] = ((endMs - startMs) * 1000) / 2;
  reapSends();
  if (++received === warmup + iters) return false;
  startMs = performance.now();
  postSend();
  return true;
}

function drain(): boolean {
  for (;;) {
    const n = ops.pollCqAt(recvCqAddress, 8, completionsAddress);
    if (n < 0) check('ibv_poll_cq (receives)', -1);
    if (n === 0) return true;
    for (let i = 0; i < n; i++) {
      if (completions.readInt32LE(i * WC_SIZE + WC_STATUS) !== 0) check('a receive', -1);
      if (!onReceive()) return false;
    }
  }
}

let armed = false;
let unackedEvents = 0;

/** Arms the receive CQ: the next completion raises an event. */
function arm(): void {
  if (ops.reqNotifyCq(recvCq, 0) !== 0) check('ibv_req_notify_cq', -1);
  armed = true;
}

/** Takes the channel's event, if one waits (the fd is non-blocking), and acks events 16 at a time, as the safe API does. */
function takeEvent(): void {
  if (libibverbs.ibv_get_cq_event(channel, cqSlot, cqContextSlot) !== 0) {
    if (koffi.errno() !== 11 /* EAGAIN */) check('ibv_get_cq_event', -1);
    return;
  }
  armed = false;
  if (++unackedEvents === 16) {
    libibverbs.ibv_ack_cq_events(recvCq, unackedEvents);
    unackedEvents = 0;
  }
}

/**
 * One wake-up. By default the safe API's order: drain, and arm only once the
 * queue is empty and unarmed, then drain once more (a completion after the
 * arming raises an event). With --arm-first, uv-pingpong's (and ib_send_lat
 * -e's): take the event, re-arm, then drain. false when the run is over.
 */
function wake(): boolean {
  takeEvent();
  if (armFirst) {
    arm();
    return drain();
  }
  if (!drain()) return false;
  if (armed) return true;
  arm();
  return drain();
}

for (let i = 0; i < 16; i++) postRecv();
arm();
if (server) check('rdma_accept', librdmacm.rdma_accept(id, null));
else {
  check('rdma_connect', librdmacm.rdma_connect(id, null));
  startMs = performance.now();
  postSend();
}

const fd = koffi.decode(channel, at(structs.ibv_comp_channel, 'fd'), 'int') as number;
check('fcntl', libc.fcntl(fd, F_SETFL, libc.fcntl(fd, F_GETFL, 0) | O_NONBLOCK));
const watch = openPollHandle(fd, (status) => {
  if (status < 0) check(`uv_poll (status ${status})`, -1);
  if (!wake()) {
    watch.close();
    finish();
  }
});
watch.start();

function finish(): void {
  if (unackedEvents > 0) libibverbs.ibv_ack_cq_events(recvCq, unackedEvents);
  while (pendingSignaled > 0) reapSends();
  if (!server) {
    samples.sort();
    const percentile = (p: number) => samples[Math.min(iters - 1, Math.max(0, Math.ceil(p * iters) - 1))]!;
    const round3 = (value: number) => Math.round(value * 1000) / 1000;
    console.log(JSON.stringify({
      mode: 'raw', order: armFirst ? 'arm-first' : 'drain-first', size, iters, warmup,
      p50_us: round3(percentile(0.5)), p99_us: round3(percentile(0.99)), p999_us: round3(percentile(0.999)),
    }));
  }
  librdmacm.rdma_disconnect(id);
  librdmacm.rdma_destroy_qp(id);
  libibverbs.ibv_dereg_mr(mr);
  nativeMemory.length = 0;
}
