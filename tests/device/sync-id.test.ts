// A synchronous id (no event channel) blocks inside librdmacm: options it
// cannot honour are refused with RdmaArgumentError before any native call,
// and a timeout librdmacm takes itself (resolveAddr, resolveRoute) applies.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createId, RdmaArgumentError } from '../../src/index.js';
import { deviceAddress, freshPort } from '../support/device.js';

/** Asserts `promise` rejects with RdmaArgumentError at `path`, naming the synchronous id. */
async function refused(promise: Promise<unknown>, operation: string, path: string): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof RdmaArgumentError, `expected RdmaArgumentError, got ${String(error)}`);
    assert.equal(error.code, 'ERR_INVALID_ARG_VALUE');
    assert.equal(error.operation, operation);
    assert.equal(error.issues[0]?.path, path);
    assert.match(error.message, /synchronous id/);
    assert.match(error.message, /EventChannel/, 'it says what to do');
    return true;
  });
}

test('a synchronous id refuses signal everywhere and timeoutMs where librdmacm takes none; resolveAddr/resolveRoute apply theirs', { timeout: 60_000 }, async () => {
  using id = createId(null);
  assert.equal(id.channel, null);
  const destination = { address: deviceAddress(), port: freshPort() };
  const live = new AbortController().signal;
  await refused(id.resolveAddr(destination, { signal: live }), 'rdma_resolve_addr', 'options.signal');
  // An aborted signal is refused too: it is wrong for this id whatever its state.
  await refused(id.resolveAddr(destination, { signal: AbortSignal.abort() }), 'rdma_resolve_addr', 'options.signal');
  await id.resolveAddr(destination, { timeoutMs: 2000 });
  assert.ok(id.device, 'resolved, with its C timeout');
  await refused(id.resolveRoute({ signal: live }), 'rdma_resolve_route', 'options.signal');
  await id.resolveRoute({ timeoutMs: 2000 });
  id.createQp({ sendWr: 1, recvWr: 1 });
  await refused(id.connect(undefined, { timeoutMs: 1000 }), 'rdma_connect', 'options.timeoutMs');
  await refused(id.connect(undefined, { signal: live }), 'rdma_connect', 'options.signal');
  await refused(id.accept(undefined, { timeoutMs: 1000 }), 'rdma_accept', 'options.timeoutMs');
  await refused(id.disconnect({ timeoutMs: 1000 }), 'rdma_disconnect', 'options.timeoutMs');
  await refused(id.disconnect({ signal: live }), 'rdma_disconnect', 'options.signal');
  await refused(id.joinMulticast({ address: '239.1.2.3' }, { timeoutMs: 1000 }), 'rdma_join_multicast', 'options.timeoutMs');
  assert.equal(id.disconnected, false, 'nothing reached librdmacm');
});
