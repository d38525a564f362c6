// Waiting for a connection-manager event on an id: one Waiter per operation,
// settled by the event, an ending event, its deadline, its abort signal, or
// the id's close. The id (cm-id.ts) owns its waiters and offers them the
// events its channel routes to it.
import { RdmaError } from '../../ffi/errors.js';
import type { CmEventTypeName } from '../core/enums.js';
import { abortError } from '../core/errors.js';
import { expectEvent, settleWait, type ChannelEvent, type EventChannel } from './event-channel.js';

// The executor of every waiter's promise hands its settle functions over here,
// so a wait allocates no executor closure (nor compiles one, at its first call).
let takenResolve: ((event: ChannelEvent) => void) | undefined;
let takenReject: ((error: unknown) => void) | undefined;
function takeSettleFunctions(resolve: (event: ChannelEvent) => void, reject: (error: unknown) => void): void {
  takenResolve = resolve;
  takenReject = reject;
}

/**
 * An operation waiting on an id for one of `expected`. It ends at the first of:
 * that event, an ending event, its deadline (the channel's timer), its abort
 * signal, or the id's close. One object, no closures: hundreds may wait at once.
 */
export class Waiter {
  readonly deadline: number;
  readonly promise: Promise<ChannelEvent>;
  readonly #onResolve: (event: ChannelEvent) => void;
  readonly #onReject: (error: unknown) => void;
  #settled = false;

  constructor(
    readonly operation: string,
    readonly expected: readonly CmEventTypeName[],
    private readonly timeoutMs: number | undefined,
    private readonly signal: AbortSignal | undefined,
    /** The id's waiters, a plain array: a Set would hash and rehash a new object for every wait. */
    private readonly waiters: Waiter[],
    private readonly channel: EventChannel,
  ) {
    // First: a closed channel refuses, and then nothing is left registered.
    this.deadline = channel[expectEvent](timeoutMs);
    this.promise = new Promise(takeSettleFunctions);
    this.#onResolve = takenResolve!;
    this.#onReject = takenReject!;
    // Not held beyond this: a settled promise keeps its event, and the event its id.
    takenResolve = takenReject = undefined;
    waiters.push(this);
    signal?.addEventListener('abort', this, { once: true });
  }

  resolve(event: ChannelEvent): void {
    if (this.#settle()) this.#onResolve(event);
  }

  reject(error: unknown): void {
    if (this.#settle()) this.#onReject(error);
  }

  /** The channel's timer: the deadline passed. */
  expire(): void {
    this.reject(new RdmaError(this.operation, 110 /* ETIMEDOUT */, `no event within ${this.timeoutMs} ms`));
  }

  /** The abort signal fired (the waiter is its own listener). */
  handleEvent(): void {
    this.reject(abortError(this.signal!));
  }

  #settle(): boolean {
    if (this.#settled) return false;
    this.#settled = true;
    // In order: CmId's [offerEvent] walks the array while waiters leave it.
    const waiters = this.waiters;
    const index = waiters.indexOf(this);
    if (index >= 0) {
      for (let i = index; i < waiters.length - 1; i++) waiters[i] = waiters[i + 1]!;
      waiters.pop();
    }
    this.signal?.removeEventListener('abort', this);
    this.channel[settleWait]();
    return true;
  }
}
