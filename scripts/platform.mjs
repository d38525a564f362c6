// Prints one line naming what the binding runs on here: the kernel, the C
// library and the rdma-core release of the librdmacm/libibverbs files this
// process loaded (from their names in /proc/self/maps), the arch and node.
// scripts/test.sh prints it in each device-tier step; the README's platform
// table quotes these lines. Needs `npm run build` (it imports dist/).
//   node scripts/platform.mjs [--expect-rdma-core N]   exits 1 unless both libraries are release N.x
import { release } from 'node:os';
import { librdmacm, libibverbs } from '../dist/src/raw.js';

librdmacm.has('rdma_create_id');   // loads the library
libibverbs.has('ibv_open_device');
const header = process.report.getReport().header;
const libc = header.glibcVersionRuntime ? `glibc ${header.glibcVersionRuntime}` : 'musl';
const at = process.argv.indexOf('--expect-rdma-core');
const expected = at > 0 ? process.argv[at + 1] : undefined;
console.log(`platform: Linux ${release()} ${process.arch}, ${libc}, rdma-core: librdmacm ${librdmacm.release ?? '?'}, libibverbs ${libibverbs.release ?? '?'}, node ${process.version}`);
if (expected !== undefined) {
  const major = (release) => release?.split('.')[0];
  if (major(librdmacm.release) !== expected || major(libibverbs.release) !== expected) {
    console.error(`platform: expected rdma-core ${expected}, but loaded librdmacm ${librdmacm.release ?? '?'} and libibverbs ${libibverbs.release ?? '?'}`);
    process.exitCode = 1;
  }
}
