// fork() support as libibverbs reports it. Each case runs in a child process:
// ibv_fork_init changes the process for good.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runChildModule } from '../support/child-module.js';

/** Runs `body` (an async function body with the package as `rdmacm`) in a child node; returns its last output line. */
function inChild(body: string, env: NodeJS.ProcessEnv = {}): string {
  const script = `const rdmacm = await import('./src/index.ts');\n${body}`;
  const result = runChildModule(script, { RDMAV_FORK_SAFE: '', IBV_FORK_SAFE: '', ...env });
  assert.equal(result.status, 0, result.stderr);
  return result.stdout.trim().split('\n').at(-1)!;
}

test('enableForkSafety() turns DISABLED into ENABLED, and may be called again; UNNEEDED stays UNNEEDED', () => {
  const [before, after, again] = JSON.parse(inChild(`
    const before = rdmacm.forkStatus();
    rdmacm.enableForkSafety();
    const after = rdmacm.forkStatus();
    rdmacm.enableForkSafety();
    console.log(JSON.stringify([before, after, rdmacm.forkStatus()]));`)) as string[];
  assert.ok(['DISABLED', 'UNNEEDED'].includes(before!), `nothing enabled it yet: ${before}`);
  assert.equal(after, before === 'UNNEEDED' ? 'UNNEEDED' : 'ENABLED');
  assert.equal(again, after);
});

test('RDMAV_FORK_SAFE=1 enables it once libibverbs initialises (at the first device listing)', () => {
  const status = inChild(`
    try { rdmacm.listDevices(); } catch {}
    console.log(rdmacm.forkStatus());`, { RDMAV_FORK_SAFE: '1' });
  assert.ok(['ENABLED', 'UNNEEDED'].includes(status), status);
});
