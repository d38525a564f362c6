// rcopy's application protocol (rdma-core librdmacm/examples/rcopy.c), for a
// TypeScript peer of the real tool. Headers are 16 bytes in host order
// (little-endian here): version 0, command, total length, data, id. The client
// sends OPEN (path), WRITE (size, then the raw bytes) and CLOSE; each is
// answered with command | 0x80 and a status (0 or an errno).
import { Buffer } from 'node:buffer';
import { closeSync, openSync, writeSync } from 'node:fs';
import type { Duplex } from 'node:stream';
import { ExactReader } from './rstream-peer.js';

const OPEN = 1;
const CLOSE = 2;
const WRITE = 3;
const RESPONSE = 0x80;

function header(command: number, length: number, data = 0): Buffer {
  const out = Buffer.alloc(16);
  out.writeUInt8(0, 0);
  out.writeUInt8(command, 1);
  out.writeUInt16LE(length, 2);
  out.writeUInt32LE(data, 4);
  return out;
}

/** Serves one rcopy client on `socket`: writes the file it sends, until the client hangs up. */
export async function rcopyServe(socket: Duplex): Promise<void> {
  const reader = new ExactReader(socket);
  let fd: number | undefined;
  socket.on('error', () => undefined);
  try {
    for (;;) {
      let head: Buffer;
      try {
        head = await reader.read(16);
      } catch {
        return; // the client hung up
      }
      const command = head.readUInt8(1);
      const length = head.readUInt16LE(2);
      let status = 0;
      if (head.readUInt8(0) !== 0 || length < 16) return void socket.destroy();
      if (command === OPEN) {
        const path = (await reader.read(length - 16)).toString('latin1').replace(/\0.*$/s, '');
        fd = openSync(path, 'w', head.readUInt32LE(4) & 0o777);
      } else if (command === WRITE) {
        const size = Number((await reader.read(8)).readBigUInt64LE(0));
        const data = await reader.read(size);
        if (fd === undefined) status = 9; // EBADF
        else writeSync(fd, data);
      } else if (command === CLOSE) {
        if (fd !== undefined) closeSync(fd);
        fd = undefined;
      } else {
        status = 22; // EINVAL
      }
      socket.write(header(command | RESPONSE, 16, status));
    }
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** rcopy's client side: copies `payload` to `destination` on an rcopy server. */
export async function rcopyClient(socket: Duplex, destination: string, payload: Buffer): Promise<void> {
  const reader = new ExactReader(socket);
  const reply = async (command: number) => {
    const head = await reader.read(16);
    if (head.readUInt8(1) !== (command | RESPONSE)) throw new Error(`rcopy replied ${head.readUInt8(1)} to ${command}`);
    if (head.readUInt32LE(4) !== 0) throw new Error(`rcopy refused command ${command}: errno ${head.readUInt32LE(4)}`);
  };
  const padded = (Buffer.byteLength(destination) + 8) & ~7;
  const path = Buffer.alloc(padded);
  path.write(destination, 'latin1');
  socket.write(Buffer.concat([header(OPEN, 16 + padded, 0o644), path]));
  await reply(OPEN);
  const size = Buffer.alloc(8);
  size.writeBigUInt64LE(BigInt(payload.length), 0);
  socket.write(Buffer.concat([header(WRITE, 24), size]));
  socket.write(payload);
  await reply(WRITE);
  socket.write(header(CLOSE, 16));
  await reply(CLOSE);
}
