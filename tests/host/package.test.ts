// The published package works without tsx and without a C toolchain: pack it
// (prepack builds from an empty dist/), install the tarball into an empty
// folder with a PATH that has no gcc, g++, cc or make, and import it; install
// it again with install scripts off, as npm will do by default for
// dependencies not in `allowScripts`; then run its smoke test in the soft-RoCE
// VM it ships.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync, mkdirSync, existsSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

function which(tool: string): string {
  return execFileSync('sh', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).trim();
}

const work = mkdtempSync(join(tmpdir(), 'rdmacm-pack-'));
after(() => rmSync(work, { recursive: true, force: true }));

// A PATH with node and npm only (plus the shell tools npm itself runs).
const bin = join(work, 'bin');
mkdirSync(bin);
for (const tool of ['node', 'npm', 'sh', 'env']) symlinkSync(which(tool), join(bin, tool));
// What npm needs to reach its registry passes through (a proxy and the CA that
// signs for it): an official Node build's npm reads its global npmrc from that
// Node's own prefix, not /etc, so a cafile set there is not seen.
const reachRegistry = Object.fromEntries(Object.entries(process.env).filter(([name]) =>
  /^(NODE_EXTRA_CA_CERTS|SSL_CERT_FILE|SSL_CERT_DIR|https?_proxy|HTTPS?_PROXY|no_proxy|NO_PROXY|npm_config_(cafile|ca|proxy|https_proxy|noproxy|registry|strict_ssl))$/.test(name)));
const env = { ...reachRegistry, HOME: process.env.HOME ?? '/root', PATH: bin, npm_config_cache: process.env.npm_config_cache ?? join(process.env.HOME ?? '/root', '.npm') };

/** The packed tarball, once the first test has made it. */
let tarball: string | undefined;
/** The installed package's `rdmacm`, once the second test has installed it. */
let installedCli: string | undefined;

/** An empty project with the tarball installed by `npm install` with `flags`; returns its folder and npm's warnings. */
function installInto(name: string, flags: string[]): { app: string; warnings: string } {
  assert.ok(tarball, 'the package was packed by the first test');
  const app = join(work, name);
  mkdirSync(app);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0', private: true }));
  // npm retries a registry it cannot reach for minutes: a bound turns that into a failure that says so.
  const npm = spawnSync('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', ...flags, tarball], { cwd: app, env, encoding: 'utf8', timeout: 240_000 });
  assert.equal(npm.error, undefined, `npm install ${flags.join(' ')} did not finish in 240 s (a registry it cannot reach?): ${npm.stderr}`);
  assert.equal(npm.status, 0, `npm install ${flags.join(' ')}: ${npm.stderr}`);
  return { app, warnings: npm.stderr };
}

test('npm pack builds from an empty dist/ and ships only what users need', { timeout: 300_000 }, () => {
  // Packing runs prepack, which empties and rebuilds dist/: in a copy of the
  // checkout, so the checkout's own build stays in place for the other tests.
  const checkout = join(work, 'checkout');
  const skipped = new Set(['node_modules', 'dist', '.git', '.scratch', '.exp']);
  cpSync(repoRoot, checkout, {
    recursive: true,
    filter: (source) => {
      const path = relative(repoRoot, source);
      return !skipped.has(path) && !path.endsWith('.tgz');
    },
  });
  symlinkSync(realpathSync(join(repoRoot, 'node_modules')), join(checkout, 'node_modules'));
  // What an older build left behind must not ship.
  mkdirSync(join(checkout, 'dist/src'), { recursive: true });
  writeFileSync(join(checkout, 'dist/src/removed-module.js'), 'export {};\n');

  const packed = JSON.parse(
    execFileSync('npm', ['pack', '--json', '--pack-destination', work], { cwd: checkout, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }),
  ) as { filename: string; files: { path: string }[] }[];
  tarball = join(work, packed[0]!.filename);
  const files = packed[0]!.files.map((f) => f.path);
  assert.ok(files.includes('dist/src/index.js'), 'the tarball carries the built JS');
  assert.ok(files.includes('dist/src/index.d.ts'), 'the tarball carries the type declarations');
  assert.ok(files.includes('dist/src/cli/main.js'), 'the tarball carries the CLI');
  assert.ok(files.includes('dist/cli/rdmacm.js'), 'and the CLI bundled, whose entry bin/rdmacm runs');
  assert.ok(files.some((f) => /^dist\/cli\/chunks\/devices-\w+\.js$/.test(f)), 'with a chunk for each command, loaded when it runs');
  assert.ok(files.includes('dist/src/bench/loops.js'), 'the tarball carries the loops `rdmacm bench` runs (src/bench)');
  assert.ok(!files.includes('dist/src/removed-module.js'), 'prepack builds from an empty dist/');
  assert.ok(files.includes('dist/src/net/index.js') && files.includes('dist/src/net/index.d.ts'), 'the tarball carries rdmacm/net');
  assert.ok(files.includes('bin/rdmacm'));
  assert.ok(files.includes('scripts/setup-rxe.sh') && files.includes('scripts/rxe-vm.sh') && files.includes('scripts/vm-lib.sh'), 'the tarball carries the soft-RoCE scripts');
  assert.ok(files.includes('scripts/debian-packages.sh'), 'and what rxe-vm.sh --distro trixie fetches Debian 13 with');
  assert.ok(!files.some((f) => f.endsWith('.map')), 'no source maps whose sources are not published');
  const allowed = /^(dist\/src\/|dist\/cli\/(rdmacm|chunks\/[\w-]+)\.js$|bin\/rdmacm$|scripts\/(setup-rxe|rxe-vm|vm-lib|debian-packages)\.sh$|README\.md$|LICENSE$|package\.json$)/;
  assert.deepEqual(files.filter((f) => !allowed.test(f)), [], 'nothing else: no sources, tests, examples, benchmarks or docs');

  const manifest = JSON.parse(execFileSync('tar', ['-xOzf', tarball, 'package/package.json'], { encoding: 'utf8' })) as Record<string, unknown>;
  assert.equal((manifest.scripts as Record<string, string>).prepare, undefined, 'no prepare script: a consumer has no install script of ours to approve');
  for (const field of ['repository', 'bugs', 'homepage']) assert.ok(manifest[field], `package.json has ${field}`);
});

test('the tarball installs and imports with no compiler on PATH', { timeout: 300_000 }, () => {
  for (const compiler of ['gcc', 'g++', 'cc', 'c++', 'make']) assert.ok(!existsSync(join(bin, compiler)));
  const { app, warnings } = installInto('app', []);
  // npm 11 lists the install scripts a consumer must approve (koffi's); rdmacm has none.
  assert.doesNotMatch(warnings, /rdmacm@/, 'rdmacm is not among the packages with install scripts');
  assert.equal(execFileSync('sh', ['-c', 'command -v gcc cc make || true'], { env, encoding: 'utf8' }).trim(), '', 'no compiler is reachable');

  const imported = execFileSync('node', ['-e', "import('rdmacm').then((m) => console.log(Object.keys(m).sort().join(',')))"], { cwd: app, env, encoding: 'utf8' });
  assert.match(imported, /RdmaError/);
  assert.match(imported, /raw/);
  const net = execFileSync('node', ['-e', "import('rdmacm/net').then((m) => console.log(Object.keys(m).sort().join(',')))"], { cwd: app, env, encoding: 'utf8' });
  for (const name of ['RdmaServer', 'RdmaSocket', 'RdmaAgent', 'connect', 'createConnection', 'createServer', 'Socket', 'default']) {
    assert.ok(net.trim().split(',').includes(name), `rdmacm/net exports ${name}: ${net}`);
  }
  const version = execFileSync(join(app, 'node_modules/.bin/rdmacm'), ['--version'], { cwd: app, env, encoding: 'utf8' });
  assert.equal(version, `rdmacm ${(JSON.parse(readFileSync(join(app, 'node_modules/rdmacm/package.json'), 'utf8')) as { version: string }).version}\n`);
  const benchHelp = execFileSync(join(app, 'node_modules/.bin/rdmacm'), ['bench', '--help'], { cwd: app, env, encoding: 'utf8' });
  assert.match(benchHelp, /^Usage: rdmacm bench lat\|bw /, 'rdmacm bench runs from the tarball (its loops in dist/src/bench)');
  installedCli = join(app, 'node_modules/.bin/rdmacm');

  // The published declarations type-check on their own, from a consumer's side.
  writeFileSync(join(app, 'consumer.ts'), `
    import { AbortError, EventChannel, ResourceClosedError, listDevices, noDeviceFoundReason, raw, type CmId, type DeviceInfo, type MissingPiece } from 'rdmacm';
    import { librdmacm } from 'rdmacm/raw';
    import { createServer, type RdmaSocket } from 'rdmacm/net';
    export async function idsOf(channel: EventChannel): Promise<CmId[]> {
      const ids: CmId[] = [];
      for await (const event of channel) ids.push(event.id); // a channel's events carry CmIds
      return ids;
    }
    export const described = (): DeviceInfo[] => listDevices().filter((device): device is DeviceInfo => !('error' in device));
    export const errors: [string, string] = [new AbortError().code, new ResourceClosedError('queue pair', 'postSend').code];
    export const sameTable: typeof raw.librdmacm = librdmacm;
    export const server: ReturnType<typeof createServer> | undefined = undefined;
    export const onSocket = (socket: RdmaSocket): void => void socket.end();
    export const noDevice = (): [string, MissingPiece | undefined] => [noDeviceFoundReason(), undefined];
  `);
  writeFileSync(join(app, 'tsconfig.json'), JSON.stringify({
    compilerOptions: {
      module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', lib: ['es2022', 'esnext.disposable'], strict: true, noEmit: true,
      skipLibCheck: false, types: ['node'], typeRoots: [join(repoRoot, 'node_modules/@types')],
    },
    files: ['consumer.ts'],
  }));
  const tsc = spawnSync(process.execPath, [join(repoRoot, 'node_modules/typescript/bin/tsc'), '-p', app], { cwd: app, encoding: 'utf8' });
  assert.equal(tsc.status, 0, tsc.stdout + tsc.stderr);
});

// npm 11 warns that koffi's install script is not covered by `allowScripts`,
// and later npm versions skip such scripts. koffi's native module comes from its
// prebuilt optional dependency (@koromix/koffi-<platform>), so nothing needs them.
test('a consumer install with scripts off (npm install --ignore-scripts) loads koffi and the libraries', { timeout: 300_000 }, () => {
  const { app } = installInto('app-no-scripts', ['--ignore-scripts']);
  // Every library call either answers or fails with one of the package's typed errors.
  const probe = `
    const m = await import('rdmacm');
    const koffi = (await import('koffi')).default;
    const outcome = (call) => {
      try {
        return { ok: true, value: call() };
      } catch (error) {
        const typed = error instanceof m.RdmaError || error instanceof m.LibraryLoadError;
        return { ok: false, typed, name: error.name, code: error.code, message: error.message };
      }
    };
    console.log(JSON.stringify({
      koffi: koffi.version,
      pointerSize: koffi.sizeof('void *'),
      listDevices: outcome(() => m.listDevices().map((d) => d.name)),
      rdmaGetDevices: outcome(() => m.rdmaGetDevices()),
    }));`;
  const report = JSON.parse(execFileSync('node', ['--input-type=module', '-e', probe], { cwd: app, env, encoding: 'utf8' })) as {
    koffi: string; pointerSize: number;
    listDevices: { ok: boolean; value?: unknown; typed?: boolean; message?: string };
    rdmaGetDevices: { ok: boolean; value?: unknown; typed?: boolean; message?: string };
  };
  assert.match(report.koffi, /^\d+\.\d+\.\d+/, 'koffi\'s native module loaded without its install script');
  assert.equal(report.pointerSize, 8);
  for (const call of [report.listDevices, report.rdmaGetDevices]) {
    if (call.ok) assert.ok(Array.isArray(call.value), JSON.stringify(call));
    else assert.equal(call.typed, true, `an untyped failure: ${call.message}`);
  }
  // Where rdma-core is installed (scripts/install-deps.sh does it), the libraries load and answer.
  if (spawnSync('sh', ['-c', 'ldconfig -p | grep -q "librdmacm.so.1 "'], { env: { PATH: `${process.env.PATH}:/sbin:/usr/sbin` } }).status === 0) {
    assert.equal(report.listDevices.ok, true, JSON.stringify(report.listDevices));
    assert.equal(report.rdmaGetDevices.ok, true, JSON.stringify(report.rdmaGetDevices));
  }
});

// The VM needs QEMU, which rxe-vm.sh installs as root; CI runs as root, so it never skips there.
const canBootVm = Boolean(process.env.CI) || process.getuid?.() === 0 || spawnSync('sh', ['-c', 'command -v qemu-system-x86_64']).status === 0;
test('the installed package runs its smoke test in the soft-RoCE VM it ships (rdmacm smoke --vm)', { timeout: 720_000, skip: !canBootVm && 'no QEMU and not root' }, () => {
  assert.ok(installedCli, 'the package was installed by the test before');
  // The VM's own limit ends a stuck guest with exit 124 first; the first run also installs QEMU and fetches a kernel.
  const vmEnv = { ...process.env, RDMACM_VM_TIMEOUT: '480' };
  const result = spawnSync(installedCli, ['smoke', '--vm', '--json'], { cwd: join(work, 'app'), env: vmEnv, encoding: 'utf8', timeout: 660_000 });
  assert.equal(result.status, 0, `exit ${result.status}: ${result.stderr}`);
  const report = JSON.parse(result.stdout) as { ok: boolean; steps: { step: string; ok: boolean }[] };
  assert.equal(report.ok, true);
  assert.deepEqual(report.steps.map((step) => step.ok), [true, true, true, true, true], result.stdout);
});
