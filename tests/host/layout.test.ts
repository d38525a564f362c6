// Every struct the binding declares, checked field by field against the real
// headers: a C program generated from the TypeScript declarations is compiled
// with gcc and prints sizeof, alignof and offsetof.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync, rmSync, mkdirSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import process from 'node:process';
import { declaredLayouts } from '../../src/structs/index.js';
import { koffiFacts, layoutProgram, parseProgramOutput } from '../support/layout-program.js';

test('every declared layout matches the C headers', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rdmacm-layout-'));
  try {
    writeFileSync(join(dir, 'layout.c'), layoutProgram(declaredLayouts));
    execFileSync('gcc', ['-std=gnu11', '-Wall', '-o', join(dir, 'layout'), join(dir, 'layout.c')], { stdio: 'pipe' });
    const fromC = parseProgramOutput(execFileSync(join(dir, 'layout'), { encoding: 'utf8' }));
    const fromKoffi = declaredLayouts.flatMap(koffiFacts);
    assert.equal(fromC.length, fromKoffi.length, 'one C fact per declared field');
    assert.deepEqual(fromKoffi, fromC);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

// scripts/install-deps.sh installs musl-tools, so CI never skips; musl-gcc targets x86-64 here.
const hasMuslGcc = execFileSync('sh', ['-c', 'command -v musl-gcc || true'], { encoding: 'utf8' }).trim() !== '';
const noMusl = process.arch !== 'x64' ? `musl-gcc builds x86-64 programs; this is ${process.arch}`
  : !hasMuslGcc && !process.env.CI ? 'no musl-gcc (Debian: apt-get install musl-tools)' : false;

test('every declared layout matches the C headers compiled against musl (x86-64)', { skip: noMusl }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'rdmacm-layout-musl-'));
  try {
    // musl-gcc sees only musl's own headers: rdma-core's and the kernel's are linked in beside them.
    const include = join(dir, 'include');
    mkdirSync(include);
    const asm = existsSync('/usr/include/x86_64-linux-gnu/asm') ? '/usr/include/x86_64-linux-gnu/asm' : '/usr/include/asm';
    const linked = { infiniband: '/usr/include/infiniband', rdma: '/usr/include/rdma', linux: '/usr/include/linux', asm, 'asm-generic': '/usr/include/asm-generic' };
    for (const [name, target] of Object.entries(linked)) symlinkSync(target, join(include, name));
    writeFileSync(join(dir, 'layout.c'), layoutProgram(declaredLayouts));
    execFileSync('musl-gcc', ['-std=gnu11', '-Wall', '-I', include, '-o', join(dir, 'layout'), join(dir, 'layout.c')], { stdio: 'pipe' });
    const fromC = parseProgramOutput(execFileSync(join(dir, 'layout'), { encoding: 'utf8' }));
    assert.deepEqual(declaredLayouts.flatMap(koffiFacts), fromC);
    const mutexSize = fromC.find((fact) => fact.layout === 'struct ibv_context' && fact.path === 'mutex')!.size;
    assert.equal(mutexSize, 40, "musl's pthread_mutex_t");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the layouts the data path depends on are covered', () => {
  const names = new Set(declaredLayouts.map((l) => l.cName));
  for (const required of [
    'struct rdma_addrinfo', 'struct rdma_cm_id', 'struct rdma_cm_event', 'struct rdma_conn_param', 'struct rdma_ud_param',
    'struct ibv_qp_init_attr', 'struct ibv_qp_cap', 'struct ibv_mr', 'struct ibv_sge', 'struct ibv_send_wr',
    'struct ibv_recv_wr', 'struct ibv_wc', 'struct ibv_context', 'struct ibv_context_ops', 'struct ibv_device_attr',
    'struct ibv_port_attr', 'union ibv_gid', 'struct ibv_ah_attr', 'struct ibv_global_route',
    'struct sockaddr_in', 'struct sockaddr_in6', 'struct sockaddr_storage',
  ]) {
    assert.ok(names.has(required), `${required} is declared`);
  }
  const sendWr = declaredLayouts.find((l) => l.cName === 'struct ibv_send_wr')!;
  assert.equal(sendWr.type.size, 128);
});
