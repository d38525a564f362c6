// A bound on one step of a test, so that a hang fails fast and names the step
// instead of failing at the test's own timeout with nothing said.

/** `promise`, or a failure naming `what` (computed when it fires) after `ms`. */
export async function within<T>(promise: Promise<T>, ms: number, what: string | (() => string)): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${typeof what === 'function' ? what() : what}: not within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}
