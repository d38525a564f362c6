// rdmacm/net: node:net's API over RDMA, speaking rsockets' stream protocol, so
// a Node server or client moves to RDMA by changing one import, and talks to
// rdma-core's own rsocket programs (rstream, riostream, rcopy). node:net's own
// names are here too (`import net from 'rdmacm/net'`, `new net.Socket()`).
import {
  BlockList, SocketAddress, getDefaultAutoSelectFamily, getDefaultAutoSelectFamilyAttemptTimeout, isIP, isIPv4, isIPv6,
  setDefaultAutoSelectFamily, setDefaultAutoSelectFamilyAttemptTimeout,
} from 'node:net';
import { RdmaServer, createServer } from './server.js';
import { RdmaSocket, connect } from './socket.js';

export { RdmaSocket, connect, connect as createConnection, type RdmaSocketOptions, type RdmaMapping } from './socket.js';
export { RdmaServer, createServer, type DropInfo } from './server.js';
export { RdmaAgent, RdmaHttpsAgent, type RdmaAgentRdmaOptions } from './agent.js';
export { RdmaNetError, RdmaNetCodeError, RdmaNetAggregateError } from './errors.js';
export { InvalidThisError } from '../api/core/errors.js';
export { ProtocolError as RdmaProtocolError } from './wire.js';
export type { RdmaConnectOptions, RdmaListenOptions, RdmaOnread, RdmaServerOptions, RdmaSocketSizes } from './options.js';
export type { LookupFunction } from './destinations.js';

export { RdmaSocket as Socket, RdmaSocket as Stream, RdmaServer as Server };
/** node:net's utilities themselves: an address check or a BlockList means the same over RDMA. */
export {
  BlockList, SocketAddress, getDefaultAutoSelectFamily, getDefaultAutoSelectFamilyAttemptTimeout, isIP, isIPv4, isIPv6,
  setDefaultAutoSelectFamily, setDefaultAutoSelectFamilyAttemptTimeout,
};

/** The module as node:net's default export has it. */
export default Object.freeze({
  connect, createConnection: connect, createServer, Socket: RdmaSocket, Stream: RdmaSocket, Server: RdmaServer,
  BlockList, SocketAddress, isIP, isIPv4, isIPv6,
  getDefaultAutoSelectFamily, setDefaultAutoSelectFamily, getDefaultAutoSelectFamilyAttemptTimeout, setDefaultAutoSelectFamilyAttemptTimeout,
});
