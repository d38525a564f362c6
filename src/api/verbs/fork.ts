// fork() and registered memory: what libibverbs does about it (ibv_fork_init,
// ibv_is_fork_initialized). See the README's "Memory locking and fork()".
import { libibverbs } from '../../ffi/libibverbs.js';
import { RdmaError } from '../../ffi/errors.js';

/**
 * How a fork() treats registered memory in this process:
 * - `'UNNEEDED'`: the kernel (Linux 5.13+) copies pinned pages for the child at
 *   fork, so the parent's registrations keep working whatever the child does;
 * - `'ENABLED'`: ibv_fork_init ran (or RDMAV_FORK_SAFE / IBV_FORK_SAFE was set):
 *   registered ranges are not inherited by children (MADV_DONTFORK);
 * - `'DISABLED'`: neither; a parent that writes to a registered page while a
 *   forked child still shares it may lose that page to copy-on-write.
 */
export type ForkStatus = 'DISABLED' | 'ENABLED' | 'UNNEEDED';

const STATUSES: readonly ForkStatus[] = ['DISABLED', 'ENABLED', 'UNNEEDED'];

/**
 * ibv_is_fork_initialized(). Throws UnsupportedError on rdma-core older than 35,
 * which lacks it.
 */
export function forkStatus(): ForkStatus {
  const status = libibverbs.ibv_is_fork_initialized();
  const name = STATUSES[status];
  if (name === undefined) throw new RdmaError('ibv_is_fork_initialized', 5 /* EIO */, `it returned ${status}, which no rdma-core release defines`);
  return name;
}

/**
 * ibv_fork_init(): makes libibverbs mark every registered range MADV_DONTFORK,
 * as RDMAV_FORK_SAFE=1 does at start-up. Call it before any memory is
 * registered (later, it fails with EINVAL); where forkStatus() is 'UNNEEDED' it
 * changes nothing. A child then has no access to those ranges at all.
 */
export function enableForkSafety(): void {
  const result = libibverbs.ibv_fork_init();
  if (result === 0) return;
  const errno = Math.abs(result);
  const detail = errno === 22 ? 'memory was registered already: call enableForkSafety() first, or set RDMAV_FORK_SAFE=1 in the environment node starts with' : undefined;
  throw new RdmaError('ibv_fork_init', errno, detail);
}
