// The raw layer talks to rdma-core's own C examples, both ways: rdma_server
// with our raw client, and our raw server with rdma_client.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { deviceAddress, freshPort } from '../support/device.js';
import { start } from '../support/processes.js';

/** Starts a child; `exited` gives its exit code and all it printed (stdout, then stderr). */
function run(command: string, args: string[]) {
  const child = start(command, args);
  const exited = child.finished.then(({ code, stdout, stderr }) => ({ code, output: `${stdout}${stderr}` }));
  return { child, exited };
}

// The raw examples block their thread (synchronous ids, as the man pages): each
// runs in a child process, so the test's timeout still fires if a peer is lost.
const pingpong = fileURLToPath(new URL('../../examples/raw/pingpong.js', import.meta.url));

/** Both sides exited 0 and the raw side received its 16 bytes. */
function checkRun(raw: { code: number | null; output: string }, c: { code: number | null; output: string }, cName: string, rawName: string): void {
  assert.match(c.output, new RegExp(`${cName}: end 0`), c.output);
  assert.equal(c.code, 0, c.output);
  assert.match(raw.output, new RegExp(`${rawName}: received 16 bytes`), raw.output);
  assert.equal(raw.code, 0, raw.output);
}

test('rdma_server (C) with the raw TypeScript client', { timeout: 60_000 }, async () => {
  const address = deviceAddress();
  const port = String(freshPort());
  const server = run('rdma_server', ['-s', address, '-p', port]);
  // The client retries (bounded) until the server is listening.
  const client = run('sh', ['-c', `for i in $(seq 1 40); do "${process.execPath}" "${pingpong}" client -s ${address} -p ${port} && exit 0; sleep 0.25; done; exit 1`]);
  try {
    const [c, raw] = await Promise.all([server.exited, client.exited]);
    checkRun(raw, c, 'rdma_server', 'raw_client');
  } finally {
    server.child.kill();
    client.child.kill();
  }
});

test('the raw TypeScript server with rdma_client (C)', { timeout: 60_000 }, async () => {
  const address = deviceAddress();
  const port = String(freshPort());
  const server = run(process.execPath, [pingpong, 'server', '-s', address, '-p', port]);
  // rdma_client retries (bounded) until the server below is listening.
  const client = run('sh', ['-c', `for i in $(seq 1 40); do rdma_client -s ${address} -p ${port} && exit 0; sleep 0.25; done; exit 1`]);
  try {
    const [c, raw] = await Promise.all([client.exited, server.exited]);
    checkRun(raw, c, 'rdma_client', 'raw_server');
  } finally {
    server.child.kill();
    client.child.kill();
  }
});
