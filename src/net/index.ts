// rdmacm/net: node:net's API over RDMA, speaking rsockets' stream protocol, so
// a Node server or client moves to RDMA by changing one import, and talks to
// rdma-core's own rsocket programs (rstream, riostream, rcopy).
export { RdmaSocket, connect, connect as createConnection, type RdmaSocketOptions, type RdmaMapping } from './socket.js';
export { RdmaServer, createServer, type DropInfo } from './server.js';
export { RdmaAgent, RdmaHttpsAgent, type RdmaAgentRdmaOptions } from './agent.js';
export { RdmaNetError, RdmaNetCodeError, RdmaNetAggregateError } from './errors.js';
export { InvalidThisError } from '../api/core/errors.js';
export { ProtocolError as RdmaProtocolError } from './wire.js';
export type { RdmaConnectOptions, RdmaListenOptions, RdmaOnread, RdmaServerOptions, RdmaSocketSizes } from './options.js';
export type { LookupFunction } from './destinations.js';
