// The raw layer: the escape hatch of last resort. These are the C functions
// and layouts as they are, with C's conventions (pointers as bigint, -1 and
// errno, positive errnos from most verbs, -1 and errno from a few, such as
// ibv_init_ah_from_wc and ibv_get_cq_event). Nothing here validates arguments or
// keeps memory alive; the safe API in the package root does.
export { librdmacm, librdmacmFunctions } from './ffi/librdmacm.js';
export { libibverbs, libibverbsFunctions } from './ffi/libibverbs.js';
export * from './ffi/inline-verbs.js';
export { fixedCall, boundCallsUnavailable, type FixedCall, type ThreeArgumentFunction } from './ffi/bound-call.js';
export { defineLibrary, OWN_PROCESS, koffiType, readPointer, readPointerArray, toAddress, type Address, type Pointer, type PointerArg, type FunctionSpec, type BoundLibrary, type BoundFunction, type LibraryOptions, type Params, type ParamType, type ResultType, type Trim } from './ffi/library.js';
export { RdmaError, UnsupportedError, LibraryLoadError, checkRdma, checkVerbs, checkPointer, errnoName } from './ffi/errors.js';
export { diagnoseRdmaStack, type Diagnosis, type MissingPiece } from './ffi/diagnosis.js';
export * as structs from './structs/index.js';
