// The device tier in one process (node start-up is slow in the emulated guest).
// With CI=true the tier refuses to run without a device instead of skipping.
// RDMACM_TEST_ONLY=name[,name] runs only those files (e.g. "connection").
import { hasDevice } from '../support/device.js';

const files = ['raw-interop', 'devices', 'connection', 'examples'];

if (!hasDevice()) {
  console.error('device tier: no RDMA device here (set RDMACM_TEST_DEVICE or run through scripts/rxe-vm.sh)');
  process.exit(process.env.CI ? 1 : 0);
}

const only = process.env.RDMACM_TEST_ONLY?.split(',');
for (const file of files) {
  if (!only || only.includes(file)) await import(`./${file}.test.js`);
}
