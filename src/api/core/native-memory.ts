// Small native scratch areas owned by JavaScript: a Buffer whose memory lives
// off the V8 heap (so it never moves) and whose address is taken once; and
// 64-bit fields read from such views as Numbers, without a BigInt.
import { Buffer } from 'node:buffer';
import koffi from 'koffi';
import type { Pointer } from '../../ffi/library.js';

/** V8 keeps typed arrays up to this size on its heap, where they can move. */
const ON_HEAP_MAX = 64;

export interface NativeScratch {
  readonly buffer: Buffer;
  readonly view: DataView;
  readonly address: Pointer;
}

export function nativeScratch(size: number): NativeScratch {
  const buffer = Buffer.alloc(Math.max(size, ON_HEAP_MAX + 1));
  void buffer.buffer; // materializes the backing store off-heap for good
  return { buffer, view: new DataView(buffer.buffer, buffer.byteOffset, buffer.byteLength), address: koffi.address(buffer) };
}

/** A little-endian 64-bit field as a Number: exact below 2^53 (every user-space address on Linux, any wr_id the API hands out). */
export function readUint64Number(view: DataView, offset: number): number {
  return view.getUint32(offset, true) + view.getUint32(offset + 4, true) * 2 ** 32;
}
