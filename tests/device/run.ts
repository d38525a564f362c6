// The device tier in one process (node start-up is slow in the emulated guest).
// With CI=true the tier refuses to run without a device instead of skipping.
import { hasDevice } from '../support/device.js';

if (!hasDevice()) {
  console.error('device tier: no RDMA device here (set RDMACM_TEST_DEVICE or run through scripts/rxe-vm.sh)');
  process.exit(process.env.CI ? 1 : 0);
}

await import('./raw-interop.test.js');
