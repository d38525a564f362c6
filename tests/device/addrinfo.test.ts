// getAddrInfoAsync against a real RDMA stack: it resolves what getAddrInfo
// resolves, a list that arrives after an abort is freed, and the event loop
// runs while a resolution is in flight.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { AddrInfo, getAddrInfo, getAddrInfoAsync, RdmaError } from '../../src/index.js';
import { deviceAddress, freshPort } from '../support/device.js';
import { assertAbortedWith } from '../support/errors.js';

test('getAddrInfoAsync resolves the device address to the entries getAddrInfo gives', { timeout: 60_000 }, async () => {
  const address = deviceAddress();
  const service = String(freshPort());
  for (const hints of [{}, { flags: ['PASSIVE' as const] }, { qpType: 'UD' as const, portSpace: 'UDP' as const }]) {
    using expected = getAddrInfo(address, service, hints);
    using resolved = await getAddrInfoAsync(address, service, hints);
    assert.ok(resolved instanceof AddrInfo);
    assert.ok(resolved.entries.length > 0);
    assert.deepEqual(resolved.entries, expected.entries, JSON.stringify(hints));
  }
  using passive = await getAddrInfoAsync(null, service, { flags: ['PASSIVE'] });
  assert.ok(passive.entries.length > 0, 'a passive lookup of a service alone');
});

test('a list that arrives after an abort is freed (rdma_freeaddrinfo through close)', { timeout: 60_000 }, async () => {
  const closed: AddrInfo[] = [];
  const close = AddrInfo.prototype.close;
  AddrInfo.prototype.close = function (this: AddrInfo) {
    closed.push(this);
    close.call(this);
  };
  try {
    const controller = new AbortController();
    const promise = getAddrInfoAsync(deviceAddress(), String(freshPort()), {}, { signal: controller.signal });
    // Aborted before this turn of the event loop ends: the native call's completion cannot have been delivered yet.
    controller.abort('enough');
    assertAbortedWith(await promise.then(() => assert.fail('resolved'), (error: unknown) => error), 'enough');
    for (let waited = 0; closed.length === 0 && waited < 10_000; waited += 20) await sleep(20);
    assert.equal(closed.length, 1, 'the late list was closed');
    assert.equal(closed[0]!.closed, true);
  } finally {
    AddrInfo.prototype.close = close;
  }
});

test('the event loop runs while a host name resolves (measured; asserted when the resolution is slow)', { timeout: 120_000 }, async (t) => {
  let ticks = 0;
  const timer = setInterval(() => ticks++, 20);
  const started = performance.now();
  const outcome = await getAddrInfoAsync('rdmacm-no-such-host.invalid', '7471').then(
    (found) => {
      found.close();
      return 'resolved';
    },
    (error: unknown) => error,
  );
  const took = performance.now() - started;
  clearInterval(timer);
  t.diagnostic(`the resolution took ${took.toFixed(1)} ms; a 20 ms timer fired ${ticks} times; outcome: ${outcome instanceof Error ? outcome.message : String(outcome)}`);
  assert.ok(outcome instanceof RdmaError, 'an unresolvable name is a typed error');
  assert.equal(outcome.syscall, 'rdma_getaddrinfo');
  // A blocked event loop fires no timer at all while the call runs; a free one fires about took/20.
  if (took >= 200) assert.ok(ticks >= 2, `the timer fired ${ticks} times in ${took.toFixed(0)} ms`);
  else t.diagnostic('the name failed too fast here to show the event loop running (this guest has no name server to wait for)');
});
