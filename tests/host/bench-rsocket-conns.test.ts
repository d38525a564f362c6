// The C column of the bench's socket connection row (bench/rsocket-conns.c):
// it builds warning-free with the packages scripts/install-deps.sh installs,
// and refuses a bad command line before it touches a device. Its
// measurements need one: npm run bench.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import process from 'node:process';
import { packageRoot } from '../../src/package-info.js';

const work = mkdtempSync(join(tmpdir(), 'rdmacm-rsocket-conns-'));
after(() => rmSync(work, { recursive: true, force: true }));
const program = join(work, 'rsocket-conns');

// scripts/install-deps.sh installs the compiler and librdmacm's headers, so CI never skips.
const hasHeaders = existsSync('/usr/include/rdma/rsocket.h') && spawnSync('sh', ['-c', 'command -v cc']).status === 0;
const skip = !hasHeaders && !process.env.CI && 'no C compiler or librdmacm headers (Debian: apt-get install gcc librdmacm-dev)';

test('bench/rsocket-conns.c builds with -Wall -Wextra -Werror', { skip }, () => {
  const build = spawnSync('bash', ['bench/build-rsocket-conns.sh', program], { cwd: packageRoot(), encoding: 'utf8' });
  assert.equal(build.status, 0, build.stderr);
  assert.equal(build.stderr, '');
});

test('rsocket-conns refuses a bad command line with exit 2 and one line', { skip }, () => {
  const cases: [string[], RegExp][] = [
    [[], /^rsocket-conns: takes ADDRESS PORT \[COUNT\] \[WARMUP\]\n$/],
    [['10.0.0.1', '1', '2', '3', '4'], /^rsocket-conns: takes ADDRESS PORT/],
    [['fe80::1', '7000'], /^rsocket-conns: ADDRESS takes an IPv4 address\n$/],
    [['10.0.0.1', '0'], /^rsocket-conns: PORT takes 1-65535\n$/],
    [['10.0.0.1', '7000x'], /^rsocket-conns: PORT takes 1-65535\n$/],
    [['10.0.0.1', '7000', '0'], /^rsocket-conns: COUNT takes 1-1000000\n$/],
    [['10.0.0.1', '7000', '5', '-1'], /^rsocket-conns: WARMUP takes 0-1000000\n$/],
  ];
  for (const [args, message] of cases) {
    const run = spawnSync(program, args, { encoding: 'utf8', timeout: 10_000 });
    assert.equal(run.status, 2, `${args.join(' ')}: ${run.stderr}`);
    assert.match(run.stderr, message);
    assert.equal(run.stdout, '');
  }
});
