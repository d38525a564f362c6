// Registered memory against the two process-wide things that can break it:
// fork() (a child that shares the parent's pinned pages) and RLIMIT_MEMLOCK
// (the cap on pinned pages). See the README's "Memory locking and fork()".
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { forkStatus, type CmId, type MemoryRegion } from '../../src/index.js';
import { packageRoot } from '../../src/package-info.js';
import { connectPair } from '../support/pair.js';
import { start } from '../support/processes.js';

/** Fills `sender`'s registered buffer with `byte`, sends it, and checks the peer received exactly that. */
async function sendAndCheck(sender: CmId, outbox: MemoryRegion, receiver: CmId, inbox: MemoryRegion, byte: number): Promise<void> {
  inbox.buffer.fill(0);
  receiver.postRecv(inbox);
  outbox.buffer.fill(byte);
  sender.postSend(outbox);
  assert.equal((await sender.queuePair.nextSendCompletion()).status, 'SUCCESS');
  const received = await receiver.queuePair.nextRecvCompletion();
  assert.equal(received.byteLen, outbox.buffer.byteLength);
  const wrong = inbox.buffer.findIndex((value) => value !== byte);
  assert.equal(wrong, -1, `byte ${wrong} of the received message is ${inbox.buffer[wrong]}, not ${byte}: the device used another page than the process`);
}

test('a forked child, alive and then exited, does not take registered pages from the parent', { timeout: 120_000 }, async (t) => {
  t.diagnostic(`ibv_is_fork_initialized: ${forkStatus()}`);
  const pair = await connectPair();
  const folder = mkdtempSync(join(tmpdir(), 'rdmacm-fork-'));
  try {
    // Whole pages, not slices of Node's shared pool: each region is its own pages.
    const clientOut = pair.client.regMsgs(Buffer.alloc(8192));
    const clientIn = pair.client.regMsgs(Buffer.alloc(8192));
    const serverOut = pair.server.regMsgs(Buffer.alloc(8192));
    const serverIn = pair.server.regMsgs(Buffer.alloc(8192));
    await sendAndCheck(pair.client, clientOut, pair.server, serverIn, 1);

    const childFile = join(folder, 'child.mjs');
    writeFileSync(childFile, "process.on('message', () => process.exit(0));\nprocess.send('ready');\n");
    const child = fork(childFile, { stdio: 'inherit' });
    const exited = once(child, 'exit');
    await once(child, 'message');
    // The parent writes to its registered pages while the child lives: on a
    // kernel without copy-on-fork for pinned pages and without ibv_fork_init,
    // that write is where the parent's page and the device's part.
    await sendAndCheck(pair.client, clientOut, pair.server, serverIn, 2);
    await sendAndCheck(pair.server, serverOut, pair.client, clientIn, 3);
    child.send('exit');
    const [code] = await exited;
    assert.equal(code, 0);
    await sendAndCheck(pair.client, clientOut, pair.server, serverIn, 4);
    await sendAndCheck(pair.server, serverOut, pair.client, clientIn, 5);
  } finally {
    rmSync(folder, { recursive: true, force: true });
    await pair.hangUp();
  }
});

interface Outcome {
  readonly small: string;
  readonly large: { name: string; code: string; errno: number; syscall: string; hint?: string; message: string } | 'registered';
}

/** Registers 4 KiB, then 1 MiB, in a node child whose RLIMIT_MEMLOCK is `bytes` and which lacks CAP_IPC_LOCK (that capability ignores the limit). */
async function registerUnderLimit(bytes: number): Promise<Outcome> {
  const entry = pathToFileURL(join(packageRoot(), 'dist', 'src', 'index.js')).href;
  const script = `
    const { DeviceContext } = await import(${JSON.stringify(entry)});
    const context = DeviceContext.open(process.env.RDMACM_TEST_DEVICE);
    const pd = context.allocPd();
    let small;
    try { pd.register(Buffer.alloc(4096)).close(); small = 'registered'; } catch (error) { small = error.code; }
    let large;
    try { pd.register(Buffer.alloc(1 << 20)).close(); large = 'registered'; }
    catch (error) { large = { name: error.name, code: error.code, errno: error.errno, syscall: error.syscall, hint: error.hint, message: error.message }; }
    context.close();
    console.log(JSON.stringify({ small, large }));`;
  const node = [process.execPath, '--input-type=module', '-e', script];
  // As root, drop CAP_IPC_LOCK from the bounding set, so the exec'd node has it neither permitted nor effective.
  const withoutIpcLock = process.getuid?.() === 0 ? ['setpriv', '--bounding-set=-ipc_lock', '--', ...node] : node;
  const { code, stdout, stderr } = await start('prlimit', [`--memlock=${bytes}:${bytes}`, '--', ...withoutIpcLock]).finished;
  assert.equal(code, 0, `the child failed: ${stderr}`);
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as Outcome;
}

test('a registration past RLIMIT_MEMLOCK is a typed ENOMEM whose hint gives the limit and how to raise it', { timeout: 120_000 }, async (t) => {
  const outcome = await registerUnderLimit(64 * 1024);
  assert.equal(outcome.small, 'registered', 'within the limit registration works');
  assert.notEqual(outcome.large, 'registered', '1 MiB is past a 64 KiB limit');
  const error = outcome.large as Exclude<Outcome['large'], 'registered'>;
  t.diagnostic(`error.message: ${error.message}`);
  assert.equal(error.name, 'RdmaError');
  assert.equal(error.code, 'ENOMEM');
  assert.equal(error.errno, 12);
  assert.equal(error.syscall, 'ibv_reg_mr');
  assert.ok(error.hint?.includes('this process may lock 64 KiB (hard limit 64 KiB)'), error.hint);
  for (const way of ['ulimit -l unlimited', 'LimitMEMLOCK=infinity', 'docker run --ulimit memlock=-1']) {
    assert.ok(error.hint?.includes(way), `the hint names ${way}: ${error.hint}`);
  }
  assert.ok(error.message.endsWith(error.hint!), 'the message carries the hint');
});

test('with RLIMIT_MEMLOCK 0, registration fails (ENOMEM or EPERM, by kernel) with the same hint', { timeout: 120_000 }, async (t) => {
  const outcome = await registerUnderLimit(0);
  assert.notEqual(outcome.large, 'registered');
  const error = outcome.large as Exclude<Outcome['large'], 'registered'>;
  t.diagnostic(`small: ${outcome.small}; error.message: ${error.message}`);
  assert.ok(['ENOMEM', 'EPERM'].includes(error.code), error.code);
  assert.equal(error.syscall, 'ibv_reg_mr');
  assert.ok(error.hint?.includes('this process may lock 0 KiB (hard limit 0 KiB)'), error.hint);
  assert.ok(error.hint?.includes('ulimit -l unlimited'), error.hint);
});
