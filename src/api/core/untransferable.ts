// Memory the device reads or writes must keep its ArrayBuffer: marked
// untransferable, postMessage and structuredClone cannot detach it (Node 20
// copies it instead; from Node 21 the transfer throws DataCloneError). A
// buffer that cannot be detached already, such as a WebAssembly memory's, is
// left unmarked: from Node 24 the mark is V8's detach key, and on a
// WebAssembly memory's buffer it makes the next grow() abort the process.
import { markAsUntransferable } from 'node:worker_threads';

/**
 * Buffers marked here or found to refuse transfers already (the mark is for
 * good), and plain ArrayBuffers this package allocated: neither needs the
 * probe, whose DataCloneError costs about 4 ms in the rxe guest (a socket's
 * set-up registers three buffers).
 */
const settled = new WeakSet<ArrayBufferLike>();
const allocated = new WeakSet<ArrayBufferLike>();

/** Marks `buffer` untransferable for good, unless it refuses a transfer already. */
export function markUntransferable(buffer: ArrayBufferLike): void {
  if (settled.has(buffer)) return;
  if (allocated.has(buffer) || transferFailure(buffer) === DETACHABLE_FAILURE) markAsUntransferable(buffer);
  settled.add(buffer);
}

/** Notes a plain ArrayBuffer this package allocated: no WebAssembly memory's, so marking it needs no probe. */
export function noteAllocated(buffer: ArrayBuffer): void {
  allocated.add(buffer);
}

/** A value structuredClone refuses, so a probe with it clones and detaches nothing. */
const uncloneable = (): void => undefined;

/**
 * How a transfer of `buffer` with a value that cannot be cloned fails: a
 * buffer that refuses transfers fails at the transfer list, a detachable one
 * at the value, after the list was taken and before anything was detached.
 */
function transferFailure(buffer: ArrayBufferLike): string | undefined {
  try {
    structuredClone(uncloneable, { transfer: [buffer as ArrayBuffer] });
  } catch (error) {
    return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  }
  return undefined; // no engine clones a function
}

/** How the probe fails for a buffer that may still be detached. */
const DETACHABLE_FAILURE = transferFailure(new ArrayBuffer(0));
