// Copies out of native memory with one libc memcpy. Cheaper than a koffi.view
// (which builds an external ArrayBuffer) or a koffi.decode per field, and it
// matters where structs are read once per connection or per event.
import { Buffer } from 'node:buffer';
import { libc } from './libc.js';
import type { Pointer } from './library.js';

let scratch = Buffer.alloc(256);
let scratchView = new DataView(scratch.buffer, scratch.byteOffset, scratch.byteLength);

/** Copies `length` bytes at `address` into `destination` (which must hold them). */
export function copyFromNative(destination: Uint8Array, address: Pointer, length: number): void {
  if (length > destination.byteLength) throw new RangeError(`copyFromNative: ${length} bytes do not fit in ${destination.byteLength}`);
  if (length > 0) libc.memcpy(destination, address, length);
}

/** A new Buffer holding a copy of the `length` bytes at `address`. */
export function nativeBytes(address: Pointer, length: number): Buffer {
  const copy = Buffer.allocUnsafe(length);
  copyFromNative(copy, address, length);
  return copy;
}

/**
 * The `size` bytes of a struct at `address`, copied into a shared scratch
 * buffer: read the fields you need at once, before the next call overwrites it.
 */
export function snapshotStruct(address: Pointer, size: number): DataView {
  if (size > scratch.byteLength) {
    scratch = Buffer.alloc(size);
    scratchView = new DataView(scratch.buffer, scratch.byteOffset, scratch.byteLength);
  }
  libc.memcpy(scratch, address, size);
  return scratchView;
}
