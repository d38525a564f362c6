// Calls whose arguments are stored in native memory, so that koffi calls them
// with none. Most of a koffi call is converting its arguments: in the TCG guest
// a call with three addresses took 0.80–0.89 µs and one with none 0.26–0.28
// (host: 32–44 against 15–22 ns). A prepared post and a CQ's poll repeat the
// same three arguments on every call, so they are stored once.
//
// Each bound call owns a 32-byte slot of data: the function, then its three
// arguments. All of a thread's bound calls go through one 32-byte stub of
// x86-64 code, which reads the slot's address from a selector cell, loads the
// arguments and jumps to the function; a call writes its slot's address into
// the cell first. One stub means one koffi function, and with call() a method
// every bound call is a single target for V8: a loop that polls two CQs is not
// deoptimized when it meets the second (it was, with a stub per call). The
// stub is written once, before its page becomes executable, and never changes.
//
// Bound calls are opt-in (RDMACM_BOUND_CALLS=1, or the safe API's
// setBoundCalls): machine code written at run time surprises security
// reviewers and trips hardened kernels' audits, and in the emulated test bed
// their end-to-end gain is below the noise. Where they are not asked for, or
// cannot work (not x86-64, a system that refuses executable memory, libc that
// does not load), a FixedCall makes the plain call instead.
import process from 'node:process';
import koffi from 'koffi';
import { libc } from './libc.js';
import { LibraryLoadError } from './load-errors.js';
import type { Address, Pointer } from './library.js';

/** A native function called again and again with the same (or nearly the same) three arguments. */
export interface FixedCall {
  /** Calls the function with its stored arguments; returns its int result. Call it as a method. */
  call(): number;
  /** Replaces argument `index` with an int (e.g. poll's num_entries), as C's int conversion would take it. */
  setIntArgument(index: number, value: number): void;
  /** Frees what the call holds; call() must not run after. Idempotent. */
  release(): void;
  /** Whether call() goes through a bound stub (false: the plain call). */
  readonly bound: boolean;
}

export type ThreeArgumentFunction = (a: Address, b: Address, c: Address) => number;

/**
 * `fn(a, b, c)` with its arguments kept: bound when `repeated` and bound calls
 * work here, else a plain call of `plain`, the same function bound by koffi
 * with three parameters. A one-shot call is not worth a slot.
 */
export function fixedCall(fn: Pointer, plain: ThreeArgumentFunction, args: readonly [Address, Address, Address], repeated: boolean): FixedCall {
  return (repeated && fn !== 0n && bindCall(fn, args)) || new PlainCall(plain, args);
}

class PlainCall implements FixedCall {
  readonly bound = false;
  readonly call: () => number;
  #args: [Address, Address, Address];

  constructor(fn: ThreeArgumentFunction, args: readonly [Address, Address, Address]) {
    const kept = (this.#args = [...args]);
    this.call = () => fn(kept[0], kept[1], kept[2]);
  }

  setIntArgument(index: number, value: number): void {
    this.#args[index] = value | 0;
  }

  release(): void {}
}

const PAGE_SIZE = 4096;
const SLOT_SIZE = 32;
const SLOTS_PER_PAGE = PAGE_SIZE / SLOT_SIZE;
const PROT_READ = 1;
const PROT_WRITE = 2;
const PROT_EXEC = 4;
const MAP_PRIVATE = 0x02;
const MAP_ANONYMOUS = 0x20;
const MAP_FAILED = 0xffffffffffffffffn;

const stubPrototype = koffi.proto('int rdmacm_bound_call_fn(void)');

/**
 * The dispatch stub, 32 bytes:
 *   endbr64                 (a valid target of koffi's indirect call where IBT is enforced)
 *   mov r11, <cell address>
 *   mov r11, [r11]          (the slot the caller selected)
 *   mov rdi, [r11 + 8]
 *   mov rsi, [r11 + 16]
 *   mov rdx, [r11 + 24]
 *   jmp [r11]               (a tail call: the function returns straight to koffi)
 * r11 is scratch in the System V ABI, and the stack is left as koffi's call
 * made it. The cell is read before anything else runs, so a call made from a
 * callback during the function may select another slot safely.
 */
function writeStub(code: DataView, cell: Pointer): void {
  const bytes = [0xf3, 0x0f, 0x1e, 0xfa, 0x49, 0xbb];
  bytes.forEach((byte, i) => code.setUint8(i, byte));
  code.setBigUint64(6, cell, true);
  const rest = [0x4d, 0x8b, 0x1b, 0x49, 0x8b, 0x7b, 0x08, 0x49, 0x8b, 0x73, 0x10, 0x49, 0x8b, 0x53, 0x18, 0x41, 0xff, 0x23];
  rest.forEach((byte, i) => code.setUint8(14 + i, byte));
}

/** This thread's stub (a code page, executable and never written again), its cell, and the function that calls it. */
interface Dispatch {
  /** The selector cell as two 32-bit halves (little-endian): the address of the slot to call. */
  readonly selector: Uint32Array;
  readonly call: () => number;
}

/** A page of slots. */
class SlotPage {
  readonly view: DataView;
  constructor(readonly address: Pointer) {
    this.view = new DataView(koffi.view(address, PAGE_SIZE));
  }
}

class BoundCall implements FixedCall {
  readonly bound = true;
  readonly #selector: Uint32Array;
  readonly #dispatch: () => number;
  readonly #low: number;
  readonly #high: number;
  #released = false;

  constructor(private readonly page: SlotPage, private readonly index: number, dispatch: Dispatch) {
    const slot = page.address + BigInt(index * SLOT_SIZE);
    this.#selector = dispatch.selector;
    this.#dispatch = dispatch.call;
    this.#low = Number(slot & 0xffffffffn);
    this.#high = Number(slot >> 32n);
  }

  // A method, not a closure per call: V8 compares closures themselves, so
  // closures would still be one target per call.
  call(): number {
    this.#selector[0] = this.#low;
    this.#selector[1] = this.#high;
    return this.#dispatch();
  }

  setIntArgument(index: number, value: number): void {
    const at = this.index * SLOT_SIZE + 8 + index * 8;
    const int = value | 0;
    this.page.view.setInt32(at, int, true);
    this.page.view.setInt32(at + 4, int < 0 ? -1 : 0, true); // as C sign-extends an int
  }

  release(): void {
    if (this.#released) return;
    this.#released = true;
    freeSlots.push({ page: this.page, index: this.index });
  }
}

interface Slot {
  readonly page: SlotPage;
  readonly index: number;
}

const freeSlots: Slot[] = [];
let newestPage: SlotPage | undefined;
let unusedInNewest = 0;
let dispatch: Dispatch | undefined;
/** Why bound calls are off in this process, once known. */
let unavailable: string | undefined;

/** What setBoundCalls() chose, which wins over the environment. */
let chosen: boolean | undefined;
/**
 * RDMACM_BOUND_CALLS=1, read at the first call that asks: every prepared
 * request and queue asks, and each read of process.env is a call into C++
 * (0.4 % of a socket connection's time in the guest).
 */
let fromEnvironment: boolean | undefined;

/** Whether calls are to be bound: setBoundCalls() said so, or else RDMACM_BOUND_CALLS=1. */
export function boundCallsRequested(): boolean {
  return chosen ?? (fromEnvironment ??= process.env.RDMACM_BOUND_CALLS === '1');
}

/** Asks for bound calls (or the plain ones) in calls made from now on; calls made before keep their kind. */
export function setBoundCalls(enabled: boolean): void {
  chosen = enabled;
}

/** Why calls are not bound here (undefined: they are, or no call has been bound yet). */
export function boundCallsUnavailable(): string | undefined {
  if (!boundCallsRequested()) {
    return chosen === false ? 'turned off (setBoundCalls(false))' : 'not asked for: they are opt-in (RDMACM_BOUND_CALLS=1, or setBoundCalls(true))';
  }
  return unavailable;
}

/** Sets up the stub if it is not yet: why bound calls cannot work here, or undefined where they can. */
export function probeBoundCalls(): string | undefined {
  dispatch ??= newDispatch();
  return dispatch ? undefined : unavailable;
}

/** `fn` with its three arguments stored in a slot, or undefined where calls cannot be bound. */
function bindCall(fn: Pointer, args: readonly [Address, Address, Address]): BoundCall | undefined {
  if (!boundCallsRequested()) return undefined;
  dispatch ??= newDispatch();
  if (!dispatch) return undefined;
  const slot = takeSlot();
  if (!slot) return undefined;
  const at = slot.index * SLOT_SIZE;
  slot.page.view.setBigUint64(at, fn, true);
  for (let i = 0; i < 3; i++) slot.page.view.setBigUint64(at + 8 + i * 8, BigInt(args[i]!), true);
  return new BoundCall(slot.page, slot.index, dispatch);
}

function takeSlot(): Slot | undefined {
  const free = freeSlots.pop();
  if (free) return free;
  if (unusedInNewest === 0) {
    const address = mapPages(1);
    if (address === undefined) return undefined;
    newestPage = new SlotPage(address);
    unusedInNewest = SLOTS_PER_PAGE;
  }
  return { page: newestPage!, index: SLOTS_PER_PAGE - unusedInNewest-- };
}

/** Readable, writable, private pages; undefined (and `unavailable` set) when mmap fails or libc does not load. */
function mapPages(count: number): Pointer | undefined {
  let address: Pointer | null;
  try {
    address = libc.mmap(null, count * PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  } catch (error) {
    if (!(error instanceof LibraryLoadError)) throw error;
    unavailable = `libc did not load (tried: ${error.tried.join(', ')})`;
    return undefined;
  }
  if (address === null || address === MAP_FAILED) {
    unavailable = `mmap failed (errno ${koffi.errno()})`;
    return undefined;
  }
  return address;
}

/** Maps the stub's code page and the cell's page, writes the stub, and makes its page executable (and no longer writable). */
function newDispatch(): Dispatch | undefined {
  if (unavailable !== undefined) return undefined;
  if (process.arch !== 'x64') {
    unavailable = `the stub is x86-64 code (this is ${process.arch})`;
    return undefined;
  }
  const base = mapPages(2);
  if (base === undefined) return undefined;
  const cell = base + BigInt(PAGE_SIZE);
  writeStub(new DataView(koffi.view(base, PAGE_SIZE)), cell);
  if (libc.mprotect(base, PAGE_SIZE, PROT_READ | PROT_EXEC) !== 0) {
    unavailable = `the system refuses executable memory (mprotect: errno ${koffi.errno()})`;
    libc.munmap(base, 2 * PAGE_SIZE);
    return undefined;
  }
  return { selector: new Uint32Array(koffi.view(cell, 8)), call: koffi.decode(base, stubPrototype) as () => number };
}
