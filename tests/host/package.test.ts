// The published package works without tsx and without a C toolchain: pack it,
// install the tarball into an empty folder with a PATH that has no gcc, g++,
// cc or make, and import it; then run its smoke test in the soft-RoCE VM it ships.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync, mkdirSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

function which(tool: string): string {
  return execFileSync('sh', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).trim();
}

const work = mkdtempSync(join(tmpdir(), 'rdmacm-pack-'));
after(() => rmSync(work, { recursive: true, force: true }));
/** The installed package's `rdmacm`, once the first test has installed it. */
let installedCli: string | undefined;

test('npm pack installs and imports with no compiler on PATH', { timeout: 300_000 }, () => {
  const packed = JSON.parse(
    execFileSync('npm', ['pack', '--json', '--pack-destination', work], { cwd: repoRoot, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }),
  ) as { filename: string; files: { path: string }[] }[];
  const files = packed[0]!.files.map((f) => f.path);
  assert.ok(files.includes('dist/src/index.js'), 'the tarball carries the built JS');
  assert.ok(files.includes('dist/src/index.d.ts'), 'the tarball carries the type declarations');
  assert.ok(files.includes('dist/src/net/index.js') && files.includes('dist/src/net/index.d.ts'), 'the tarball carries rdmacm/net');
  assert.ok(files.includes('bin/rdmacm'));
  assert.ok(files.includes('scripts/setup-rxe.sh') && files.includes('scripts/rxe-vm.sh'), 'the tarball carries the soft-RoCE scripts');
  assert.ok(!files.some((f) => f.endsWith('.map')), 'no source maps whose sources are not published');
  assert.ok(!files.some((f) => f.startsWith('src/') || f.startsWith('tests/')), 'no TypeScript sources or tests are published');

  // A PATH with node and npm only (plus the shell tools npm itself runs).
  const bin = join(work, 'bin');
  mkdirSync(bin);
  for (const tool of ['node', 'npm', 'sh', 'env']) symlinkSync(which(tool), join(bin, tool));
  for (const compiler of ['gcc', 'g++', 'cc', 'c++', 'make']) assert.ok(!existsSync(join(bin, compiler)));
  const env = { HOME: process.env.HOME ?? '/root', PATH: bin, npm_config_cache: process.env.npm_config_cache ?? join(process.env.HOME ?? '/root', '.npm') };
  const app = join(work, 'app');
  mkdirSync(app);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0', private: true }));
  execFileSync('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', join(work, packed[0]!.filename)], { cwd: app, env, stdio: 'pipe' });
  assert.equal(execFileSync('sh', ['-c', 'command -v gcc cc make || true'], { env, encoding: 'utf8' }).trim(), '', 'no compiler is reachable');

  const imported = execFileSync('node', ['-e', "import('rdmacm').then((m) => console.log(Object.keys(m).sort().join(',')))"], { cwd: app, env, encoding: 'utf8' });
  assert.match(imported, /RdmaError/);
  assert.match(imported, /raw/);
  const net = execFileSync('node', ['-e', "import('rdmacm/net').then((m) => console.log(Object.keys(m).sort().join(',')))"], { cwd: app, env, encoding: 'utf8' });
  assert.match(net.trim(), /(^|,)RdmaServer,RdmaSocket,connect,createConnection,createServer(,|$)/);
  const version = execFileSync(join(app, 'node_modules/.bin/rdmacm'), ['--version'], { cwd: app, env, encoding: 'utf8' });
  assert.match(version, /^rdmacm \d+\.\d+\.\d+/);
  installedCli = join(app, 'node_modules/.bin/rdmacm');
});

// The VM needs QEMU, which rxe-vm.sh installs as root; CI runs as root, so it never skips there.
const canBootVm = Boolean(process.env.CI) || process.getuid?.() === 0 || spawnSync('sh', ['-c', 'command -v qemu-system-x86_64']).status === 0;
test('the installed package runs its smoke test in the soft-RoCE VM it ships (rdmacm smoke --vm)', { timeout: 720_000, skip: !canBootVm && 'no QEMU and not root' }, () => {
  assert.ok(installedCli, 'the package was installed by the test before');
  // The VM's own limit ends a stuck guest with exit 124 first; the first run also installs QEMU and fetches a kernel.
  const env = { ...process.env, RDMACM_VM_TIMEOUT: '480' };
  const result = spawnSync(installedCli, ['smoke', '--vm', '--json'], { cwd: join(work, 'app'), env, encoding: 'utf8', timeout: 660_000 });
  assert.equal(result.status, 0, `exit ${result.status}: ${result.stderr}`);
  const report = JSON.parse(result.stdout) as { ok: boolean; steps: { step: string; ok: boolean }[] };
  assert.equal(report.ok, true);
  assert.deepEqual(report.steps.map((step) => step.ok), [true, true, true, true, true], result.stdout);
});
