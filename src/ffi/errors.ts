// Native failures as Node-style system errors, and the two checkers for C's
// two return conventions.
import { getSystemErrorMap } from 'node:util';
import { readFileSync } from 'node:fs';
import koffi from 'koffi';
import { noDeviceAdvice } from '../package-info.js';
import { diagnoseRdmaStack, type Diagnosis, type MissingPiece } from './diagnosis.js';
export { LibraryLoadError, UnsupportedError, RDMA_CORE_ADVICE } from './load-errors.js';

const systemErrors = getSystemErrorMap();

/** The symbolic name of an errno value, e.g. 19 → 'ENODEV'. 95 is EOPNOTSUPP, as RDMA's man pages say (Node calls it ENOTSUP). */
export function errnoName(errno: number): string {
  if (errno === 95) return 'EOPNOTSUPP';
  return systemErrors.get(-errno)?.[0] ?? `E${errno}`;
}

/** strerror(errno), as Node knows it. */
export function errnoMessage(errno: number): string {
  return systemErrors.get(-errno)?.[1] ?? `unknown error ${errno}`;
}

/** A limit in /proc/self/limits ('65536', 'unlimited') as people say it: '64 KiB', 'unlimited'. */
function limitText(value: string): string {
  return /^\d+$/.test(value) ? `${Number(value) / 1024} KiB` : value;
}

/**
 * This process's RLIMIT_MEMLOCK, soft and hard, as /proc/self/limits gives it
 * (what a child shell's `ulimit -l` would show, without starting one).
 */
export function memlockLimits(limits?: string): { soft: string; hard: string } | undefined {
  try {
    const line = /^Max locked memory\s+(\S+)\s+(\S+)/m.exec(limits ?? readFileSync('/proc/self/limits', 'utf8'));
    return line ? { soft: limitText(line[1]!), hard: limitText(line[2]!) } : undefined;
  } catch {
    return undefined;
  }
}

/**
 * What to do when registration runs out of locked memory. The kernel pins
 * registered pages and counts them against RLIMIT_MEMLOCK unless the process
 * has CAP_IPC_LOCK: past the limit ibv_reg_mr fails with ENOMEM, and with a
 * limit of 0 some kernels refuse it with EPERM.
 */
export function memlockAdvice(limits: { soft: string; hard: string } | undefined): string {
  const now = limits ? `this process may lock ${limits.soft} (hard limit ${limits.hard})` : 'the limit could not be read';
  return (
    `memory registration pins memory, counted against RLIMIT_MEMLOCK, and ${now}; raise the limit for the process that runs node: ` +
    '`ulimit -l unlimited` in its shell (above the hard limit: root, or `* - memlock unlimited` in /etc/security/limits.conf), ' +
    '`LimitMEMLOCK=infinity` in its systemd unit, `docker run --ulimit memlock=-1` for a container'
  );
}

/** Codes a call returns when a piece of the RDMA stack is missing (ENOENT: no /dev/infiniband/rdma_cm to open). */
const MISSING_PIECE_CODES = new Set(['ENODEV', 'ENOSYS', 'ENOENT', 'ENXIO']);

/**
 * The missing piece of the RDMA stack a failure comes from, if it can come
 * from one. rdma_create_id and rdma_create_ep report a channel they could not
 * open (no rdma_cm node) as ENOMEM.
 */
function missingPieceFor(code: string, syscall: string): Diagnosis | undefined {
  if (!/^(rdma|ibv)_/.test(syscall)) return undefined;
  const couldBe = MISSING_PIECE_CODES.has(code) || (code === 'ENOMEM' && /^rdma_create_(id|ep)$/.test(syscall));
  return couldBe ? diagnoseRdmaStack() : undefined;
}

/** The calls that register memory. */
const REGISTRATION = /reg_mr|reg_msgs|reg_read|reg_write/;

/** A hint that says what to do about the common failures. */
function hintFor(code: string, syscall: string, diagnosis: Diagnosis | undefined): string | undefined {
  if (code === 'ENOSYS' && diagnosis?.missing === 'rdma-device') {
    return `the kernel has no RDMA support (ib_uverbs is not loaded): ${noDeviceAdvice()}`;
  }
  if (diagnosis) return diagnosis.advice;
  if ((code === 'ENOMEM' || code === 'EPERM') && REGISTRATION.test(syscall)) return memlockAdvice(memlockLimits());
  if (code === 'EADDRNOTAVAIL') {
    return 'no RDMA device owns that address; bind to an address of an RDMA-capable interface';
  }
  if (code === 'EOPNOTSUPP') {
    return 'the device or provider does not support this operation';
  }
  if (code === 'EAI_NONAME' || code === 'EAI_NODATA' || code === 'EAI_AGAIN') {
    return 'the host name did not resolve; check it, or pass a numeric address';
  }
  if (code === 'EAI_SERVICE') {
    return 'the service is not a port number or a name in /etc/services for this port space';
  }
  if (code === 'ETIMEDOUT') {
    return 'the peer did not answer in time; check the address, the port and that the peer is listening';
  }
  if (code === 'EACCES' || code === 'EPERM') {
    return 'permission denied: RDMA devices under /dev/infiniband need read/write access';
  }
  return undefined;
}

/** A native call failed; shaped like Node's system errors (code, errno, syscall). */
export class RdmaError extends Error {
  override name = 'RdmaError';
  readonly code: string;
  readonly errno: number;
  readonly syscall: string;
  readonly hint: string | undefined;
  /** The piece of the RDMA stack this host lacks, when that is why the call failed (the hint says how to add it). */
  readonly missing: MissingPiece | undefined;

  /**
   * `described.code` and `.text` name an error that is not an errno
   * (getaddrinfo's EAI_* codes); `described.hint` replaces the usual hint for
   * the code when the caller knows better (a device name that is not among the
   * devices is ENODEV too, but there are devices).
   */
  constructor(syscall: string, errno: number, detail?: string, described?: { code?: string; text?: string; hint?: string }) {
    const code = described?.code ?? errnoName(errno);
    // A caller that describes the error knows better than the stack's diagnosis
    // (a device name not among the devices is ENODEV, yet nothing is missing).
    const diagnosis = described ? undefined : missingPieceFor(code, syscall);
    const hint = described?.hint ?? hintFor(code, syscall, diagnosis);
    const parts = [`${syscall} failed: ${code} (${described?.text ?? errnoMessage(errno)})`];
    if (detail) parts.push(detail);
    if (hint) parts.push(hint);
    super(parts.join(' — '));
    this.code = code;
    this.errno = errno;
    this.syscall = syscall;
    this.hint = hint;
    this.missing = diagnosis?.missing;
  }
}

/**
 * rdma_* convention: -1 (or a NULL pointer) with errno set. Reads errno at once,
 * before anything else can overwrite it.
 */
export function checkRdma(syscall: string, result: number): number {
  if (result === -1) throw new RdmaError(syscall, koffi.errno() || 5 /* EIO */);
  return result;
}

/** rdma_* calls that return a pointer: NULL means failure with errno set. */
export function checkPointer<T extends bigint>(syscall: string, result: T | null): T {
  if (result === null || result === 0n) throw new RdmaError(syscall, koffi.errno() || 5 /* EIO */);
  return result;
}

/**
 * Verbs convention: 0 on success, otherwise a positive errno (some providers
 * return -errno). A few verbs (ibv_init_ah_from_wc, ibv_query_gid, …) return
 * -1 with errno set instead, so -1 reads errno rather than meaning EPERM.
 */
export function checkVerbs(syscall: string, result: number): void {
  if (result === 0) return;
  throw new RdmaError(syscall, result === -1 ? koffi.errno() || 5 : Math.abs(result));
}

/**
 * The errno for ibv_poll_cq's failure, a negative count. That count is the
 * provider's own code, not an errno (mlx4's and mlx5's CQ_POLL_ERR is -2,
 * which would read as ENOENT), so it is reported as EIO: by pollFailed() and
 * by the raw rdma_get_*_comp.
 */
export const POLL_FAILED_ERRNO = 5; // EIO

/** ibv_poll_cq's failure as an error, with the provider's value and what to do. */
export function pollFailed(returned: number): RdmaError {
  const advice = 'the queue is likely in error (overrun?); close it and its queue pairs, and set them up again';
  return new RdmaError('ibv_poll_cq', POLL_FAILED_ERRNO, `the provider returned ${returned}: ${advice}`);
}

// getaddrinfo's error codes and glibc's messages for them (<netdb.h>, gai_strerror),
// which rdma_getaddrinfo passes on.
const EAI_SYSTEM = -11;
const addrInfoErrors: Record<number, [code: string, text: string]> = {
  [-2]: ['EAI_NONAME', 'Name or service not known'],
  [-3]: ['EAI_AGAIN', 'Temporary failure in name resolution'],
  [-4]: ['EAI_FAIL', 'Non-recoverable failure in name resolution'],
  [-5]: ['EAI_NODATA', 'No address associated with hostname'],
  [-6]: ['EAI_FAMILY', 'ai_family not supported'],
  [-7]: ['EAI_SOCKTYPE', 'ai_socktype not supported'],
  [-8]: ['EAI_SERVICE', 'Servname not supported for ai_socktype'],
  [-9]: ['EAI_ADDRFAMILY', 'Address family for hostname not supported'],
  [-10]: ['EAI_MEMORY', 'Memory allocation failure'],
  [-12]: ['EAI_OVERFLOW', 'Argument buffer overflow'],
};

/**
 * rdma_getaddrinfo: 0 on success, -1 with errno set, or getaddrinfo's own
 * negative EAI_* code (a name that does not resolve is EAI_NONAME, not -1).
 * `errno` is the one the call left, when it ran on another thread (callAsync).
 */
export function checkAddrInfo(syscall: string, result: number, errno?: number): void {
  if (result === 0) return;
  if (result === -1 || result === EAI_SYSTEM) throw new RdmaError(syscall, (errno ?? koffi.errno()) || 5);
  const [code, text] = addrInfoErrors[result] ?? [`EAI_${-result}`, `getaddrinfo error ${result}`];
  throw new RdmaError(syscall, result, undefined, { code, text });
}
