// Every C layout the binding declares, recorded under its C name so the layout
// test can check each one against the real headers.
import koffi, { type TypeObject } from 'koffi';

export interface DeclaredLayout {
  /** The C spelling, e.g. 'struct ibv_wc' or 'union ibv_gid'. */
  readonly cName: string;
  readonly type: TypeObject;
  /** The rdma-core releases whose headers have this layout (all, when absent): [from, before). */
  readonly releases?: ReleaseRange;
}

/** rdma-core releases from `from` (inclusive) to `before` (exclusive); either end may be open. */
export interface ReleaseRange {
  readonly from?: number;
  readonly before?: number;
}

/** Whether rdma-core `release` (e.g. '44.0', or 44) is in `range`. */
export function inReleaseRange(range: ReleaseRange | undefined, release: string | number): boolean {
  const major = typeof release === 'number' ? release : Number.parseInt(release, 10);
  return (range?.from === undefined || major >= range.from) && (range?.before === undefined || major < range.before);
}

/** The declared layouts as the headers of rdma-core `release` have them: one per C name. */
export function layoutsFor(release: string | number): DeclaredLayout[] {
  return declaredLayouts.filter((layout) => inReleaseRange(layout.releases, release));
}

const layouts: DeclaredLayout[] = [];
/** Every declared layout; frozen by structs/index.ts once the struct modules have declared theirs. */
export const declaredLayouts: readonly DeclaredLayout[] = layouts;

/** koffi's field map (its last overload of struct() takes only the fields). */
/** The fields of a struct, in koffi.struct's form. */
export type StructFields = Parameters<typeof koffi.struct>[0];

/** koffi.struct under the C struct's own name (so koffi.type('ibv_wc') resolves it). */
export function cStruct(name: string, fields: StructFields): TypeObject {
  const type = koffi.struct(name, fields);
  layouts.push(Object.freeze({ cName: `struct ${name}`, type }));
  return type;
}

/**
 * One of the layouts a C struct has had across rdma-core releases: koffi knows
 * it as `koffiName`, the layout test compares it as `struct cName` with the
 * headers of a release in `releases`.
 */
export function cStructOfReleases(koffiName: string, cName: string, releases: ReleaseRange, fields: StructFields): TypeObject {
  const type = koffi.struct(koffiName, fields);
  layouts.push(Object.freeze({ cName: `struct ${cName}`, type, releases: Object.freeze({ ...releases }) }));
  return type;
}

/** koffi.union under the C union's own name. */
export function cUnion(name: string, fields: StructFields): TypeObject {
  const type = koffi.union(name, fields);
  layouts.push(Object.freeze({ cName: `union ${name}`, type }));
  return type;
}

/** The offset of a member path like 'wr.atomic.rkey' (union members start at their union's offset). */
export function memberOffset(type: TypeObject, path: string): number {
  let offset = 0;
  let current = type;
  for (const name of path.split('.')) {
    const member = current.members?.[name];
    if (!member) throw new Error(`no member ${path} in ${type.name}`);
    offset += current.primitive === 'Union' ? 0 : member.offset;
    current = member.type;
  }
  return offset;
}

/** An anonymous struct or union nested in another declaration (checked through its parent). */
export const anonymousStruct = (fields: StructFields): TypeObject => koffi.struct(fields);
export const anonymousUnion = (fields: StructFields): TypeObject => koffi.union(fields);
