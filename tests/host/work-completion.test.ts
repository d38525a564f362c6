// struct ibv_wc decoding, without a device: a completion encoded as C lays it
// out decodes back to the same fields, and its flag list is shared per mask.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import koffi from 'koffi';
import { ibv_wc } from '../../src/structs/verbs-work.js';
import { WcFlag, WcOpcode, WcStatus, type WcFlagName, type WcOpcodeName, type WcStatusName } from '../../src/api/core/enums.js';
import { WC_SIZE, decodeWorkCompletion, encodeWorkCompletion, type WorkCompletion } from '../../src/api/work/work-completion.js';

const flagNames = Object.keys(WcFlag.values) as WcFlagName[];
const u32 = fc.integer({ min: 0, max: 2 ** 32 - 1 });

const completion = fc.record({
  wrId: fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
  status: fc.constantFrom(...(Object.keys(WcStatus.values) as WcStatusName[])),
  opcode: fc.constantFrom(...(Object.keys(WcOpcode.values) as WcOpcodeName[])),
  byteLen: u32,
  immData: u32,
  qpNum: fc.integer({ min: 0, max: 2 ** 24 - 1 }),
  srcQp: fc.integer({ min: 0, max: 2 ** 24 - 1 }),
  flags: fc.subarray(flagNames),
  vendorErr: u32,
  pkeyIndex: fc.integer({ min: 0, max: 0xffff }),
  slid: fc.integer({ min: 0, max: 0xffff }),
  sl: fc.integer({ min: 0, max: 0xff }),
  dlidPathBits: fc.integer({ min: 0, max: 0xff }),
});

function decode(wc: Buffer, context?: unknown): WorkCompletion {
  return decodeWorkCompletion(new DataView(wc.buffer, wc.byteOffset, wc.byteLength), 0, context);
}

test('an encoded completion decodes to the same fields (immediate data only with WITH_IMM)', () => {
  fc.assert(fc.property(completion, (fields) => {
    const original = { ...fields, context: undefined, statusText: '', immData: fields.flags.includes('WITH_IMM') ? fields.immData : undefined };
    const wc = encodeWorkCompletion(original);
    assert.equal(wc.length, WC_SIZE);
    const decoded = decode(wc, 'ctx');
    assert.deepEqual({ ...decoded, statusText: '' }, { ...original, context: 'ctx' });
    assert.equal(typeof decoded.statusText, 'string');
    assert.ok(decoded.statusText.length > 0, 'ibv_wc_status_str gave a text');
  }), { numRuns: 300 });
});

test('a completion that koffi lays out by the C field names decodes field for field (imm_data in network order, as C stores it)', () => {
  fc.assert(fc.property(completion, (fields) => {
    const wc = Buffer.alloc(WC_SIZE);
    const immData = fields.flags.includes('WITH_IMM') ? fields.immData : undefined;
    koffi.encode(wc, ibv_wc, {
      wr_id: fields.wrId,
      status: WcStatus.values[fields.status],
      opcode: WcOpcode.values[fields.opcode],
      vendor_err: fields.vendorErr,
      byte_len: fields.byteLen,
      qp_num: fields.qpNum,
      src_qp: fields.srcQp,
      wc_flags: fields.flags.reduce((mask, name) => mask | WcFlag.values[name], 0),
      pkey_index: fields.pkeyIndex,
      slid: fields.slid,
      sl: fields.sl,
      dlid_path_bits: fields.dlidPathBits,
    });
    // __be32 in the header: C stores imm_data big-endian (htobe32).
    if (immData !== undefined) wc.writeUInt32BE(immData, koffi.offsetof(ibv_wc, 'imm_data'));
    const decoded = decode(wc);
    assert.deepEqual({ ...decoded, statusText: '', flags: [...decoded.flags].sort() }, { ...fields, immData, context: undefined, statusText: '', flags: [...fields.flags].sort() });
  }), { numRuns: 300 });
});

test('flag lists are frozen and shared per mask; bits that name no flag are left out', () => {
  const wc = encodeWorkCompletion({ ...decode(Buffer.alloc(WC_SIZE)), flags: ['GRH', 'WITH_IMM'], immData: 7 });
  const first = decode(wc);
  assert.deepEqual(first.flags, ['GRH', 'WITH_IMM']);
  assert.equal(decode(wc).flags, first.flags, 'one list for both');
  assert.ok(Object.isFrozen(first.flags));
  const flagsAt = koffi.offsetof(ibv_wc, 'wc_flags');
  wc.writeUInt32LE((wc.readUInt32LE(flagsAt) | 0x8000_0000 | 0x100) >>> 0, flagsAt);
  assert.equal(decode(wc).flags, first.flags, 'unknown bits: the same list');
});
