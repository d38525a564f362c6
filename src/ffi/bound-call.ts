// Calls whose arguments are stored in native memory, so that koffi calls them
// with none. Most of a koffi call is converting its arguments: in the TCG guest
// a call with three addresses took 0.80–0.89 µs and one with none 0.26–0.28
// (host: 32–44 against 15–22 ns). A prepared post and a CQ's poll repeat the
// same three arguments on every call, so they are stored once.
//
// Each bound call owns a 32-byte slot of data (the function, then its three
// arguments) and a 32-byte stub of x86-64 code that loads them and jumps to the
// function. Stubs are written once per page, before the page becomes
// executable, and never change: binding a call writes data only.
//
// Where this cannot work (not x86-64, a system that refuses executable memory,
// RDMACM_BOUND_CALLS=0) a FixedCall makes the plain call instead.
import process from 'node:process';
import koffi from 'koffi';
import { libc } from './libc.js';
import type { Address, Pointer } from './library.js';

/** A native function called again and again with the same (or nearly the same) three arguments. */
export interface FixedCall {
  /** Calls the function with its stored arguments; returns its int result. */
  readonly call: () => number;
  /** Replaces argument `index` with an int (e.g. poll's num_entries), as C's int conversion would take it. */
  setIntArgument(index: number, value: number): void;
  /** Frees what the call holds; call() must not run after. Idempotent. */
  release(): void;
  /** Whether call() goes through a bound stub (false: the plain call). */
  readonly bound: boolean;
}

type ThreeArgumentFunction = (a: Address, b: Address, c: Address) => number;

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
 * The stub of one slot, 29 bytes:
 *   endbr64                 (a valid target of koffi's indirect call where IBT is enforced)
 *   mov r11, <slot address>
 *   mov rdi, [r11 + 8]
 *   mov rsi, [r11 + 16]
 *   mov rdx, [r11 + 24]
 *   jmp [r11]               (a tail call: the function returns straight to koffi)
 * r11 is scratch in the System V ABI, and the stack is left as koffi's call made it.
 */
function writeStub(code: DataView, at: number, slot: Pointer): void {
  const bytes = [0xf3, 0x0f, 0x1e, 0xfa, 0x49, 0xbb];
  bytes.forEach((byte, i) => code.setUint8(at + i, byte));
  code.setBigUint64(at + 6, slot, true);
  const rest = [0x49, 0x8b, 0x7b, 0x08, 0x49, 0x8b, 0x73, 0x10, 0x49, 0x8b, 0x53, 0x18, 0x41, 0xff, 0x23];
  rest.forEach((byte, i) => code.setUint8(at + 14 + i, byte));
  for (let i = 29; i < SLOT_SIZE; i++) code.setUint8(at + i, 0xcc); // int3
}

/** A page of stubs (executable, never written again) and the page of their slots. */
class StubPage {
  readonly slots: DataView;
  readonly #codeAddress: Pointer;
  readonly #functions: ((() => number) | undefined)[] = [];

  constructor(base: Pointer) {
    this.#codeAddress = base;
    const slotsAddress = base + BigInt(PAGE_SIZE);
    const code = new DataView(koffi.view(base, PAGE_SIZE));
    for (let i = 0; i < SLOTS_PER_PAGE; i++) writeStub(code, i * SLOT_SIZE, slotsAddress + BigInt(i * SLOT_SIZE));
    this.slots = new DataView(koffi.view(slotsAddress, PAGE_SIZE));
  }

  /** The JavaScript function that calls stub `index`, made at its first use. */
  functionAt(index: number): () => number {
    return (this.#functions[index] ??= koffi.decode(this.#codeAddress + BigInt(index * SLOT_SIZE), stubPrototype) as () => number);
  }
}

class BoundCall implements FixedCall {
  readonly bound = true;
  readonly call: () => number;
  #released = false;

  constructor(private readonly page: StubPage, private readonly index: number) {
    this.call = page.functionAt(index);
  }

  setIntArgument(index: number, value: number): void {
    const at = this.index * SLOT_SIZE + 8 + index * 8;
    const int = value | 0;
    this.page.slots.setInt32(at, int, true);
    this.page.slots.setInt32(at + 4, int < 0 ? -1 : 0, true); // as C sign-extends an int
  }

  release(): void {
    if (this.#released) return;
    this.#released = true;
    freeSlots.push({ page: this.page, index: this.index });
  }
}

interface Slot {
  readonly page: StubPage;
  readonly index: number;
}

const freeSlots: Slot[] = [];
let newestPage: StubPage | undefined;
let unusedInNewest = 0;
/** Why bound calls are off in this process, once known. */
let unavailable: string | undefined;

const switchedOff = (): boolean => process.env.RDMACM_BOUND_CALLS === '0';

/** Why calls are not bound here (undefined: they are, or no call has been bound yet). */
export function boundCallsUnavailable(): string | undefined {
  return switchedOff() ? 'RDMACM_BOUND_CALLS=0' : unavailable;
}

/** `fn` with its three arguments stored in a slot, or undefined where calls cannot be bound. */
function bindCall(fn: Pointer, args: readonly [Address, Address, Address]): BoundCall | undefined {
  if (switchedOff()) return undefined;
  const slot = takeSlot();
  if (!slot) return undefined;
  const at = slot.index * SLOT_SIZE;
  slot.page.slots.setBigUint64(at, fn, true);
  for (let i = 0; i < 3; i++) slot.page.slots.setBigUint64(at + 8 + i * 8, BigInt(args[i]!), true);
  return new BoundCall(slot.page, slot.index);
}

function takeSlot(): Slot | undefined {
  const free = freeSlots.pop();
  if (free) return free;
  if (unusedInNewest === 0) {
    newestPage = newStubPage();
    if (!newestPage) return undefined;
    unusedInNewest = SLOTS_PER_PAGE;
  }
  return { page: newestPage!, index: SLOTS_PER_PAGE - unusedInNewest-- };
}

/** Maps a code page and its slot page, writes the stubs, and makes the code executable (and no longer writable). */
function newStubPage(): StubPage | undefined {
  if (unavailable !== undefined) return undefined;
  if (process.arch !== 'x64') {
    unavailable = `the stubs are x86-64 code (this is ${process.arch})`;
    return undefined;
  }
  const base = libc.mmap(null, 2 * PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base === null || base === MAP_FAILED) {
    unavailable = `mmap failed (errno ${koffi.errno()})`;
    return undefined;
  }
  const page = new StubPage(base);
  if (libc.mprotect(base, PAGE_SIZE, PROT_READ | PROT_EXEC) !== 0) {
    unavailable = `the system refuses executable memory (mprotect: errno ${koffi.errno()})`;
    libc.munmap(base, 2 * PAGE_SIZE);
    return undefined;
  }
  return page;
}
