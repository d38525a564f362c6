// The floor under bench/connsetup.ts: cmtime's client steps through the raw
// layer only (rdmacm/raw: the C functions through koffi, no validation, no
// resource objects, no promises), events read with blocking rdma_get_cm_event
// calls as cmtime's event thread does. What Node and koffi cost by themselves;
// the difference to connsetup.ts is what the safe API costs.
//
//   node dist/bench/connsetup-raw.js SERVER_ADDR [PORT] [CONNECTIONS]
//
// Same server, rounds and JSON output as connsetup.ts.
import koffi from 'koffi';
import { librdmacm, readPointer, structs, type Pointer } from '../src/raw.js';
import { CmEventType } from '../src/api/core/enums.js';
import { measureRounds, perConnection } from './conn-rounds.js';

const [address, portArg = '7471', countArg = '100'] = process.argv.slice(2);
if (!address || !/^\d+\.\d+\.\d+\.\d+$/.test(address)) {
  console.error('usage: connsetup-raw IPV4_SERVER_ADDR [PORT] [CONNECTIONS]');
  process.exit(1);
}
const count = Number(countArg);
const RDMA_PS_TCP = 0x106;
const IBV_QPT_RC = 2;
const EVENT_TYPE = koffi.offsetof(structs.rdma_cm_event, 'event');

const destination = Buffer.alloc(16); // struct sockaddr_in
destination.writeUInt16LE(2 /* AF_INET */, 0);
destination.writeUInt16BE(Number(portArg), 2);
address.split('.').forEach((octet, i) => destination.writeUInt8(Number(octet), 4 + i));
// cmtime's connection parameters: one responder resource, initiator depth 1, 5 retries.
const connParam = Buffer.alloc(structs.rdma_conn_param.size);
koffi.encode(connParam, structs.rdma_conn_param, {
  private_data: null, private_data_len: 0, responder_resources: 1, initiator_depth: 1,
  flow_control: 0, retry_count: 5, rnr_retry_count: 0, srq: 0, qp_num: 0,
});
const channel = librdmacm.rdma_create_event_channel();
const slot = Buffer.alloc(8);

function check(name: string, result: number): void {
  if (result !== 0) throw new Error(`${name} failed: errno ${koffi.errno()}`);
}

/** Reads events until `count` of `type` arrived (TIMEWAIT_EXIT may come in between). */
function awaitEvents(type: number, wanted: number): void {
  for (let got = 0; got < wanted;) {
    check('rdma_get_cm_event', librdmacm.rdma_get_cm_event(channel, slot));
    const event = slot.readBigUInt64LE(0);
    const seen = koffi.decode(event, EVENT_TYPE, 'int') as number;
    librdmacm.rdma_ack_cm_event(event);
    if (seen === type) got++;
    else if (seen !== CmEventType.values.TIMEWAIT_EXIT) throw new Error(`event ${CmEventType.nameOf(seen)} while waiting for ${CmEventType.nameOf(type)}`);
  }
}

function round(): Record<string, number> {
  const steps: Record<string, number> = {};
  const step = (name: string, action: () => void) => {
    const started = performance.now();
    action();
    steps[name] = perConnection(performance.now() - started, count);
  };
  const ids: Pointer[] = [];
  // One ibv_qp_init_attr for every QP, as cmtime has: librdmacm writes the CQs
  // it made for the first QP back into it, so the other QPs share them.
  const init = Buffer.alloc(structs.ibv_qp_init_attr.size);
  koffi.encode(init, structs.ibv_qp_init_attr, {
    cap: { max_send_wr: 1, max_recv_wr: 1, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 }, qp_type: IBV_QPT_RC, sq_sig_all: 0,
  });
  step('create_id', () => {
    for (let i = 0; i < count; i++) {
      check('rdma_create_id', librdmacm.rdma_create_id(channel, slot, null, RDMA_PS_TCP));
      ids.push(slot.readBigUInt64LE(0));
    }
  });
  step('resolve_addr', () => {
    for (const id of ids) check('rdma_resolve_addr', librdmacm.rdma_resolve_addr(id, null, destination, 2000));
    awaitEvents(CmEventType.values.ADDR_RESOLVED, count);
  });
  step('resolve_route', () => {
    for (const id of ids) check('rdma_resolve_route', librdmacm.rdma_resolve_route(id, 2000));
    awaitEvents(CmEventType.values.ROUTE_RESOLVED, count);
  });
  step('create_qp', () => {
    for (const id of ids) check('rdma_create_qp', librdmacm.rdma_create_qp(id, null, init));
  });
  step('connect', () => {
    for (const id of ids) check('rdma_connect', librdmacm.rdma_connect(id, connParam));
    awaitEvents(CmEventType.values.ESTABLISHED, count);
  });
  step('disconnect', () => {
    for (const id of ids) check('rdma_disconnect', librdmacm.rdma_disconnect(id));
    awaitEvents(CmEventType.values.DISCONNECTED, count);
  });
  step('destroy', () => {
    // Newest first: the first id's rdma_destroy_qp frees the shared CQs, once no other QP uses them.
    for (const id of ids.reverse()) {
      if (readPointer(id, koffi.offsetof(structs.rdma_cm_id, 'qp')) !== 0n) librdmacm.rdma_destroy_qp(id);
      check('rdma_destroy_id', librdmacm.rdma_destroy_id(id));
    }
  });
  return steps;
}

await measureRounds(count, round);
librdmacm.rdma_destroy_event_channel(channel);
