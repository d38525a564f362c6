// The safe-API counterpart of librdmacm's examples/rdma_server.c: listen with
// rdma_create_ep, take one request, receive 16 bytes, send 16 back.
//
//   ./node_modules/.bin/tsx examples/rdma_server.ts [-s ADDRESS] [-p PORT]
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import { createEndpoint } from 'rdmacm';

const MESSAGE_SIZE = 16;

/** Serves one client; returns the message it received. */
export async function runServer(options: { address?: string | undefined; port: string }): Promise<Buffer> {
  using listener = createEndpoint(
    { host: options.address, port: options.port, passive: true },
    { qp: { sendWr: 1, recvWr: 1, sendSge: 1, recvSge: 1, inlineData: MESSAGE_SIZE, sqSigAll: true } },
  );
  listener.listen(0);
  using id = listener.getRequest();
  const inline = id.queuePair.caps.maxInlineData >= MESSAGE_SIZE;
  if (!inline) console.log('rdma_server: device doesn\'t support IBV_SEND_INLINE, using sge sends');
  const recvMsg = id.regMsgs(Buffer.alloc(MESSAGE_SIZE));
  const sendMsg = Buffer.alloc(MESSAGE_SIZE);
  const sendMr = inline ? undefined : id.regMsgs(sendMsg);
  id.postRecv(recvMsg);
  await id.accept();
  id.getRecvComp();
  id.postSend(sendMr ?? sendMsg, { inline });
  id.getSendComp();
  await id.disconnect();
  return Buffer.from(recvMsg.buffer);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { values } = parseArgs({ options: { s: { type: 'string' }, p: { type: 'string', default: '7471' } } });
  console.log('rdma_server: start');
  let code = 0;
  try {
    await runServer({ address: values.s, port: values.p! });
  } catch (error) {
    console.error(`rdma_server: ${error instanceof Error ? error.message : String(error)}`);
    code = 1;
  }
  console.log(`rdma_server: end ${code}`);
  process.exitCode = code;
}
