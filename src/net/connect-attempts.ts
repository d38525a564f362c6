// autoSelectFamily's attempts, made as node:net makes them: one address at a
// time, every one but the last abandoned after its attempt timeout, each
// announced with node:net's events, and all failures reported together.
import type { EventEmitter } from 'node:events';
import type { BlockList } from 'node:net';
import { blockedError, type Destination } from './destinations.js';
import { RdmaNetAggregateError, RdmaNetError } from './errors.js';

export interface AttemptPlan {
  readonly port: number;
  /** ms after which an attempt that is not the last is abandoned for the next. */
  readonly attemptTimeoutMs: number;
  readonly blockList: BlockList | undefined;
  /** Filled with `address:port` as each attempt starts (node:net's autoSelectFamilyAttemptedAddresses). */
  readonly attempted: string[];
}

/**
 * The first destination's connection that succeeds, trying them in order:
 * 'connectionAttempt' (address, port, family) before each attempt,
 * 'connectionAttemptFailed' (…, error) after a failure and
 * 'connectionAttemptTimeout' (…) when one is abandoned; a blocked address is
 * not tried (its ERR_IP_BLOCKED is one of the failures). `attempt` releases
 * what it made before it settles with a failure; its signal aborts when the
 * attempt is abandoned. When `stopped()` (the socket was destroyed meanwhile)
 * nothing more is tried and the result is undefined. All failing is an
 * RdmaNetAggregateError whose code is the first failure's.
 */
export async function connectInTurn<T>(
  socket: EventEmitter,
  destinations: readonly Destination[],
  plan: AttemptPlan,
  attempt: (destination: Destination, abandoned: AbortSignal) => Promise<T>,
  stopped: () => boolean,
): Promise<T | undefined> {
  const failures: Error[] = [];
  for (const [index, destination] of destinations.entries()) {
    if (stopped()) return undefined;
    const blocked = blockedError(plan.blockList, destination);
    if (blocked) {
      failures.push(blocked);
      continue;
    }
    const { address, family } = destination;
    plan.attempted.push(`${address}:${plan.port}`);
    socket.emit('connectionAttempt', address, plan.port, family);
    const abandon = new AbortController();
    const last = index === destinations.length - 1;
    const timer = last ? undefined : setTimeout(() => abandon.abort(), plan.attemptTimeoutMs);
    try {
      return await attempt(destination, abandon.signal);
    } catch (error) {
      if (stopped()) return undefined;
      if (abandon.signal.aborted) {
        socket.emit('connectionAttemptTimeout', address, plan.port, family);
        failures.push(new RdmaNetError('connect', 'ETIMEDOUT', { address, port: plan.port, message: `abandoned after ${plan.attemptTimeoutMs} ms for the next address` }));
      } else {
        socket.emit('connectionAttemptFailed', address, plan.port, family, error);
        failures.push(error as Error);
      }
    } finally {
      clearTimeout(timer);
    }
  }
  throw new RdmaNetAggregateError(failures);
}
