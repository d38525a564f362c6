// A connected server and client in one process, each on its own event channel:
// the setup most device tests start from.
import {
  createId, EventChannel, type CmId, type ConnParam, type CreateQpAttr, type Established, type QpAttr,
} from '../../src/index.js';
import { deviceAddress, freshPort } from './device.js';

export interface PairOptions {
  /** Queue pair attributes for both sides (default: 8 WRs each way, 64 B inline). */
  readonly qp?: QpAttr;
  /** The client's queue pair attributes, made once its device is known (e.g. with a CQ of its own); default: qp. */
  readonly clientQp?: (id: CmId) => CreateQpAttr;
  readonly clientParam?: ConnParam;
  readonly serverParam?: ConnParam;
  /** Runs on each id before its QP is made (e.g. to create a shared receive queue). */
  readonly beforeQp?: (id: CmId, side: 'client' | 'server') => void;
  /** Runs on each id once its QP exists, before connect/accept (e.g. to post receives). */
  readonly beforeConnect?: (id: CmId, side: 'client' | 'server') => void;
}

export interface Pair {
  readonly address: string;
  readonly port: number;
  readonly listener: CmId;
  readonly server: CmId;
  readonly client: CmId;
  readonly established: Established;
  /** Both sides disconnect (each answering the other), then everything closes. */
  hangUp(): Promise<void>;
  /** Closes everything, newest first, without disconnecting. */
  close(): void;
}

export async function connectPair(options: PairOptions = {}): Promise<Pair> {
  const qp = options.qp ?? { sendWr: 8, recvWr: 8, inlineData: 64 };
  const address = deviceAddress();
  const port = freshPort();
  const serverChannel = new EventChannel();
  const clientChannel = new EventChannel();
  const listener = createId(serverChannel);
  listener.bindAddr({ address, port });
  listener.listen(8);

  const client = createId(clientChannel);
  await client.resolveAddr({ address, port });
  await client.resolveRoute();
  options.beforeQp?.(client, 'client');
  client.createQp(options.clientQp?.(client) ?? qp);
  options.beforeConnect?.(client, 'client');

  const requested = listener.nextRequest({ timeoutMs: 10_000 });
  const connected = client.connect(options.clientParam, { timeoutMs: 10_000 });
  const server = await requested;
  options.beforeQp?.(server, 'server');
  server.createQp(qp);
  options.beforeConnect?.(server, 'server');
  const [established] = await Promise.all([connected, server.accept(options.serverParam)]);
  const close = () => {
    for (const resource of [client, server, listener, clientChannel, serverChannel]) resource.close();
  };
  return {
    address, port, listener, server, client, established, close,
    async hangUp() {
      const serverDone = server.disconnect().catch(() => undefined);
      await client.disconnect().catch(() => undefined);
      await serverDone;
      close();
    },
  };
}
