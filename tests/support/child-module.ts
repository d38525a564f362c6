// A module script run in a child node with tsx, from the repository's root (so
// './src/…' imports resolve): for what changes a process for good (fork
// safety, a kernel refusal, a library that does not load) or reads the
// environment at start-up.
import { spawnSync } from 'node:child_process';
import process from 'node:process';
import { fileURLToPath } from 'node:url';

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

export interface ChildResult {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `script` as an ES module in a child node with `env` over this process's environment. */
export function runChildModule(script: string, env: NodeJS.ProcessEnv = {}): ChildResult {
  const result = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    cwd: repoRoot, encoding: 'utf8', env: { ...process.env, ...env }, timeout: 60_000,
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** The child's last line of output, parsed as JSON; throws with its stderr when it failed. */
export function childJson<T>(script: string, env: NodeJS.ProcessEnv = {}): T {
  const result = runChildModule(script, env);
  if (result.status !== 0) throw new Error(`the child exited ${result.status}: ${result.stderr}`);
  return JSON.parse(result.stdout.trim().split('\n').at(-1)!) as T;
}
