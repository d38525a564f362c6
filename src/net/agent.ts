// http and https agents whose connections are RdmaSockets: node:http's
// pooling, keep-alive, limits and scheduling, over rdmacm/net. http hands an
// agent's createConnection every option of the request (method, headers,
// path: null, _agentKey…); these pass on only the connect options among them,
// which connect() then validates as any connect()'s. https adds TLS over the
// RdmaSocket, with https.Agent's session cache.
import type { AgentOptions as HttpAgentOptions } from 'node:http';
import type { AgentOptions as HttpsAgentOptions } from 'node:https';
import { createRequire } from 'node:module';
import type { BlockList } from 'node:net';
import type { Duplex } from 'node:stream';
import { InvalidThisError, asObject } from '../api/core/errors.js';
import { argumentError, parseArgument } from '../api/core/validate.js';
import { connectSchema, type RdmaConnectOptions, type RdmaSocketSizes } from './options.js';
import { connect, type RdmaSocket } from './socket.js';

// Required, not imported: Node 22's ESM import of node:http reads every export,
// its lazy undici ones too, which compile WebAssembly and so throw under
// --jitless (where executable memory is refused); require reads none of them.
const require = createRequire(import.meta.url);
const http = require('node:http') as typeof import('node:http');
const https = require('node:https') as typeof import('node:https');

/** The options of an agent's connections that connect() takes; the rest of what http hands over is the request's. */
const CONNECT_KEYS = [
  'host', 'port', 'localAddress', 'localPort', 'family', 'hints', 'lookup', 'autoSelectFamily', 'autoSelectFamilyAttemptTimeout',
  'timeout', 'keepAlive', 'keepAliveInitialDelay', 'noDelay', 'connectTimeout', 'blockList', 'rdma',
] as const satisfies readonly (keyof RdmaConnectOptions)[];

/** What an RDMA agent takes beyond http.Agent's own options. */
export interface RdmaAgentRdmaOptions {
  /** Sizes of every connection. @defaultValue rsockets' sizes */
  readonly rdma?: RdmaSocketSizes;
  /** Bound on each connection's address and route resolution and handshake, in ms. @defaultValue 10000 */
  readonly connectTimeout?: number;
  /** Addresses the agent never connects to (ERR_IP_BLOCKED). @defaultValue none */
  readonly blockList?: BlockList;
}

/** Checked when the agent is made, so a bad size fails there and not at its first request. */
const agentRdmaSchema = connectSchema.pick({ rdma: true, connectTimeout: true, blockList: true }).partial();

const AGENT_RDMA_KEYS = Object.keys(agentRdmaSchema.shape);

/** The agent's options as its base class takes them, once its RDMA ones have passed; anything but an object is refused. */
function checkedAgentOptions<T extends object>(operation: string, options: T | undefined): T | undefined {
  if (options === undefined) return undefined;
  if (typeof options !== 'object' || options === null) throw argumentError(operation, 'options', 'expected an object', 'ERR_INVALID_ARG_TYPE');
  const own = Object.fromEntries(Object.entries(options).filter(([key]) => AGENT_RDMA_KEYS.includes(key)));
  parseArgument(operation, 'options', agentRdmaSchema, own);
  return options;
}

/** The connect options among what http hands createConnection (null is http's "none"). */
function connectOptionsOf(options: object): RdmaConnectOptions {
  const record = options as Record<string, unknown>;
  return Object.fromEntries(CONNECT_KEYS.filter((key) => record[key] !== undefined && record[key] !== null).map((key) => [key, record[key]])) as unknown as RdmaConnectOptions;
}

/**
 * An http.Agent whose connections are RdmaSockets:
 * `http.get({ host, port, path, agent: new RdmaAgent({ keepAlive: true }) })`.
 * Takes http.Agent's options, and `rdma`, `connectTimeout` and `blockList`
 * for every connection.
 */
export class RdmaAgent extends http.Agent {
  /** The brand createConnection checks first: only the instances this package made have it. */
  readonly #brand = true;

  constructor(options?: HttpAgentOptions & RdmaAgentRdmaOptions) {
    super(checkedAgentOptions('RdmaAgent', options));
  }

  /** http's hook: an RdmaSocket to the request's host and port. */
  override createConnection(options: object): Duplex {
    if (!(#brand in asObject(this))) throw new InvalidThisError('RdmaAgent');
    return connect(connectOptionsOf(options));
  }
}

/**
 * An https.Agent whose connections are TLS over RdmaSockets, verified as
 * https verifies (ca, servername, rejectUnauthorized…) and with its session
 * cache: `https.get({ host, port, path, agent: new RdmaHttpsAgent({ ca }) })`.
 */
export class RdmaHttpsAgent extends https.Agent {
  /** The brand createConnection checks first: only the instances this package made have it. */
  readonly #brand = true;

  constructor(options?: HttpsAgentOptions & RdmaAgentRdmaOptions) {
    super(checkedAgentOptions('RdmaHttpsAgent', options));
  }

  /** https's hook: TLS, as https.Agent makes it, over an RdmaSocket instead of a TCP one. */
  override createConnection(options: object): Duplex {
    if (!(#brand in asObject(this))) throw new InvalidThisError('RdmaHttpsAgent');
    const socket: RdmaSocket = connect(connectOptionsOf(options));
    // https.Agent's own createConnection is tls.connect with its session cache; given `socket`, TLS runs over it.
    const create = https.Agent.prototype as unknown as { createConnection(options: object): Duplex };
    return create.createConnection.call(this, { ...options, socket });
  }
}
