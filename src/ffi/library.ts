// One lazy loader for a shared library and its declarative function table.
// Importing binds nothing: the library is opened, and its whole table bound,
// at the first use of any of its functions.
import { readFileSync, realpathSync } from 'node:fs';
import process from 'node:process';
import koffi, { type LibraryHandle } from 'koffi';
import { LibraryLoadError, UnsupportedError } from './load-errors.js';
import { mappedFiles } from '../c-library.js';
import type { Pointer } from '../structs/pointer.js';

/** A native address: declared with the layouts (src/structs imports nothing from here). */
export type { Pointer };
/** What a pointer parameter accepts: an address, NULL, or memory koffi passes by address. */
export type PointerArg = Pointer | null | ArrayBufferView;
/**
 * An address as the data path passes it to a `uintptr_t` parameter: a Number,
 * which koffi converts faster than a BigInt or a `void *`, or the BigInt
 * itself above 2^53, where a double would round it (a tagged pointer, say).
 */
export type Address = number | bigint;

const LARGEST_EXACT = BigInt(Number.MAX_SAFE_INTEGER);

/** A pointer as an Address: a Number whenever that is exact. */
export function toAddress(pointer: Pointer): Address {
  return pointer <= LARGEST_EXACT ? Number(pointer) : pointer;
}

/**
 * One table entry: the C result type and the C parameters, written as in the
 * header ("struct rdma_cm_id **id"). `since` is the symbol version (e.g.
 * 'RDMACM_1.4') of a function newer than the oldest supported library: it may
 * be absent, and calling it then throws an UnsupportedError.
 */
export interface FunctionSpec {
  readonly result: string;
  readonly params: readonly string[];
  readonly since?: string;
}

/** Reads the pointer stored at `address + offset` (a struct field holding a pointer). */
export function readPointer(address: Pointer, offset: number): Pointer {
  return BigInt(koffi.decode(address, offset, 'uintptr_t') as number | bigint);
}

/** Stores a pointer into the struct field at `address + offset`. */
export function writePointer(address: Pointer, offset: number, value: Pointer): void {
  koffi.encode(address, offset, 'uintptr_t', value);
}

/** The entries of a counted, NULL-terminated array of pointers (ibv_get_device_list, rdma_get_devices). */
export function readPointerArray(list: Pointer, count: number): Pointer[] {
  const entries: Pointer[] = [];
  for (let index = 0; index < count; index++) {
    const entry = readPointer(list, index * POINTER_SIZE);
    if (entry === 0n) break;
    entries.push(entry);
  }
  return entries;
}
const POINTER_SIZE = 8;

/** Declare a table entry; the literal C types are kept for the derived TypeScript signature. */
export const fn = <const R extends string, const P extends readonly string[]>(result: R, params: P, since?: string) =>
  Object.freeze(since === undefined ? { result, params: Object.freeze(params) } : { result, params: Object.freeze(params), since }) as
    { readonly result: R; readonly params: P; readonly since?: string };

/** A C type's text without surrounding spaces. */
export type Trim<S extends string> = S extends ` ${infer R}` ? Trim<R> : S extends `${infer R} ` ? Trim<R> : S;

/** The TypeScript type a C parameter takes. */
export type ParamType<P extends string> = Trim<P> extends `const char *${string}`
  ? string | null
  : Trim<P> extends `${string}*${string}`
    ? PointerArg
    : Trim<P> extends `${'uint64_t' | 'size_t' | 'int64_t'} ${string}`
      ? number | bigint
      : number;

/** The TypeScript type a C result comes back as. */
export type ResultType<R extends string> = R extends 'void'
  ? void
  : R extends 'const char *'
    ? string | null
    : R extends `${string}*`
      ? Pointer | null
      : R extends 'uint64_t' | 'int64_t' | 'size_t' | '__be64'
        ? number | bigint
        : number;

/** The TypeScript parameter list of a table entry's C parameters. */
export type Params<P extends readonly string[]> = { -readonly [K in keyof P]: P[K] extends string ? ParamType<P[K]> : never };

/** A table entry as a TypeScript function. */
export type BoundFunction<S extends FunctionSpec> = (...args: Params<S['params']>) => ResultType<S['result']>;

export type BoundLibrary<T extends Record<string, FunctionSpec>> = { readonly [K in keyof T]: BoundFunction<T[K]> } & {
  /** Whether the loaded library exports `name` (loads the library). */
  has(name: keyof T & string): boolean;
  /** The path or soname the library was loaded from (loads the library). */
  readonly loadedFrom: string;
  /** The rdma-core release of the loaded file, from its name (librdmacm.so.1.3.44.0 is '44.0'); undefined where the name has none. */
  readonly release: string | undefined;
  /** The error for `name` missing from the installed library (`feature` names it in the message, default `name`). */
  unsupported(name: keyof T & string, feature?: string): UnsupportedError;
  /** The address of the exported symbol `name`, to hand to C as a function pointer (loads the library). */
  symbolAddress(name: string): Pointer;
};

/** Reduce a C type to what koffi marshals: every data pointer is passed as an address. */
export function koffiType(cType: string): string {
  const type = cType.replace(/\b(struct|union|enum|const)\s+/g, (m) => (m.startsWith('const') ? m : '')).trim();
  if (/^const\s+char\s*\*$/.test(type)) return 'const char *';
  if (type.includes('*')) return 'void *';
  if (/^enum\b/.test(cType.trim())) return 'int';
  const base = type.replace(/^const\s+/, '');
  if (/^__be(16|32|64)$/.test(base)) return `uint${base.slice(4)}_t`;
  if (base === 'socklen_t') return 'uint32_t';
  return base;
}

/** Split "struct rdma_cm_id **id" into its type; a bare type is returned unchanged. */
export function paramCType(param: string): string {
  const match = /^(.*?[\s*])([A-Za-z_]\w*)$/.exec(param.trim());
  if (!match || /^(int|void|char|long|short|unsigned|signed)$/.test(match[2]!) || match[1]!.trim() === '') return param.trim();
  return match[1]!.trim();
}

export interface LibraryOptions {
  /** How the library is named in messages, e.g. 'librdmacm'. */
  readonly name: string;
  /**
   * Runtime sonames to try, in order; a function is asked at the first load.
   * OWN_PROCESS: the symbols the process already has (Node's own libuv and N-API).
   */
  readonly sonames: readonly string[] | (() => readonly string[]) | typeof OWN_PROCESS;
  /** An environment variable that, when set, names the only file to load. */
  readonly envOverride?: string;
  /** What to do when it cannot be loaded (LibraryLoadError's default: install rdma-core). */
  readonly advice?: () => string;
  /** The first rdma-core release of each symbol version that `since` names. */
  readonly releases?: Readonly<Record<string, string>>;
}

/**
 * The rdma-core release in the name of the file a library was loaded from:
 * rdma-core names its libraries <soname>.<ABI minor>.<release>, e.g.
 * librdmacm.so.1.3.44.0 for release 44.0. The file is the one this process
 * mapped for a soname (the loader resolves it), or the given path's target.
 */
export function fileRelease(loadedFrom: string, maps?: string): string | undefined {
  let file: string | undefined;
  if (loadedFrom.includes('/')) {
    try {
      file = realpathSync(loadedFrom);
    } catch {
      return undefined;
    }
  } else {
    let text = maps;
    try {
      text ??= readFileSync('/proc/self/maps', 'utf8');
    } catch {
      return undefined;
    }
    file = mappedFiles(text).find((path) => path.slice(path.lastIndexOf('/') + 1).startsWith(`${loadedFrom}.`));
  }
  return file === undefined ? undefined : /\.so\.\d+\.\d+\.(\d+\.\d+)$/.exec(file)?.[1];
}

/** LibraryOptions.sonames for the symbols of the running process itself (dlopen(NULL)). */
export const OWN_PROCESS = Symbol('the running process');

/** Bind a function table to a lazily loaded library. */
export function defineLibrary<T extends Record<string, FunctionSpec>>(options: LibraryOptions, table: T): BoundLibrary<T> {
  let handle: { lib: LibraryHandle; from: string } | undefined;

  const open = () => {
    if (handle) return handle;
    if (options.sonames === OWN_PROCESS) return (handle = { lib: koffi.load(null), from: 'this process' });
    const override = options.envOverride === undefined ? undefined : process.env[options.envOverride];
    const sonames = typeof options.sonames === 'function' ? options.sonames() : options.sonames;
    const candidates = override ? [override] : [...sonames];
    let lastError: unknown;
    for (const candidate of candidates) {
      try {
        handle = { lib: koffi.load(candidate), from: candidate };
        return handle;
      } catch (error) {
        lastError = error;
      }
    }
    const tried = override ? [`${override} (from ${options.envOverride})`] : candidates;
    throw new LibraryLoadError(options.name, tried, { cause: lastError, advice: options.advice?.() });
  };

  const bind = (name: string, spec: FunctionSpec): (...args: unknown[]) => unknown => {
    const { lib } = open();
    try {
      return lib.func(name, koffiType(spec.result), spec.params.map((p) => koffiType(paramCType(p))));
    } catch (error) {
      if (spec.since === undefined) throw error;
      // Called either way (plain or through callAsync's `.async`), it throws the UnsupportedError.
      const stub = () => {
        throw unsupported(name);
      };
      return Object.assign(stub, { async: stub });
    }
  };

  let release: { value: string | undefined } | undefined;
  const installedRelease = () => (release ??= { value: fileRelease(open().from) }).value;
  const unsupported = (name: string, feature = name): UnsupportedError => {
    const since = table[name]?.since;
    if (since === undefined) return new UnsupportedError(feature, `by the installed ${options.name}`);
    return UnsupportedError.tooOld(feature, { library: options.name, symbolVersion: since, release: options.releases?.[since], installed: installedRelease() });
  };

  const bound: Record<string, unknown> = {};
  // The first use of any function binds them all, so the object changes shape
  // once. Bound one at a time, it changed shape at every first call, and the
  // busiest call sites, having seen too many shapes, fell back to a generic
  // property lookup at every call (Builtins_LoadIC in a profile of connection setup).
  let allBound = false;
  const bindAll = () => {
    if (allBound) return;
    for (const [name, spec] of Object.entries(table)) {
      let fn: unknown;
      try {
        fn = bind(name, spec);
      } catch (error) {
        if (error instanceof LibraryLoadError) throw error;
        const stub = () => {
          throw error;
        };
        fn = Object.assign(stub, { async: stub });
      }
      Object.defineProperty(bound, name, { value: fn, enumerable: true });
    }
    allBound = true;
  };
  for (const name of Object.keys(table)) {
    Object.defineProperty(bound, name, {
      enumerable: true,
      configurable: true,
      get() {
        bindAll();
        return bound[name];
      },
    });
  }
  const symbolExists = new Map<string, boolean>();
  Object.defineProperty(bound, 'has', {
    value(name: string): boolean {
      let known = symbolExists.get(name);
      if (known === undefined) {
        const spec = table[name];
        if (!spec) return false;
        try {
          open().lib.func(name, koffiType(spec.result), spec.params.map((p) => koffiType(paramCType(p))));
          known = true;
        } catch (error) {
          if (error instanceof LibraryLoadError) throw error;
          known = false;
        }
        symbolExists.set(name, known);
      }
      return known;
    },
  });
  Object.defineProperty(bound, 'loadedFrom', { get: () => open().from });
  Object.defineProperty(bound, 'release', { get: installedRelease });
  Object.defineProperty(bound, 'unsupported', { value: unsupported });
  Object.defineProperty(bound, 'symbolAddress', { value: (name: string): Pointer => BigInt(open().lib.symbol(name) as bigint) });
  return bound as BoundLibrary<T>;
}

/** What a native call made on a worker thread returned, with the errno it left there. */
export interface AsyncOutcome<R> {
  readonly result: R;
  /** The worker thread's errno after the call (koffi restores it for the callback, where it is read). */
  readonly errno: number;
}

type KoffiAsync = (...args: unknown[]) => void;

/**
 * Calls a bound function on one of libuv's threadpool threads (koffi's
 * `fn.async`), so a call that blocks (DNS in rdma_getaddrinfo) leaves the
 * event loop running. The arguments must stay valid until the promise settles:
 * it holds them. koffi's refusal to queue the call (too many in flight)
 * rejects with koffi's error; a function the installed library lacks, with
 * its UnsupportedError.
 */
export function callAsync<A extends unknown[], R>(fn: (...args: A) => R, ...args: A): Promise<AsyncOutcome<R>> {
  return new Promise((resolve, reject) => {
    const call = (fn as unknown as { async?: KoffiAsync }).async;
    if (typeof call !== 'function') {
      reject(new TypeError(`${fn.name || 'this function'} has no asynchronous form`));
      return;
    }
    const held = args;
    try {
      call(...args, (error: unknown, result: R) => {
        void held;
        if (error) reject(error);
        else resolve({ result, errno: koffi.errno() });
      });
    } catch (error) {
      reject(error);
    }
  });
}
