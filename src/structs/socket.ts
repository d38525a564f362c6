// Socket addresses (netinet/in.h, sys/socket.h), as librdmacm takes and returns them.
import koffi from 'koffi';
import { anonymousStruct, cStruct } from './registry.js';

export const AF_INET = 2;
export const AF_INET6 = 10;
export const AF_IB = 27;

/** struct sockaddr: a family and 14 bytes of address. */
export const sockaddr = cStruct('sockaddr', {
  sa_family: 'uint16_t',
  sa_data: koffi.array('uint8_t', 14),
});

/** struct sockaddr_in: port and address are in network byte order. */
export const sockaddr_in = cStruct('sockaddr_in', {
  sin_family: 'uint16_t',
  sin_port: 'uint16_be_t',
  sin_addr: anonymousStruct({ s_addr: 'uint32_be_t' }),
  sin_zero: koffi.array('uint8_t', 8),
});
export interface SockaddrIn {
  sin_family: number;
  sin_port: number;
  sin_addr: { s_addr: number };
  sin_zero: Uint8Array;
}

/** struct sockaddr_in6. */
export const sockaddr_in6 = cStruct('sockaddr_in6', {
  sin6_family: 'uint16_t',
  sin6_port: 'uint16_be_t',
  sin6_flowinfo: 'uint32_be_t',
  sin6_addr: anonymousStruct({ s6_addr: koffi.array('uint8_t', 16) }),
  sin6_scope_id: 'uint32_t',
});
export interface SockaddrIn6 {
  sin6_family: number;
  sin6_port: number;
  sin6_flowinfo: number;
  sin6_addr: { s6_addr: Uint8Array };
  sin6_scope_id: number;
}

/** struct sockaddr_storage: room for any address, 8-byte aligned. */
export const sockaddr_storage = cStruct('sockaddr_storage', {
  ss_family: 'uint16_t',
  __ss_padding: koffi.array('uint8_t', 118),
  __ss_align: 'uint64_t',
});
