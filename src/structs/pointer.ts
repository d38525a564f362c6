// The one type the layouts share with the FFI layer, declared here at the
// bottom: the layouts are plain data and import nothing from src/ffi.

/** A native address. koffi 3 passes pointers as bigint. */
export type Pointer = bigint;
