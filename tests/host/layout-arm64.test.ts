// Every declared layout as koffi computes it on aarch64, against rdma-core's
// headers compiled by the aarch64 cross compiler. The binding's struct
// declarations run in an arm64 Node (the official build, from npm through
// scripts/arm64-node.sh) with koffi's arm64 prebuild, under qemu-user; the C
// program is built by aarch64-linux-gnu-gcc and runs under qemu-user too.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { layoutsFor } from '../../src/structs/index.js';
import { installedHeadersRelease, layoutProgram, parseProgramOutput, type FieldFact } from '../support/layout-program.js';

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const has = (tool: string) => spawnSync('sh', ['-c', `command -v ${tool}`]).status === 0;
const qemu = ['qemu-aarch64', 'qemu-aarch64-static'].find(has);
// scripts/install-deps.sh installs the cross compiler and qemu-user, so CI never skips.
const missingTools = [has('aarch64-linux-gnu-gcc') ? '' : 'aarch64-linux-gnu-gcc', qemu ? '' : 'qemu-aarch64'].filter(Boolean);
const skip = missingTools.length > 0 && !process.env.CI && `no ${missingTools.join(', ')} (Debian: apt-get install gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user)`;

const work = mkdtempSync(join(tmpdir(), 'rdmacm-layout-arm64-'));
const cleanups = [() => rmSync(work, { recursive: true, force: true })];
after(() => cleanups.forEach((cleanup) => cleanup()));

/** The structs and what the test needs of its support, as plain JavaScript in `app` (beside the arm64 koffi). */
function transpileInto(app: string): void {
  const sources = [
    ...readdirSync(join(repoRoot, 'src/structs')).filter((f) => f.endsWith('.ts')).map((f) => `src/structs/${f}`),
    'src/c-library.ts',
    'tests/support/layout-program.ts',
  ];
  for (const source of sources) {
    const { outputText } = ts.transpileModule(readFileSync(join(repoRoot, source), 'utf8'), {
      compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
      fileName: source,
    });
    const output = join(app, source.replace(/\.ts$/, '.js'));
    mkdirSync(dirname(output), { recursive: true });
    writeFileSync(output, outputText);
  }
  writeFileSync(join(app, 'entry.js'), [
    "import process from 'node:process';",
    "import { layoutsFor } from './src/structs/index.js';",
    "import { runningCLibrary } from './src/c-library.js';",
    "import { koffiFacts } from './tests/support/layout-program.js';",
    '// argv[2]: the rdma-core release of the headers the C side compiles against',
    'console.log(JSON.stringify({ arch: process.arch, cLibrary: runningCLibrary().family, facts: layoutsFor(process.argv[2]).flatMap(koffiFacts) }));',
  ].join('\n'));
}

test('every declared layout, as koffi computes it on arm64, matches the headers compiled for aarch64', { skip, timeout: 300_000 }, () => {
  // The C side: rdma-core's headers are the same for every architecture; the
  // cross compiler brings aarch64's libc and kernel headers.
  const include = join(work, 'include');
  mkdirSync(include);
  for (const name of ['infiniband', 'rdma']) symlinkSync(`/usr/include/${name}`, join(include, name));
  const release = installedHeadersRelease();
  assert.ok(release, 'the installed libibverbs-dev release is known');
  writeFileSync(join(work, 'layout.c'), layoutProgram(layoutsFor(release)));
  execFileSync('aarch64-linux-gnu-gcc', ['-std=gnu11', '-Wall', '-static', '-I', include, '-o', join(work, 'layout'), join(work, 'layout.c')], { stdio: 'pipe' });
  const fromC = parseProgramOutput(execFileSync(qemu!, [join(work, 'layout')], { encoding: 'utf8' }));

  // The koffi side, in the arm64 Node.
  // The running Node's release line, not its exact version: npm's arm64 builds can lag the x64 ones (22.23.5 had none).
  const line = process.versions.node.split('.')[0]!;
  const arm64 = execFileSync('bash', [join(repoRoot, 'scripts/arm64-node.sh'), line], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
  const app = mkdtempSync(join(arm64, 'layout-'));
  cleanups.push(() => rmSync(app, { recursive: true, force: true }));
  transpileInto(app);
  const output = execFileSync(qemu!, ['-L', '/usr/aarch64-linux-gnu', join(arm64, 'bin/node'), join(app, 'entry.js'), release], { encoding: 'utf8', maxBuffer: 16 << 20 });
  const fromKoffi = JSON.parse(output) as { arch: string; cLibrary: string; facts: FieldFact[] };

  assert.equal(fromKoffi.arch, 'arm64');
  assert.equal(fromKoffi.cLibrary, 'glibc', "the arm64 Node runs on the cross toolchain's glibc");
  assert.equal(fromC.length, fromKoffi.facts.length, 'one C fact per declared field');
  assert.deepEqual(fromKoffi.facts, fromC);
  // glibc's pthread_mutex_t is 48 bytes on aarch64 (40 on x86-64): ibv_context, ibv_cq, ibv_qp and ibv_srq hold one.
  const mutexes = fromC.filter((fact) => fact.path === 'mutex');
  assert.deepEqual(mutexes.map((fact) => fact.layout).sort(), ['struct ibv_context', 'struct ibv_cq', 'struct ibv_qp', 'struct ibv_srq']);
  for (const mutex of mutexes) assert.equal(mutex.size, 48, `${mutex.layout}.mutex`);
});
