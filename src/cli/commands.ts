// The table of CLI commands: each one's name, one-line summary and entry point.
import { benchSummary, runBench } from './bench.js';
import { devicesSummary, runDevices } from './devices.js';
import { runSmokeCommand, smokeSummary } from './smoke.js';
import { replSummary, runRepl } from './repl.js';
import { pingSummary, runPing } from './ping.js';
import { ncSummary, runNc } from './nc.js';

export interface Command {
  readonly name: string;
  readonly summary: string;
  /** Runs with the arguments after the command name; resolves to the exit code. */
  readonly run: (argv: string[]) => Promise<number>;
}

export const commands: readonly Command[] = [
  { name: 'devices', summary: devicesSummary, run: runDevices },
  { name: 'smoke', summary: smokeSummary, run: runSmokeCommand },
  { name: 'bench', summary: benchSummary, run: runBench },
  { name: 'repl', summary: replSummary, run: runRepl },
  { name: 'ping', summary: pingSummary, run: runPing },
  { name: 'nc', summary: ncSummary, run: runNc },
];
