// The package's own metadata and files, found from wherever this module runs (src/ or dist/src/).
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The folder that holds rdmacm's package.json. */
export function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let depth = 0; depth < 6; depth++) {
    const candidate = join(dir, 'package.json');
    if (existsSync(candidate) && (JSON.parse(readFileSync(candidate, 'utf8')) as { name?: string }).name === 'rdmacm') return dir;
    dir = dirname(dir);
  }
  throw new Error('rdmacm: cannot find its own package.json');
}

export function packageVersion(): string {
  return (JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version: string }).version;
}

/** One of the scripts the package ships (scripts/setup-rxe.sh, scripts/rxe-vm.sh), by its real path. */
export function packageScript(name: 'setup-rxe.sh' | 'rxe-vm.sh'): string {
  return join(packageRoot(), 'scripts', name);
}

/** What to do on a host with no RDMA device, for messages; it names the installed script's path. */
export function noDeviceAdvice(): string {
  let setup = 'scripts/setup-rxe.sh';
  try {
    setup = packageScript('setup-rxe.sh');
  } catch {
    // no package.json found (a bundled copy): the relative name still says which script
  }
  return `create a soft-RoCE device with \`sudo ${setup}\` (on a kernel with rdma_rxe), or try rdmacm in a soft-RoCE VM with \`rdmacm smoke --vm\``;
}

/** The CLI's line for a host with no RDMA device. */
export function noDeviceFound(): string {
  return `no RDMA device found: ${noDeviceAdvice()}`;
}
