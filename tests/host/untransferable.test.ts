// markUntransferable on this Node: a marked buffer is never detached by a
// transfer (nor by the probe that decides whether to mark it), and a
// WebAssembly memory still grows (from Node 24 the mark on its buffer made
// grow() abort the process). The device tier runs the same through
// registration on Node 20 and Node 24.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { markUntransferable } from '../../src/api/core/untransferable.js';
import { MemoryRegion } from '../../src/api/verbs/memory-region.js';

/** Node 20 copies a marked buffer in a transfer; from Node 21 the transfer throws DataCloneError (nodejs/node#47604). */
const copiesOnTransfer = Number(process.versions.node.split('.')[0]) < 21;

test('a marked buffer keeps its bytes through structuredClone and postMessage with a transfer list', () => {
  const bytes = new Uint8Array(64).fill(7);
  markUntransferable(bytes.buffer);
  markUntransferable(bytes.buffer); // marked already: left as it is
  assert.equal(bytes.byteLength, 64, 'asking whether it may be transferred detached nothing');
  const { port1, port2 } = new MessageChannel();
  try {
    if (copiesOnTransfer) {
      const copy = structuredClone(bytes, { transfer: [bytes.buffer] });
      assert.notEqual(copy.buffer, bytes.buffer);
      assert.deepEqual([...copy], [...bytes]);
      port1.postMessage(bytes.buffer, [bytes.buffer]);
    } else {
      assert.throws(() => structuredClone(bytes, { transfer: [bytes.buffer] }), { name: 'DataCloneError' });
      assert.throws(() => port1.postMessage(bytes.buffer, [bytes.buffer]), { name: 'DataCloneError' });
    }
    assert.equal(bytes.byteLength, 64);
    assert.ok(bytes.every((byte) => byte === 7));
  } finally {
    port1.close();
    port2.close();
  }
});

test('a WebAssembly memory whose buffer went through it still grows, in a process of its own', () => {
  const url = new URL('../../src/api/core/untransferable.ts', import.meta.url).href;
  const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', `
    const { markUntransferable } = await import(${JSON.stringify(url)});
    const memory = new WebAssembly.Memory({ initial: 1 });
    const view = new Uint8Array(memory.buffer);
    view[0] = 42;
    markUntransferable(memory.buffer);
    memory.grow(1);
    console.log(view.byteLength, memory.buffer.byteLength, new Uint8Array(memory.buffer)[0]);`], { encoding: 'utf8', timeout: 60_000 });
  assert.equal(child.status, 0, child.stderr);
  assert.equal(child.stdout.trim(), '0 131072 42', 'the old view is detached by the grow, the memory kept its byte');
});

test('a page-aligned buffer stays transferable until it is marked, then refuses a transfer as any marked buffer does', () => {
  // MemoryRegion.pageAligned notes its ArrayBuffer as allocated here: the mark then skips the probe, and only the mark.
  const free = MemoryRegion.pageAligned(4096);
  const moved = structuredClone(free, { transfer: [free.buffer as ArrayBuffer] });
  assert.equal(free.byteLength, 0, 'unmarked, it was transferred (detached)');
  assert.equal(moved.byteLength, 4096);

  const kept = MemoryRegion.pageAligned(4096).fill(9);
  markUntransferable(kept.buffer);
  if (copiesOnTransfer) structuredClone(kept, { transfer: [kept.buffer as ArrayBuffer] });
  else assert.throws(() => structuredClone(kept, { transfer: [kept.buffer as ArrayBuffer] }), { name: 'DataCloneError' });
  assert.equal(kept.byteLength, 4096, 'marked, it kept its memory');
  assert.ok(kept.every((byte) => byte === 9));
});
