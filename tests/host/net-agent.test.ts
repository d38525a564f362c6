// RdmaAgent and RdmaHttpsAgent before anything native: their RDMA options are
// checked when they are made, and of everything http hands createConnection
// (method, headers, path: null, _agentKey…) only the connect options reach
// connect(). A blockList makes the outcome the same with a device or without.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import https from 'node:https';
import { BlockList } from 'node:net';
import { RdmaArgumentError } from '../../src/index.js';
import { RdmaAgent, RdmaHttpsAgent, RdmaSocket } from '../../src/net/index.js';

test('an agent\'s RDMA options are checked when it is made, named in the error', () => {
  const cases: [object, string][] = [
    [{ rdma: { recvBufferSize: 1000 } }, 'options.rdma.recvBufferSize'],
    [{ connectTimeout: 0 }, 'options.connectTimeout'],
    [{ blockList: ['10.0.0.1'] }, 'options.blockList'],
  ];
  for (const Agent of [RdmaAgent, RdmaHttpsAgent]) {
    for (const [options, path] of cases) {
      assert.throws(() => new Agent(options), (error: unknown) => {
        assert.ok(error instanceof RdmaArgumentError, String(error));
        assert.ok(error.issues.some((issue) => issue.path === path), `${Agent.name}: ${error.message}`);
        return true;
      });
    }
    assert.throws(() => new Agent(5 as never), { code: 'ERR_INVALID_ARG_TYPE' });
    const agent = new Agent({ keepAlive: true, maxSockets: 2, rdma: { recvBufferSize: 1 << 20 }, connectTimeout: 500 });
    assert.ok(agent instanceof (Agent === RdmaAgent ? http.Agent : https.Agent));
    agent.destroy();
  }
});

test("createConnection takes the connect options out of http's and leaves the request's", () => {
  const agent = new RdmaAgent();
  const socket = agent.createConnection({
    host: '192.0.2.1', port: 8080, path: null, method: 'POST', headers: { a: '1' }, agent, keepAlive: true, noDelay: true, servername: '',
    _agentKey: '192.0.2.1:8080:', encoding: null, keepAliveInitialDelay: 1000, timeout: 5000,
  });
  assert.ok(socket instanceof RdmaSocket);
  assert.equal(socket.connecting, true);
  assert.equal(socket.timeout, 5000, "the agent's timeout is the socket's");
  socket.on('error', () => undefined);
  socket.destroy();
  agent.destroy();
});

/** One GET through `agent`; the request's error. */
function failedGet(get: typeof http.get, agent: http.Agent, host: string): Promise<Error & { code?: string }> {
  return new Promise((resolve, reject) => {
    get({ host, port: 8080, path: '/x', headers: { accept: '*/*' }, agent }, () => reject(new Error('a response from nowhere'))).on('error', resolve);
  });
}

test("the agent's blockList and the request's host reach connect(): http.get and https.get fail with ERR_IP_BLOCKED", async () => {
  const blockList = new BlockList();
  blockList.addAddress('192.0.2.1');
  const agent = new RdmaAgent({ keepAlive: true, blockList });
  const secure = new RdmaHttpsAgent({ keepAlive: true, blockList });
  try {
    assert.equal((await failedGet(http.get, agent, '192.0.2.1')).code, 'ERR_IP_BLOCKED');
    assert.equal((await failedGet(https.get as typeof http.get, secure, '192.0.2.1')).code, 'ERR_IP_BLOCKED');
  } finally {
    agent.destroy();
    secure.destroy();
  }
});
