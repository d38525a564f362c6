// The safe-API counterpart of librdmacm's examples/rdma_client.c: connect with
// rdma_create_ep, send 16 bytes, receive 16 back.
//
//   ./node_modules/.bin/tsx examples/rdma_client.ts -s ADDRESS [-p PORT]
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import { createEndpoint } from 'rdmacm';

const MESSAGE_SIZE = 16;

/** Runs one exchange with the server; returns the message it received. */
export async function runClient(options: { address: string; port: string }): Promise<Buffer> {
  using id = createEndpoint(
    { host: options.address, port: options.port },
    { qp: { sendWr: 1, recvWr: 1, sendSge: 1, recvSge: 1, inlineData: MESSAGE_SIZE, sqSigAll: true } },
  );
  const inline = id.queuePair.caps.maxInlineData >= MESSAGE_SIZE;
  if (!inline) console.log('rdma_client: device doesn\'t support IBV_SEND_INLINE, using sge sends');
  const recvMsg = id.regMsgs(Buffer.alloc(MESSAGE_SIZE));
  const sendMsg = Buffer.alloc(MESSAGE_SIZE);
  const sendMr = inline ? undefined : id.regMsgs(sendMsg);
  id.postRecv(recvMsg);
  await id.connect();
  id.postSend(sendMr ?? sendMsg, { inline });
  id.getSendComp();
  id.getRecvComp();
  await id.disconnect();
  return Buffer.from(recvMsg.buffer);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { values } = parseArgs({ options: { s: { type: 'string' }, p: { type: 'string', default: '7471' } } });
  console.log('rdma_client: start');
  let code = 0;
  try {
    if (!values.s) throw new Error('usage: rdma_client -s server_address [-p port_number]');
    await runClient({ address: values.s, port: values.p! });
  } catch (error) {
    console.error(`rdma_client: ${error instanceof Error ? error.message : String(error)}`);
    code = 1;
  }
  console.log(`rdma_client: end ${code}`);
  process.exitCode = code;
}
