// The C layouts, one koffi type per C struct, each beside its TypeScript type.
export * from './registry.js';
export * from './socket.js';
export * from './verbs-device.js';
export * from './verbs-resources.js';
export * from './verbs-work.js';
export * from './rdma-cma.js';

import { declaredLayouts } from './registry.js';
// The modules above are the only ones that declare layouts, and they have run by now.
Object.freeze(declaredLayouts);
