// Argument checking at the API boundary: zod schemas in, RdmaArgumentError out.
// Called when an operation is prepared, never inside post/poll loops.
import { z } from 'zod';
import { RdmaArgumentError } from './errors.js';

/** Parses `value` as the parameter `parameter` of `operation`, or throws RdmaArgumentError. */
export function parseArgument<S extends z.ZodType>(operation: string, parameter: string, schema: S, value: unknown): z.output<S> {
  const result = schema.safeParse(value);
  if (!result.success) throw RdmaArgumentError.fromZod(operation, parameter, result.error);
  return result.data;
}

/** Throws RdmaArgumentError for a rule zod cannot see (limits known only at run time). */
export function argumentError(operation: string, path: string, rule: string): RdmaArgumentError {
  return new RdmaArgumentError(operation, [{ path, rule }]);
}

export const u8 = z.number().int().min(0).max(0xff);
export const u16 = z.number().int().min(0).max(0xffff);
export const u32 = z.number().int().min(0).max(0xffffffff);
export const port = z.number().int().min(0, 'a port is 0–65535').max(65535, 'a port is 0–65535');
/** A count of work requests or SGEs: at least 1. */
export const count = z.number().int().min(1, 'must be at least 1').max(0x7fffffff);
export const timeoutMs = z.number().int().min(0).max(0x7fffffff);
export const u64 = z.union([
  z.bigint().min(0n).max(0xffffffffffffffffn),
  z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
]);
/** An IPv4 or IPv6 address. */
export const ipAddress = z.union([z.ipv4(), z.ipv6()], { error: 'expected an IPv4 or IPv6 address' });
/** A non-empty C string: C would silently cut it at an embedded NUL. */
export const cString = z.string().min(1).refine((s) => !s.includes('\0'), 'must not contain a NUL character');

/** A Buffer or any Uint8Array (zod's instanceof would narrow it to an ArrayBuffer-backed one). */
export const bytes = z.custom<Uint8Array>((value) => value instanceof Uint8Array, 'expected a Buffer or Uint8Array');
