// The errors of loading and binding a library: one that does not load, and a
// function it is too old to have. Apart from errors.ts, whose hints call into
// libibverbs, so that library.ts imports nothing that imports it back.

/** What to install when one of rdma-core's libraries is missing, on each family of distributions. */
export const RDMA_CORE_ADVICE =
  'Install rdma-core\'s runtime: Debian/Ubuntu `apt-get install librdmacm1 ibverbs-providers`, ' +
  'Fedora/RHEL `dnf install librdmacm libibverbs`, Alpine `apk add rdma-core`.';

/** What a function too new for the installed library needs. */
export interface Requirement {
  /** The library, e.g. 'librdmacm'. */
  readonly library: string;
  /** The symbol version that brought it, e.g. 'RDMACM_1.4'. */
  readonly symbolVersion: string;
  /** The first rdma-core release with that symbol version, e.g. '60'. */
  readonly release: string | undefined;
  /** The installed rdma-core release, read from the loaded file's name (librdmacm.so.1.3.44.0 is 44.0). */
  readonly installed: string | undefined;
}

/** A function the installed library is too old to have (or the device does not support). */
export class UnsupportedError extends Error {
  override name = 'UnsupportedError';
  readonly code = 'EOPNOTSUPP';
  constructor(readonly feature: string, reason: string, readonly requirement?: Requirement) {
    super(`${feature} is unsupported ${reason}`);
  }

  /** `feature` needs a newer rdma-core than the one installed: names both releases and what to upgrade. */
  static tooOld(feature: string, requirement: Requirement): UnsupportedError {
    const installed = requirement.installed ? `, rdma-core ${requirement.installed}` : '';
    const release = requirement.release ? `, from rdma-core ${requirement.release}` : '';
    return new UnsupportedError(
      feature,
      `by the installed ${requirement.library}${installed} (it needs ${requirement.symbolVersion}${release}): ` +
        `upgrade rdma-core${requirement.release ? ` to ${requirement.release} or later` : ''}, or do without ${feature}`,
      requirement,
    );
  }
}

/** A shared library could not be loaded. */
export class LibraryLoadError extends Error {
  override name = 'LibraryLoadError';
  readonly code = 'ERR_RDMACM_LIBRARY';
  /** What to do about it: the package to install, or the variable to set. */
  readonly advice: string;
  constructor(readonly library: string, readonly tried: readonly string[], options: { cause: unknown; advice?: string | undefined }) {
    const advice = options.advice ?? RDMA_CORE_ADVICE;
    super(
      `could not load ${library} (tried: ${tried.join(', ')}). ${advice}` +
        ` Last error: ${options.cause instanceof Error ? options.cause.message : String(options.cause)}`,
      { cause: options.cause },
    );
    this.advice = advice;
  }
}
