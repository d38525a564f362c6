// The table of CLI commands: each one's name, one-line summary and entry point.
// A command's module loads when it runs, so `rdmacm --help` and each command
// load only what they use (start-up under emulation is seconds per module tree).

export interface Command {
  readonly name: string;
  readonly summary: string;
  /** Runs with the arguments after the command name; resolves to the exit code. */
  readonly run: (argv: string[]) => Promise<number>;
}

export const commands: readonly Command[] = [
  {
    name: 'devices',
    summary: 'list RDMA devices, their ports and GIDs (-v for details, --json)',
    run: async (argv) => (await import('./devices.js')).runDevices(argv),
  },
  {
    name: 'smoke',
    summary: "smoke-test this host's RDMA device: connect, send/recv, RDMA write/read, teardown",
    run: async (argv) => (await import('./smoke.js')).runSmokeCommand(argv),
  },
  {
    name: 'bench',
    summary: 'measure RC send/recv latency (lat) or bandwidth (bw) against another rdmacm bench, or sockets as rstream does (stream)',
    run: async (argv) => (await import('./bench.js')).runBench(argv),
  },
  {
    name: 'repl',
    summary: 'an interactive REPL with the whole API preloaded, top-level await, resources closed on exit',
    run: async (argv) => (await import('./repl.js')).runRepl(argv),
  },
  {
    name: 'ping',
    summary: 'rping-compatible ping: client (-c) or server (-s), RDMA read and write',
    run: async (argv) => (await import('./ping.js')).runPing(argv),
  },
  {
    name: 'nc',
    summary: 'netcat over RDMA: stdin and stdout through an rsockets stream (talks to rstream, rcopy and rdmacm/net)',
    run: async (argv) => (await import('./nc.js')).runNc(argv),
  },
];
