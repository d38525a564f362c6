// The keys of `rdmacm bench stream --json`, in order: what the host and the
// device tests hold the command's output to.

/** The measured figures that are positive in every run. */
export const STREAM_TIMING_KEYS = ['bytes', 'seconds', 'gbps', 'mb_per_s', 'usec_per_xfer', 'min_us', 'p50_us', 'avg_us', 'p99_us', 'max_us'];
/** The process's CPU time over the run (either part may round to nothing in a short one). */
export const STREAM_CPU_KEYS = ['cpu_s', 'cpu_user_s', 'cpu_system_s', 'cpu_s_per_gib'];
/** Every key of a node:net TCP run (--tcp) without --timer. */
export const STREAM_KEYS = ['transport', 'reads', 'role', 'size', 'count', 'iterations', 'warmup', ...STREAM_TIMING_KEYS, ...STREAM_CPU_KEYS];
/** Every key of an RDMA run without --timer: the socket's completion mode (--wait) follows the transport. */
export const RDMA_STREAM_KEYS = ['transport', 'wait', ...STREAM_KEYS.slice(1)];
