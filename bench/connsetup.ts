// Connection setup with the asynchronous API, timed step by step as rdma-core's
// cmtime times them: every step is started for all connections at once and the
// step's wall time is divided by the number of connections. Warm-up rounds
// (libraries loaded, code compiled and optimized), then the measured one.
//
//   node dist/bench/connsetup.js SERVER_ADDR [PORT] [CONNECTIONS]
//
// Talks to a `cmtime -b SERVER_ADDR -p PORT -c CONNECTIONS` server (so the C
// and the TypeScript client face the same server) and prints one JSON object:
// microseconds per connection for each step.
import { createId, EventChannel, type CmId, type CompletionQueue } from '../src/index.js';
import { measureRounds, perConnection } from './conn-rounds.js';

const [address, portArg = '7471', countArg = '100'] = process.argv.slice(2);
if (!address) {
  console.error('usage: connsetup SERVER_ADDR [PORT] [CONNECTIONS]');
  process.exit(1);
}
const port = Number(portArg);
const count = Number(countArg);
const verbose = process.env.BENCH_VERBOSE === '1';

const channel = new EventChannel();

/** One round of `count` connections, step by step; µs per connection for each step. */
async function round(): Promise<Record<string, number>> {
  const steps: Record<string, number> = {};
  const step = async (name: string, action: () => Promise<unknown> | unknown): Promise<void> => {
    if (verbose) console.error(`connsetup: ${name}`);
    const started = performance.now();
    await action();
    steps[name] = perConnection(performance.now() - started, count);
  };
  let ids: CmId[] = [];
  await step('create_id', () => {
    ids = Array.from({ length: count }, () => createId(channel));
  });
  await step('resolve_addr', () => Promise.all(ids.map((id) => id.resolveAddr({ address, port }, { timeoutMs: 30_000 }))));
  await step('resolve_route', () => Promise.all(ids.map((id) => id.resolveRoute({ timeoutMs: 30_000 }))));
  // cmtime passes one ibv_qp_init_attr to every rdma_create_qp, and librdmacm
  // writes the CQs it made for the first QP back into it: all its QPs share
  // those. The same work here: one CQ, made in the step, for every QP.
  let cq: CompletionQueue | undefined;
  await step('create_qp', () => {
    cq = ids[0]!.device!.createCq({ entries: 2 * count });
    for (const id of ids) id.createQp({ sendWr: 1, recvWr: 1, sendCq: cq, recvCq: cq });
  });
  await step('connect', () => Promise.all(ids.map((id) => id.connect(undefined, { timeoutMs: 60_000 }))));
  // cmtime's server answers a disconnect; a peer that does not is timed out, not waited for forever.
  await step('disconnect', () => Promise.all(ids.map((id) => id.disconnect({ timeoutMs: 10_000 }).catch(() => undefined))));
  await step('destroy', () => {
    for (const id of ids) id.close();
    cq!.close();
  });
  return steps;
}

// A C program is linked and compiled before main(); the binding loads its
// libraries and V8 compiles and optimizes its code during the first rounds
// (WARMUP_ROUNDS says how many, and why). The warm-up rounds are reported too,
// but the figures are the rounds after them.
await measureRounds(count, round);
channel.close();
