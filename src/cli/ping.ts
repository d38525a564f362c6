// `rdmacm ping`: rping's protocol and flags, so either side can be rdma-core's
// rping. Per ping: the client advertises its source buffer (addr, rkey, size,
// big-endian), the server RDMA-reads it and says "go ahead"; the client
// advertises its sink buffer, the server RDMA-writes the data back and says
// "go ahead" again; the client compares source and sink (-V).
import { Buffer } from 'node:buffer';
import process from 'node:process';
import { parseCommandArgs, usageError } from './arguments.js';
import { createId, type CmId } from '../api/cm/cm-id.js';
import { EventChannel } from '../api/cm/event-channel.js';
import type { MemoryRegion } from '../api/verbs/memory-region.js';
import type { WorkCompletion } from '../api/work/work-completion.js';

const usage = `Usage: rdmacm ping -s [-v] [-S size] [-a addr] [-p port]
       rdmacm ping -c [-vV] [-S size] [-C count] -a addr [-p port]

Speaks rping's protocol (rdma-core's librdmacm/examples/rping.c), so either
side may be rping itself.

Options:
  -s            server side (serves one client)
  -c            client side
  -a ADDR       address to connect to, or to bind (server; default 0.0.0.0)
  -p PORT       port (default 7174)
  -S SIZE       ping data size (default 64; ${minSize()}–65535; both sides must agree)
  -C COUNT      ping count (client; default: until interrupted; the server
                serves until its client disconnects)
  -v            display ping data
  -V            validate ping data (client: it compares source and sink)
  -h, --help    show this help
`;

const INFO_SIZE = 16; // struct rping_rdma_info: __be64 buf; __be32 rkey; __be32 size
const MAX_SIZE = 64 * 1024 - 1;
function minSize(): number {
  return 'rdma-ping-%d: '.length + 1 + '2147483647'.length + 1;
}

interface BufferInfo {
  readonly address: bigint;
  readonly rkey: number;
  readonly size: number;
}

function encodeInfo(target: Buffer, region: MemoryRegion, size: number): void {
  target.writeBigUInt64BE(region.address, 0);
  target.writeUInt32BE(region.rkey, 8);
  target.writeUInt32BE(size, 12);
}

/** Decodes a peer's advertisement, length-checked first. */
function decodeInfo(completion: WorkCompletion, inbox: Buffer, limit: number): BufferInfo {
  if (completion.byteLen !== INFO_SIZE) throw new Error(`Received bogus data, size ${completion.byteLen}`);
  const info = { address: inbox.readBigUInt64BE(0), rkey: inbox.readUInt32BE(8), size: inbox.readUInt32BE(12) };
  if (info.size > limit) throw new Error(`the peer advertised ${info.size} bytes; this side has ${limit} (use the same -S on both sides)`);
  return info;
}

/** The ASCII pattern rping fills its source buffer with for ping number `ping`. */
export function pingData(target: Buffer, ping: number, size: number): void {
  const prefix = Buffer.from(`rdma-ping-${ping}: `);
  prefix.copy(target, 0, 0, Math.min(prefix.length, size));
  let c = 65 + (ping % 58);
  for (let i = prefix.length; i < size; i++) {
    target[i] = c;
    c = c + 1 > 122 ? 65 : c + 1;
  }
  target[size - 1] = 0;
}

const cString = (buffer: Buffer) => buffer.subarray(0, Math.max(0, buffer.indexOf(0))).toString('latin1');

/** The connection's queues and buffers, as rping sets them up. */
interface Session {
  readonly id: CmId;
  readonly inbox: MemoryRegion;
  readonly outbox: MemoryRegion;
  /** Waits for the next receive (re-posting its buffer), or for the peer to disconnect. */
  nextMessage(): Promise<WorkCompletion | 'disconnected'>;
  send(): Promise<void>;
}

function session(id: CmId): Session {
  const qp = id.createQp({ sendWr: 16, recvWr: 2, sendSge: 1, recvSge: 1 });
  const inbox = id.regMsgs(Buffer.alloc(INFO_SIZE));
  const outbox = id.regMsgs(Buffer.alloc(INFO_SIZE));
  const receive = qp.prepareRecv(inbox);
  const send = qp.prepareSend(outbox);
  receive.post();
  const disconnected = id.waitForDisconnect().then(() => 'disconnected' as const);
  disconnected.catch(() => undefined);
  return {
    id,
    inbox,
    outbox,
    async nextMessage() {
      const completion = qp.nextRecvCompletion();
      completion.catch(() => undefined); // a flushed receive after disconnect is expected
      const first = await Promise.race([completion, disconnected]);
      if (first !== 'disconnected') receive.post();
      return first;
    },
    async send() {
      send.post();
      await qp.nextSendCompletion();
    },
  };
}

async function runServer(options: PingOptions, out: (line: string) => void): Promise<void> {
  using channel = new EventChannel();
  using listener = createId(channel);
  listener.bindAddr({ address: options.address ?? '0.0.0.0', port: options.port });
  listener.listen(3);
  using id = await listener.nextRequest({ timeoutMs: 0x7fffffff });
  const s = session(id);
  // Least privilege: the server's buffer is only the local end of the read and the write.
  const data = id.pd.allocate(options.size, ['LOCAL_WRITE']);
  await id.accept();
  for (;;) {
    const source = await s.nextMessage();
    if (source === 'disconnected') break;
    const from = decodeInfo(source, s.inbox.buffer, options.size);
    id.postSend(data, { opcode: 'RDMA_READ', length: from.size, remote: { address: from.address, rkey: from.rkey } });
    await id.queuePair.nextSendCompletion();
    if (options.verbose) out(`server ping data: ${cString(data.buffer)}`);
    await s.send();

    const sink = await s.nextMessage();
    if (sink === 'disconnected') break;
    const to = decodeInfo(sink, s.inbox.buffer, options.size);
    const length = Math.min(data.buffer.indexOf(0) + 1 || options.size, to.size);
    id.postSend(data, { opcode: 'RDMA_WRITE', length, remote: { address: to.address, rkey: to.rkey } });
    await id.queuePair.nextSendCompletion();
    await s.send();
  }
  await id.disconnect();
}

async function runClient(options: PingOptions, out: (line: string) => void): Promise<void> {
  using channel = new EventChannel();
  using id = createId(channel);
  await id.resolveAddr({ address: options.address!, port: options.port });
  await id.resolveRoute();
  const s = session(id);
  // The server reads the source and writes the sink: each gets only the access it needs.
  const source = id.pd.allocate(options.size, ['LOCAL_WRITE', 'REMOTE_READ']);
  const sink = id.pd.allocate(options.size, ['LOCAL_WRITE', 'REMOTE_WRITE']);
  await id.connect({ responderResources: 1, initiatorDepth: 1, retryCount: 7, rnrRetryCount: 7 });
  for (let ping = 0; options.count === 0 || ping < options.count; ping++) {
    pingData(source.buffer, ping, options.size);
    encodeInfo(s.outbox.buffer, source, options.size);
    await s.send();
    if ((await s.nextMessage()) === 'disconnected') throw new Error('the server disconnected');
    encodeInfo(s.outbox.buffer, sink, options.size);
    await s.send();
    if ((await s.nextMessage()) === 'disconnected') throw new Error('the server disconnected');
    if (options.validate && !source.buffer.equals(sink.buffer)) throw new Error('data mismatch!');
    if (options.verbose) out(`ping data: ${cString(sink.buffer)}`);
  }
  // The server answers our disconnect with its own, which resolves this.
  await id.disconnect({ timeoutMs: 10_000 });
}

interface PingOptions {
  server: boolean;
  address: string | undefined;
  port: number;
  size: number;
  count: number;
  verbose: boolean;
  validate: boolean;
}

export async function runPing(argv: string[]): Promise<number> {
  const parsed = parseCommandArgs('ping', usage, argv, {
    s: { type: 'boolean' }, c: { type: 'boolean' }, a: { type: 'string' }, p: { type: 'string', default: '7174' },
    S: { type: 'string', default: '64' }, C: { type: 'string', default: '0' }, v: { type: 'boolean' },
    V: { type: 'boolean' }, help: { type: 'boolean', short: 'h' },
  });
  if (typeof parsed === 'number') return parsed;
  const { values } = parsed;
  const options: PingOptions = {
    server: Boolean(values.s),
    address: values.a,
    port: Number(values.p),
    size: Number(values.S),
    count: Number(values.C),
    verbose: Boolean(values.v),
    validate: Boolean(values.V),
  };
  const problem =
    values.s === values.c ? 'give exactly one of -s (server) and -c (client)'
    : !options.server && !options.address ? 'the client needs -a ADDR'
    : !Number.isInteger(options.port) || options.port < 1 || options.port > 65535 ? '-p must be 1–65535'
    : !Number.isInteger(options.size) || options.size < minSize() || options.size > MAX_SIZE ? `-S must be ${minSize()}–${MAX_SIZE}`
    : !Number.isInteger(options.count) || options.count < 0 ? '-C must be 0 or more'
    : undefined;
  if (problem) return usageError('ping', usage, problem);
  const out = (line: string) => process.stdout.write(`${line}\n`);
  try {
    await (options.server ? runServer(options, out) : runClient(options, out));
    return 0;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(`rdmacm ping: ${message}\n`);
    return /ENODEV|no RDMA device/.test(message) ? 2 : 1;
  }
}
