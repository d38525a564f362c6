// The raw FFI layer on a host with no RDMA device: every symbol resolves, the
// libraries load lazily, and failures are typed errors with hints.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { librdmacm, librdmacmFunctions, librdmacmReleases } from '../../src/ffi/librdmacm.js';
import { libibverbs, libibverbsFunctions, libibverbsReleases } from '../../src/ffi/libibverbs.js';
import { checkAddrInfo, checkPointer, checkRdma, checkVerbs, pollFailed, RdmaError, UnsupportedError } from '../../src/ffi/errors.js';
import { libc, libcFunctions } from '../../src/ffi/libc.js';
import { copyFromNative, snapshotStruct } from '../../src/ffi/native-copy.js';
import { contextOps, forgetContextOps } from '../../src/ffi/inline-verbs.js';
import { toAddress } from '../../src/ffi/library.js';
import { ibv_context, ibv_context_ops } from '../../src/structs/verbs-resources.js';
import { hostRdmaDevices } from '../support/device.js';
import { cFunctionAddress } from '../support/c-function.js';
import koffi from 'koffi';
import { noDeviceAdvice } from '../../src/package-info.js';

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const tsx = `${repoRoot}node_modules/.bin/tsx`;

/** Runs a snippet in a fresh process (so library loading starts from nothing). */
function runSnippet(code: string, env: NodeJS.ProcessEnv = {}) {
  return spawnSync(tsx, ['-e', code], { cwd: repoRoot, env: { ...process.env, ...env }, encoding: 'utf8' });
}

const tables = [
  { name: 'librdmacm', lib: librdmacm, table: librdmacmFunctions },
  { name: 'libibverbs', lib: libibverbs, table: libibverbsFunctions },
  { name: 'libc', lib: libc, table: libcFunctions },
] as const;

/** The defined dynamic symbols of the file this process mapped for `soname`, each with its symbol version. */
function exportedSymbols(soname: string): Map<string, string> {
  const maps = readFileSync('/proc/self/maps', 'utf8');
  const path = maps.split('\n').map((line) => line.split(/\s+/)[5] ?? '').find((file) => file.includes(soname));
  assert.ok(path, `${soname} is mapped`);
  const symbols = new Map<string, string>();
  for (const line of execFileSync('objdump', ['-T', path], { encoding: 'utf8' }).split('\n')) {
    if (!/\bDF\b/.test(line) || line.includes('*UND*')) continue;
    const fields = line.trim().split(/\s+/);
    symbols.set(fields.at(-1)!, fields.at(-2)!);
  }
  return symbols;
}

for (const { name, lib, table } of tables) {
  test(`${name}: every table entry resolves to an exported symbol, and \`since\` is its symbol version`, () => {
    lib.has(Object.keys(table)[0] as never);
    const exported = exportedSymbols(`${name}.so`);
    for (const [fnName, spec] of Object.entries(table)) {
      if ('since' in spec && spec.since) {
        assert.equal(lib.has(fnName as never), exported.has(fnName), `${fnName} detection agrees with the symbol table`);
        if (exported.has(fnName)) assert.equal(exported.get(fnName), spec.since, `${fnName}'s symbol version`);
      } else {
        assert.ok(exported.has(fnName), `${fnName} is in ${name}'s dynamic symbols`);
        assert.ok(lib.has(fnName as never), `${fnName} binds`);
        assert.equal(typeof (lib as unknown as Record<string, unknown>)[fnName], 'function');
      }
    }
  });
}

test('copies out of native memory: exact bytes, a shared struct snapshot, and a refused overflow', () => {
  const source = Buffer.from(Array.from({ length: 300 }, (_, i) => i & 0xff));
  const address = koffi.address(source);
  const copy = Buffer.alloc(40);
  copyFromNative(copy, address + 5n, 40);
  assert.deepEqual([...copy], [...source.subarray(5, 45)]);
  copyFromNative(copy, address, 0); // nothing to copy: no call
  assert.throws(() => copyFromNative(copy, address, 41), RangeError);

  const small = snapshotStruct(address, 16);
  assert.equal(small.getUint32(4, true), 0x07060504);
  // Larger than the scratch so far: it grows, and the bytes are still exact.
  const large = snapshotStruct(address, 300);
  assert.equal(large.getUint8(299), 299 & 0xff);
  assert.equal(large.getBigUint64(256, true), source.readBigUInt64LE(256));
});

test('addresses: a Number whenever exact, and the address-typed ops reach C with the exact pointers', () => {
  assert.equal(toAddress(0x7f00_1234_5678n), 0x7f00_1234_5678);
  assert.equal(toAddress(BigInt(Number.MAX_SAFE_INTEGER)), Number.MAX_SAFE_INTEGER);
  assert.equal(toAddress(2n ** 60n + 1n), 2n ** 60n + 1n); // a double would round it

  // A fake ibv_context whose post_send is libc's memcmp(a, b, n): 0 only when
  // the bytes at both addresses, as C received them, are equal. It checks how
  // arguments reach C, not a provider: the device tier posts through the real
  // post_send (safe-api, connection and the bench loops).
  const memcmp = cFunctionAddress('libc.so.6', 'memcmp');
  const context = Buffer.alloc(ibv_context.size);
  context.writeBigUInt64LE(memcmp, koffi.offsetof(ibv_context, 'ops') + koffi.offsetof(ibv_context_ops, 'post_send'));
  const contextAddress = koffi.address(context);
  try {
    const ops = contextOps(contextAddress);
    const a = Buffer.from('0123456789abcdef');
    const same = Buffer.from('0123456789abcdef');
    const other = Buffer.from('0123456789abcdeF');
    const [at, sameAt, otherAt] = [a, same, other].map((b) => toAddress(koffi.address(b)));
    assert.equal(typeof at, 'number');
    assert.equal(ops.postSendAt(at!, sameAt!, 16), 0);
    assert.notEqual(ops.postSendAt(at!, otherAt!, 16), 0);
    assert.equal(ops.postSendAt(at!, otherAt!, 15), 0); // the difference is in the last byte
    assert.equal(ops.postSendAt(koffi.address(a), koffi.address(same), 16n), 0); // BigInts are taken too
  } finally {
    forgetContextOps(contextAddress);
  }
});

/** The installed rdma-core release as the package manager has it (Debian's 44.0-2 is 44.0), to check the one read from the file name. */
function packagedRelease(): string | undefined {
  const result = spawnSync('dpkg-query', ['-W', '-f=${Version}', 'librdmacm1'], { encoding: 'utf8' });
  const fallback = spawnSync('dpkg-query', ['-W', '-f=${Version}', 'librdmacm1t64'], { encoding: 'utf8' });
  return /^(\d+\.\d+)/.exec(result.status === 0 ? result.stdout : fallback.stdout)?.[1];
}

test('the installed rdma-core release is read from the loaded files, as the package manager has it', { skip: packagedRelease() === undefined && 'no dpkg-query' }, () => {
  assert.equal(librdmacm.release, packagedRelease());
  assert.equal(libibverbs.release, packagedRelease());
});

// Every function newer than the installed library: on Debian 12 (rdma-core 44)
// the three RDMACM_1.4 functions of rdma-core 60. Skipped where none is missing.
const missing = [
  ...Object.entries(librdmacmFunctions).filter(([name, spec]) => 'since' in spec && !librdmacm.has(name as never)).map(([name]) => ({ lib: librdmacm, name, releases: librdmacmReleases as Record<string, string>, spec: librdmacmFunctions[name as keyof typeof librdmacmFunctions] })),
  ...Object.entries(libibverbsFunctions).filter(([name, spec]) => 'since' in spec && !libibverbs.has(name as never)).map(([name]) => ({ lib: libibverbs, name, releases: libibverbsReleases as Record<string, string>, spec: libibverbsFunctions[name as keyof typeof libibverbsFunctions] })),
];
test('a function newer than the installed library raises UnsupportedError naming the version it needs and the one installed', { skip: missing.length === 0 && 'the installed libraries have every function' }, () => {
  for (const { lib, name, releases, spec } of missing) {
    const since = (spec as { since: string }).since;
    assert.ok(releases[since], `${since} has a release`);
    const call = (lib as unknown as Record<string, (...args: unknown[]) => unknown>)[name]!;
    assert.throws(() => call(0n, 0, 0, 0), (error: unknown) => {
      assert.ok(error instanceof UnsupportedError);
      assert.equal(error.code, 'EOPNOTSUPP');
      assert.equal(error.feature, name);
      assert.deepEqual(error.requirement, { library: lib === librdmacm ? 'librdmacm' : 'libibverbs', symbolVersion: since, release: releases[since], installed: lib.release });
      assert.equal(error.message, `${name} is unsupported by the installed ${error.requirement!.library}, rdma-core ${lib.release} ` +
        `(it needs ${since}, from rdma-core ${releases[since]}): upgrade rdma-core to ${releases[since]} or later, or do without ${name}`);
      return true;
    });
  }
});

/** Debian's record of the first package version with each symbol version (the installed librdmacm1/libibverbs1 .symbols files). */
function debianSymbolReleases(): Map<string, string> {
  const releases = new Map<string, string>();
  for (const file of readdirSync('/var/lib/dpkg/info').filter((f) => /^lib(rdmacm|ibverbs)1(t64)?(:\w+)?\.symbols$/.test(f))) {
    for (const match of readFileSync(join('/var/lib/dpkg/info', file), 'utf8').matchAll(/^ ((?:RDMACM|IBVERBS)_[\d.]+)@\1 (\S+)$/gm)) releases.set(match[1]!, match[2]!);
  }
  return releases;
}

test("each symbol version's first rdma-core release is Debian's, wherever the installed packages record it", { skip: !existsSync('/var/lib/dpkg/info') && 'not a Debian system' }, () => {
  const debian = debianSymbolReleases();
  const named = new Set([...Object.values(librdmacmFunctions), ...Object.values(libibverbsFunctions)].flatMap((spec) => ('since' in spec && spec.since ? [spec.since] : [])));
  const releases: Record<string, string> = { ...librdmacmReleases, ...libibverbsReleases };
  let checked = 0;
  for (const version of named) {
    assert.ok(releases[version], `${version} has a release`);
    if (!debian.has(version)) continue; // newer than the installed packages (RDMACM_1.4 on rdma-core 44)
    assert.equal(releases[version], debian.get(version), version);
    checked++;
  }
  assert.ok(checked >= 4, `Debian recorded ${checked} of the versions`);
});

test('each return convention becomes the right error', () => {
  const cases = [
    // Verbs return a positive errno, some providers -errno, and a few verbs -1 with errno set.
    { call: () => checkVerbs('ibv_destroy_cq', 16), errno: 16, code: 'EBUSY', syscall: 'ibv_destroy_cq' },
    { call: () => checkVerbs('ibv_modify_qp', -22), errno: 22, code: 'EINVAL', syscall: 'ibv_modify_qp' },
    { call: () => (koffi.errno(93), checkVerbs('ibv_init_ah_from_wc', -1)), errno: 93, code: 'EPROTONOSUPPORT', syscall: 'ibv_init_ah_from_wc' },
    // rdma_getaddrinfo passes getaddrinfo's EAI_* codes on; -1 and EAI_SYSTEM mean errno.
    { call: () => checkAddrInfo('rdma_getaddrinfo', -2), errno: -2, code: 'EAI_NONAME', syscall: 'rdma_getaddrinfo', text: /Name or service not known/ },
    { call: () => checkAddrInfo('rdma_getaddrinfo', -8), errno: -8, code: 'EAI_SERVICE', syscall: 'rdma_getaddrinfo', text: /Servname not supported/ },
    { call: () => (koffi.errno(19), checkAddrInfo('rdma_getaddrinfo', -1)), errno: 19, code: 'ENODEV', syscall: 'rdma_getaddrinfo' },
    { call: () => (koffi.errno(12), checkAddrInfo('rdma_getaddrinfo', -11)), errno: 12, code: 'ENOMEM', syscall: 'rdma_getaddrinfo' },
    // ibv_poll_cq's negative count is the provider's code (mlx5's CQ_POLL_ERR, -2), not -ENOENT.
    { call: () => { throw pollFailed(-2); }, errno: 5, code: 'EIO', syscall: 'ibv_poll_cq', text: /provider returned -2.*set them up again/ },
  ];
  for (const { call, errno, code, syscall, text } of cases) {
    assert.throws(call, (error: unknown) => {
      assert.ok(error instanceof RdmaError);
      assert.deepEqual({ errno: error.errno, code: error.code, syscall: error.syscall }, { errno, code, syscall });
      assert.ok(error.message.startsWith(`${syscall} failed: ${code} (`), error.message);
      if (text) assert.match(error.message, text);
      return true;
    });
  }
  assert.doesNotThrow(() => checkVerbs('ibv_destroy_cq', 0));
  assert.doesNotThrow(() => checkAddrInfo('rdma_getaddrinfo', 0));
});

// Skipped on a host that has a device: there these calls succeed.
test('calls that need a device fail with ENODEV and the hint', { skip: hostRdmaDevices().length > 0 && 'this host has an RDMA device' }, () => {
  const id = Buffer.alloc(8);
  for (const call of [
    () => checkPointer('rdma_create_event_channel', librdmacm.rdma_create_event_channel()),
    () => checkRdma('rdma_create_id', librdmacm.rdma_create_id(null, id, null, 0x106)),
    () => checkRdma('rdma_getaddrinfo', librdmacm.rdma_getaddrinfo('127.0.0.1', '7471', null, Buffer.alloc(8))),
  ]) {
    assert.throws(call, (error: unknown) => {
      assert.ok(error instanceof RdmaError);
      assert.equal(error.code, 'ENODEV');
      assert.equal(error.errno, 19);
      assert.match(error.syscall, /^rdma_/);
      assert.equal(error.missing, 'rdma-device');
      assert.ok(error.message.endsWith(`no RDMA device: ${noDeviceAdvice()}`), error.message);
      return true;
    });
  }
});

test('importing the package does not load the libraries; the first call does', () => {
  const result = runSnippet(`
    const maps = () => require('node:fs').readFileSync('/proc/self/maps', 'utf8');
    import('./src/index.ts').then(async (m) => {
      const before = /librdmacm|libibverbs/.test(maps());
      m.raw.librdmacm.rdma_event_str(0);
      console.log(JSON.stringify({ before, after: /librdmacm\\.so\\.1/.test(maps()) }));
    });`);
  assert.equal(result.status, 0, result.stderr);
  assert.deepEqual(JSON.parse(result.stdout), { before: false, after: true });
});

for (const [variable, library] of [['RDMACM_LIBRDMACM', 'librdmacm'], ['RDMACM_LIBIBVERBS', 'libibverbs']] as const) {
  test(`a missing ${library} (${variable} to a bad path) gives the install hint`, () => {
    const call = library === 'librdmacm' ? 'm.raw.librdmacm.rdma_event_str(0)' : 'm.raw.libibverbs.ibv_wc_status_str(0)';
    const result = runSnippet(
      `import('./src/index.ts').then((m) => { try { ${call}; } catch (e) { console.log(JSON.stringify({ name: e.name, code: e.code, message: e.message })); } });`,
      { [variable]: '/nonexistent/lib.so.1' },
    );
    assert.equal(result.status, 0, result.stderr);
    const error = JSON.parse(result.stdout) as { name: string; code: string; message: string };
    assert.equal(error.name, 'LibraryLoadError');
    assert.equal(error.code, 'ERR_RDMACM_LIBRARY');
    assert.match(error.message, new RegExp(`could not load ${library} \\(tried: /nonexistent/lib\\.so\\.1 \\(from ${variable}\\)\\)`));
    assert.match(error.message, /apt-get install librdmacm1 ibverbs-providers/);
    assert.match(error.message, /dnf install librdmacm libibverbs/);
    assert.match(error.message, /apk add rdma-core/);
  });
}

