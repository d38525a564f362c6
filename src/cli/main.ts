// The rdmacm command line: finds the command and hands it the rest of argv.
import process from 'node:process';
import { parseArgs } from 'node:util';
import { packageVersion } from '../package-info.js';
import { commands } from './commands.js';

function usage(): string {
  const width = Math.max(...commands.map((c) => c.name.length));
  const lines = commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`);
  return `Usage: rdmacm <command> [options]

RDMA from Node.js: explore devices and test connections over librdmacm.

Commands:
${lines.join('\n')}

Options:
  -h, --help      show this help (rdmacm <command> --help for a command's own)
  -V, --version   print the version
`;
}

/** Runs the CLI and returns the exit code. */
export async function main(argv: string[]): Promise<number> {
  const command = commands.find((c) => c.name === argv[0]);
  if (command) return command.run(argv.slice(1));
  const { values, positionals } = parseArgs({
    args: argv,
    options: { help: { type: 'boolean', short: 'h' }, version: { type: 'boolean', short: 'V' } },
    allowPositionals: true,
    strict: false,
  });
  if (positionals.length > 0) {
    // An option before the command (rdmacm -h devices): the command's own help, or its options after it.
    const later = commands.find((c) => c.name === positionals[0]);
    if (later && values.help) return later.run(['--help']);
    if (later) {
      process.stderr.write(`rdmacm: options go after the command: rdmacm ${later.name} [options]\n`);
      return 1;
    }
    process.stderr.write(`rdmacm: unknown command '${positionals[0]}'\n\n${usage()}`);
    return 1;
  }
  if (values.version) {
    process.stdout.write(`rdmacm ${packageVersion()}\n`);
    return 0;
  }
  process.stdout.write(usage());
  return values.help ? 0 : 1;
}
