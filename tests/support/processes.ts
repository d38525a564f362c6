// Child processes for device tests: rdma-core's tools, our own CLI and node children.
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { finished as streamEnded } from 'node:stream/promises';
import { promisify } from 'node:util';
import { packageRoot } from '../../src/package-info.js';

const execFileAsync = promisify(execFile);

export interface Finished {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Starts a command and collects its output; `finished` settles when it exits and its output is read. */
export function start(command: string, args: readonly string[], options: { cwd?: string } = {}): { finished: Promise<Finished>; kill(): void } {
  const child = spawn(command, args, { cwd: options.cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk));
  const finished = once(child, 'exit').then(async ([code]) => {
    await outputRead(child.stdout, child.stderr);
    return { code: code as number | null, stdout, stderr };
  });
  return { finished, kill: () => child.kill('SIGKILL') };
}

/**
 * At a child's 'exit' its pipes may still hold output (Node says so, and a
 * Node 26 run read a child's report empty): wait until both are read to
 * their end, but at most 5 s, for a grandchild that keeps one open.
 */
async function outputRead(...pipes: Readable[]): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<void>((resolve) => (timer = setTimeout(resolve, 5000)));
  const read = Promise.all(pipes.map((pipe) => streamEnded(pipe).catch(() => undefined)));
  await Promise.race([read, bound]);
  clearTimeout(timer);
}

/** `node bin/rdmacm ARGS` (the built CLI). */
export function rdmacm(args: readonly string[]) {
  return start(process.execPath, [join(packageRoot(), 'bin', 'rdmacm'), ...args]);
}

/** Retries a command a bounded number of times until it exits 0 (for a client racing its server's start). */
export function retrying(command: string, args: readonly string[], attempts = 40): ReturnType<typeof start> {
  const quoted = [command, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
  return start('sh', ['-c', `for i in $(seq 1 ${attempts}); do ${quoted} && exit 0; sleep 0.25; done; exit 1`]);
}

/**
 * Waits until an rdma_cm id listens on `port`, as `rdma res show cm_id` lists
 * it (bounded): a client started sooner is refused, and one that retries in a
 * loop starts a process per attempt.
 */
export async function rdmaListening(port: string | number, timeoutMs = 30_000): Promise<void> {
  const listening = new RegExp(`state LISTEN .*src-addr \\S*:${port} `);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { stdout } = await execFileAsync('rdma', ['res', 'show', 'cm_id']);
    if (listening.test(stdout)) return;
    if (Date.now() > deadline) throw new Error(`nothing listens on port ${port} after ${timeoutMs} ms (rdma res show cm_id)`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Waits for `server` to listen on `port`; one that exits first, or never listens, fails the test and is stopped. */
export async function listeningOn(server: ReturnType<typeof start>, port: string | number, timeoutMs?: number): Promise<void> {
  const exitedFirst = server.finished.then((done) => Promise.reject(new Error(`the server exited before it listened: ${done.stdout}${done.stderr}`)));
  try {
    await Promise.race([rdmaListening(port, timeoutMs), exitedFirst]);
  } catch (error) {
    server.kill();
    throw error;
  }
}
