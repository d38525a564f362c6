// `rdmacm bench stream`: rstream's custom run (ping-pong latency or bulk
// throughput) over an rdmacm/net socket, or a node:net one with --tcp, as
// client or server (-l). The exchange itself is in stream-exchange.ts.
import process from 'node:process';
import { once } from 'node:events';
import { performance } from 'node:perf_hooks';
import * as tcp from 'node:net';
import type { Duplex } from 'node:stream';
import { integerOption, parseCommandArgs, spinOptionGiven, usageError } from './arguments.js';
import { noDeviceExit } from './device-check.js';
import { connect as rdmaConnect, createServer as rdmaCreateServer, type RdmaSocketSizes } from '../net/index.js';
import { ReadRelay, streamExchange, streamFigures, type StreamFigures, type StreamPlan } from './stream-exchange.js';
import { TimerProbe, timerLine } from '../bench/timer-probe.js';
import { endpoint } from './endpoint.js';
import { COMPLETION_MODES, MAX_SPIN_BUDGET_US, type CompletionMode } from '../api/work/completion-queue.js';

export const usage = `Usage: rdmacm bench stream [-S SIZE] [-C COUNT] [-I ITERS] [-w ITERS] [-p PORT] [-B BYTES] [-V] [--wait MODE] [--spin US] [--max-spin US] [--tcp] [--onread] [--timer] [--json] SERVER_ADDR
       rdmacm bench stream -l [options] [BIND_ADDR]

rstream's custom run (rdma-core's librdmacm/examples/rstream.c) over an
rdmacm/net socket: a 16-byte sync each way, then per iteration COUNT
transfers of SIZE bytes from the client to the server, then the same back.
The peer is another rdmacm bench stream or rstream itself, given the same
-S, -C and -I (rstream also -T b; for --tcp, rstream -T s).

  ping-pong latency:  -C 1 -I 10000          bulk throughput:  -I 1 -C 1000

Options:
  -l, --listen           serve one client, on BIND_ADDR or every address, then exit
  -S, --size SIZE        bytes per transfer (default 1000, as rstream's)
  -C, --count COUNT      transfers each way per iteration (default 1000, as rstream's)
  -I, --iters ITERS      measured iterations (default 1, as rstream's)
  -w, --warmup ITERS     iterations run before the measured ones (default 0); the peer
                         runs them too: another rdmacm bench stream with the same -w,
                         an rstream peer with -I ITERS+WARMUP
  -p, --port PORT        the port (default 7471, as rstream's)
  -B, --buffer BYTES     rstream's -B: the socket buffer size, which rsockets doubles;
                         this side's send and receive rings are 2×BYTES (default
                         524288, as rstream sets: rings of 1 MiB)
  -V, --verify           check every byte received against rstream's -T v pattern
                         (what this side sends always follows it)
      --wait MODE        how the socket waits for completions (its rdma.completionMode):
                         adaptive (the default: poll 50 µs after a completion, or the
                         longer budget it learns, then sleep), events or busy-poll;
                         each side chooses for itself
      --spin US          adaptive mode's spin budget in µs (its rdma.spinBudgetUs;
                         default 50, 0 to 1000000)
      --max-spin US      the longest budget adaptive mode learns (its
                         rdma.maxSpinBudgetUs; default 5000; at or under --spin: fixed)
      --tcp              node:net TCP instead of RDMA (for comparison; -B does not apply)
      --onread           read with node:net's onread into one reused 64 KiB buffer, as
                         rstream reads, instead of 'data' events (not with --tcp -l:
                         node:net's servers take no onread)
      --timer            run a 1 ms interval timer beside the exchange and report how
                         late its ticks fire (ms) over the measured iterations, and
                         apart over the warm-up: what the socket leaves to the loop
      --json             print one JSON object: {transport, wait (RDMA), reads, role, size,
                         count, iterations, warmup, bytes, seconds, gbps, mb_per_s,
                         usec_per_xfer, min_us, p50_us, avg_us, p99_us, max_us, cpu_s,
                         cpu_user_s, cpu_system_s, cpu_s_per_gib; with --timer also
                         timer_ticks, timer_p50_ms, timer_p99_ms, timer_max_ms,
                         timer_late_ticks, timer_late_sum_ms, timer_late_queued_ms,
                         timer_late_on_cpu_ms, timer_warmup_ticks, timer_warmup_p99_ms,
                         timer_warmup_max_ms}
  -h, --help             show this help

Figures, as rstream computes them, from the end of the sync (and warm-up):
  Gb/sec     both directions' bytes × 8 over the time
  usec/xfer  the time over ITERS × COUNT × 2
  per transfer: each iteration's time over 2 × COUNT, in µs (min, p50, avg,
  p99, max); with -C 1, half the round trip. rstream prints only its mean.
  CPU        this process's user + system time over the same interval, every
             thread's, and that per GiB of both directions' bytes
The client retries a refused connection for 15 s (its server may be starting).
Exits 0 on success, 1 on a bad option or a failed run, 2 when there is no RDMA device.
`;

const DEFAULT_PORT = 7471;
const DEFAULT_BUFFER = 1 << 19;
const CONNECT_PATIENCE_MS = 15_000;
const CLOSE_PATIENCE_MS = 10_000;
/** --onread's buffer: as many bytes as a 'data' event carries at most. */
const ONREAD_BYTES = 64 * 1024;

/** One connection attempt; resolves connected, rejects with the socket's error. */
function attempt(open: () => Duplex): Promise<Duplex> {
  return new Promise((resolve, reject) => {
    const socket = open();
    const onError = (error: Error) => {
      socket.destroy();
      reject(error);
    };
    socket.once('error', onError);
    socket.once('connect', () => {
      socket.off('error', onError);
      resolve(socket);
    });
  });
}

/** Connects, retrying a refused connection for a while: the server may still be starting. */
async function connectClient(open: () => Duplex): Promise<Duplex> {
  const giveUp = performance.now() + CONNECT_PATIENCE_MS;
  for (;;) {
    try {
      return await attempt(open);
    } catch (error) {
      if ((error as { code?: string }).code !== 'ECONNREFUSED' || performance.now() > giveUp) throw error;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}

/** Listens, takes the first connection and stops listening. */
async function acceptOne(
  server: tcp.Server | ReturnType<typeof rdmaCreateServer>, port: number, host: string | undefined, announce: boolean,
): Promise<Duplex> {
  const connection = once(server, 'connection') as Promise<[Duplex]>;
  connection.catch(() => undefined); // a listen error rejects both; 'listening' reports it
  server.listen(port, host);
  await once(server, 'listening');
  const bound = server.address() as { address: string; port: number };
  if (announce) process.stderr.write(`rdmacm bench stream: waiting for a client on ${endpoint(bound.address, bound.port)}\n`);
  const [socket] = await connection;
  server.close();
  return socket;
}

/** Ends this side and waits (bounded) for the peer's end and the close. */
async function hangUp(socket: Duplex): Promise<void> {
  if (socket.closed) return;
  const closed = once(socket, 'close').catch(() => undefined);
  socket.on('error', () => undefined); // a late reset does not undo the figures
  socket.end();
  const timer = setTimeout(() => socket.destroy(), CLOSE_PATIENCE_MS);
  await closed;
  clearTimeout(timer);
}

function human(f: StreamFigures, plan: StreamPlan, role: string, transport: string): string {
  const cols = ['min', 'p50', 'avg', 'p99', 'max'];
  const vals = [f.min_us, f.p50_us, f.avg_us, f.p99_us, f.max_us];
  return `rdmacm bench stream (${role}, ${transport}): ${plan.size} B × ${plan.count} each way × ${plan.iterations} iteration${plan.iterations === 1 ? '' : 's'}` +
    `${plan.warmup ? ` after ${plan.warmup} warm-up` : ''}\n` +
    `  ${'bytes'.padStart(12)}${'time s'.padStart(10)}${'Gb/sec'.padStart(10)}${'MB/s'.padStart(10)}${'usec/xfer'.padStart(12)}\n` +
    `  ${String(f.bytes).padStart(12)}${f.seconds.toFixed(3).padStart(10)}${f.gbps.toFixed(4).padStart(10)}${f.mb_per_s.toFixed(2).padStart(10)}${f.usec_per_xfer.toFixed(2).padStart(12)}\n` +
    `  ${cols.map((c) => c.padStart(10)).join('')}   µs per transfer (iteration time / 2×COUNT)\n` +
    `  ${vals.map((v) => v.toFixed(2).padStart(10)).join('')}\n` +
    `  CPU ${f.cpu_s.toFixed(3)} s (user ${f.cpu_user_s.toFixed(3)}, system ${f.cpu_system_s.toFixed(3)}), ${f.cpu_s_per_gib.toFixed(3)} s per GiB\n`;
}

/** Runs `rdmacm bench stream` (argv after "stream"); resolves to the exit code. */
export async function runBenchStream(argv: string[]): Promise<number> {
  const fail = (message: string) => usageError('bench stream', usage, message);
  const parsed = parseCommandArgs('bench stream', usage, argv, {
    listen: { type: 'boolean', short: 'l' },
    size: { type: 'string', short: 'S' },
    count: { type: 'string', short: 'C' },
    iters: { type: 'string', short: 'I' },
    warmup: { type: 'string', short: 'w' },
    port: { type: 'string', short: 'p' },
    buffer: { type: 'string', short: 'B' },
    verify: { type: 'boolean', short: 'V' },
    wait: { type: 'string' },
    spin: { type: 'string' },
    'max-spin': { type: 'string' },
    tcp: { type: 'boolean' },
    onread: { type: 'boolean' },
    timer: { type: 'boolean' },
    json: { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  }, true);
  if (typeof parsed === 'number') return parsed;
  const { values, positionals } = parsed;
  const listen = values.listen === true;
  const useTcp = values.tcp === true;
  const [address, ...extra] = positionals;
  if (extra.length > 0) return fail(`unexpected argument '${extra[0]}'`);
  if (!listen && address === undefined) return fail('say SERVER_ADDR to connect to, or -l to serve');
  if (address !== undefined && tcp.isIP(address) === 0) return fail(`${listen ? 'BIND_ADDR' : 'SERVER_ADDR'} must be an IP address (got '${address}')`);
  if (useTcp && values.buffer !== undefined) return fail('-B is for RDMA sockets: node:net TCP keeps the kernel\'s buffer sizes');
  const spinOption = spinOptionGiven(values);
  const rdmaWaitOption = values.wait !== undefined ? '--wait' : spinOption;
  if (useTcp && rdmaWaitOption) return fail(`${rdmaWaitOption} is for RDMA sockets: node:net TCP waits on the kernel`);
  if (values.wait !== undefined && !COMPLETION_MODES.includes(values.wait as CompletionMode)) {
    return fail(`--wait takes ${COMPLETION_MODES.join(', ')} (got '${values.wait}')`);
  }
  if (spinOption && (values.wait ?? 'adaptive') !== 'adaptive') return fail(`${spinOption} is adaptive mode's budget: not with --wait ${values.wait}`);
  if (useTcp && listen && values.onread === true) return fail('--onread does not go with --tcp -l: node:net\'s servers take no onread');
  let plan: Required<StreamPlan>, port: number, buffer: number, spinBudgetUs: number | undefined, maxSpinBudgetUs: number | undefined;
  try {
    plan = {
      size: integerOption(values.size, '--size', 1 << 30) ?? 1000,
      count: integerOption(values.count, '--count', 100_000_000) ?? 1000,
      iterations: integerOption(values.iters, '--iters', 100_000_000) ?? 1,
      warmup: integerOption(values.warmup, '--warmup', 100_000_000, 0) ?? 0,
      verify: values.verify === true,
    };
    port = integerOption(values.port, '--port', 65535) ?? DEFAULT_PORT;
    buffer = integerOption(values.buffer, '--buffer', 1 << 29, 2048) ?? DEFAULT_BUFFER;
    spinBudgetUs = integerOption(values.spin, '--spin', MAX_SPIN_BUDGET_US, 0);
    maxSpinBudgetUs = integerOption(values['max-spin'], '--max-spin', MAX_SPIN_BUDGET_US, 0);
  } catch (error) {
    return fail((error as Error).message);
  }
  const ring = buffer * 2;
  if ((ring & (ring - 1)) !== 0 && ring % 4096 !== 0) return fail(`--buffer must be a power of two or a multiple of 2048 (got ${buffer})`);

  if (!useTcp) {
    const noDevice = noDeviceExit('bench stream');
    if (noDevice !== undefined) return noDevice;
  }

  const json = values.json === true;
  const completionMode = values.wait as CompletionMode | undefined;
  const rdma: RdmaSocketSizes = {
    recvBufferSize: ring, sendBufferSize: ring, ...(completionMode ? { completionMode } : {}), ...(spinBudgetUs !== undefined ? { spinBudgetUs } : {}),
    ...(maxSpinBudgetUs !== undefined ? { maxSpinBudgetUs } : {}),
  };
  const role = listen ? 'server' : 'client';
  const transport = useTcp ? 'tcp' : 'rdma';
  // One relay per attempt: a refused attempt's socket may still call the one before.
  let relay: ReadRelay | undefined;
  const onread = () => (values.onread === true ? { onread: (relay = new ReadRelay(ONREAD_BYTES)).onread } : {});
  let socket: Duplex | undefined;
  try {
    if (listen) {
      // No address: node:net's default, every IPv4 and IPv6 address (::), for either server.
      const host = address;
      const server = useTcp ? tcp.createServer({ noDelay: true }) : rdmaCreateServer({ rdma, ...onread() });
      socket = await acceptOne(server, port, host, !json);
    } else {
      socket = await connectClient(useTcp
        ? () => tcp.connect({ port, host: address!, noDelay: true, ...onread() })
        : () => rdmaConnect({ port, host: address!, rdma, ...onread() }));
    }
    const probe = values.timer === true ? new TimerProbe() : undefined;
    probe?.start();
    const timing = await streamExchange(socket, role, plan, relay, (from) => probe?.measuredFrom(from));
    const lateness = probe?.stop();
    await hangUp(socket);
    const figures = streamFigures(plan, timing);
    if (json) {
      const { size, count, iterations, warmup } = plan;
      const wait = useTcp ? {} : { wait: completionMode ?? 'adaptive' };
      process.stdout.write(JSON.stringify({ transport, ...wait, reads: relay ? 'onread' : 'data', role, size, count, iterations, warmup, ...figures, ...lateness }) + '\n');
    } else {
      process.stdout.write(human(figures, plan, role, `${useTcp ? 'node:net TCP' : 'RDMA'}${completionMode ? `, ${completionMode}` : ''}${spinBudgetUs !== undefined ? `, spin ${spinBudgetUs} µs` : ''}${maxSpinBudgetUs !== undefined ? `, max spin ${maxSpinBudgetUs} µs` : ''}${relay ? ', onread' : ''}`) + (lateness ? timerLine(lateness) : ''));
    }
    return 0;
  } catch (error) {
    socket?.destroy();
    process.stderr.write(`rdmacm bench stream: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}
