// Rules about the library's own source that no compiler checks.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const srcRoot = fileURLToPath(new URL('../../src', import.meta.url));

/** The code of a source file without comments and string literals. */
function codeOf(file: string): string {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => !/^\s*(\/\/|\*|\/\*)/.test(line))
    .join('\n')
    .replace(/'[^'\n]*'|`[^`\n]*`/g, "''");
}

// On globalThis these three are accessors: optimized code calls the getter at
// every use (a LoadGlobalIC miss each time), which a profile of connection
// setup in the TCG guest found in the hottest functions.
const importedGlobals = [
  { name: 'Buffer', use: /\bBuffer\b/, from: /import \{[^}]*\bBuffer\b[^}]*\} from 'node:buffer'/ },
  { name: 'performance', use: /(?<![.\w])performance\./, from: /import \{[^}]*\bperformance\b[^}]*\} from 'node:perf_hooks'/ },
  { name: 'process', use: /(?<![.\w])process\./, from: /import process from 'node:process'/ },
];

test('src imports Buffer, performance and process from node: modules instead of reading the globals', () => {
  const files = readdirSync(srcRoot, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));
  assert.ok(files.length > 20, 'the source tree was found');
  const missing: string[] = [];
  for (const file of files) {
    const path = join(srcRoot, file);
    const code = codeOf(path);
    for (const { name, use, from } of importedGlobals) {
      if (use.test(code) && !from.test(readFileSync(path, 'utf8'))) missing.push(`${file}: ${name}`);
    }
  }
  assert.deepEqual(missing, []);
});

// A zod schema costs milliseconds to build in the TCG guest (the page-aligned
// allocation's, built per call, was most of a 4-byte pd.allocate()), and
// parseArgument remembers its answers per schema object: so each is built
// once, at module level, never inline where an argument is parsed.
test('src parses arguments with schemas built once, never with one built inline at the call', () => {
  const files = readdirSync(srcRoot, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));
  const inline: string[] = [];
  for (const file of files) {
    const code = codeOf(join(srcRoot, file));
    for (const match of code.matchAll(/\b(?:parseArgument|safeParse)\([^;]*?\bz\.\w+\(/g)) inline.push(`${file}: ${match[0].slice(0, 80)}`);
  }
  assert.deepEqual(inline, []);
});

// ---------------------------------------------------------------- layering
// c-library.ts ← src/structs ← src/ffi ← src/api ← src/net ← (index.ts, raw.ts) ← src/bench ← src/cli:
// a module imports from its own layer and the ones below, never above, type
// imports included (a layout is plain data and knows nothing of the FFI; the
// C library the process runs on, which sizes musl's pthread_mutex_t, sits below).
// package-info.ts is a leaf any layer above src/structs may use.

/** The src-relative paths a module imports (`import`, `import type`, `export … from`, `import()`). */
function importsOf(file: string): string[] {
  const text = readFileSync(join(srcRoot, file), 'utf8');
  const specifiers = [
    ...text.matchAll(/^\s*(?:import|export)\b[^'";]*?\bfrom\s+'([^']+)'/gm),
    ...text.matchAll(/^\s*import\s+'([^']+)'/gm),
    ...text.matchAll(/\bimport\(\s*'([^']+)'\s*\)/g),
  ].map((match) => match[1]!);
  return specifiers
    .filter((specifier) => specifier.startsWith('.'))
    .map((specifier) => relative(srcRoot, resolve(dirname(join(srcRoot, file)), specifier)).replace(/\.js$/, '.ts'));
}

const sourceFiles = readdirSync(srcRoot, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts')).map((f) => f.split(sep).join('/'));
const importGraph = new Map(sourceFiles.map((file) => [file, importsOf(file)]));

const LAYERS = ['platform', 'structs', 'ffi', 'api', 'net', 'entry', 'bench', 'cli'] as const;
/** A module's layer: its folder, 'platform' for c-library.ts, or 'entry' for the package's entry points. */
function layerOf(file: string): number | 'leaf' {
  if (file === 'package-info.ts') return 'leaf';
  if (file === 'c-library.ts') return LAYERS.indexOf('platform');
  if (file === 'index.ts' || file === 'raw.ts') return LAYERS.indexOf('entry');
  const layer = LAYERS.indexOf(file.split('/')[0] as (typeof LAYERS)[number]);
  assert.ok(layer >= 0, `${file} is in no known layer: add its folder to LAYERS`);
  return layer;
}

/** Every import that goes up a layer, or out of a leaf, as 'from → to'. */
function layeringViolations(graph: ReadonlyMap<string, readonly string[]>): string[] {
  const violations: string[] = [];
  for (const [from, targets] of graph) {
    const fromLayer = layerOf(from);
    for (const to of targets) {
      const toLayer = layerOf(to);
      const allowed = fromLayer === 'leaf' ? false
        : toLayer === 'leaf' ? fromLayer > LAYERS.indexOf('structs')
        : toLayer <= fromLayer;
      if (!allowed) violations.push(`${from} → ${to}`);
    }
  }
  return violations;
}

/** The import cycles: every strongly connected set of two or more modules (Tarjan's algorithm), and self-imports. */
function importCycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const order = new Map<string, number>();
  const lowest = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const visit = (module: string): void => {
    order.set(module, order.size);
    lowest.set(module, order.get(module)!);
    stack.push(module);
    onStack.add(module);
    for (const next of graph.get(module) ?? []) {
      if (!graph.has(next)) continue;
      if (!order.has(next)) {
        visit(next);
        lowest.set(module, Math.min(lowest.get(module)!, lowest.get(next)!));
      } else if (onStack.has(next)) {
        lowest.set(module, Math.min(lowest.get(module)!, order.get(next)!));
      }
    }
    if (lowest.get(module) !== order.get(module)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== module);
    if (component.length > 1 || graph.get(module)!.includes(module)) cycles.push(component.sort());
  };
  for (const module of graph.keys()) if (!order.has(module)) visit(module);
  return cycles;
}

test('the import graph of src was read: every relative import resolves to a source file', () => {
  assert.ok(importGraph.size > 50, `${importGraph.size} modules`);
  assert.ok(importGraph.get('api/cm/cm-id.ts')!.includes('api/cm/event-channel.ts'), 'a known import is found');
  assert.ok(importGraph.get('ffi/library.ts')!.includes('structs/pointer.ts'), 'type imports count');
  assert.ok(importGraph.get('index.ts')!.includes('raw.ts'), 'export … from counts');
  const unresolved = [...importGraph].flatMap(([from, targets]) => targets.filter((to) => !importGraph.has(to)).map((to) => `${from} → ${to}`));
  assert.deepEqual(unresolved, []);
});

test('src imports run one way: c-library ← structs ← ffi ← api ← net ← index/raw ← bench ← cli (type imports too)', () => {
  assert.deepEqual(layeringViolations(importGraph), []);
  // The checker itself: a layout that imports a type from the FFI layer, an API module that imports the CLI.
  assert.deepEqual(
    layeringViolations(new Map([
      ['structs/verbs-work.ts', ['ffi/library.ts', 'c-library.ts']], ['api/cm-id.ts', ['cli/main.ts', 'structs/pointer.ts']],
      ['package-info.ts', ['api/errors.ts']], ['c-library.ts', ['structs/pointer.ts']],
      ['bench/loops.ts', ['cli/arguments.ts', 'api/cm-id.ts']], ['cli/bench.ts', ['bench/loops.ts']],
    ])),
    ['structs/verbs-work.ts → ffi/library.ts', 'api/cm-id.ts → cli/main.ts', 'package-info.ts → api/errors.ts', 'c-library.ts → structs/pointer.ts', 'bench/loops.ts → cli/arguments.ts'],
  );
});

test('src has no import cycles (type imports too)', () => {
  assert.deepEqual(importCycles(importGraph), []);
  // The checker itself: a two-module loop through a type import, and a self-import.
  assert.deepEqual(
    importCycles(new Map([['api/cm-id.ts', ['api/event-channel.ts']], ['api/event-channel.ts', ['api/cm-id.ts']], ['api/a.ts', ['api/a.ts']], ['api/b.ts', ['api/cm-id.ts']]])),
    [['api/cm-id.ts', 'api/event-channel.ts'], ['api/a.ts']],
  );
});
