// Network interfaces by name and by index, for IPv6 zones (fe80::1%eth0):
// sockaddr_in6 carries the index, node:net's text the name. Read from /sys,
// as if_nametoindex and if_indextoname would answer.
import { readdirSync, readFileSync } from 'node:fs';

const SYS_NET = '/sys/class/net';

/** The index of the interface a zone names (a name, or an index in decimal); undefined for none here. */
export function interfaceIndex(zone: string): number | undefined {
  if (/^\d{1,10}$/.test(zone)) {
    const index = Number(zone);
    return index > 0 && index <= 0xffffffff ? index : undefined;
  }
  // Linux names are at most 15 bytes, with no '/' (nor '.' or '..' alone).
  if (!/^[\w.:-]{1,15}$/.test(zone) || zone === '.' || zone === '..') return undefined;
  try {
    const index = Number(readFileSync(`${SYS_NET}/${zone}/ifindex`, 'utf8'));
    return Number.isInteger(index) && index > 0 ? index : undefined;
  } catch {
    return undefined;
  }
}

/** The name of the interface with this index; undefined when none has it. */
export function interfaceName(index: number): string | undefined {
  let names: string[];
  try {
    names = readdirSync(SYS_NET);
  } catch {
    return undefined;
  }
  return names.find((name) => interfaceIndex(name) === index);
}
