// Work deferred to the end of this turn of the event loop: after its I/O
// callbacks, its immediates and the microtasks they queued, before the loop
// polls again. One call a turn for all of it: on the main thread a prepare
// hook (src/ffi/prepare-hook.ts, which says which Node lines have it),
// elsewhere (a worker, Node 26 and later) one immediate. The events path
// ended each turn with up to three immediates of its own, and on the host
// the first immediate of a wake-up cost more than the rest of the wake-up's
// JavaScript (docs/performance-notes.md, "koffi's poll wrapper").
import process from 'node:process';
import { openPrepareHook, type PrepareHook } from '../../ffi/prepare-hook.js';

/** Tasks for this turn's end, and the array the last run emptied (swapped, so a turn allocates nothing). */
let due: Array<() => void> = [];
let spare: Array<() => void> = [];
/** This thread's hook; null where it has none (one immediate a turn instead). */
let hook: PrepareHook | null | undefined;
let hookStarted = false;
let immediateQueued = false;

/**
 * Runs `task` once at the end of this turn of the event loop (a task queued
 * by a task: at the next turn's). Nothing here keeps the loop alive: a loop
 * with nothing else to do ends without its tasks, which is all the
 * bookkeeping they do needs.
 */
export function atTurnEnd(task: () => void): void {
  due.push(task);
  if (hook === undefined) hook = openPrepareHook(runDue) ?? null;
  if (hook !== null) {
    if (!hookStarted) {
      hookStarted = true;
      hook.start();
    }
  } else if (!immediateQueued) {
    immediateQueued = true;
    setImmediate(runDueAfterImmediate);
  }
}

function runDueAfterImmediate(): void {
  immediateQueued = false;
  runDue();
}

function runDue(): void {
  if (due.length === 0) {
    // A turn with nothing due: the hook rests until work comes back, so an idle loop calls nothing.
    if (hookStarted) {
      hookStarted = false;
      hook!.stop();
    }
    return;
  }
  const tasks = due;
  due = spare;
  for (let index = 0; index < tasks.length; index++) {
    try {
      tasks[index]!();
    } catch (error) {
      throwInTick(error);
    }
  }
  tasks.length = 0;
  spare = tasks;
}

/**
 * An error escaping a callback that libuv made through koffi: thrown again
 * from a tick of its own, so it reaches 'uncaughtException' as an error in
 * any I/O callback does. Left in the callback, koffi would keep it pending,
 * silently, and call no JavaScript of that callback again.
 */
function throwInTick(error: unknown): void {
  process.nextTick(() => {
    throw error;
  });
}
