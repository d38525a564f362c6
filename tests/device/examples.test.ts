// examples/rdma_server.ts and examples/rdma_client.ts (the safe API) against
// rdma-core's C originals, both ways.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { deviceAddress, freshPort } from '../support/device.js';
import { listeningOn, start, type Finished } from '../support/processes.js';
import { within } from '../support/within.js';

// The examples block their thread in synchronous waits, as rdma-core's do: each
// runs in a child process, so a lost peer fails the test at its bound instead
// of stopping the whole tier's event loop.
const exampleClient = fileURLToPath(new URL('../../examples/rdma_client.js', import.meta.url));
const exampleServer = fileURLToPath(new URL('../../examples/rdma_server.js', import.meta.url));

/** Both sides' exits, or a failure that says what each side printed and where the device's queue pairs stood. */
async function bothEnded(server: ReturnType<typeof start>, client: ReturnType<typeof start>): Promise<[Finished, Finished]> {
  const outputs: Record<string, string> = {};
  const collect = (side: string, run: ReturnType<typeof start>) => run.finished.then((done) => ((outputs[side] = `${done.stdout}${done.stderr}(exit ${done.code})`), done));
  try {
    return await within(Promise.all([collect('server', server), collect('client', client)]), 45_000, () => {
      let queuePairs: string;
      try {
        queuePairs = execFileSync('rdma', ['res', 'show', 'qp'], { encoding: 'utf8' });
      } catch (error) {
        queuePairs = String(error);
      }
      return `the exchange did not end (server: ${outputs.server ?? 'running'}; client: ${outputs.client ?? 'running'}; rdma res show qp: ${queuePairs})`;
    });
  } finally {
    server.kill();
    client.kill();
  }
}

test('rdma_server (C) with examples/rdma_client.ts', { timeout: 90_000 }, async () => {
  const address = deviceAddress();
  const port = String(freshPort());
  const server = start('rdma_server', ['-s', address, '-p', port]);
  await listeningOn(server, port);
  const client = start(process.execPath, [exampleClient, '-s', address, '-p', port]);
  const [c, ts] = await bothEnded(server, client);
  assert.match(c.stdout, /rdma_server: end 0/, c.stdout + c.stderr);
  assert.equal(c.code, 0);
  assert.match(ts.stdout, /rdma_client: end 0/, ts.stdout + ts.stderr);
  assert.equal(ts.code, 0);
});

test('examples/rdma_server.ts with rdma_client (C)', { timeout: 90_000 }, async () => {
  const address = deviceAddress();
  const port = String(freshPort());
  const server = start(process.execPath, [exampleServer, '-s', address, '-p', port]);
  await listeningOn(server, port);
  const client = start('rdma_client', ['-s', address, '-p', port]);
  const [ts, c] = await bothEnded(server, client);
  assert.match(c.stdout, /rdma_client: end 0/, c.stdout + c.stderr);
  assert.equal(c.code, 0);
  assert.match(ts.stdout, /rdma_server: end 0/, ts.stdout + ts.stderr);
  assert.equal(ts.code, 0);
});
