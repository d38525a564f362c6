// A full garbage collection on demand, for tests that measure idle CPU: what
// an earlier test left to collect is collected before the window, not in it.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

export function collectGarbage(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}
