// The C library the process runs on (glibc or musl) and the name libc is
// loaded by. A musl Node cannot be had here, so musl's side is tested against
// musl's real dynamic linker (Debian's musl package): a C program built with
// musl-gcc dlopens the names the binding picks and resolves libc's table.
// glibc's side, and the fallbacks when libc does not load, run on this host.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import process from 'node:process';
import { cLibraryInMaps, libcSonames, runningCLibrary } from '../../src/c-library.js';
import { libc, libcAdvice, libcFunctions } from '../../src/ffi/libc.js';
import { defineLibrary } from '../../src/ffi/library.js';
import { LibraryLoadError } from '../../src/ffi/errors.js';
import { runChildModule } from '../support/child-module.js';

const work = mkdtempSync(join(tmpdir(), 'rdmacm-libc-'));
after(() => rmSync(work, { recursive: true, force: true }));

const hasMuslGcc = spawnSync('sh', ['-c', 'command -v musl-gcc']).status === 0;
// scripts/install-deps.sh installs musl-tools, so CI never skips; musl-gcc targets x86-64 here.
const noMusl = process.arch !== 'x64' ? `musl-gcc builds x86-64 programs; this is ${process.arch}`
  : !hasMuslGcc && !process.env.CI ? 'no musl-gcc (Debian: apt-get install musl-tools)' : false;

/**
 * A program that prints its own /proc/self/maps after a line '--', then, for
 * each name on its command line, whether dlopen takes it and which of libc's
 * table it resolves: "name|ok|memcpy,mmap,…" or "name|fail|dlerror".
 */
const resolver = `
#include <dlfcn.h>
#include <stdio.h>
static const char *wanted[] = { ${Object.keys(libcFunctions).map((name) => `"${name}"`).join(', ')}, 0 };
int main(int argc, char **argv) {
  FILE *maps = fopen("/proc/self/maps", "r");
  char buffer[4096]; size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, maps)) > 0) fwrite(buffer, 1, n, stdout);
  fclose(maps);
  printf("--\\n");
  for (int i = 1; i < argc; i++) {
    void *handle = dlopen(argv[i], RTLD_NOW);
    if (!handle) { printf("%s|fail|%s\\n", argv[i], dlerror()); continue; }
    printf("%s|ok|", argv[i]);
    for (const char **name = wanted; *name; name++) if (dlsym(handle, *name)) printf("%s%s", name == wanted ? "" : ",", *name);
    printf("\\n");
  }
  return 0;
}
`;

interface Resolution {
  readonly maps: string;
  readonly names: Map<string, { ok: boolean; detail: string }>;
}

function buildResolver(compiler: string): string {
  const source = join(work, 'resolver.c');
  writeFileSync(source, resolver);
  const binary = join(work, `resolver-${compiler}`);
  execFileSync(compiler, ['-std=gnu11', '-Wall', '-o', binary, source, '-ldl'], { stdio: 'pipe' });
  return binary;
}

function resolve(binary: string, names: readonly string[]): Resolution {
  const output = execFileSync(binary, names, { encoding: 'utf8' });
  const [maps, results] = output.split('\n--\n') as [string, string];
  const parsed = new Map<string, { ok: boolean; detail: string }>();
  for (const line of results.trim().split('\n')) {
    const [name, status, detail] = line.split('|') as [string, string, string];
    parsed.set(name, { ok: status === 'ok', detail });
  }
  return { maps, names: parsed };
}

const allFunctions = Object.keys(libcFunctions).join(',');
// The glibc-side tests force musl's names on this process and read its maps; on a musl host they would not apply.
const notGlibc = runningCLibrary().family !== 'glibc' && 'this process does not run on glibc';

test('this process is recognised as running on the C library process.report names, and libc is loaded by its name', () => {
  const report = process.report.getReport() as { header: { glibcVersionRuntime?: string } };
  const expected = report.header.glibcVersionRuntime ? 'glibc' : 'musl';
  const running = runningCLibrary();
  assert.equal(running.family, expected);
  const file = expected === 'glibc' ? /\/libc\.so\.6$/ : /\/(ld-musl-[^/]+\.so\.1|libc\.so)$/;
  const mapped = readFileSync('/proc/self/maps', 'utf8').split('\n').find((line) => file.test(line))!;
  assert.equal(running.evidence, `${mapped.slice(mapped.indexOf('/'))} in /proc/self/maps`);
  assert.equal(libc.loadedFrom, libcSonames(expected)[0]);
});

test('the names libc is loaded by, for each C library and architecture', () => {
  const cases = [
    { family: 'glibc', arch: 'x64', names: ['libc.so.6'] },
    { family: 'glibc', arch: 'arm64', names: ['libc.so.6'] },
    { family: 'musl', arch: 'x64', names: ['libc.musl-x86_64.so.1', 'libc.so'] },
    { family: 'musl', arch: 'arm64', names: ['libc.musl-aarch64.so.1', 'libc.so'] },
    { family: 'musl', arch: 'mips', names: ['libc.so'] },
    { family: undefined, arch: 'arm64', names: ['libc.so.6', 'libc.musl-aarch64.so.1', 'libc.so'] },
  ] as const;
  for (const { family, arch, names } of cases) assert.deepEqual(libcSonames(family, arch), names, `${family} on ${arch}`);
});

test("glibc's loader resolves libc's whole table by glibc's name, and none of musl's names", { skip: notGlibc }, () => {
  const glibc = resolve(buildResolver('gcc'), [...libcSonames('glibc'), ...libcSonames('musl')]);
  assert.equal(cLibraryInMaps(glibc.maps)?.family, 'glibc');
  assert.deepEqual(glibc.names.get('libc.so.6'), { ok: true, detail: allFunctions });
  for (const name of libcSonames('musl')) assert.equal(glibc.names.get(name)?.ok, false, `${name} is not glibc's`);
});

test("musl's loader resolves libc's whole table by each name picked for musl (and for an unknown C library)", { skip: noMusl }, () => {
  const musl = resolve(buildResolver('musl-gcc'), libcSonames(undefined));
  const found = cLibraryInMaps(musl.maps);
  assert.equal(found?.family, 'musl', 'a musl process is recognised from its maps');
  assert.match(found!.file, /musl/);
  assert.ok(!musl.maps.includes('libc.so.6'), 'glibc is not mapped in the musl process');
  for (const name of libcSonames(undefined)) assert.deepEqual(musl.names.get(name), { ok: true, detail: allFunctions }, name);
});

test('maps that show neither C library are not guessed at', { skip: notGlibc }, () => {
  const own = readFileSync('/proc/self/maps', 'utf8');
  const withoutLibc = own.split('\n').filter((line) => !/libc[.-]/.test(line)).join('\n');
  assert.equal(cLibraryInMaps(withoutLibc), undefined);
  assert.equal(cLibraryInMaps(own)?.family, 'glibc');
});

test("musl's names forced on glibc: the load fails, names each name tried, and says what to set", { skip: notGlibc }, () => {
  const forced = defineLibrary({ name: 'libc', sonames: libcSonames('musl'), envOverride: 'RDMACM_TEST_UNSET_LIBC', advice: libcAdvice }, libcFunctions);
  assert.throws(() => forced.memcpy, (error: unknown) => {
    assert.ok(error instanceof LibraryLoadError);
    assert.equal(error.code, 'ERR_RDMACM_LIBRARY');
    assert.deepEqual(error.tried, libcSonames('musl'));
    assert.match(error.message, new RegExp(`^could not load libc \\(tried: ${libcSonames('musl').join(', ').replace(/\./g, '\\.')}\\)`));
    assert.match(error.message, /this process runs on glibc \(.*libc\.so\.6 in \/proc\/self\/maps\)/);
    assert.match(error.message, /Set RDMACM_LIBC to the path/);
    assert.doesNotMatch(error.message, /apt-get|rdma-core/, 'libc is not a package to install');
    return true;
  });
  const glibc = defineLibrary({ name: 'libc', sonames: libcSonames('glibc'), envOverride: 'RDMACM_TEST_UNSET_LIBC' }, libcFunctions);
  assert.equal(glibc.loadedFrom, 'libc.so.6');
  assert.equal(typeof glibc.mmap, 'function');
});

test('where libc does not load, bound calls and native copies fall back; the fd calls say what is missing', { skip: notGlibc }, () => {
  const script = `
    import koffi from 'koffi';
    import { boundCallsUnavailable, fixedCall } from './src/ffi/bound-call.ts';
    import { copyFromNative } from './src/ffi/native-copy.ts';
    import { setNonBlocking } from './src/api/core/fd-watcher.ts';
    const call = fixedCall(1n, (a, b, c) => a + b + c, [1, 2, 3], true);
    const source = Buffer.from('bytes copied without libc');
    const copy = Buffer.alloc(source.length);
    copyFromNative(copy, koffi.address(source), source.length);
    let failure;
    try { setNonBlocking(0); } catch (e) { failure = { name: e.name, code: e.code, tried: e.tried, message: e.message }; }
    console.log(JSON.stringify({ bound: call.bound, result: call.call(), why: boundCallsUnavailable(), copy: copy.toString(), failure }));`;
  const result = runChildModule(script, { RDMACM_LIBC: '/nonexistent/libc.so', RDMACM_BOUND_CALLS: '1' });
  assert.equal(result.status, 0, result.stderr);
  const seen = JSON.parse(result.stdout) as { bound: boolean; result: number; why: string; copy: string; failure: { name: string; code: string; tried: string[]; message: string } };
  assert.equal(seen.bound, false);
  assert.equal(seen.result, 6);
  assert.equal(seen.why, 'libc did not load (tried: /nonexistent/libc.so (from RDMACM_LIBC))');
  assert.equal(seen.copy, 'bytes copied without libc');
  assert.equal(seen.failure.name, 'LibraryLoadError');
  assert.equal(seen.failure.code, 'ERR_RDMACM_LIBRARY');
  assert.deepEqual(seen.failure.tried, ['/nonexistent/libc.so (from RDMACM_LIBC)']);
  assert.match(seen.failure.message, /this process runs on glibc/);
});
