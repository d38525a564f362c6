// One-sided RDMA and atomics: data integrity from 1 B to 1 MiB, least-privilege
// access, refused remote access that leaves memory unchanged, and atomics
// checked before native code.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import {
  decodeRemoteRegion, encodeRemoteRegion, RdmaArgumentError, WorkCompletionError, type AccessName, type MemoryRegion,
} from '../../src/index.js';
import { connectPair } from '../support/pair.js';

const MAX = 1 << 20;

/** A connection whose server exposes `size` bytes with `access`, and whose client learned the descriptor by a send. */
async function exposedPair(size: number, access: AccessName[]) {
  let descriptorInbox!: MemoryRegion;
  const pair = await connectPair({
    qp: { sendWr: 8, recvWr: 8 },
    beforeConnect: (id, side) => {
      if (side !== 'client') return;
      descriptorInbox = id.regMsgs(Buffer.alloc(16));
      id.postRecv(descriptorInbox);
    },
  });
  const { client, server } = pair;
  const exposed = server.pd.allocate(size, access);
  server.postSend(server.regMsgs(encodeRemoteRegion(exposed.remote)));
  await client.queuePair.nextRecvCompletion();
  await server.queuePair.nextSendCompletion();
  const remote = decodeRemoteRegion(descriptorInbox.buffer);
  return { client, server, exposed, remote, close: () => pair.hangUp() };
}

test('RDMA write then read: random payloads from 1 B to 1 MiB, byte for byte', { timeout: 180_000 }, async () => {
  const pair = await exposedPair(MAX, ['LOCAL_WRITE', 'REMOTE_WRITE', 'REMOTE_READ']);
  try {
    assert.equal(pair.remote.length, MAX);
    assert.equal(pair.remote.rkey, pair.exposed.rkey);
    const source = pair.client.pd.allocate(MAX, ['LOCAL_WRITE']);
    const sink = pair.client.pd.allocate(MAX, ['LOCAL_WRITE']);
    for (const size of [1, 2, 63, 4096, 4097, 65536, 300_001, MAX]) {
      randomBytes(size).copy(source.buffer);
      pair.client.postSend(source, { opcode: 'RDMA_WRITE', length: size, remote: pair.remote });
      await pair.client.queuePair.nextSendCompletion();
      assert.ok(pair.exposed.buffer.subarray(0, size).equals(source.buffer.subarray(0, size)), `write of ${size} B landed intact`);
      sink.buffer.fill(0);
      pair.client.postSend(sink, { opcode: 'RDMA_READ', length: size, remote: pair.remote });
      await pair.client.queuePair.nextSendCompletion();
      assert.ok(sink.buffer.subarray(0, size).equals(source.buffer.subarray(0, size)), `read of ${size} B came back intact`);
    }
    // Write with immediate data: the peer gets a receive completion carrying it.
    const landing = pair.server.regMsgs(Buffer.alloc(16));
    pair.server.postRecv(landing);
    pair.client.postSend(source, { opcode: 'RDMA_WRITE', length: 8, remote: pair.remote, immediate: 0x1234abcd });
    const notified = await pair.server.queuePair.nextRecvCompletion();
    assert.equal(notified.opcode, 'RECV_RDMA_WITH_IMM');
    assert.equal(notified.immData, 0x1234abcd);
  } finally {
    await pair.close();
  }
});

/** Posts a one-sided write the peer did not allow, and checks the failure and the untouched memory. */
async function refusedWrite(access: AccessName[], remoteFor: (remote: { address: bigint; rkey: number; length: number }) => { address: bigint; rkey: number }) {
  const pair = await exposedPair(4096, access);
  try {
    const before = Buffer.from(pair.exposed.buffer);
    const source: MemoryRegion = pair.client.regMsgs(randomBytes(64));
    pair.client.postSend(source, { opcode: 'RDMA_WRITE', remote: remoteFor(pair.remote) });
    await assert.rejects(pair.client.queuePair.nextSendCompletion(), (error: unknown) => {
      assert.ok(error instanceof WorkCompletionError, String(error));
      assert.equal(error.completion.status, 'REM_ACCESS_ERR');
      return true;
    });
    assert.ok(pair.exposed.buffer.equals(before), 'the target memory is unchanged');
  } finally {
    await pair.close();
  }
}

test('memory is not remotely writable unless asked: a write to a LOCAL_WRITE region is refused', { timeout: 60_000 }, async () => {
  await refusedWrite(['LOCAL_WRITE', 'REMOTE_READ'], (remote) => remote);
});

test('a wrong rkey gets a remote access error and leaves memory unchanged', { timeout: 60_000 }, async () => {
  await refusedWrite(['LOCAL_WRITE', 'REMOTE_WRITE'], (remote) => ({ address: remote.address, rkey: (remote.rkey + 0x100) >>> 0 }));
});

test('an address out of the region gets a remote access error and leaves memory unchanged', { timeout: 60_000 }, async () => {
  await refusedWrite(['LOCAL_WRITE', 'REMOTE_WRITE'], (remote) => ({ address: remote.address + BigInt(remote.length) - 8n, rkey: remote.rkey }));
});

test('atomics: fetch-and-add and compare-and-swap on a remote word', { timeout: 60_000 }, async () => {
  const pair = await exposedPair(64, ['LOCAL_WRITE', 'REMOTE_ATOMIC']);
  try {
    pair.exposed.buffer.writeBigUInt64LE(40n, 8);
    const word = { address: pair.remote.address + 8n, rkey: pair.remote.rkey };
    const result = pair.client.regMsgs(Buffer.alloc(8));
    pair.client.postSend(result, { opcode: 'ATOMIC_FETCH_AND_ADD', remote: word, compareAdd: 2n });
    await pair.client.queuePair.nextSendCompletion();
    assert.equal(result.buffer.readBigUInt64LE(0), 40n, 'fetch-and-add returns the old value');
    assert.equal(pair.exposed.buffer.readBigUInt64LE(8), 42n);

    pair.client.postSend(result, { opcode: 'ATOMIC_CMP_AND_SWP', remote: word, compareAdd: 42n, swap: 7n });
    await pair.client.queuePair.nextSendCompletion();
    assert.equal(result.buffer.readBigUInt64LE(0), 42n);
    assert.equal(pair.exposed.buffer.readBigUInt64LE(8), 7n, 'swapped: the word matched');

    pair.client.postSend(result, { opcode: 'ATOMIC_CMP_AND_SWP', remote: word, compareAdd: 42n, swap: 99n });
    await pair.client.queuePair.nextSendCompletion();
    assert.equal(pair.exposed.buffer.readBigUInt64LE(8), 7n, 'not swapped: the word differed');

    // Checked before native code: alignment, size, operands.
    const rejects = (options: Parameters<typeof pair.client.postSend>[1], path: string) =>
      assert.throws(() => pair.client.postSend(result, options), (error: unknown) => {
        assert.ok(error instanceof RdmaArgumentError);
        assert.equal(error.issues[0]!.path, path);
        return true;
      });
    rejects({ opcode: 'ATOMIC_FETCH_AND_ADD', remote: { address: word.address + 4n, rkey: word.rkey }, compareAdd: 1n }, 'options.remote.address');
    rejects({ opcode: 'ATOMIC_FETCH_AND_ADD', remote: word, compareAdd: 1n, length: 4 }, 'options.length');
    rejects({ opcode: 'ATOMIC_CMP_AND_SWP', remote: word, compareAdd: 1n }, 'options.swap');
    rejects({ opcode: 'ATOMIC_FETCH_AND_ADD', remote: word }, 'options.compareAdd');
    rejects({ opcode: 'ATOMIC_FETCH_AND_ADD', remote: word, compareAdd: 1n, inline: true }, 'options.inline');
    assert.equal(pair.exposed.buffer.readBigUInt64LE(8), 7n, 'nothing reached the device');
  } finally {
    await pair.close();
  }
});
