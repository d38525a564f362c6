// Socket addresses between their C form (sockaddr_in/sockaddr_in6 in memory)
// and plain `{ family, address, port }` objects.
import { Buffer } from 'node:buffer';
import { isIPv4, isIPv6 } from 'node:net';
import { AF_INET, AF_INET6, AF_IB } from '../../structs/socket.js';
import { interfaceIndex, interfaceName } from '../core/interfaces.js';

export type AddressFamily = 'IPv4' | 'IPv6' | 'IB';

/** A decoded socket address. */
export interface SocketAddress {
  readonly family: AddressFamily;
  readonly address: string;
  readonly port: number;
}

const SOCKADDR_IN_SIZE = 16;
const SOCKADDR_IN6_SIZE = 28;

function ipv6Bytes(text: string): Uint8Array {
  const bytes = new Uint8Array(16);
  let head = text;
  let tailV4: number[] = [];
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4) {
    tailV4 = v4[1]!.split('.').map(Number);
    head = text.slice(0, -v4[1]!.length) + '0:0';
  }
  const [left, right] = head.includes('::') ? head.split('::') : [head, undefined];
  const groups = (part: string | undefined) => (part ? part.split(':').filter((g) => g !== '') : []);
  const leftGroups = groups(left);
  const rightGroups = groups(right);
  const all = [...leftGroups, ...Array<string>(8 - leftGroups.length - rightGroups.length).fill('0'), ...rightGroups];
  all.forEach((group, i) => {
    const value = parseInt(group, 16);
    bytes[i * 2] = value >> 8;
    bytes[i * 2 + 1] = value & 0xff;
  });
  if (tailV4.length) bytes.set(tailV4, 12);
  return bytes;
}

/** IPv6 text for 16 bytes, with the longest zero run compressed. */
export function formatIPv6(bytes: Uint8Array): string {
  const groups = Array.from({ length: 8 }, (_, i) => (bytes[i * 2]! << 8) | bytes[i * 2 + 1]!);
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    return `::ffff:${bytes[12]}.${bytes[13]}.${bytes[14]}.${bytes[15]}`;
  }
  let bestStart = -1;
  let bestLength = 0;
  for (let i = 0; i < 8; ) {
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLength && j - i > 1) {
      bestStart = i;
      bestLength = j - i;
    }
    i = j === i ? i + 1 : j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestStart < 0) return hex.join(':');
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLength).join(':')}`;
}

/** Encodes an IP address and port as sockaddr_in or sockaddr_in6 (network byte order). */
export function encodeSocketAddress(address: string, port: number): Buffer {
  if (isIPv4(address)) {
    const buffer = Buffer.alloc(SOCKADDR_IN_SIZE);
    buffer.writeUInt16LE(AF_INET, 0);
    buffer.writeUInt16BE(port, 2);
    address.split('.').forEach((octet, i) => buffer.writeUInt8(Number(octet), 4 + i));
    return buffer;
  }
  if (isIPv6(address)) {
    const [host, scope] = address.split('%');
    const buffer = Buffer.alloc(SOCKADDR_IN6_SIZE);
    buffer.writeUInt16LE(AF_INET6, 0);
    buffer.writeUInt16BE(port, 2);
    buffer.set(ipv6Bytes(host!), 8);
    // The zone, a name or an index (checked when the address was parsed), is sin6_scope_id.
    if (scope !== undefined) buffer.writeUInt32LE(interfaceIndex(scope) ?? 0, 24);
    return buffer;
  }
  throw new TypeError(`not an IP address: ${address}`);
}

/** Decodes a sockaddr from memory; undefined for AF_UNSPEC (nothing there yet). */
export function decodeSocketAddress(memory: Uint8Array): SocketAddress | undefined {
  const view = new DataView(memory.buffer, memory.byteOffset, memory.byteLength);
  const family = view.getUint16(0, true);
  if (family === AF_INET) {
    return { family: 'IPv4', address: Array.from(memory.subarray(4, 8)).join('.'), port: view.getUint16(2, false) };
  }
  if (family === AF_INET6) {
    const address = formatIPv6(memory.subarray(8, 24));
    // As node:net: a link-local address names its interface (fe80::1%eth0).
    const scope = memory.byteLength >= SOCKADDR_IN6_SIZE ? view.getUint32(24, true) : 0;
    const zone = scope > 0 && memory[8] === 0xfe && (memory[9]! & 0xc0) === 0x80 ? (interfaceName(scope) ?? String(scope)) : undefined;
    return { family: 'IPv6', address: zone === undefined ? address : `${address}%${zone}`, port: view.getUint16(2, false) };
  }
  if (family === AF_IB) {
    // struct sockaddr_ib: sib_pkey, sib_flowinfo, then the 16-byte GID at offset 8; sib_sid (u64 BE) at 24 holds the port.
    return { family: 'IB', address: formatIPv6(memory.subarray(8, 24)), port: Number(view.getBigUint64(24, false) & 0xffffn) };
  }
  return undefined;
}
