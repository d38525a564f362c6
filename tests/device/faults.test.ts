// Faults: a peer process dies (SIGKILL) in the middle of a stream of sends. The
// kernel destroys a dead process's cm_ids, which sends the peer a DREQ, so the
// survivor must learn of it with a typed outcome (DISCONNECTED, or a
// WorkCompletionError / ConnectionError), quickly, and then close cleanly.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  ConnectionError, EventChannel, ResourceClosedError, WorkCompletionError, createId, type CmId,
} from '../../src/index.js';
import { FdWatcher } from '../../src/api/core/fd-watcher.js';
import { packageRoot } from '../../src/package-info.js';
import { deviceAddress, freshPort } from '../support/device.js';

const MESSAGE = 64;
const RECEIVES = 16;
/** Messages the server takes before the client is killed. */
const BEFORE_KILL = 20;
const NOTICE_LIMIT_MS = 10_000;

/** The client: connects, then sends numbered messages, one at a time, until it is killed. */
function clientScript(address: string, port: number): string {
  const entry = pathToFileURL(join(packageRoot(), 'dist', 'src', 'index.js')).href;
  return `
    const { createId, EventChannel } = await import(${JSON.stringify(entry)});
    const channel = new EventChannel();
    const id = createId(channel);
    await id.resolveAddr({ address: ${JSON.stringify(address)}, port: ${port} }, { timeoutMs: 10000 });
    await id.resolveRoute({ timeoutMs: 10000 });
    id.createQp({ sendWr: 4, recvWr: 1, inlineData: ${MESSAGE} });
    await id.connect(undefined, { timeoutMs: 20000 });
    console.log('connected');
    const message = Buffer.alloc(${MESSAGE});
    for (let n = 0; ; n++) {
      message.writeUInt32LE(n, 0);
      id.postSend(message, { inline: true });
      await id.queuePair.nextSendCompletion();
    }`;
}

type Outcome =
  | { readonly kind: 'DISCONNECTED'; readonly at: number }
  | { readonly kind: 'WorkCompletionError' | 'ConnectionError'; readonly at: number; readonly detail: string };

test('a peer killed with SIGKILL mid-stream: the survivor gets a typed outcome within 10 s and closes cleanly', { timeout: 120_000 }, async () => {
  const watchersBefore = FdWatcher.open;
  const address = deviceAddress();
  const port = freshPort();
  const channel = new EventChannel();
  const listener = createId(channel);
  let server: CmId | undefined;
  const child = spawn(process.execPath, ['--input-type=module', '-e', clientScript(address, port)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let childOut = '';
  child.stdout.on('data', (chunk: Buffer) => (childOut += chunk));
  child.stderr.on('data', (chunk: Buffer) => (childOut += chunk));
  const exited = once(child, 'exit');
  try {
    listener.bindAddr({ address, port });
    listener.listen(4);
    server = await listener.nextRequest({ timeoutMs: 60_000 });
    server.createQp({ sendWr: 1, recvWr: RECEIVES, inlineData: MESSAGE });
    const inbox = server.regMsgs(Buffer.alloc(MESSAGE * RECEIVES));
    for (let i = 0; i < RECEIVES; i++) server.postRecv(inbox, { offset: i * MESSAGE, length: MESSAGE, context: i });
    await server.accept(undefined, { timeoutMs: 20_000 });

    // Take messages (in order, contents checked) and re-post each receive; kill the client after BEFORE_KILL.
    const id = server;
    let received = 0;
    let killedAt = 0;
    let recvFailure: Outcome | undefined;
    const receiving = (async () => {
      for (;;) {
        const completion = await id.queuePair.nextRecvCompletion();
        const slot = completion.context as number;
        assert.equal(inbox.buffer.readUInt32LE(slot * MESSAGE), received, 'messages arrive in order');
        received++;
        id.postRecv(inbox, { offset: slot * MESSAGE, length: MESSAGE, context: slot });
        if (received === BEFORE_KILL) {
          killedAt = performance.now();
          child.kill('SIGKILL');
        }
      }
    })().catch((error: unknown) => {
      if (error instanceof WorkCompletionError) recvFailure = { kind: 'WorkCompletionError', at: performance.now(), detail: error.message };
      else if (error instanceof ConnectionError) recvFailure = { kind: 'ConnectionError', at: performance.now(), detail: error.message };
      else if (!(error instanceof ResourceClosedError)) throw error;
    });

    // The outcome the survivor sees first: its DISCONNECTED event, or a typed failure of the receive loop.
    const disconnected = id.waitForDisconnect({ timeoutMs: 60_000 }).then(
      (): Outcome => ({ kind: 'DISCONNECTED', at: performance.now() }),
      (error: unknown): Outcome => {
        if (error instanceof ConnectionError) return { kind: 'ConnectionError', at: performance.now(), detail: error.message };
        throw error;
      },
    );
    const failed = receiving.then(() => recvFailure ?? new Promise<Outcome>(() => undefined));
    const outcome = await Promise.race([disconnected, failed]);
    assert.ok(killedAt > 0, `the client was killed after ${BEFORE_KILL} messages (got ${received}; client said: ${childOut})`);
    const [, signal] = await exited;
    assert.equal(signal, 'SIGKILL');

    const noticedMs = outcome.at - killedAt;
    // Whichever came first, DISCONNECTED must follow within the same limit (the connection is over).
    const disconnectedOutcome = await disconnected;
    const disconnectedMs = disconnectedOutcome.at - killedAt;
    console.log(`faults: ${received} messages received; client SIGKILLed; survivor noticed after ${noticedMs.toFixed(1)} ms `
      + `(first outcome: ${outcome.kind}${'detail' in outcome ? ` — ${outcome.detail}` : ''}); `
      + `DISCONNECTED ${disconnectedOutcome.kind === 'DISCONNECTED' ? `after ${disconnectedMs.toFixed(1)} ms` : `not seen (${disconnectedOutcome.kind})`}`
      + `${recvFailure ? `; receive loop ended with ${recvFailure.kind} after ${(recvFailure.at - killedAt).toFixed(1)} ms` : ''}`);
    assert.ok(received >= BEFORE_KILL);
    assert.ok(noticedMs < NOTICE_LIMIT_MS, `the survivor noticed after ${noticedMs.toFixed(0)} ms (limit ${NOTICE_LIMIT_MS} ms)`);
    assert.ok(disconnectedMs < NOTICE_LIMIT_MS, `DISCONNECTED after ${disconnectedMs.toFixed(0)} ms (limit ${NOTICE_LIMIT_MS} ms)`);

    // Close cleanly: answer the disconnect (nobody is there; it must not hang or throw), then close all.
    await id.disconnect({ timeoutMs: 5000 });
    assert.equal(id.disconnected, true);
    id.close();
    await receiving;
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    server?.close();
    listener.close();
    channel.close();
  }
  assert.equal(FdWatcher.open, watchersBefore, 'every fd watcher is closed');
});
