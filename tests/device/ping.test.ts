// `rdmacm ping` against rdma-core's rping, both directions, data validated on both sides.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { packageRoot } from '../../src/package-info.js';
import { deviceAddress, freshPort } from '../support/device.js';
import { listeningOn, rdmacm, start } from '../support/processes.js';

const COUNT = 10;
const SIZE = 1000;

test('rping -s (C) with rdmacm ping -c', { timeout: 120_000 }, async () => {
  const address = deviceAddress();
  const port = String(freshPort());
  const server = start('rping', ['-s', '-a', address, '-p', port, '-S', String(SIZE), '-C', String(COUNT), '-v', '-V']);
  await listeningOn(server, port);
  const client = start(process.execPath, [join(packageRoot(), 'bin', 'rdmacm'), 'ping', '-c', '-a', address, '-p', port, '-S', String(SIZE), '-C', String(COUNT), '-v', '-V']);
  const [s, c] = await Promise.all([server.finished, client.finished]);
  assert.equal(c.code, 0, c.stderr);
  assert.equal(s.code, 0, s.stderr);
  const pings = c.stdout.split('\n').filter((line) => line.startsWith('ping data: rdma-ping-'));
  assert.equal(pings.length, COUNT);
  assert.match(pings[3]!, /^ping data: rdma-ping-3: [A-z]+$/);
  assert.equal(s.stdout.split('\n').filter((line) => line.startsWith('server ping data: rdma-ping-')).length, COUNT);
});

test('rdmacm ping -s with rping -c (C)', { timeout: 120_000 }, async () => {
  const address = deviceAddress();
  const port = String(freshPort());
  const server = rdmacm(['ping', '-s', '-a', address, '-p', port, '-S', String(SIZE), '-v']);
  // A client that retries until Node has started the server ran out of tries once in CI (40 in 26 s).
  await listeningOn(server, port, 60_000);
  const client = start('rping', ['-c', '-a', address, '-p', port, '-S', String(SIZE), '-C', String(COUNT), '-v', '-V']);
  const [s, c] = await Promise.all([server.finished, client.finished]);
  assert.equal(c.code, 0, c.stderr + c.stdout);
  assert.equal(s.code, 0, s.stderr);
  assert.equal(c.stdout.split('\n').filter((line) => line.startsWith('ping data: rdma-ping-')).length, COUNT);
  const served = s.stdout.split('\n').filter((line) => line.startsWith('server ping data: rdma-ping-'));
  assert.equal(served.length, COUNT);
  assert.match(served[0]!, /^server ping data: rdma-ping-0: ABCDEF/);
});
