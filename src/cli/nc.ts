// `rdmacm nc`: netcat over an rdmacm/net socket. stdin goes to the peer, what
// the peer sends goes to stdout; EOF on stdin ends this side's writing (the
// peer sees its end), the peer's end ends the output, and the command exits
// once both directions are over. Listening, it serves one connection.
import process from 'node:process';
import { once } from 'node:events';
import { isIP } from 'node:net';
import { parseCommandArgs, usageError } from './arguments.js';
import { noDeviceExit } from './device-check.js';
import { connect, createServer, type RdmaSocket } from '../net/index.js';
import { endpoint } from './endpoint.js';

const usage = `Usage: rdmacm nc [-v] HOST PORT
       rdmacm nc -l [-v] [HOST] PORT

netcat over RDMA: an rdmacm/net socket (rsockets' stream protocol, so the
peer may be an rsocket program such as rstream) carries stdin to the peer
and what the peer sends to stdout. EOF on stdin ends this side's writing
(the peer sees the end, as with TCP's half-close); the peer's end ends the
output; the command exits once both directions are over.

  -l, --listen     listen on HOST (default: every IPv4 and IPv6 address)
                   and PORT, serve one connection, then exit
  -v, --verbose    say on stderr where it listens and who connected
  -h, --help       show this help

HOST is an IP address of an RDMA device, or a name: each of its addresses is
tried in turn, as node:net does.
To only receive, give stdin nothing: rdmacm nc -l 7000 < /dev/null > file.
Exit status: 0 when both directions ended cleanly; 1 on a bad argument or
a failed connection (refused, reset, a peer that stopped reading); 2 when
there is no RDMA device.
`;

class NcError extends Error {}

function portOf(value: string, min: number): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < min || n > 65535) throw new NcError(`PORT must be an integer from ${min} to 65535 (got '${value}')`);
  return n;
}

/** What went wrong, in one line: node:net's code and address, with a hint for the usual ones. */
function describe(error: unknown): string {
  const code = (error as { code?: string }).code;
  const message = error instanceof Error ? error.message : String(error);
  const hints: Record<string, string> = {
    ECONNREFUSED: 'nothing listens there',
    EADDRINUSE: 'the port is taken',
    EADDRNOTAVAIL: 'no RDMA device has that address',
    EPIPE: 'the peer stopped reading before stdin ended',
    ENOTFOUND: 'the name does not resolve',
  };
  return code && hints[code] ? `${message} (${hints[code]})` : message;
}

async function acceptOne(host: string | undefined, port: number, verbose: boolean): Promise<RdmaSocket> {
  const server = createServer({ allowHalfOpen: true });
  server.maxConnections = 1;
  const connection = once(server, 'connection') as Promise<[RdmaSocket]>;
  connection.catch(() => undefined); // a listen error rejects both; 'listening' reports it
  if (host === undefined) server.listen(port);
  else server.listen(port, host);
  await once(server, 'listening');
  if (verbose) process.stderr.write(`rdmacm nc: listening on ${endpoint(server.address()?.address, server.address()?.port)}\n`);
  const [socket] = await connection;
  server.close();
  if (verbose) process.stderr.write(`rdmacm nc: connection from ${endpoint(socket.remoteAddress, socket.remotePort)}\n`);
  return socket;
}

async function connectTo(host: string, port: number, verbose: boolean): Promise<RdmaSocket> {
  // A name resolves as node:net's would: each of its addresses tried in turn; none is ENOTFOUND.
  const socket = connect({ port, host, allowHalfOpen: true });
  await once(socket, 'connect'); // rejects with the socket's error
  if (verbose) process.stderr.write(`rdmacm nc: connected to ${endpoint(socket.remoteAddress, socket.remotePort)}\n`);
  return socket;
}

/** stdin → socket, socket → stdout, until the socket closes; resolves to the exit code. */
function relay(socket: RdmaSocket, verbose: boolean): Promise<number> {
  const { stdin, stdout } = process;
  let failure: unknown;
  return new Promise((resolve) => {
    socket.on('error', (error) => (failure ??= error));
    stdout.on('error', (error) => {
      failure ??= error; // the reader of stdout went away
      socket.destroy();
    });
    stdin.on('error', (error) => {
      failure ??= error;
      socket.destroy();
    });
    socket.pipe(stdout, { end: false });
    socket.on('end', () => {
      if (verbose) process.stderr.write('rdmacm nc: the peer ended its side\n');
    });
    stdin.pipe(socket); // ends the socket's writing side at EOF
    socket.on('close', () => {
      stdin.unpipe(socket);
      stdin.destroy(); // nothing more to send: stdin must not keep the process alive
      if (failure !== undefined) process.stderr.write(`rdmacm nc: ${describe(failure)}\n`);
      // What stdout still buffers goes out before the process exits: the caller sets exitCode, it does not exit.
      resolve(failure === undefined ? 0 : 1);
    });
  });
}

/** Runs `rdmacm nc`; resolves to the exit code. */
export async function runNc(argv: string[]): Promise<number> {
  const fail = (message: string) => usageError('nc', usage, message);
  const parsed = parseCommandArgs('nc', usage, argv, {
    listen: { type: 'boolean', short: 'l' },
    verbose: { type: 'boolean', short: 'v' },
    help: { type: 'boolean', short: 'h' },
  }, true);
  if (typeof parsed === 'number') return parsed;
  const { values, positionals } = parsed;
  const listen = values.listen === true;
  const verbose = values.verbose === true;
  let host: string | undefined, port: number;
  try {
    if (listen) {
      if (positionals.length === 0) throw new NcError('say the PORT to listen on');
      if (positionals.length > 2) throw new NcError(`unexpected argument '${positionals[2]}'`);
      host = positionals.length === 2 ? positionals[0]! : undefined; // the server's default: every IPv4 and IPv6 address
      port = portOf(positionals.at(-1)!, 0);
    } else {
      if (positionals.length < 2) throw new NcError(positionals.length === 0 ? 'say HOST and PORT to connect to, or -l to listen' : 'say the PORT to connect to');
      if (positionals.length > 2) throw new NcError(`unexpected argument '${positionals[2]}'`);
      host = positionals[0]!;
      port = portOf(positionals[1]!, 1);
    }
  } catch (error) {
    return fail((error as Error).message);
  }
  if (host !== undefined && (host === '' || (isIP(host) === 0 && !/^[a-zA-Z0-9][a-zA-Z0-9.-]*$/.test(host)))) return fail(`HOST must be an IP address or a host name (got '${host}')`);

  const noDevice = noDeviceExit('nc');
  if (noDevice !== undefined) return noDevice;

  let socket: RdmaSocket;
  try {
    socket = listen ? await acceptOne(host, port, verbose) : await connectTo(host!, port, verbose);
  } catch (error) {
    process.stderr.write(`rdmacm nc: ${describe(error)}\n`);
    return 1;
  }
  return relay(socket, verbose);
}
