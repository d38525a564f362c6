// A module script run in a child node with tsx, from the repository's root (so
// './src/…' imports resolve): for what changes a process for good (fork
// safety, a kernel refusal, a library that does not load) or reads the
// environment at start-up. And a program of tests/support run from its build,
// for figures a long test process would skew.
import { execFile, spawnSync } from 'node:child_process';
import process from 'node:process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

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

const execFileAsync = promisify(execFile);

/**
 * Runs a program of tests/support (`name`, e.g. 'idle-queues') in a fresh
 * node, as built beside this file, and parses its last line of output as JSON:
 * for figures a test's own process would skew (its earlier tests' aftermath).
 */
export async function supportProgramJson<T>(name: string, timeoutMs: number): Promise<T> {
  const program = fileURLToPath(new URL(`./${name}.js`, import.meta.url));
  const { stdout } = await execFileAsync(process.execPath, [program], { timeout: timeoutMs, maxBuffer: 1 << 20 });
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as T;
}
