// An address and port as the commands print them: IPv6 in brackets, as
// netcat and URLs write it.

/** `10.0.0.1:7471`, `[fd77::1]:7471`. */
export const endpoint = (address: string | undefined, port: number | undefined): string =>
  `${address?.includes(':') ? `[${address}]` : address}:${port}`;
