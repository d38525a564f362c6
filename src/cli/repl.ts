// `rdmacm repl`: node:repl with the whole public API preloaded as globals,
// helpers to explore the devices, top-level await, and every resource the
// session created closed (newest first) when it ends.
import process from 'node:process';
import repl, { type REPLServer } from 'node:repl';
import { createInterface } from 'node:readline';
import { PassThrough, type Readable } from 'node:stream';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { parseCommandArgs } from './arguments.js';
import * as api from '../index.js';
import type { DeviceInfo, UnavailableDevice } from '../index.js';
import { packageVersion } from '../package-info.js';
import { noDeviceFoundReason } from '../api/verbs/devices.js';

const usage = `Usage: rdmacm repl [-h]

Starts a Node.js REPL with every export of rdmacm preloaded as a global (and
as \`rdmacm\`), tab completion, top-level await, and helpers: devices(),
device(name?) and help(). Every resource created through the preloaded API
(new EventChannel(), createId, createEndpoint, getAddrInfo, DeviceContext.open,
… and so their children) is closed, newest first, on .exit or end of input.

When stdin is not a terminal, the lines read from it are evaluated one at a
time, each awaited before the next, without prompts. A line that throws is
reported and the next one runs; the exit code is then 1, so a script that
pipes lines in can tell.

Options:
  -h, --help   show this help
`;

const helpText = `Helpers:
  devices()                          every RDMA device here (listDevices())
  device(name?)                      one device's DeviceInfo (default: the first that opens)
  help()                             this text

Main API (every export of rdmacm is a global; rdmacm.* too; raw is the C layer):
  new EventChannel()                 events for asynchronous ids, on the event loop
  createId(channel | null, opts?)    an rdma_cm id: .resolveAddr, .resolveRoute, .createQp,
                                     .connect, .bindAddr, .listen, .nextRequest, .accept, .disconnect
  createEndpoint(target, opts?)      rdma_create_ep: { host, port, passive? }, { qp: {...} }
  getAddrInfo(node, service, hints?) rdma_getaddrinfo
  DeviceContext.open(name?)          a verbs context: .allocPd() → .register/.allocate memory,
                                     .createCq() for QPs to share (id.device is an id's context)
  listDevices(), rdmaGetDevices()    device discovery
  raw                                librdmacm and libibverbs with C's conventions

Example:
  const ch = new EventChannel(); const id = createId(ch)
  await id.resolveAddr({ address: device().ports[0].gids.find(g => g.ip?.includes('.')).ip, port: 7471 })

Resources created here are closed, newest first, on .exit.
`;

interface Closeable {
  close(): void;
  readonly closed?: boolean;
}

function isCloseable(value: unknown): value is Closeable {
  return typeof value === 'object' && value !== null && typeof (value as { close?: unknown }).close === 'function';
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof value === 'object' && value !== null && typeof (value as { then?: unknown }).then === 'function';
}

/** Remembers the resources the session made so they can be closed at its end. */
export class ResourceTracker {
  readonly #resources: Closeable[] = [];

  track<T>(value: T): T {
    if (isCloseable(value)) {
      if (!this.#resources.includes(value)) this.#resources.push(value);
    } else if (isThenable(value)) {
      // A factory that resolves to a resource; the rejection stays the caller's to see.
      value.then((resolved) => this.track(resolved), () => undefined);
    }
    return value;
  }

  /** Closes newest first; returns how many were still open. Errors are reported, not thrown. */
  closeAll(reportError: (error: unknown) => void): number {
    let closed = 0;
    for (const resource of this.#resources.splice(0).reverse()) {
      if (resource.closed === true) continue; // closed by the user or with its parent
      try {
        resource.close();
        closed++;
      } catch (error) {
        reportError(error);
      }
    }
    return closed;
  }
}

/** Classes are functions too; only they may be called with `new`. */
function isClass(value: (...args: never[]) => unknown): boolean {
  return /^class[\s{]/.test(Function.prototype.toString.call(value));
}

/**
 * Wraps an export so what it makes is tracked: a function's result, a class's
 * instances and its static factories' results (DeviceContext.open). Proxies keep
 * names, `instanceof` and what the REPL prints.
 */
function trackingExports(tracker: ResourceTracker): Record<string, unknown> {
  const targets = new WeakMap<object, object>();
  const wrapped = new WeakMap<object, object>();
  const wrap = (value: unknown): unknown => {
    if (typeof value !== 'function') return value;
    const cached = wrapped.get(value);
    if (cached) return cached;
    const target = value as (...args: unknown[]) => unknown;
    const staticMembers = isClass(target);
    const proxy: object = new Proxy(target, {
      apply: (fn, thisArg: unknown, args: unknown[]) =>
        tracker.track(Reflect.apply(fn, (typeof thisArg === 'function' && targets.get(thisArg)) || thisArg, args)),
      construct: (cls, args: unknown[], newTarget: (...args: never[]) => unknown) =>
        tracker.track(Reflect.construct(cls, args, newTarget === proxy ? cls : newTarget)),
      get: (cls, key) => {
        const member: unknown = Reflect.get(cls, key, cls);
        const isStaticMethod = staticMembers && typeof member === 'function' && key !== 'prototype' && Object.hasOwn(cls, key);
        return isStaticMethod ? wrap(member) : member;
      },
    });
    targets.set(proxy, target);
    wrapped.set(value, proxy);
    return proxy;
  };
  // `raw` stays as it is: C's functions return handles, not resources.
  return Object.fromEntries(Object.entries(api).map(([name, value]) => [name, name === 'raw' ? value : wrap(value)]));
}

function firstIPv4(device: DeviceInfo): string | undefined {
  for (const port of device.ports) {
    const gid = port.gids.find((g) => g.ip !== null && !g.ip.includes(':'));
    if (gid?.ip) return gid.ip;
  }
  return undefined;
}

function banner(): string {
  const lines = [`rdmacm ${packageVersion()} REPL — the whole API is preloaded (help() for a tour); resources are closed on .exit`];
  try {
    const devices = api.listDevices();
    if (devices.length === 0) lines.push(noDeviceFoundReason());
    for (const device of devices) {
      if ('error' in device) {
        lines.push(`  ${device.name}: cannot be opened (${device.error.code})`);
        continue;
      }
      const ports = device.ports.map((p) => `port ${p.port} ${p.state}`).join(', ');
      lines.push(`  ${device.name}: ${ports}${firstIPv4(device) ? `, ${firstIPv4(device)}` : ''}`);
    }
  } catch (error) {
    lines.push(`cannot list devices: ${error instanceof Error ? error.message : String(error)}`);
  }
  return lines.join('\n') + '\n';
}

function lookupDevice(name?: string): DeviceInfo {
  const devices = api.listDevices();
  const found = name === undefined ? (devices.find((d) => !('error' in d)) ?? devices[0]) : devices.find((d) => d.name === name);
  if (!found) {
    throw new Error(devices.length === 0 ? noDeviceFoundReason() : `no device named ${name} (found: ${devices.map((d) => d.name).join(', ')})`);
  }
  if ('error' in found) throw new Error(`${found.name} cannot be opened: ${found.error.message}`);
  return found;
}

/**
 * Feeds piped lines to the REPL one at a time, the next only once the REPL
 * shows its prompt again, so `await` on one line finishes before the next runs.
 */
function serialLines(source: Readable): { input: PassThrough; next(): void; stop(): void } {
  const input = new PassThrough();
  const reader = createInterface({ input: source, crlfDelay: Infinity });
  const queue: string[] = [];
  let ended = false;
  let wanted = false;
  const feed = (): void => {
    if (!wanted) return;
    const line = queue.shift();
    if (line !== undefined) {
      wanted = false;
      input.write(line + '\n');
    } else if (ended) {
      wanted = false;
      input.end();
    }
  };
  reader.on('line', (line) => {
    queue.push(line);
    feed();
  });
  reader.on('close', () => {
    ended = true;
    feed();
  });
  return {
    input,
    // Deferred so a run of synchronous lines does not recurse.
    next: () => {
      wanted = true;
      setImmediate(feed);
    },
    stop: () => {
      reader.close();
      source.pause();
    },
  };
}

/** Runs `rdmacm repl`; resolves to the exit code when the session ends. */
export async function runRepl(argv: string[]): Promise<number> {
  const parsed = parseCommandArgs('repl', usage, argv, { help: { type: 'boolean', short: 'h' } });
  if (typeof parsed === 'number') return parsed;

  const tracker = new ResourceTracker();
  const exports = trackingExports(tracker);
  const globals: Record<string, unknown> = {
    ...exports,
    rdmacm: Object.freeze({ ...exports }),
    devices: (): (DeviceInfo | UnavailableDevice)[] => api.listDevices(),
    device: lookupDevice,
    help: (): void => void process.stdout.write(helpText),
  };

  const interactive = process.stdin.isTTY === true && process.stdout.isTTY === true;
  process.stdout.write(banner());
  const piped = interactive ? undefined : serialLines(process.stdin);
  // The exports are proxies (to track what they make): print them as what they wrap.
  repl.writer.options.showProxy = false;
  const server: REPLServer = repl.start({
    prompt: interactive ? 'rdmacm> ' : '',
    input: piped ? piped.input : process.stdin,
    output: process.stdout,
    terminal: interactive,
    // The main realm, so Buffers and typed arrays typed here pass the API's checks.
    useGlobal: true,
    // help() and void calls print nothing rather than "undefined".
    ignoreUndefined: true,
  });
  for (const [name, value] of Object.entries(globals)) {
    Object.defineProperty(server.context, name, { value, writable: true, configurable: true, enumerable: false });
  }
  // Lines that threw, counted where the REPL shows its prompt again: node:repl
  // reports an error through its domain, not to the caller, but keeps the
  // last one in the documented `_error` variable.
  let failedLines = 0;
  let lastSeenError: unknown;
  if (piped) {
    const showPrompt = server.displayPrompt.bind(server);
    server.displayPrompt = (preserveCursor?: boolean) => {
      const latest: unknown = server.context._error;
      if (latest !== undefined && latest !== lastSeenError) failedLines++;
      lastSeenError = latest;
      showPrompt(preserveCursor);
      piped.next();
    };
    piped.next(); // start() has shown the first prompt already
  }
  if (interactive) server.setupHistory(join(homedir(), '.rdmacm_repl_history'), () => undefined);

  return new Promise((resolve) => {
    server.on('exit', () => {
      piped?.stop();
      const closed = tracker.closeAll((error) => {
        process.stderr.write(`rdmacm repl: closing a resource failed: ${error instanceof Error ? error.message : String(error)}\n`);
      });
      process.stdout.write(`closed ${closed} resource${closed === 1 ? '' : 's'}\n`);
      if (failedLines > 0) process.stderr.write(`rdmacm repl: ${failedLines} line${failedLines === 1 ? '' : 's'} threw\n`);
      const code = failedLines > 0 ? 1 : 0;
      // Something still watched (a request promise, a blocking id) must not keep the process alive.
      setTimeout(() => process.exit(code), 2000).unref();
      resolve(code);
    });
  });
}
