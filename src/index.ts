// rdmacm: RDMA for Node.js. The safe API; `raw` is the escape hatch.
export * as raw from './raw.js';
export { RdmaError, UnsupportedError, LibraryLoadError } from './ffi/errors.js';
