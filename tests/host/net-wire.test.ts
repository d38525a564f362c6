// rsockets' wire format (src/net/wire.ts) against rdma-core's rsocket.c:
// struct rs_conn_data's 40 bytes field by field, the immediate encoding, the
// SGL and iomap entries in either byte order, and every malformed peer refused.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  CONN_DATA_SIZE, Ctrl, Op, ProtocolError, decodeConnData, decodeIomapSize, encodeConnData, encodeIomapSize, immediate, immediateOp,
  immediateValue, readIomap, readSgeAddress, readSgeKey, readSgeLength, writeIomap, writeSge,
} from '../../src/net/wire.js';

const sample = {
  flags: 0x02,
  credits: 384,
  targetIomapSize: 1,
  targetSgl: { address: 0x7f12_3456_7000n, key: 0x1234, length: 2 },
  dataBuf: { address: 0x7f00_0000_1000n, key: 0xabcdef01, length: 524288 },
};

test('rs_conn_data: 40 bytes, every multi-byte field big-endian at rsocket.c offsets', () => {
  const bytes = encodeConnData(sample);
  assert.equal(bytes.length, CONN_DATA_SIZE);
  assert.equal(bytes[0], 1, 'version @0');
  assert.equal(bytes[1], 0x02, 'flags @1');
  assert.deepEqual([...bytes.subarray(2, 4)], [0x01, 0x80], 'credits 384 big-endian @2');
  assert.deepEqual([...bytes.subarray(4, 7)], [0, 0, 0], 'reserved @4');
  assert.equal(bytes[7], 1, 'target_iomap_size @7');
  assert.equal(bytes.readBigUInt64BE(8), sample.targetSgl.address, 'target_sgl.addr @8');
  assert.equal(bytes.readUInt32BE(16), 0x1234, 'target_sgl.key @16 (key before length)');
  assert.equal(bytes.readUInt32BE(20), 2, 'target_sgl.length @20 counts entries');
  assert.equal(bytes.readBigUInt64BE(24), sample.dataBuf.address, 'data_buf.addr @24');
  assert.equal(bytes.readUInt32BE(32), 0xabcdef01, 'data_buf.key @32');
  assert.deepEqual([...bytes.subarray(36, 40)], [0x00, 0x08, 0x00, 0x00], 'data_buf.length 524288 @36');
  // RC private data arrives padded to 56 (connect) or 196 (accept) bytes: decoding reads the first 40.
  const padded = Buffer.concat([bytes, Buffer.alloc(16)]);
  assert.deepEqual(decodeConnData(padded), { version: 1, ...sample });
});

test('rs_conn_data from a malformed peer is refused with a typed protocol error', () => {
  const good = encodeConnData(sample);
  const cases: [string, Buffer][] = [
    ['short', good.subarray(0, 39)],
    ['empty', Buffer.alloc(0)],
    ['version 2', Buffer.from(good).fill(2, 0, 1)],
    ['version 0', Buffer.alloc(40)],
    ['0 credits', (() => { const b = Buffer.from(good); b.writeUInt16BE(0, 2); return b; })()],
    ['0 SGL entries', (() => { const b = Buffer.from(good); b.writeUInt32BE(0, 20); return b; })()],
    ['3 SGL entries', (() => { const b = Buffer.from(good); b.writeUInt32BE(3, 20); return b; })()],
    ['empty buffer', (() => { const b = Buffer.from(good); b.writeUInt32BE(0, 36); return b; })()],
  ];
  for (const [name, bytes] of cases) {
    assert.throws(() => decodeConnData(bytes), (error: unknown) => error instanceof ProtocolError && error.code === 'ERR_RDMACM_PROTOCOL', name);
  }
});

test('immediate data: op << 29 | value, rsockets\' control values', () => {
  assert.equal(immediate(Op.DATA, 64), 0x00000040);
  assert.equal(immediate(Op.SGL, 192 + 384), 0x80000240);
  assert.equal(immediate(Op.SGL, 65500 + 384), 0x8001015c, 'the untruncated sum, as rsockets sends it');
  assert.equal(immediate(Op.IOMAP_SGL, 0), 0xc0000000);
  assert.equal(immediate(Op.CTRL, Ctrl.DISCONNECT), 0xe0000000);
  assert.equal(immediate(Op.CTRL, Ctrl.SHUTDOWN), 0xe0000002);
  for (const imm of [0x00000040, 0x8001015c, 0xe0000002]) assert.equal(immediate(immediateOp(imm), immediateValue(imm)), imm);
  assert.equal(immediateValue(0x8001015c) & 0xffff, 0x015c, 'the receiver keeps 16 bits');
});

test('iomap size: rsockets\' 8-bit scale', () => {
  for (const [entries, scaled] of [[0, 0], [1, 1], [128, 128], [256, 0x81], [512, 0x82], [0x7f00, 0xff]] as const) {
    assert.equal(encodeIomapSize(entries), scaled);
    assert.equal(decodeIomapSize(scaled), entries);
  }
});

test('SGL and iomap entries round-trip in both byte orders, at rs_sge/rs_iomap offsets', () => {
  for (const bigEndian of [false, true]) {
    const view = new DataView(new ArrayBuffer(40));
    writeSge(view, 0, 0x7f12_3456_7890, 0x11223344, 65536, bigEndian);
    assert.equal(readSgeAddress(view, 0, bigEndian), 0x7f12_3456_7890);
    assert.equal(readSgeKey(view, 0, bigEndian), 0x11223344);
    assert.equal(readSgeLength(view, 0, bigEndian), 65536);
    assert.equal(view.getUint32(8, !bigEndian), 0x11223344, 'key @8');
    assert.equal(view.getBigUint64(0, !bigEndian), 0x7f12_3456_7890n, 'addr @0');
    const entry = { offset: 4096, address: 0x7f00_1234_0000, key: 7, length: 1 << 20 };
    writeIomap(view, 16, entry, bigEndian);
    assert.deepEqual(readIomap(view, 16, bigEndian), entry);
    assert.equal(view.getUint32(16 + 20, !bigEndian), 1 << 20, 'length @20 of rs_iomap');
  }
});
