// Copies out of native memory with one libc memcpy. Cheaper than a koffi.view
// (which builds an external ArrayBuffer) or a koffi.decode per field, and it
// matters where structs are read once per connection or per event. Where libc
// does not load, the copy goes through a koffi.view instead.
import { Buffer } from 'node:buffer';
import koffi from 'koffi';
import { libc } from './libc.js';
import { LibraryLoadError } from './load-errors.js';
import type { Pointer } from './library.js';

type Memcpy = (destination: Uint8Array, address: Pointer, length: number) => unknown;

/** The same copy through a view of the native memory, for a process whose libc did not load. */
const copyThroughView: Memcpy = (destination, address, length) => {
  destination.set(new Uint8Array(koffi.view(address, length)));
};

let memcpy: Memcpy | undefined;

/** libc's memcpy, or copyThroughView where libc does not load; chosen at the first copy. */
function chooseMemcpy(): Memcpy {
  try {
    return libc.memcpy;
  } catch (error) {
    if (!(error instanceof LibraryLoadError)) throw error;
    return copyThroughView;
  }
}

let scratch = Buffer.alloc(256);
let scratchView = new DataView(scratch.buffer, scratch.byteOffset, scratch.byteLength);

/** Copies `length` bytes at `address` into `destination` (which must hold them). */
export function copyFromNative(destination: Uint8Array, address: Pointer, length: number): void {
  if (length > destination.byteLength) throw new RangeError(`copyFromNative: ${length} bytes do not fit in ${destination.byteLength}`);
  if (length > 0) (memcpy ??= chooseMemcpy())(destination, address, length);
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
  (memcpy ??= chooseMemcpy())(scratch, address, size);
  return scratchView;
}
