// Where a connection goes, before anything native: node:net's lookup option
// and 'lookup' events, autoSelectFamily's order and events, and blockList.
// The attempts themselves fail here (no device: ENODEV; with one, TEST-NET
// addresses are unreachable); what is checked is what node:net users see.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import dns from 'node:dns';
import { BlockList } from 'node:net';
import { RdmaNetAggregateError, connect, createServer, type LookupFunction, type RdmaSocket } from '../../src/net/index.js';

/** A lookup that records how it was called and answers `answer` for every name (a bad answer too: that is what is tested). */
function answering(...answer: unknown[]): LookupFunction & { calls: { host: string; options: object }[] } {
  const calls: { host: string; options: object }[] = [];
  const lookup = (host: string, options: object, cb: (...a: unknown[]) => void) => {
    calls.push({ host, options });
    cb(...answer);
  };
  return Object.assign(lookup as LookupFunction, { calls });
}

/** Every event of the socket named in `names`, with its arguments, in order, until 'close'; then the 'error'. */
async function eventsUntilClose(socket: RdmaSocket, names: readonly string[]): Promise<{ events: [string, ...unknown[]][]; error: unknown }> {
  const events: [string, ...unknown[]][] = [];
  for (const name of names) socket.on(name, (...args: unknown[]) => events.push([name, ...args]));
  let error: unknown;
  socket.on('error', (e) => (error = e));
  await new Promise((resolve) => socket.once('close', resolve));
  return { events, error };
}

const ATTEMPT_EVENTS = ['lookup', 'connectionAttempt', 'connectionAttemptFailed', 'connectionAttemptTimeout'];

test('a custom lookup is called as node:net calls it, and each answer is a \'lookup\' event', async () => {
  const single = answering(null, '192.0.2.1', 4);
  const socket = connect({ port: 7471, host: 'peer.example', lookup: single, autoSelectFamily: false, connectTimeout: 200 });
  const { events } = await eventsUntilClose(socket, ['lookup']);
  assert.deepEqual(single.calls, [{ host: 'peer.example', options: { hints: dns.ADDRCONFIG } }], 'ADDRCONFIG when no family or hints are given');
  assert.deepEqual(events, [['lookup', null, '192.0.2.1', 4, 'peer.example']]);

  const sixOnly = answering(null, '2001:db8::1', 6);
  await eventsUntilClose(connect({ port: 7471, host: 'peer.example', family: 'IPv6', hints: dns.V4MAPPED, lookup: sixOnly, connectTimeout: 200 }), []);
  assert.deepEqual(sixOnly.calls[0]!.options, { family: 6, hints: dns.V4MAPPED }, "a family ('IPv6' as 6) asks for one address");

  const numeric = answering(null, '192.0.2.1', 4);
  const { events: none } = await eventsUntilClose(connect({ port: 7471, host: '192.0.2.1', lookup: numeric, connectTimeout: 200 }), ['lookup']);
  assert.equal(numeric.calls.length, 0, 'a numeric host is not looked up');
  assert.deepEqual(none, []);
});

test("a lookup's failures reach 'error' as node:net's do: its own error as it is, a bad answer typed", async () => {
  const notFound = Object.assign(new Error('getaddrinfo ENOTFOUND peer.example'), { code: 'ENOTFOUND', syscall: 'getaddrinfo' });
  const failing = await eventsUntilClose(connect({ port: 7471, host: 'peer.example', lookup: answering(notFound) }), ['lookup']);
  assert.equal(failing.error, notFound);
  assert.deepEqual(failing.events, [['lookup', notFound, undefined, undefined, 'peer.example']]);

  const thrown = new Error('the resolver is down');
  const throwing = await eventsUntilClose(connect({ port: 7471, host: 'peer.example', lookup: () => { throw thrown; } }), []);
  assert.equal(throwing.error, thrown);

  const cases: [unknown[], string, RegExp][] = [
    [[null, 'no address', 4], 'ERR_INVALID_IP_ADDRESS', /Invalid IP address: no address/],
    [[null, '192.0.2.1', 5], 'ERR_INVALID_ADDRESS_FAMILY', /Invalid address family: 5 peer\.example:7471/],
    [[null, [{ address: 'none', family: 4 }]], 'ERR_INVALID_IP_ADDRESS', /Invalid IP address: none/],
    [[null, []], 'ERR_INVALID_IP_ADDRESS', /found no address/],
  ];
  for (const [answer, code, message] of cases) {
    const { error } = await eventsUntilClose(connect({ port: 7471, host: 'peer.example', lookup: answering(...answer) }), []);
    assert.equal((error as { code?: string }).code, code, String(error));
    assert.match((error as Error).message, message);
  }
});

test('autoSelectFamily tries every address once, the families alternating, with node:net\'s events and an AggregateError', async () => {
  const lookup = answering(null, [
    { address: '2001:db8::1', family: 6 }, { address: '2001:db8::2', family: 6 }, { address: '192.0.2.1', family: 4 }, { address: '2001:db8::1', family: 6 },
  ]);
  const socket = connect({ port: 7471, host: 'peer.example', lookup, autoSelectFamily: true, autoSelectFamilyAttemptTimeout: 100, connectTimeout: 300 });
  const { events, error } = await eventsUntilClose(socket, ATTEMPT_EVENTS);
  assert.equal((lookup.calls[0]!.options as { all?: boolean }).all, true);
  const order = ['2001:db8::1', '192.0.2.1', '2001:db8::2'];
  assert.deepEqual(events.filter(([name]) => name === 'connectionAttempt'), order.map((address) => ['connectionAttempt', address, 7471, address.includes(':') ? 6 : 4]));
  assert.deepEqual(socket.autoSelectFamilyAttemptedAddresses, order.map((address) => `${address}:7471`));
  // Each attempt ends before the next starts: failed (no device) or, where a device answers slowly, abandoned; the last is never abandoned.
  const ends = events.filter(([name]) => name === 'connectionAttemptFailed' || name === 'connectionAttemptTimeout');
  assert.deepEqual(ends.map(([, address]) => address), order);
  assert.equal(ends.at(-1)![0], 'connectionAttemptFailed');
  assert.equal(events.filter(([name]) => name === 'lookup').length, 4, "one 'lookup' per answer");
  assert.ok(error instanceof RdmaNetAggregateError && error instanceof AggregateError, String(error));
  assert.equal(error.errors.length, 3);
  assert.equal(error.code, (error.errors[0] as { code: string }).code, "the first failure's code");
  assert.ok(error.errors.every((e: unknown) => typeof (e as { code?: unknown }).code === 'string'), 'every failure typed');
});

test('blockList: a blocked address is never tried, and ERR_IP_BLOCKED says why', async () => {
  const blockList = new BlockList();
  blockList.addAddress('192.0.2.1');
  blockList.addSubnet('2001:db8::', 32, 'ipv6');
  const direct = await eventsUntilClose(connect({ port: 7471, host: '192.0.2.1', blockList }), ATTEMPT_EVENTS);
  assert.equal((direct.error as { code?: string }).code, 'ERR_IP_BLOCKED');
  assert.match((direct.error as Error).message, /IP\(192\.0\.2\.1\) is blocked by net\.BlockList/);
  assert.deepEqual(direct.events, []);

  const lookup = answering(null, [{ address: '2001:db8::1', family: 6 }, { address: '192.0.2.1', family: 4 }]);
  const socket = connect({ port: 7471, host: 'peer.example', lookup, blockList, autoSelectFamily: true });
  const all = await eventsUntilClose(socket, ATTEMPT_EVENTS);
  assert.ok(all.error instanceof RdmaNetAggregateError);
  assert.equal(all.error.code, 'ERR_IP_BLOCKED');
  assert.deepEqual(all.error.errors.map((e: unknown) => (e as { code: string }).code), ['ERR_IP_BLOCKED', 'ERR_IP_BLOCKED']);
  assert.deepEqual(all.events.filter(([name]) => name === 'connectionAttempt'), [], 'no attempt made');
  assert.deepEqual(socket.autoSelectFamilyAttemptedAddresses, []);
});

test('one address, or autoSelectFamily off, or a family or local address given: one attempt, no attempt events', async () => {
  const two = [{ address: '192.0.2.1', family: 4 }, { address: '192.0.2.2', family: 4 }];
  for (const options of [{ autoSelectFamily: false }, { family: 4 as const }]) {
    const lookup = answering(null, '192.0.2.1', 4);
    const socket = connect({ port: 7471, host: 'peer.example', lookup, connectTimeout: 200, ...options });
    const { events } = await eventsUntilClose(socket, ATTEMPT_EVENTS);
    assert.equal((lookup.calls[0]!.options as { all?: boolean }).all, undefined, JSON.stringify(options));
    assert.deepEqual(events.map(([name]) => name), ['lookup']);
    assert.equal(socket.autoSelectFamilyAttemptedAddresses, undefined);
  }
  const oneOfAll = answering(null, two.slice(0, 1));
  const socket = connect({ port: 7471, host: 'peer.example', lookup: oneOfAll, autoSelectFamily: true, connectTimeout: 200 });
  const { events, error } = await eventsUntilClose(socket, ATTEMPT_EVENTS);
  assert.deepEqual(events.map(([name]) => name), ['lookup']);
  assert.ok(!(error instanceof AggregateError), 'one address fails with its own error');
});

test('listen on a host name looks it up first, as node:net does: a resolver error is the server\'s; close() while it resolves means it never listens', async () => {
  const server = createServer();
  const failed = new Promise<Error & { code?: string; syscall?: string }>((resolve) => server.once('error', resolve));
  server.listen(0, 'nonexistent.invalid');
  assert.throws(() => server.listen(0), { code: 'ERR_SERVER_ALREADY_LISTEN' }, 'a second listen() while the name resolves');
  const error = await failed;
  assert.equal(error.code, 'ENOTFOUND');
  assert.equal(error.syscall, 'getaddrinfo');

  const abandoned = createServer();
  const events: string[] = [];
  for (const name of ['listening', 'error', 'close']) abandoned.on(name, () => events.push(name));
  abandoned.listen(0, 'localhost');
  const closed = await new Promise<Error | undefined>((resolve) => abandoned.close(resolve));
  assert.equal((closed as { code?: string } | undefined)?.code, 'ERR_SERVER_NOT_RUNNING');
  // Long enough for the lookup of localhost to come back (it is answered from /etc/hosts).
  await new Promise((resolve) => setTimeout(resolve, 500));
  assert.deepEqual(events, [], 'nothing after close()');
  assert.equal(abandoned.listening, false);
});
