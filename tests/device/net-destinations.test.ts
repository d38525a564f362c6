// rdmacm/net's destinations on the device, as node:net users rely on them: a
// name that resolves to several addresses (autoSelectFamily) reaches the one
// that answers, past one that refuses and one that never answers; a server's
// blockList rejects a client before anything is built for it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lookup } from 'node:dns/promises';
import { once } from 'node:events';
import { BlockList } from 'node:net';
import { networkInterfaces } from 'node:os';
import { connect, createServer, type DropInfo, type LookupFunction, type RdmaServer, type RdmaSocket } from '../../src/net/index.js';
import { deviceAddress, deviceAddress6, testDevice } from '../support/device.js';
import { within } from '../support/within.js';

const address = deviceAddress();
const address6 = deviceAddress6();
const noIpv6 = !address6 && `the test netdev ${testDevice().netdev ?? '(none)'} has no IPv6 address that is not link-local (set RDMACM_TEST_ADDR6)`;
/** A name the system resolver gives the test addresses (rxe-vm.sh puts rdmacm-device.test in the guest's /etc/hosts). */
const name = process.env.RDMACM_TEST_NAME;
const noName = !name && 'RDMACM_TEST_NAME is not set: name a host name that resolves to the test address and its IPv6 one';

/**
 * An address in the test address's /24 that no interface here has: nobody
 * answers its ARP (in the VM's subnet only veth0 and veth1 have addresses,
 * .1 and .2), so resolving it runs into its timeout.
 */
function silentAddress(): string {
  const mine = new Set(Object.values(networkInterfaces()).flat().map((a) => a?.address));
  const prefix = address.split('.').slice(0, 3).join('.');
  return [`${prefix}.199`, `${prefix}.211`, `${prefix}.223`].find((candidate) => !mine.has(candidate))!;
}

/** A lookup that answers every name with `answers`, as dns.lookup answers with `all: true`. */
const lookupOf = (answers: { address: string; family: 4 | 6 }[]): LookupFunction => (_host, _options, callback) => callback(null, answers);

/** An echo server listening on `host` (none: every address). */
async function echoServer(host?: string, blockList?: BlockList): Promise<RdmaServer> {
  const server = createServer(blockList ? { blockList } : {}, (socket) => socket.pipe(socket));
  if (host === undefined) server.listen(0);
  else server.listen(0, host);
  await within(once(server, 'listening'), 10_000, `listen on ${host ?? 'the default host'}`);
  return server;
}

/** Sends a message over a connected socket, checks its echo, ends it and waits for 'close'. */
async function echoAndEnd(socket: RdmaSocket): Promise<void> {
  socket.write('hello');
  const [echo] = (await within(once(socket, 'data'), 20_000, 'the echo')) as [Buffer];
  assert.equal(echo.toString(), 'hello');
  socket.end();
  await within(once(socket, 'close'), 20_000, 'the close');
}

const close = (server: RdmaServer) => new Promise<void>((resolve) => server.close(() => resolve()));

/** The attempt events of `socket`, in order, as [event, address]. */
function attemptsOf(socket: RdmaSocket): [string, string, unknown?][] {
  const seen: [string, string, unknown?][] = [];
  socket.on('connectionAttempt', (ip: string) => seen.push(['connectionAttempt', ip]));
  socket.on('connectionAttemptFailed', (ip: string, _port: number, _family: number, error: unknown) => seen.push(['connectionAttemptFailed', ip, (error as { code?: string }).code]));
  socket.on('connectionAttemptTimeout', (ip: string) => seen.push(['connectionAttemptTimeout', ip]));
  return seen;
}

test('autoSelectFamily: an address that never answers is abandoned after its attempt timeout, and the next one connects', async () => {
  const server = await echoServer(address);
  try {
    const silent = silentAddress();
    const port = server.address()!.port;
    const socket = connect({ host: 'peer.test', port, lookup: lookupOf([{ address: silent, family: 4 }, { address, family: 4 }]), autoSelectFamilyAttemptTimeout: 500 });
    const attempts = attemptsOf(socket);
    await within(once(socket, 'connect'), 30_000, 'the connection past the silent address');
    assert.deepEqual(attempts, [['connectionAttempt', silent], ['connectionAttemptTimeout', silent], ['connectionAttempt', address]]);
    assert.deepEqual(socket.autoSelectFamilyAttemptedAddresses, [`${silent}:${port}`, `${address}:${port}`]);
    assert.equal(socket.remoteAddress, address);
    await echoAndEnd(socket);
  } finally {
    await close(server);
  }
});

test('autoSelectFamily: a family that refuses gives way to the other, the families alternating as node:net\'s', { skip: noIpv6 }, async () => {
  // Listening on the IPv4 address only: the IPv6 attempt is refused by the peer's connection manager.
  const server = await echoServer(address);
  try {
    const port = server.address()!.port;
    const socket = connect({
      host: 'peer.test', port, lookup: lookupOf([{ address: address6!, family: 6 }, { address, family: 4 }]), autoSelectFamilyAttemptTimeout: 10_000,
    });
    const attempts = attemptsOf(socket);
    await within(once(socket, 'connect'), 30_000, 'the connection to the IPv4 address');
    assert.deepEqual(attempts, [['connectionAttempt', address6], ['connectionAttemptFailed', address6, 'ECONNREFUSED'], ['connectionAttempt', address]]);
    assert.equal(socket.remoteFamily, 'IPv4');
    await echoAndEnd(socket);
  } finally {
    await close(server);
  }
});

test("a server's blockList rejects a blocked client before accepting (ECONNREFUSED; 'drop' says ERR_IP_BLOCKED) and takes the others", async () => {
  const blockList = new BlockList();
  blockList.addAddress(address);
  // No host: IPv4 and IPv6 clients reach the same listener, and only the IPv4 address is blocked.
  const server = await echoServer(undefined, blockList);
  try {
    const port = server.address()!.port;
    const drops: DropInfo[] = [];
    server.on('drop', (info: DropInfo) => drops.push(info));
    let accepted = 0;
    server.on('connection', () => accepted++);
    const blocked = connect({ host: address, port });
    const [error] = (await within(once(blocked, 'error'), 20_000, "the blocked client's error")) as [Error & { code: string }];
    assert.equal(error.code, 'ECONNREFUSED', String(error));
    assert.equal(drops.length, 1);
    assert.equal(drops[0]!.remoteAddress, address);
    assert.equal((drops[0]!.error as { code?: string } | undefined)?.code, 'ERR_IP_BLOCKED');
    assert.equal(accepted, 0);
    if (address6) {
      const allowed = connect({ host: address6, port });
      await within(once(allowed, 'connect'), 20_000, 'the IPv6 client');
      await echoAndEnd(allowed);
      assert.equal(accepted, 1);
    }
  } finally {
    await close(server);
  }
});

test('a name with an IPv4 and an IPv6 address, through the system resolver: a listener binds its first address; a client tries the first address first and gets past a refusal to the other', { skip: noName || noIpv6 }, async () => {
  const answers = await lookup(name!, { all: true });
  assert.deepEqual(answers.map((a) => a.address).sort(), [address, address6!].sort(), `what ${name} resolves to`);
  const first = answers[0]!.address;
  const other = answers[1]!.address;
  // node:net's listen on a name binds the first address dns.lookup gives.
  const named = await echoServer(name);
  const elsewhere = await echoServer(other);
  try {
    assert.equal(named.address()!.address, first);
    const lookups: unknown[][] = [];
    // A long attempt timeout: the test is about order, not time, and under TCG the first attempt can outlast the
    // default (250 ms, 500 from Node 26 on).
    const direct = connect({ host: name!, port: named.address()!.port, autoSelectFamilyAttemptTimeout: 10_000 });
    direct.on('lookup', (...args: unknown[]) => lookups.push(args));
    const directAttempts = attemptsOf(direct);
    await within(once(direct, 'connect'), 30_000, `the connection to ${name}`);
    assert.deepEqual(lookups, answers.map((a) => [null, a.address, a.family, name]), "one 'lookup' per answer, in the resolver's order");
    assert.deepEqual(directAttempts, [['connectionAttempt', first]]);
    assert.equal(direct.remoteAddress, first);
    await echoAndEnd(direct);

    // Where only the other address listens, the first is refused and the second connects.
    const past = connect({ host: name!, port: elsewhere.address()!.port, autoSelectFamilyAttemptTimeout: 10_000 });
    const pastAttempts = attemptsOf(past);
    await within(once(past, 'connect'), 30_000, `the connection to ${name} past ${first}`);
    assert.deepEqual(pastAttempts, [['connectionAttempt', first], ['connectionAttemptFailed', first, 'ECONNREFUSED'], ['connectionAttempt', other]]);
    assert.equal(past.remoteAddress, other);
    await echoAndEnd(past);
  } finally {
    await close(named);
    await close(elsewhere);
  }
});
