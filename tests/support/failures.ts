// The tests of this process that have failed so far, each with the first lines
// of its error. A run that a leak or a hang ends early never gets the
// reporter's closing list, and CI shows only a run's last lines: its own last
// words repeat the failures there.
import { afterEach } from 'node:test';

const failures: string[] = [];

/** A test's error in a few lines: node:test wraps what the test threw as `cause`. */
function describeTestError(error: unknown): string {
  const thrown = (error as { cause?: unknown } | undefined)?.cause ?? error;
  const text = thrown instanceof Error ? `${thrown.name}: ${thrown.message}` : String(thrown);
  return text.split('\n').slice(0, 6).join(' | ');
}

/** The test's full path where Node gives it (20.16 and later): subtests often share their parents' names. */
export const testNameOf = (t: { name: string }): string => (t as { fullName?: string }).fullName ?? t.name;

/** In an afterEach hook: the test's line for a list of failures (`  ✖ "name": error`) if it failed, else undefined (Node 20.12 and later say; @types/node does not yet). */
export function failureLine(t: { name: string }): string | undefined {
  const outcome = t as { passed?: boolean; error?: unknown };
  return outcome.passed === false ? `  ✖ "${testNameOf(t)}": ${describeTestError(outcome.error)}` : undefined;
}

/** Keeps every failing test's line from now on (a root-level hook: it runs after each test). */
export function recordFailures(): void {
  afterEach((t) => {
    const line = failureLine(t);
    if (line !== undefined) failures.push(line);
  });
}

/** The failures recorded so far, one per line, or undefined when there are none. */
export function describeFailures(): string | undefined {
  return failures.length === 0 ? undefined : failures.join('\n');
}
