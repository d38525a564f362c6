// The bench's C programs, each built by its bench/build-*.sh with the packages
// scripts/install-deps.sh installs: warning-free (-Wall -Wextra -Werror), and
// each checked without a device. What they measure needs one: npm run bench.
// - uv-pingpong.c, the events mode's C floor on libuv, and rsocket-conns.c,
//   rsockets' connections per second: a bad command line is refused with
//   exit 2 and one line, before anything native.
// - spin-gaps.c, a loop that only spins (the timer rows' floor): a bad
//   command line is refused the same way, and a short run prints its figures.
// - wake-charge.c, the LD_PRELOAD shim of bench/wake-charge.sh: it defines
//   ibv_get_cq_event for the dynamic linker to bind ahead of libibverbs'.
// - syscall-times.c, the LD_PRELOAD shim of bench/syscall-times.sh: it defines
//   the calls it times, and a process that rings no doorbell reports an empty
//   window rather than figures.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import process from 'node:process';
import { packageRoot } from '../../src/package-info.js';

const work = mkdtempSync(join(tmpdir(), 'rdmacm-bench-c-'));
after(() => rmSync(work, { recursive: true, force: true }));

/** Each bad command line, and what its one line of stderr says. */
type BadCommandLines = [string[], RegExp][];

/** What a built program is checked for, and the check. */
interface Check {
  check: string;
  verify(program: string): void;
}

/** The exit code 2, one line on stderr and nothing on stdout, for each bad command line. */
function refusesEach(cases: BadCommandLines): Check {
  return {
    check: 'refuses a bad command line with exit 2 and one line',
    verify: (program) => {
      for (const [args, message] of cases) {
        const run = spawnSync(program, args, { encoding: 'utf8', timeout: 10_000 });
        assert.equal(run.status, 2, `${basename(program)} ${args.join(' ')}: ${run.stderr}`);
        assert.match(run.stderr, message);
        assert.equal(run.stdout, '');
      }
    },
  };
}

/** Asserts that the shared object `shim` defines each of `calls` (for the dynamic linker to bind ahead of the library's). */
function assertDefines(shim: string, calls: string[]): void {
  const symbols = spawnSync('nm', ['-D', '--defined-only', shim], { encoding: 'utf8' });
  assert.equal(symbols.status, 0, symbols.stderr);
  for (const call of calls) assert.match(symbols.stdout, new RegExp(`^[0-9a-f]+ T ${call}$`, 'm'));
}

const programs: ({ source: string; output: string; needs: string; tools: string; install: string } & Check)[] = [
  {
    source: 'uv-pingpong.c', output: 'uv-pingpong', needs: '/usr/include/uv.h', tools: 'command -v cc', install: 'gcc libuv1-dev',
    ...refusesEach([
      [[], /^uv-pingpong: the client needs the server's address\n$/],
      [['-m', 'spin', '10.0.0.1'], /^uv-pingpong: -m takes uv, block or busy\n$/],
      [['-s', '-T'], /^uv-pingpong: -T is the client's, with -m uv or busy\n$/],
      [['-m', 'block', '-T', '10.0.0.1'], /^uv-pingpong: -T is the client's, with -m uv or busy\n$/],
      [['-z', '0', '10.0.0.1'], /^uv-pingpong: -z takes 1–4096/],
      [['-s', '-t', '70000'], /-t 0–65536\n$/],
    ]),
  },
  {
    source: 'rsocket-conns.c', output: 'rsocket-conns', needs: '/usr/include/rdma/rsocket.h', tools: 'command -v cc', install: 'gcc librdmacm-dev',
    ...refusesEach([
      [[], /^rsocket-conns: takes ADDRESS PORT \[COUNT\] \[WARMUP\]\n$/],
      [['10.0.0.1', '1', '2', '3', '4'], /^rsocket-conns: takes ADDRESS PORT/],
      [['fe80::1', '7000'], /^rsocket-conns: ADDRESS takes an IPv4 address\n$/],
      [['10.0.0.1', '0'], /^rsocket-conns: PORT takes 1-65535\n$/],
      [['10.0.0.1', '7000x'], /^rsocket-conns: PORT takes 1-65535\n$/],
      [['10.0.0.1', '7000', '0'], /^rsocket-conns: COUNT takes 1-1000000\n$/],
      [['10.0.0.1', '7000', '5', '-1'], /^rsocket-conns: WARMUP takes 0-1000000\n$/],
    ]),
  },
  {
    source: 'spin-gaps.c', output: 'spin-gaps', needs: '/usr/include/stdio.h', tools: 'command -v cc', install: 'gcc',
    check: 'refuses a bad command line with exit 2 and one line, and a 0.2 s run prints its figures',
    verify: (program) => {
      refusesEach([
        [['0'], /^spin-gaps: takes \[SECONDS\], over 0 and up to 600\n$/],
        [['601'], /^spin-gaps: takes \[SECONDS\]/],
        [['5x'], /^spin-gaps: takes \[SECONDS\]/],
        [['1', '2'], /^spin-gaps: takes \[SECONDS\]/],
      ]).verify(program);
      const run = spawnSync(program, ['0.2'], { encoding: 'utf8', timeout: 10_000 });
      assert.equal(run.status, 0, run.stderr);
      const figures = JSON.parse(run.stdout) as Record<string, number>;
      assert.ok(figures.seconds! >= 0.2 && figures.seconds! < 1, run.stdout);
      for (const key of ['gaps_100us', 'gaps_1ms', 'gaps_2ms', 'gaps_4ms', 'gaps_2ms_per_s', 'lost_percent', 'max_gap_ms']) {
        assert.ok(Number.isFinite(figures[key]) && figures[key]! >= 0, `${key} in ${run.stdout}`);
      }
      assert.ok(figures.gaps_100us! >= figures.gaps_1ms! && figures.gaps_1ms! >= figures.gaps_2ms! && figures.gaps_2ms! >= figures.gaps_4ms!, run.stdout);
    },
  },
  {
    source: 'wake-charge.c', output: 'wake-charge.so', needs: '/usr/include/infiniband/verbs.h', tools: 'command -v cc && command -v nm', install: 'gcc libibverbs-dev',
    check: 'defines ibv_get_cq_event',
    verify: (shim) => assertDefines(shim, ['ibv_get_cq_event']),
  },
  {
    source: 'syscall-times.c', output: 'syscall-times.so', needs: '/usr/include/stdio.h', tools: 'command -v cc && command -v nm', install: 'gcc',
    check: 'defines the calls it times and reports an empty window without doorbells',
    verify: (shim) => {
      assertDefines(shim, ['write', 'read', 'ioctl', 'epoll_wait', 'epoll_pwait']);
      const out = join(work, 'syscall-times.json');
      const run = spawnSync(process.execPath, ['-e', 'setTimeout(() => {}, 10)'], {
        encoding: 'utf8', timeout: 30_000, env: { ...process.env, LD_PRELOAD: shim, SYSCALL_TIMES_OUT: out },
      });
      assert.equal(run.status, 0, run.stderr);
      assert.deepEqual(JSON.parse(readFileSync(out, 'utf8')), { doorbells: 0, window: 0 });
    },
  },
];

for (const { source, output, needs, tools, install, check, verify } of programs) {
  // scripts/install-deps.sh installs the compiler and the headers, so CI never skips.
  const buildable = existsSync(needs) && spawnSync('sh', ['-c', tools]).status === 0;
  const skip = !buildable && !process.env.CI && `no C compiler or headers (Debian: apt-get install ${install})`;
  const built = join(work, output);
  const script = `bench/build-${source.replace(/\.c$/, '')}.sh`;

  test(`bench/${source} builds with -Wall -Wextra -Werror (${script}) and ${check}`, { skip }, () => {
    const build = spawnSync('bash', [script, built], { cwd: packageRoot(), encoding: 'utf8' });
    assert.equal(build.status, 0, build.stderr);
    assert.equal(build.stderr, '');
    verify(built);
  });
}
