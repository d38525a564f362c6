// What device-tier tests need to know about the RDMA device they run on.
import { existsSync, readdirSync } from 'node:fs';

/** The RDMA devices this host's kernel has (none where it has no RDMA stack). */
export function hostRdmaDevices(): string[] {
  return existsSync('/sys/class/infiniband') ? readdirSync('/sys/class/infiniband') : [];
}

/** True where this host has an RDMA device (or the harness named one). */
export function hasDevice(): boolean {
  return Boolean(process.env.RDMACM_TEST_DEVICE) || hostRdmaDevices().length > 0;
}

/** The IPv4 address bound to the test device's netdev (set by scripts/rxe-vm.sh). */
export function deviceAddress(): string {
  const address = process.env.RDMACM_TEST_ADDR;
  if (!address) throw new Error('RDMACM_TEST_ADDR is not set: run the device tier through scripts/test.sh or scripts/rxe-vm.sh');
  return address;
}

let nextPort = 20000 + (process.pid % 20000);
/** A fresh TCP-port-space port for each test, so tests never collide. */
export function freshPort(): number {
  return nextPort++;
}
