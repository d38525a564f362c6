// What a command that needs an RDMA device checks before it starts: that
// libibverbs lists one (opening none), else why not and what to do.
import process from 'node:process';
import { countDevices, noDeviceFoundReason } from '../api/verbs/devices.js';

/**
 * The exit status when there is no device to run `command` on (2, with what
 * is missing and how to add it), or the list cannot be read (1); else
 * undefined.
 */
export function noDeviceExit(command: string): number | undefined {
  let count: number;
  try {
    count = countDevices();
  } catch (error) {
    process.stderr.write(`rdmacm ${command}: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
  if (count > 0) return undefined;
  process.stderr.write(`rdmacm: ${noDeviceFoundReason()}\n`);
  return 2;
}
