// The bench's C ping-pong on libuv (bench/uv-pingpong.c), the floor that
// `npm run bench` sets beside the events mode: it builds warning-free with the
// packages scripts/install-deps.sh installs, and refuses a bad command line
// before it touches a device. Its measurements need one: npm run bench.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import process from 'node:process';
import { packageRoot } from '../../src/package-info.js';

const work = mkdtempSync(join(tmpdir(), 'rdmacm-uv-pingpong-'));
after(() => rmSync(work, { recursive: true, force: true }));
const program = join(work, 'uv-pingpong');

// scripts/install-deps.sh installs the compiler and libuv's headers, so CI never skips.
const hasHeaders = existsSync('/usr/include/uv.h') && spawnSync('sh', ['-c', 'command -v cc']).status === 0;
const skip = !hasHeaders && !process.env.CI && 'no C compiler or libuv headers (Debian: apt-get install gcc libuv1-dev)';

test('bench/uv-pingpong.c builds with -Wall -Wextra -Werror', { skip }, () => {
  const build = spawnSync('bash', ['bench/build-uv-pingpong.sh', program], { cwd: packageRoot(), encoding: 'utf8' });
  assert.equal(build.status, 0, build.stderr);
  assert.equal(build.stderr, '');
});

test('uv-pingpong refuses a bad command line with exit 2 and one line', { skip }, () => {
  const cases: [string[], RegExp][] = [
    [[], /^uv-pingpong: the client needs the server's address\n$/],
    [['-m', 'spin', '10.0.0.1'], /^uv-pingpong: -m takes uv, block or busy\n$/],
    [['-s', '-T'], /^uv-pingpong: -T is the client's, with -m uv or busy\n$/],
    [['-m', 'block', '-T', '10.0.0.1'], /^uv-pingpong: -T is the client's, with -m uv or busy\n$/],
    [['-z', '0', '10.0.0.1'], /^uv-pingpong: -z takes 1–4096/],
    [['-s', '-t', '70000'], /-t 0–65536\n$/],
  ];
  for (const [args, message] of cases) {
    const run = spawnSync(program, args, { encoding: 'utf8', timeout: 10_000 });
    assert.equal(run.status, 2, `${args.join(' ')}: ${run.stderr}`);
    assert.match(run.stderr, message);
    assert.equal(run.stdout, '');
  }
});
