// The C library this process runs on, glibc or musl. It decides the name libc
// is loaded by and the size of the pthread types inside verbs structs, so it is
// known below every other layer, from what the process itself has mapped.
import { readFileSync } from 'node:fs';
import process from 'node:process';

export type CLibraryFamily = 'glibc' | 'musl';

export interface CLibrary {
  /** undefined when neither was recognised. */
  readonly family: CLibraryFamily | undefined;
  /** How it was known, for messages: the mapped file, or what was looked at. */
  readonly evidence: string;
}

/** The file of each line of a /proc/<pid>/maps text that maps one (names may hold spaces). */
export function mappedFiles(maps: string): string[] {
  const files: string[] = [];
  for (const line of maps.split('\n')) {
    const at = line.indexOf(' /');
    if (at >= 0) files.push(line.slice(at + 1).trimEnd());
  }
  return files;
}

/**
 * The C library a /proc/<pid>/maps text shows, and the file that shows it.
 * glibc maps libc.so.6 (libc-2.NN.so before 2.34); musl is one file, its
 * dynamic linker: /lib/ld-musl-<arch>.so.1 on Alpine, whose libc.musl-<arch>.so.1
 * is a link to it, or <arch>-linux-musl/libc.so where Debian installs it.
 */
export function cLibraryInMaps(maps: string): { family: CLibraryFamily; file: string } | undefined {
  for (const file of mappedFiles(maps)) {
    const base = file.slice(file.lastIndexOf('/') + 1);
    if (base.startsWith('ld-musl-') || base.startsWith('libc.musl-') || /-linux-musl[^/]*\/libc\.so$/.test(file)) {
      return { family: 'musl', file };
    }
    if (base === 'libc.so.6' || /^libc-2\.\d+\.so$/.test(base)) return { family: 'glibc', file };
  }
  return undefined;
}

let running: CLibrary | undefined;

/**
 * The C library of this process: from /proc/self/maps, else (no /proc) from
 * process.report, whose header names glibc's version only on glibc.
 */
export function runningCLibrary(): CLibrary {
  if (running) return running;
  let maps: string | undefined;
  try {
    maps = readFileSync('/proc/self/maps', 'utf8');
  } catch {
    // no /proc mounted: process.report below
  }
  const mapped = maps === undefined ? undefined : cLibraryInMaps(maps);
  if (mapped) {
    running = { family: mapped.family, evidence: `${mapped.file} in /proc/self/maps` };
  } else {
    const report = process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined;
    const header = report?.header;
    running = header?.glibcVersionRuntime
      ? { family: 'glibc', evidence: `glibc ${header.glibcVersionRuntime} in process.report` }
      : { family: undefined, evidence: maps === undefined ? 'no /proc/self/maps, and process.report names no glibc' : 'neither glibc nor musl in /proc/self/maps' };
  }
  return running;
}

/** musl's name for each architecture, as in its dynamic linker's file name. */
const muslArchitectures: Readonly<Record<string, string>> = {
  x64: 'x86_64',
  arm64: 'aarch64',
  arm: 'armhf',
  ia32: 'i386',
  ppc64: 'powerpc64le',
  riscv64: 'riscv64',
  s390x: 's390x',
  loong64: 'loongarch64',
};

/**
 * The names to load libc by, in order. glibc's soname is libc.so.6. musl's
 * loader answers any name starting with "libc." with itself, so
 * libc.musl-<arch>.so.1 (Alpine's link) is its own name, and libc.so the
 * name without an architecture. An unknown C library gets all of them.
 */
export function libcSonames(family: CLibraryFamily | undefined, arch: string = process.arch): string[] {
  const musl = muslArchitectures[arch] ? [`libc.musl-${muslArchitectures[arch]}.so.1`, 'libc.so'] : ['libc.so'];
  if (family === 'glibc') return ['libc.so.6'];
  if (family === 'musl') return musl;
  return ['libc.so.6', ...musl];
}
