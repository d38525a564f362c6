// Errors as node:net reports them: a system error's code, negative errno,
// syscall, address and port, with the RDMA failure behind it as `cause`.
import { constants } from 'node:os';
import { ConnectionError } from '../api/cm/cm-event.js';
import { RdmaArgumentError, RdmaError } from '../api/core/errors.js';
import { WorkCompletionError } from '../api/work/work-completion.js';

/** A socket or server error shaped like node:net's (err.code 'ECONNREFUSED', err.syscall 'connect', …). */
export class RdmaNetError extends Error {
  override name = 'Error';
  readonly code: string;
  readonly errno: number | undefined;
  readonly syscall: string;
  readonly address: string | undefined;
  readonly port: number | undefined;

  constructor(syscall: string, code: string, detail: { address?: string | undefined; port?: number | undefined; cause?: unknown; message?: string }) {
    const where = detail.address !== undefined ? ` ${detail.address}${detail.port !== undefined ? `:${detail.port}` : ''}` : '';
    super(`${syscall} ${code}${where}${detail.message ? ` (${detail.message})` : ''}`, { cause: detail.cause });
    this.code = code;
    const errno = (constants.errno as Record<string, number | undefined>)[code];
    this.errno = errno === undefined ? undefined : -errno;
    this.syscall = syscall;
    this.address = detail.address;
    this.port = detail.port;
  }
}

/** Node's ERR_* errors (ERR_SOCKET_CLOSED, ERR_SERVER_NOT_RUNNING, ERR_INVALID_ARG_VALUE, …): a code and a message. */
export class RdmaNetCodeError extends Error {
  readonly code: string;
  constructor(code: string, message: string, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.code = code;
    this.name = 'Error';
  }
}

/**
 * Every address autoSelectFamily tried failed: node:net's AggregateError,
 * whose `code` is the first failure's, with each attempt's error in `errors`.
 */
export class RdmaNetAggregateError extends AggregateError {
  readonly code: string;
  constructor(errors: readonly Error[]) {
    super(errors, errors.map((error) => error.message).join('; '));
    this.code = (errors[0] as { code?: string } | undefined)?.code ?? 'ECONNREFUSED';
    this.name = 'AggregateError';
  }
}

/**
 * What a connection failure means in node:net's terms. The resolver's own
 * errors (ENOTFOUND, EAI_AGAIN: syscall 'getaddrinfo') are node:net's too,
 * and pass on as they are, as does an argument the safe API refused (an IPv6
 * zone naming no interface here): nothing was refused by a peer.
 */
export function connectFailure(error: unknown, address: string, port: number): Error {
  if (error instanceof Error && (error as { syscall?: unknown }).syscall === 'getaddrinfo') return error;
  if (error instanceof RdmaArgumentError) return error;
  return new RdmaNetError('connect', netCodeOf(error, 'ECONNREFUSED'), { address, port, cause: error });
}

/** What a listen failure means in node:net's terms; an argument the safe API refused passes on as it is, as in connectFailure. */
export function listenFailure(error: unknown, address: string, port: number): Error {
  if (error instanceof RdmaArgumentError) return error;
  return new RdmaNetError('listen', (error as { code?: string }).code ?? 'EADDRNOTAVAIL', { address, port, cause: error });
}

/** The node:net code for an RDMA failure; `fallback` when nothing closer fits. */
export function netCodeOf(error: unknown, fallback: string): string {
  if (error instanceof ConnectionError) {
    if (error.event === 'REJECTED') return 'ECONNREFUSED';
    if (error.event === 'UNREACHABLE') return error.errno === 110 ? 'ETIMEDOUT' : 'EHOSTUNREACH';
    if (error.event === 'ADDR_ERROR' || error.event === 'ROUTE_ERROR') return error.errno === 110 ? 'ETIMEDOUT' : 'EHOSTUNREACH';
    if (error.event === 'DISCONNECTED') return 'ECONNRESET';
    if (error.event === 'DEVICE_REMOVAL') return 'ENETDOWN';
    return fallback;
  }
  if (error instanceof WorkCompletionError) return 'ECONNRESET';
  if (error instanceof RdmaError) return error.code;
  return fallback;
}

/** Throws `error` from a tick of its own (`process.nextTick(rethrow, error)`): an uncaught exception, as the user's code would raise under node:net. */
export function rethrow(error: unknown): never {
  throw error;
}
