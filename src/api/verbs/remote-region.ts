// A region's remote descriptor (address, rkey, length) in 16 bytes, to hand a
// peer through private data or a send: big-endian u64 address, u32 rkey, u32 length.
import { Buffer } from 'node:buffer';
import { z } from 'zod';
import { argumentError, bytes, instanceCheck, isHonestBytes, parseArgument, u32 } from '../core/validate.js';
import type { RemoteRegion } from './memory-region.js';

export const REMOTE_REGION_SIZE = 16;

const remoteSchema = z.strictObject({
  address: z.bigint().min(0n).max(0xffffffffffffffffn),
  rkey: u32,
  length: u32,
});
const offsetSchema = z.number().int().min(0).default(0);

function checkRoom(operation: string, path: string, offset: number, size: number): void {
  if (offset + REMOTE_REGION_SIZE > size) {
    throw argumentError(operation, path, `a remote region descriptor is ${REMOTE_REGION_SIZE} bytes; ${Math.max(0, size - offset)} are left at offset ${offset}`, 'ERR_OUT_OF_RANGE');
  }
}

/** Encodes a descriptor (e.g. `region.remote`) into 16 bytes, or into `target` at `offset`. */
export function encodeRemoteRegion(remote: RemoteRegion, target?: Buffer, offset?: number): Buffer {
  const operation = 'encodeRemoteRegion';
  const r = parseArgument(operation, 'remote', remoteSchema, remote);
  const into = parseArgument(operation, 'target', instanceCheck<Buffer>((value) => Buffer.isBuffer(value) && isHonestBytes(value), 'expected a Buffer (not a Proxy, nor one that redefines its length)').optional(), target)
    ?? Buffer.alloc(REMOTE_REGION_SIZE);
  const at = parseArgument(operation, 'offset', offsetSchema, offset);
  checkRoom(operation, 'offset', at, into.length);
  into.writeBigUInt64BE(r.address, at);
  into.writeUInt32BE(r.rkey, at + 8);
  into.writeUInt32BE(r.length, at + 12);
  return into;
}

/** Decodes a peer's descriptor; the length is checked before anything is read. */
export function decodeRemoteRegion(data: Uint8Array, offset?: number): RemoteRegion {
  const operation = 'decodeRemoteRegion';
  const source = parseArgument(operation, 'data', bytes, data);
  const at = parseArgument(operation, 'offset', offsetSchema, offset);
  checkRoom(operation, 'data', at, source.byteLength);
  const view = new DataView(source.buffer, source.byteOffset + at, REMOTE_REGION_SIZE);
  return { address: view.getBigUint64(0, false), rkey: view.getUint32(8, false), length: view.getUint32(12, false) };
}
