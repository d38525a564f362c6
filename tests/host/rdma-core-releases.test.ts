// The binding against more than one rdma-core release: it reads the struct
// ibv_port_attr of the libibverbs it loaded (52 bytes before rdma-core 49, 56
// from it). This host has 44; Debian 13's libibverbs 56 runs in a child whose
// C library is Debian 13's too (libibverbs 56 needs glibc 2.38): both packages
// are unpacked into a cache by scripts/debian-packages.sh and the child is
// started by their dynamic loader, so nothing is installed.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';
import { libibverbs } from '../../src/ffi/libibverbs.js';
import { portAttrLayout } from '../../src/api/verbs/devices.js';
import { ibv_port_attr, ibv_port_attr_before_49 } from '../../src/structs/verbs-device.js';

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

const work = mkdtempSync(join(tmpdir(), 'rdmacm-releases-'));
after(() => rmSync(work, { recursive: true, force: true }));

/** sizeof(struct ibv_port_attr) as a C program compiled against the headers (the installed ones, or those under `include`) has it. */
function portAttrSizeInHeaders(include?: string): number {
  const source = join(work, 'size.c');
  writeFileSync(source, '#include <stdio.h>\n#include <infiniband/verbs.h>\nint main(void) { printf("%zu\\n", sizeof(struct ibv_port_attr)); return 0; }\n');
  const binary = join(work, 'size');
  execFileSync('gcc', [...(include ? ['-I', include] : []), '-o', binary, source], { stdio: 'pipe' });
  return Number(execFileSync(binary, { encoding: 'utf8' }));
}

test("this host's libibverbs: the ibv_port_attr of its own headers (52 bytes in rdma-core 44)", () => {
  assert.equal(portAttrLayout().size, portAttrSizeInHeaders(), `libibverbs ${libibverbs.release}`);
  if (libibverbs.release === '44.0') assert.equal(portAttrLayout(), ibv_port_attr_before_49);
});

// The packages come from Debian's archive; CI has the network and apt, so it never skips.
const noDebian = spawnSync('sh', ['-c', 'command -v apt-get && command -v dpkg-deb']).status !== 0 && !process.env.CI && 'not a Debian system (no apt-get)';

test("Debian 13's libibverbs (rdma-core 56), on its own glibc: the 56-byte ibv_port_attr with active_speed_ex", { skip: noDebian || (process.arch !== 'x64' && 'the unpacked packages are amd64'), timeout: 180_000 }, () => {
  const fetch = (...packages: string[]) =>
    execFileSync('bash', [join(repoRoot, 'scripts/debian-packages.sh'), 'trixie', ...packages], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
  const root = fetch('libc6', 'libibverbs1');
  const headers = join(fetch('libibverbs-dev', 'librdmacm-dev'), 'usr/include');
  const libraries = join(root, 'usr/lib/x86_64-linux-gnu');
  const loader = [join(root, 'usr/lib64/ld-linux-x86-64.so.2'), join(root, 'lib64/ld-linux-x86-64.so.2')].find(existsSync);
  assert.ok(loader, `a dynamic loader in ${root}`);
  const script = `
    import fs from 'node:fs';
    import { libibverbs } from './src/ffi/libibverbs.ts';
    import { portAttrLayout } from './src/api/verbs/devices.ts';
    const release = libibverbs.release; // loads it
    const mapped = fs.readFileSync('/proc/self/maps', 'utf8').split('\\n').map((line) => line.slice(line.indexOf('/'))).filter((file) => /libibverbs\\.so|\\/libc\\.so/.test(file));
    console.log(JSON.stringify({ glibc: process.report.getReport().header.glibcVersionRuntime, release, size: portAttrLayout().size, fields: Object.keys(portAttrLayout().members), mapped: [...new Set(mapped)] }));`;
  // Debian 13's libc and libibverbs first; the rest (libstdc++, libnl) from this host.
  const result = spawnSync(loader, ['--library-path', `${libraries}:/usr/lib/x86_64-linux-gnu:/lib/x86_64-linux-gnu`, process.execPath, '--import', 'tsx', '--input-type=module', '-e', script], {
    cwd: repoRoot, encoding: 'utf8',
  });
  assert.equal(result.status, 0, result.stderr);
  const seen = JSON.parse(result.stdout) as { glibc: string; release: string; size: number; fields: string[]; mapped: string[] };
  assert.match(seen.glibc, /^2\.(3[89]|[4-9]\d)$/, "the child runs on Debian 13's glibc");
  assert.ok(seen.mapped.includes(join(libraries, 'libibverbs.so.1.14.56.1')), seen.mapped.join(', '));
  assert.equal(seen.release, '56.1');
  assert.equal(seen.size, portAttrSizeInHeaders(headers), "the size in libibverbs 56's own headers");
  assert.equal(seen.size, 56);
  assert.deepEqual(seen.fields, Object.keys(ibv_port_attr.members!));
  assert.equal(seen.fields.at(-1), 'active_speed_ex');
});
