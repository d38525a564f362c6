// The part every command's argument handling shares: parse strictly with
// util.parseArgs, print one line and the usage for a bad argument (exit 1),
// and the usage for --help (exit 0); read an option's integer within bounds.
import process from 'node:process';
import { parseArgs, type ParseArgsConfig } from 'node:util';

type Options = NonNullable<ParseArgsConfig['options']>;
type Parsed<O extends Options> = ReturnType<typeof parseArgs<{ options: O; allowPositionals: true; strict: true }>>;

/** The parsed arguments, or the exit code when the command should stop here (help shown, or a bad argument). */
export function parseCommandArgs<const O extends Options>(
  command: string, usage: string, argv: string[], options: O, allowPositionals = false,
): Parsed<O> | number {
  let parsed: Parsed<O>;
  try {
    parsed = parseArgs({ args: argv, options, allowPositionals, strict: true }) as Parsed<O>;
  } catch (error) {
    return usageError(command, usage, error instanceof Error ? error.message : String(error));
  }
  if ((parsed.values as { help?: boolean }).help) {
    process.stdout.write(usage);
    return 0;
  }
  return parsed;
}

/** One line saying what is wrong, then the usage; exit code 1. */
export function usageError(command: string, usage: string, message: string): number {
  process.stderr.write(`rdmacm ${command}: ${message.replace(/\s*\n\s*/g, ' ')}\n\n${usage}`);
  return 1;
}

/** An option's value out of its bounds: its message is the line usageError prints. */
export class OptionValueError extends Error {}

/** The option's integer from min to max (undefined when not given); anything else throws OptionValueError. */
export function integerOption(value: string | undefined, name: string, max: number, min = 1): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n < min || n > max) throw new OptionValueError(`${name} must be an integer from ${min} to ${max} (got '${value}')`);
  return n;
}

/** Which of adaptive mode's budget options was given, by name (--spin first), for the bench commands' checks. */
export function spinOptionGiven(values: { spin?: string; 'max-spin'?: string }): '--spin' | '--max-spin' | undefined {
  return values.spin !== undefined ? '--spin' : values['max-spin'] !== undefined ? '--max-spin' : undefined;
}
