// A region's remote descriptor (address, rkey, length) in 16 bytes, to hand a
// peer through private data or a send: big-endian u64 address, u32 rkey, u32 length.
import { argumentError, parseArgument, bytes } from './validate.js';
import type { RemoteRegion } from './memory-region.js';

export const REMOTE_REGION_SIZE = 16;

/** Encodes a descriptor (e.g. `region.remote`) into 16 bytes, or into `target` at `offset`. */
export function encodeRemoteRegion(remote: RemoteRegion, target: Buffer = Buffer.alloc(REMOTE_REGION_SIZE), offset = 0): Buffer {
  if (offset < 0 || offset + REMOTE_REGION_SIZE > target.length) {
    throw argumentError('encodeRemoteRegion', 'offset', `needs ${REMOTE_REGION_SIZE} bytes at offset ${offset} of a ${target.length}-byte buffer`);
  }
  target.writeBigUInt64BE(remote.address, offset);
  target.writeUInt32BE(remote.rkey, offset + 8);
  target.writeUInt32BE(remote.length, offset + 12);
  return target;
}

/** Decodes a peer's descriptor; the length is checked before anything is read. */
export function decodeRemoteRegion(data: Uint8Array, offset = 0): RemoteRegion {
  const source = parseArgument('decodeRemoteRegion', 'data', bytes, data);
  if (offset < 0 || offset + REMOTE_REGION_SIZE > source.byteLength) {
    throw argumentError('decodeRemoteRegion', 'data', `a remote region descriptor is ${REMOTE_REGION_SIZE} bytes (got ${source.byteLength - offset})`);
  }
  const view = new DataView(source.buffer, source.byteOffset + offset, REMOTE_REGION_SIZE);
  return { address: view.getBigUint64(0, false), rkey: view.getUint32(8, false), length: view.getUint32(12, false) };
}
