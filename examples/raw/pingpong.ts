// rdma_server / rdma_client's exchange written on the raw layer, to show that
// the raw layer alone speaks to rdma-core's own C examples: one 16-byte message
// each way over an RC endpoint made with rdma_create_ep, using the inline
// rdma_verbs.h helpers. The safe-API versions are examples/rdma_server.ts and
// examples/rdma_client.ts.
//
//   tsx examples/raw/pingpong.ts server [-s ADDRESS] [-p PORT]
//   tsx examples/raw/pingpong.ts client -s ADDRESS [-p PORT]
import koffi from 'koffi';
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import { librdmacm, libibverbs, structs, rdma_reg_msgs, rdma_dereg_mr, rdma_post_recv, rdma_post_send,
  rdma_get_recv_comp, rdma_get_send_comp, IBV_SEND_INLINE, checkRdma, checkPointer, checkVerbs, readPointer, type Pointer } from 'rdmacm/raw';

const RAI_PASSIVE = 1;
const RDMA_PS_TCP = 0x0106;
const IBV_QP_CAP = 1 << 19;
const MESSAGE_SIZE = 16;

/** A zeroed C struct in a Buffer, with koffi's layout. */
const cStruct = (type: { size: number }) => Buffer.alloc(type.size);
/** The pointer a C call wrote into an out-parameter slot. */
const slotPointer = (slot: Buffer): Pointer => slot.readBigUInt64LE(0);

function hints(flags: number): Buffer {
  const buffer = cStruct(structs.rdma_addrinfo);
  buffer.writeInt32LE(flags, koffi.offsetof(structs.rdma_addrinfo, 'ai_flags'));
  buffer.writeInt32LE(RDMA_PS_TCP, koffi.offsetof(structs.rdma_addrinfo, 'ai_port_space'));
  return buffer;
}

function qpInitAttr(): Buffer {
  const attr = cStruct(structs.ibv_qp_init_attr);
  koffi.encode(attr, structs.ibv_qp_init_attr, {
    qp_context: null, send_cq: null, recv_cq: null, srq: null,
    cap: { max_send_wr: 1, max_recv_wr: 1, max_send_sge: 1, max_recv_sge: 1, max_inline_data: MESSAGE_SIZE },
    qp_type: 0, sq_sig_all: 1,
  });
  return attr;
}

const maxInlineData = (attr: Buffer) =>
  attr.readUInt32LE(koffi.offsetof(structs.ibv_qp_init_attr, 'cap') + koffi.offsetof(structs.ibv_qp_cap, 'max_inline_data'));

/** Waits for one completion and checks its status. */
function awaitCompletion(get: (id: Pointer, wc: Buffer) => number, id: Pointer, name: string): void {
  const wc = cStruct(structs.ibv_wc);
  let ret: number;
  while ((ret = get(id, wc)) === 0);
  checkRdma(name, ret);
  const status = wc.readInt32LE(koffi.offsetof(structs.ibv_wc, 'status'));
  if (status !== 0) throw new Error(`${name}: completion status ${libibverbs.ibv_wc_status_str(status)}`);
}

/** The exchange both sides share once connected: what differs is who sends first. */
function exchange(id: Pointer, connect: () => void, sendFirst: boolean, fill: number): Buffer {
  const sendMsg = koffi.alloc('uint8_t', MESSAGE_SIZE) as Pointer;
  const recvMsg = koffi.alloc('uint8_t', MESSAGE_SIZE) as Pointer;
  new Uint8Array(koffi.view(sendMsg, MESSAGE_SIZE)).fill(fill);
  const mr = checkPointer('rdma_reg_msgs', rdma_reg_msgs(id, recvMsg, MESSAGE_SIZE));
  try {
    checkRdma('rdma_post_recv', rdma_post_recv(id, null, recvMsg, MESSAGE_SIZE, mr));
    connect();
    try {
      const send = () => checkRdma('rdma_post_send', rdma_post_send(id, null, sendMsg, MESSAGE_SIZE, null, IBV_SEND_INLINE));
      if (sendFirst) {
        send();
        awaitCompletion(rdma_get_send_comp, id, 'rdma_get_send_comp');
        awaitCompletion(rdma_get_recv_comp, id, 'rdma_get_recv_comp');
      } else {
        awaitCompletion(rdma_get_recv_comp, id, 'rdma_get_recv_comp');
        send();
        awaitCompletion(rdma_get_send_comp, id, 'rdma_get_send_comp');
      }
      return Buffer.from(koffi.view(recvMsg, MESSAGE_SIZE));
    } finally {
      librdmacm.rdma_disconnect(id);
    }
  } finally {
    rdma_dereg_mr(mr);
    koffi.free(sendMsg);
    koffi.free(recvMsg);
  }
}

/** Passive side, as rdma_server.c: listen, take one request, receive then send. */
export function rawServer(options: { address?: string | undefined; port: string }): Buffer {
  const res = Buffer.alloc(8);
  checkRdma('rdma_getaddrinfo', librdmacm.rdma_getaddrinfo(options.address ?? null, options.port, hints(RAI_PASSIVE), res));
  const listenSlot = Buffer.alloc(8);
  try {
    checkRdma('rdma_create_ep', librdmacm.rdma_create_ep(listenSlot, slotPointer(res), null, qpInitAttr()));
    const listenId = slotPointer(listenSlot);
    try {
      checkRdma('rdma_listen', librdmacm.rdma_listen(listenId, 0));
      const idSlot = Buffer.alloc(8);
      checkRdma('rdma_get_request', librdmacm.rdma_get_request(listenId, idSlot));
      const id = slotPointer(idSlot);
      try {
        const qp = readPointer(id, koffi.offsetof(structs.rdma_cm_id, 'qp'));
        const granted = qpInitAttr();
        checkVerbs('ibv_query_qp', libibverbs.ibv_query_qp(qp, cStruct(structs.ibv_qp_attr), IBV_QP_CAP, granted));
        if (maxInlineData(granted) < MESSAGE_SIZE) throw new Error('device does not support inline sends of 16 bytes');
        return exchange(id, () => checkRdma('rdma_accept', librdmacm.rdma_accept(id, null)), false, 0x53);
      } finally {
        librdmacm.rdma_destroy_ep(id);
      }
    } finally {
      librdmacm.rdma_destroy_ep(listenId);
    }
  } finally {
    librdmacm.rdma_freeaddrinfo(slotPointer(res));
  }
}

/** Active side, as rdma_client.c: connect, send then receive. */
export function rawClient(options: { address: string; port: string }): Buffer {
  const res = Buffer.alloc(8);
  checkRdma('rdma_getaddrinfo', librdmacm.rdma_getaddrinfo(options.address, options.port, hints(0), res));
  try {
    const idSlot = Buffer.alloc(8);
    const attr = qpInitAttr();
    checkRdma('rdma_create_ep', librdmacm.rdma_create_ep(idSlot, slotPointer(res), null, attr));
    const id = slotPointer(idSlot);
    try {
      if (maxInlineData(attr) < MESSAGE_SIZE) throw new Error('device does not support inline sends of 16 bytes');
      return exchange(id, () => checkRdma('rdma_connect', librdmacm.rdma_connect(id, null)), true, 0x43);
    } finally {
      librdmacm.rdma_destroy_ep(id);
    }
  } finally {
    librdmacm.rdma_freeaddrinfo(slotPointer(res));
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { values, positionals } = parseArgs({
    options: { s: { type: 'string' }, p: { type: 'string', default: '7471' } },
    allowPositionals: true,
  });
  const role = positionals[0];
  const name = role === 'server' ? 'raw_server' : 'raw_client';
  console.log(`${name}: start`);
  let code = 0;
  try {
    let received: Buffer;
    if (role === 'server') received = rawServer({ address: values.s, port: values.p! });
    else if (role === 'client' && values.s) received = rawClient({ address: values.s, port: values.p! });
    else throw new Error('usage: pingpong.ts server [-s ADDRESS] [-p PORT] | client -s ADDRESS [-p PORT]');
    console.log(`${name}: received ${received.length} bytes`);
  } catch (error) {
    console.error(String(error));
    code = 1;
  }
  console.log(`${name}: end ${code}`);
  process.exitCode = code;
}
