// Where a connection goes, as node:net decides it: a numeric host as it is,
// a name through the `lookup` option (dns.lookup by default) with node:net's
// options and 'lookup' events, the addresses ordered as autoSelectFamily tries
// them, and a blockList's verdict on each.
import dns, { type LookupAddress } from 'node:dns';
import type { EventEmitter } from 'node:events';
import { isIP, type BlockList } from 'node:net';
import process from 'node:process';
import { RdmaNetCodeError, rethrow } from './errors.js';

/** One address to try. */
export interface Destination {
  readonly address: string;
  readonly family: 4 | 6;
}

/** node:net's `lookup` option: dns.lookup's signature. */
export type LookupFunction = (
  hostname: string,
  options: { family?: number; hints?: number; all?: boolean },
  callback: (error: NodeJS.ErrnoException | null, address: string | readonly LookupAddress[], family?: number) => void,
) => void;

export interface LookupRequest {
  readonly host: string;
  readonly port: number;
  /** 0 for any family. */
  readonly family: 0 | 4 | 6;
  readonly hints: number;
  readonly lookup: LookupFunction | undefined;
  /** Every address (autoSelectFamily), or the first. */
  readonly all: boolean;
}

/**
 * The addresses to connect to, in the order to try them. A name is looked up
 * as node:net looks it up (ADDRCONFIG when neither family nor hints are
 * given), and 'lookup' (error, address, family, host) is emitted on `socket`
 * for each answer. A lookup that throws, or answers with an error, rejects
 * with that error as it is; one that answers twice is heard once.
 */
export function lookupDestinations(socket: EventEmitter, request: LookupRequest): Promise<Destination[]> {
  const { host, family, all } = request;
  const numeric = isIP(host);
  if (numeric !== 0) return Promise.resolve([{ address: host, family: numeric as 4 | 6 }]);
  const hints = request.hints === 0 && family === 0 ? dns.ADDRCONFIG : request.hints;
  const lookup = request.lookup ?? (dns.lookup as unknown as LookupFunction);
  return new Promise((resolve, reject) => {
    let answered = false;
    const answer: Parameters<LookupFunction>[2] = (error, address, addressFamily) => {
      if (answered) return;
      answered = true;
      if (error) {
        socket.emit('lookup', error, undefined, undefined, host);
        return reject(error);
      }
      try {
        resolve(Array.isArray(address) ? fromAll(socket, request, address) : [checked(socket, request, address, addressFamily)]);
      } catch (failure) {
        reject(failure);
      }
    };
    try {
      lookup(host, { ...(family !== 0 ? { family } : {}), hints, ...(all ? { all } : {}) }, answer);
    } catch (error) {
      // Thrown after answering, it is the caller's own failure: raised as node:net's synchronous lookup would raise it.
      if (answered) process.nextTick(rethrow, error);
      answered = true;
      reject(error);
    }
  });
}

/** One answer, announced and checked as node:net checks a lookup's: an IP address of family 4 or 6. */
function checked(socket: EventEmitter, request: LookupRequest, address: unknown, family: unknown): Destination {
  socket.emit('lookup', null, address, family, request.host);
  if (typeof address !== 'string' || isIP(address) === 0) throw new RdmaNetCodeError('ERR_INVALID_IP_ADDRESS', `Invalid IP address: ${String(address)}`);
  if (family !== 4 && family !== 6) throw new RdmaNetCodeError('ERR_INVALID_ADDRESS_FAMILY', `Invalid address family: ${String(family)} ${request.host}:${request.port}`);
  return { address, family };
}

/**
 * Every answer of an `all` lookup, each announced, in autoSelectFamily's
 * order: the first answer's family first, the families alternating, each
 * address once. Answers that are not IP addresses of family 4 or 6 are
 * skipped, as node:net skips them; none left is the first one's error.
 */
function fromAll(socket: EventEmitter, request: LookupRequest, answers: readonly LookupAddress[]): Destination[] {
  const byFamily: Destination[][] = [[], []];
  let firstFamily: number | undefined;
  let firstError: Error | undefined;
  for (const answer of answers) {
    try {
      const destination = checked(socket, request, (answer as Partial<LookupAddress> | null)?.address, (answer as Partial<LookupAddress> | null)?.family);
      firstFamily ??= destination.family;
      const list = byFamily[destination.family === firstFamily ? 0 : 1]!;
      if (!list.some((d) => d.address === destination.address)) list.push(destination);
    } catch (error) {
      firstError ??= error as Error;
    }
  }
  const [first, second] = byFamily as [Destination[], Destination[]];
  if (first.length === 0) throw firstError ?? new RdmaNetCodeError('ERR_INVALID_IP_ADDRESS', `the lookup of ${request.host} found no address`);
  const ordered: Destination[] = [];
  for (let i = 0; i < Math.max(first.length, second.length); i++) {
    if (i < first.length) ordered.push(first[i]!);
    if (i < second.length) ordered.push(second[i]!);
  }
  return ordered;
}

/** node:net's ERR_IP_BLOCKED when `blockList` blocks `destination`. */
export function blockedError(blockList: BlockList | undefined, destination: Destination): RdmaNetCodeError | undefined {
  if (!blockList?.check(destination.address, destination.family === 4 ? 'ipv4' : 'ipv6')) return undefined;
  return new RdmaNetCodeError('ERR_IP_BLOCKED', `IP(${destination.address}) is blocked by net.BlockList`);
}
