// `rdmacm bench` pairs for device tests: a server and a client, each
// `node bin/rdmacm bench … --json`, their one-line JSON results parsed.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { packageRoot } from '../../src/package-info.js';
import { deviceAddress, freshPort } from './device.js';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function rdmacm(args: string[], timeoutMs: number): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['bin/rdmacm', ...args], { cwd: packageRoot(), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Runs a server, then a client against it (each with its own options too); returns both parsed JSON objects. */
export async function benchPair(args: string[], only: { server?: string[]; client?: string[] } = {}): Promise<{ server: Record<string, unknown>; client: Record<string, unknown> }> {
  const port = String(freshPort());
  const server = rdmacm(['bench', ...args, ...(only.server ?? []), '-p', port, '--json'], 240_000);
  // The client retries while the server is still starting (node is slow to start in the guest).
  const client = await rdmacm(['bench', ...args, ...(only.client ?? []), '-p', port, '--json', deviceAddress()], 240_000);
  const served = await server;
  assert.equal(client.code, 0, `client: ${client.stderr}`);
  assert.equal(served.code, 0, `server: ${served.stderr}`);
  const parse = (run: Run, who: string) => {
    const lines = run.stdout.trim().split('\n');
    assert.equal(lines.length, 1, `${who} printed exactly one line: ${run.stdout}`);
    return JSON.parse(lines[0]!) as Record<string, unknown>;
  };
  return { server: parse(served, 'server'), client: parse(client, 'client') };
}
