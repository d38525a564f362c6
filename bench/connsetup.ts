// Connection setup with the asynchronous API, timed step by step as rdma-core's
// cmtime times them: every step is started for all connections at once and the
// step's wall time is divided by the number of connections.
//
//   node dist/bench/connsetup.js SERVER_ADDR [PORT] [CONNECTIONS]
//
// Talks to a `cmtime -b SERVER_ADDR -p PORT -c CONNECTIONS` server (so the C
// and the TypeScript client face the same server) and prints one JSON object:
// microseconds per connection for each step.
import { createId, EventChannel, type CmId } from '../src/index.js';

const [address, portArg = '7471', countArg = '100'] = process.argv.slice(2);
if (!address) {
  console.error('usage: connsetup SERVER_ADDR [PORT] [CONNECTIONS]');
  process.exit(1);
}
const port = Number(portArg);
const count = Number(countArg);

const steps: Record<string, number> = {};
async function step(name: string, action: () => Promise<unknown> | unknown): Promise<void> {
  const started = performance.now();
  await action();
  steps[name] = Math.round(((performance.now() - started) * 1000 / count) * 100) / 100;
}

const channel = new EventChannel();
let ids: CmId[] = [];
await step('create_id', () => {
  ids = Array.from({ length: count }, () => createId(channel));
});
await step('resolve_addr', () => Promise.all(ids.map((id) => id.resolveAddr({ address, port }, { timeoutMs: 30_000 }))));
await step('resolve_route', () => Promise.all(ids.map((id) => id.resolveRoute({ timeoutMs: 30_000 }))));
await step('create_qp', () => {
  for (const id of ids) id.createQp({ sendWr: 1, recvWr: 1 });
});
await step('connect', () => Promise.all(ids.map((id) => id.connect(undefined, { timeoutMs: 60_000 }))));
// cmtime's server answers a disconnect; a peer that does not is timed out, not waited for forever.
await step('disconnect', () => Promise.all(ids.map((id) => id.disconnect({ timeoutMs: 10_000 }).catch(() => undefined))));
await step('destroy', () => {
  for (const id of ids) id.close();
});
channel.close();
const setup = steps.resolve_addr! + steps.resolve_route! + steps.connect!;
console.log(JSON.stringify({ connections: count, us_per_conn: steps, resolve_route_connect_us_per_conn: Math.round(setup * 100) / 100 }));
