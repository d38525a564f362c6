// The raw FFI layer on a host with no RDMA device: every symbol resolves, the
// libraries load lazily, and failures are typed errors with hints.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { readFileSync } from 'node:fs';
import { librdmacm, librdmacmFunctions } from '../../src/ffi/librdmacm.js';
import { libibverbs, libibverbsFunctions } from '../../src/ffi/libibverbs.js';
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

/** The defined dynamic symbols of the file this process mapped for `soname`. */
function exportedSymbols(soname: string): Set<string> {
  const maps = readFileSync('/proc/self/maps', 'utf8');
  const path = maps.split('\n').map((line) => line.split(/\s+/)[5] ?? '').find((file) => file.includes(soname));
  assert.ok(path, `${soname} is mapped`);
  const symbols = new Set<string>();
  for (const line of execFileSync('objdump', ['-T', path], { encoding: 'utf8' }).split('\n')) {
    if (!/\bDF\b/.test(line) || line.includes('*UND*')) continue;
    symbols.add(line.trim().split(/\s+/).at(-1)!);
  }
  return symbols;
}

for (const { name, lib, table } of tables) {
  test(`${name}: every table entry resolves to an exported symbol`, () => {
    lib.has(Object.keys(table)[0] as never);
    const exported = exportedSymbols(`${name}.so`);
    for (const [fnName, spec] of Object.entries(table)) {
      if ('since' in spec && spec.since) {
        assert.equal(lib.has(fnName as never), exported.has(fnName), `${fnName} detection agrees with the symbol table`);
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
  // the bytes at both addresses, as C received them, are equal.
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

// Skipped where the installed librdmacm is v60+ and has RDMACM_1.4: nothing to refuse there.
const hasRdmacm14 = librdmacm.has('rdma_write_cm_event');
test('RDMACM_1.4 functions absent from the installed library raise UnsupportedError', { skip: hasRdmacm14 && 'librdmacm has RDMACM_1.4' }, () => {
  assert.throws(() => librdmacm.rdma_write_cm_event(0n, 0, 0, 0), (error: unknown) => {
    assert.ok(error instanceof UnsupportedError);
    assert.match(error.message, /unsupported by the installed librdmacm \(it needs RDMACM_1\.4\)/);
    return true;
  });
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

