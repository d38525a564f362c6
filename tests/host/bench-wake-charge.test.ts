// bench/wake-charge.c, the LD_PRELOAD shim that charges a C program a Node
// process's wake-up (bench/wake-charge.sh): it builds warning-free with the
// packages scripts/install-deps.sh installs, and defines ibv_get_cq_event for
// the dynamic linker to bind ahead of libibverbs'. What it charges needs a
// device: bench/wake-charge.sh.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import process from 'node:process';
import { packageRoot } from '../../src/package-info.js';

const work = mkdtempSync(join(tmpdir(), 'rdmacm-wake-charge-'));
after(() => rmSync(work, { recursive: true, force: true }));
const shim = join(work, 'wake-charge.so');

// scripts/install-deps.sh installs the compiler and the verbs headers, so CI never skips.
const hasHeaders = existsSync('/usr/include/infiniband/verbs.h') && spawnSync('sh', ['-c', 'command -v cc && command -v nm']).status === 0;
const skip = !hasHeaders && !process.env.CI && 'no C compiler, nm or verbs headers (Debian: apt-get install gcc libibverbs-dev)';

test('bench/wake-charge.c builds with -Wall -Wextra -Werror and defines ibv_get_cq_event', { skip }, () => {
  const build = spawnSync('bash', ['bench/build-wake-charge.sh', shim], { cwd: packageRoot(), encoding: 'utf8' });
  assert.equal(build.status, 0, build.stderr);
  assert.equal(build.stderr, '');
  const symbols = spawnSync('nm', ['-D', '--defined-only', shim], { encoding: 'utf8' });
  assert.equal(symbols.status, 0, symbols.stderr);
  assert.match(symbols.stdout, /^[0-9a-f]+ T ibv_get_cq_event$/m);
});
