// Child processes for device tests: rdma-core's tools and our own CLI as peers.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { packageRoot } from '../../src/package-info.js';

export interface Finished {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Starts a command and collects its output; `finished` settles when it exits. */
export function start(command: string, args: readonly string[]): { finished: Promise<Finished>; kill(): void } {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk));
  const finished = once(child, 'exit').then(([code]) => ({ code: code as number | null, stdout, stderr }));
  return { finished, kill: () => child.kill('SIGKILL') };
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
