// The raw layer talks to rdma-core's own C examples, both ways: rdma_server
// with our raw client, and our raw server with rdma_client.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { rawClient, rawServer } from '../../examples/raw/pingpong.js';
import { deviceAddress, freshPort } from '../support/device.js';

/** Collects a child's output and exit code. */
function run(command: string, args: string[]) {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk));
  const exited = once(child, 'exit').then(([code]) => ({ code: code as number, output }));
  return { child, exited };
}

/** Retries a synchronous connect a bounded number of times while the C server starts listening. */
async function withRetries<T>(attempts: number, action: () => T): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return action();
    } catch (error) {
      if (attempt >= attempts) throw error;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}

test('rdma_server (C) with the raw TypeScript client', { timeout: 60_000 }, async () => {
  const address = deviceAddress();
  const port = String(freshPort());
  const server = run('rdma_server', ['-s', address, '-p', port]);
  const received = await withRetries(20, () => rawClient({ address, port }));
  const { code, output } = await server.exited;
  assert.match(output, /rdma_server: end 0/);
  assert.equal(code, 0);
  assert.equal(received.length, 16);
});

test('the raw TypeScript server with rdma_client (C)', { timeout: 60_000 }, async () => {
  const address = deviceAddress();
  const port = String(freshPort());
  // rdma_client retries (bounded) until the server below is listening.
  const client = run('sh', ['-c', `for i in $(seq 1 40); do rdma_client -s ${address} -p ${port} && exit 0; sleep 0.25; done; exit 1`]);
  const received = rawServer({ address, port });
  const { code, output } = await client.exited;
  assert.match(output, /rdma_client: end 0/);
  assert.equal(code, 0);
  assert.equal(received.length, 16);
});
