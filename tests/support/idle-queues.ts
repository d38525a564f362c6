// Run as a program (`node idle-queues.js`): a fresh process that arms 100
// queues in adaptive mode and one that just took a completion, then measures
// its idle CPU over 10 s and prints it as JSON. A fresh process, because a test
// process's earlier work goes on costing it CPU for a while (a clean-clone CI
// run read 1.28 % after the tests before; performance-notes.md, 2026-12-02).
import { Buffer } from 'node:buffer';
import process from 'node:process';
import type { CompletionQueue } from '../../src/index.js';
import { connectPair } from './pair.js';
import { measureIdle } from './gc.js';

const pair = await connectPair({
  beforeConnect: (id, side) => {
    if (side === 'server') id.postRecv(id.regMsgs(Buffer.alloc(64)));
  },
});
const queues: CompletionQueue[] = [];
try {
  const served = pair.server.queuePair.recvCq;
  const received = served.next();
  pair.client.postSend(Buffer.alloc(64), { inline: true });
  if ((await received).status !== 'SUCCESS') throw new Error('the first message did not arrive');
  const waits = [served.next()]; // right after a completion: adaptive polls its budget out, then sleeps
  for (let i = 0; i < 100; i++) {
    const cq = pair.server.device!.createCq({ entries: 4 });
    queues.push(cq);
    waits.push(cq.next());
  }
  for (const wait of waits) wait.catch(() => undefined); // they end when their queue closes
  const idle = await measureIdle(10_000);
  process.stdout.write(JSON.stringify({ share: idle.share, describe: idle.describe }) + '\n');
} finally {
  for (const cq of queues) cq.close();
  pair.close();
}
