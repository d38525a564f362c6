// wr_ids and the JavaScript contexts behind them. One table for the process:
// a completion can arrive on any CQ (an SRQ's receives land on the CQ of
// whichever QP took them), so the id alone must find its context.
const contexts = new Map<number, { context: unknown; once: boolean }>();
let nextWrId = 1;

/** A fresh wr_id; its context (if any) is remembered until its completion when `once`, else for good. */
export function trackWorkRequest(context: unknown, once: boolean): number {
  const wrId = nextWrId;
  nextWrId = nextWrId >= 0xffffffff ? 1 : nextWrId + 1;
  if (context !== undefined) contexts.set(wrId, { context, once });
  return wrId;
}

/** `count` consecutive fresh wr_ids sharing one context; returns the first. */
export function trackWorkRequestBlock(count: number, context: unknown): number {
  if (nextWrId + count - 1 > 0xffffffff) nextWrId = 1; // keep the block consecutive
  const first = nextWrId;
  for (let i = 0; i < count; i++) trackWorkRequest(context, false);
  return first;
}

/** Forgets a wr_id (its post failed, or its prepared request is gone). */
export function untrackWorkRequest(wrId: number): void {
  contexts.delete(wrId);
}

/** The context of a completed wr_id (dropped if it was a one-shot request). */
export function contextOf(wrId: number): unknown {
  const tracked = contexts.get(wrId);
  if (tracked?.once) contexts.delete(wrId);
  return tracked?.context;
}
