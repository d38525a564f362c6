// Every struct the binding declares, checked field by field against the real
// headers: a C program generated from the TypeScript declarations is compiled
// and prints sizeof, alignof and offsetof. Against the installed headers with
// gcc and with musl-gcc, and against rdma-core 56's (Debian 13's, unpacked
// into a cache by scripts/debian-packages.sh), where struct ibv_port_attr grew.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync, rmSync, mkdirSync, readFileSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';
import { declaredLayouts, ibvPortAttrFor, layoutsFor, type DeclaredLayout } from '../../src/structs/index.js';
import { installedHeadersRelease, koffiFacts, layoutProgram, parseProgramOutput, type FieldFact } from '../support/layout-program.js';

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const work = mkdtempSync(join(tmpdir(), 'rdmacm-layout-'));
after(() => rmSync(work, { recursive: true, force: true }));

/** The facts a program built by `compiler` prints for `layouts` (each run gets its own folder). */
function factsFromC(name: string, layouts: readonly DeclaredLayout[], compiler: string, flags: readonly string[] = []): FieldFact[] {
  const dir = join(work, name);
  mkdirSync(dir);
  writeFileSync(join(dir, 'layout.c'), layoutProgram(layouts));
  execFileSync(compiler, ['-std=gnu11', '-Wall', ...flags, '-o', join(dir, 'layout'), join(dir, 'layout.c')], { stdio: 'pipe' });
  return parseProgramOutput(execFileSync(join(dir, 'layout'), { encoding: 'utf8' }));
}

function assertSame(layouts: readonly DeclaredLayout[], fromC: readonly FieldFact[]): void {
  const fromKoffi = layouts.flatMap(koffiFacts);
  assert.equal(fromC.length, fromKoffi.length, 'one C fact per declared field');
  assert.deepEqual(fromKoffi, fromC);
}

const installed = installedHeadersRelease();

test('every declared layout matches the installed C headers', () => {
  assert.ok(installed, 'the installed libibverbs-dev release is known');
  const layouts = layoutsFor(installed);
  assertSame(layouts, factsFromC('gcc', layouts, 'gcc'));
});

// scripts/install-deps.sh installs musl-tools, so CI never skips; musl-gcc targets x86-64 here.
const hasMuslGcc = spawnSync('sh', ['-c', 'command -v musl-gcc']).status === 0;
const noMusl = process.arch !== 'x64' ? `musl-gcc builds x86-64 programs; this is ${process.arch}`
  : !hasMuslGcc && !process.env.CI ? 'no musl-gcc (Debian: apt-get install musl-tools)' : false;

test('every declared layout matches the C headers compiled against musl (x86-64)', { skip: noMusl }, () => {
  // musl-gcc sees only musl's own headers: rdma-core's and the kernel's are linked in beside them.
  const include = join(work, 'musl-include');
  mkdirSync(include);
  const asm = existsSync('/usr/include/x86_64-linux-gnu/asm') ? '/usr/include/x86_64-linux-gnu/asm' : '/usr/include/asm';
  const linked = { infiniband: '/usr/include/infiniband', rdma: '/usr/include/rdma', linux: '/usr/include/linux', asm, 'asm-generic': '/usr/include/asm-generic' };
  for (const [name, target] of Object.entries(linked)) symlinkSync(target, join(include, name));
  const layouts = layoutsFor(installed!);
  const fromC = factsFromC('musl', layouts, 'musl-gcc', ['-I', include]);
  assertSame(layouts, fromC);
  const mutexSize = fromC.find((fact) => fact.layout === 'struct ibv_context' && fact.path === 'mutex')!.size;
  assert.equal(mutexSize, 40, "musl's pthread_mutex_t");
});

// The unpacked packages come from Debian's archive (apt-get download with the
// script's own sources list); CI has the network, so it never skips.
const noDebian = spawnSync('sh', ['-c', 'command -v apt-get && command -v dpkg-deb']).status !== 0 && !process.env.CI && 'not a Debian system (no apt-get)';

test("every declared layout for rdma-core 56 matches Debian 13's headers: ibv_port_attr has active_speed_ex", { skip: noDebian, timeout: 180_000 }, () => {
  const root = execFileSync('bash', [join(repoRoot, 'scripts/debian-packages.sh'), 'trixie', 'libibverbs-dev', 'librdmacm-dev'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
  const versions = readFileSync(join(root, '.packages'), 'utf8');
  const release = /^libibverbs-dev (\d+)\./m.exec(versions)?.[1];
  assert.equal(release, '56', versions);
  const layouts = layoutsFor(release!);
  // rdma-core's own headers come first; the kernel's and libc's stay the installed ones.
  const fromC = factsFromC('rdma-core-56', layouts, 'gcc', ['-I', join(root, 'usr/include')]);
  assertSame(layouts, fromC);
  const portAttr = fromC.find((fact) => fact.layout === 'struct ibv_port_attr' && fact.path === '')!;
  assert.equal(portAttr.size, 56);
  assert.deepEqual(fromC.find((fact) => fact.layout === 'struct ibv_port_attr' && fact.path === 'active_speed_ex'), { layout: 'struct ibv_port_attr', path: 'active_speed_ex', offset: 52, size: 4 });
  assert.equal(ibvPortAttrFor('56.1').size, 56, 'the binding reads this layout from libibverbs 56');
});

test('ibv_port_attr: one layout before rdma-core 49 and one from it, each compared with its own headers', () => {
  const variants = declaredLayouts.filter((layout) => layout.cName === 'struct ibv_port_attr');
  assert.deepEqual(variants.map((layout) => [layout.type.size, layout.releases]), [[56, { from: 49 }], [52, { before: 49 }]]);
  assert.equal(ibvPortAttrFor('44.0').size, 52);
  assert.equal(ibvPortAttrFor('48.0').size, 52);
  assert.equal(ibvPortAttrFor('49.0').size, 56);
  assert.equal(ibvPortAttrFor(undefined).size, 52, 'an unknown release gets the layout every libibverbs fills');
  for (const release of [44, 56]) assert.equal(layoutsFor(release).filter((layout) => layout.cName === 'struct ibv_port_attr').length, 1);
});

test('the layouts the data path depends on are covered', () => {
  const names = new Set(declaredLayouts.map((l) => l.cName));
  for (const required of [
    'struct rdma_addrinfo', 'struct rdma_cm_id', 'struct rdma_cm_event', 'struct rdma_conn_param', 'struct rdma_ud_param',
    'struct ibv_qp_init_attr', 'struct ibv_qp_cap', 'struct ibv_mr', 'struct ibv_sge', 'struct ibv_send_wr',
    'struct ibv_recv_wr', 'struct ibv_wc', 'struct ibv_context', 'struct ibv_context_ops', 'struct ibv_device_attr',
    'struct ibv_port_attr', 'union ibv_gid', 'struct ibv_ah_attr', 'struct ibv_global_route',
    'struct sockaddr_in', 'struct sockaddr_in6', 'struct sockaddr_storage', 'struct verbs_context',
  ]) {
    assert.ok(names.has(required), `${required} is declared`);
  }
  const sendWr = declaredLayouts.find((l) => l.cName === 'struct ibv_send_wr')!;
  assert.equal(sendWr.type.size, 128);
});
