// Prints one line naming what the binding runs on here: the kernel, the C
// library and the rdma-core release of the librdmacm/libibverbs files this
// process loaded (from their names in /proc/self/maps), the arch and node.
// scripts/test.sh prints it in each device-tier step; the README's platform
// table quotes these lines. Needs `npm run build` (it imports dist/).
//   node scripts/platform.mjs [--step NAME] [--expect-rdma-core N] [--expect-node N]
//   --step names the test step in the line; --expect-rdma-core exits 1 unless
//   both libraries are release N.x, --expect-node unless node is N.x.
import { release } from 'node:os';
import { librdmacm, libibverbs } from '../dist/src/raw.js';

// Loading may fail (no rdma-core here): the line says so, and only --expect fails for it.
const load = (library, symbol) => {
  try {
    library.has(symbol);
    return library.release ?? '?';
  } catch (error) {
    return `not loaded (${error instanceof Error ? error.message.split('\n')[0] : String(error)})`;
  }
};
const rdmacmRelease = load(librdmacm, 'rdma_create_id');
const verbsRelease = load(libibverbs, 'ibv_open_device');
const header = process.report.getReport().header;
const libc = header.glibcVersionRuntime ? `glibc ${header.glibcVersionRuntime}` : 'musl';
const option = (name) => {
  const at = process.argv.indexOf(name);
  return at > 0 ? process.argv[at + 1] : undefined;
};
const expected = option('--expect-rdma-core');
const step = option('--step');
console.log(`platform: ${step ? `${step}: ` : ''}Linux ${release()} ${process.arch}, ${libc}, rdma-core: librdmacm ${rdmacmRelease}, libibverbs ${verbsRelease}, node ${process.version}`);
const major = (version) => version.split('.')[0];
if (expected !== undefined) {
  if (major(rdmacmRelease) !== expected || major(verbsRelease) !== expected) {
    console.error(`platform: expected rdma-core ${expected}, but librdmacm is ${rdmacmRelease} and libibverbs ${verbsRelease}`);
    process.exitCode = 1;
  }
}
const expectedNode = option('--expect-node');
if (expectedNode !== undefined && major(process.versions.node) !== expectedNode) {
  console.error(`platform: expected node ${expectedNode}, but this is node ${process.version}`);
  process.exitCode = 1;
}
