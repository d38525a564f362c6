// What a process holds, for leak checks: its open file descriptors and the RDMA
// resources the kernel tracks for it (`rdma resource show`, iproute2).
import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';

/** The RDMA resource kinds a connection uses. */
export const RDMA_KINDS = ['cm_id', 'qp', 'cq', 'mr', 'pd'] as const;
export type RdmaKind = (typeof RDMA_KINDS)[number];

/** Open file descriptors of this process (entries of /proc/self/fd, less the one readdir itself holds). */
export function openFds(): number {
  return readdirSync('/proc/self/fd').length - 1;
}

/** Every object in a JSON answer of `rdma -j`, however nested (arrays of objects, or objects of arrays). */
function flatten(value: unknown, into: Record<string, unknown>[] = []): Record<string, unknown>[] {
  if (Array.isArray(value)) for (const item of value) flatten(item, into);
  else if (value && typeof value === 'object') {
    const nested = Object.values(value).filter((v) => Array.isArray(v));
    if (nested.length > 0 && !('ifname' in value)) for (const v of nested) flatten(v, into);
    else into.push(value as Record<string, unknown>);
  }
  return into;
}

/** The entries of `rdma -j resource show KIND` that belong to process `pid`. */
export function rdmaEntries(kind: RdmaKind, pid = process.pid): Record<string, unknown>[] {
  const out = execFileSync('rdma', ['-j', 'resource', 'show', kind], { encoding: 'utf8', timeout: 20_000 });
  return flatten(out.trim() === '' ? [] : JSON.parse(out)).filter((entry) => entry.pid === pid);
}

export type RdmaCounts = Record<RdmaKind, number>;

/** How many of each RDMA resource kind this process holds, per `rdma resource show`. */
export function rdmaCounts(pid = process.pid): RdmaCounts {
  return Object.fromEntries(RDMA_KINDS.map((kind) => [kind, rdmaEntries(kind, pid).length])) as RdmaCounts;
}
