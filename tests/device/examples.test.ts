// examples/rdma_server.ts and examples/rdma_client.ts (the safe API) against
// rdma-core's C originals, both ways.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { runClient } from '../../examples/rdma_client.js';
import { runServer } from '../../examples/rdma_server.js';
import { deviceAddress, freshPort } from '../support/device.js';

function run(command: string, args: string[]) {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk));
  return once(child, 'exit').then(([code]) => ({ code: code as number, output }));
}

test('rdma_server (C) with examples/rdma_client.ts', { timeout: 60_000 }, async () => {
  const address = deviceAddress();
  const port = String(freshPort());
  const server = run('rdma_server', ['-s', address, '-p', port]);
  let received: Buffer | undefined;
  for (let attempt = 1; attempt <= 20 && !received; attempt++) {
    try {
      received = await runClient({ address, port });
    } catch (error) {
      if (attempt === 20) throw error;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
  const { code, output } = await server;
  assert.match(output, /rdma_server: end 0/);
  assert.equal(code, 0);
  assert.equal(received?.length, 16);
});

test('examples/rdma_server.ts with rdma_client (C)', { timeout: 60_000 }, async () => {
  const address = deviceAddress();
  const port = String(freshPort());
  const client = run('sh', ['-c', `for i in $(seq 1 40); do rdma_client -s ${address} -p ${port} && exit 0; sleep 0.25; done; exit 1`]);
  const received = await runServer({ address, port });
  const { code, output } = await client;
  assert.match(output, /rdma_client: end 0/);
  assert.equal(code, 0);
  assert.equal(received.length, 16);
});
