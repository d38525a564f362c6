// The published .d.ts is the API and nothing else. The declarations are
// emitted here from the sources with the published build's own tsconfig (so
// the check sees what `npm run build` ships, never a stale dist/), then read
// as syntax trees: no `any`, none of the members the library keeps to itself,
// no writable statics, and the entry points type-check on their own. The
// exported tables are checked frozen at run time.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import * as root from '../../src/index.js';
import * as net from '../../src/net/index.js';
import * as raw from '../../src/raw.js';

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const ENTRY_POINTS = ['src/index.d.ts', 'src/net/index.d.ts', 'src/raw.d.ts'];

/**
 * Names of what the library's modules call on each other, which callers must
 * not see: the channel↔id routing, the internal key and its factories.
 */
const INTERNAL_NAMES = new Set([
  'offerEvent', 'expireWaiters', 'failPending', 'keepEvent', 'attach', 'detach', 'expect', 'settle',
  'attachTarget', 'detachTarget', 'expectEvent', 'settleWait', 'contextHandle', 'adoptRequest', 'setRequestAdopter',
  'internal', 'Internal', 'assertInternal', 'EventTarget', 'RequestAdopter',
]);

/** The emitted declarations by path relative to the output folder (e.g. 'src/api/cm/cm-id.d.ts'). */
const declarations = new Map<string, string>();
let outDir: string;

before(() => {
  const parsed = ts.getParsedCommandLineOfConfigFile(join(repoRoot, 'tsconfig.build.json'), {}, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (diagnostic) => assert.fail(ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n')),
  });
  assert.ok(parsed, 'tsconfig.build.json parses');
  // Inside the checkout (git-ignored .scratch/), so the declarations resolve zod, koffi and @types/node.
  mkdirSync(join(repoRoot, '.scratch'), { recursive: true });
  outDir = mkdtempSync(join(repoRoot, '.scratch', 'published-types-'));
  const options: ts.CompilerOptions = {
    ...parsed.options, outDir, noEmit: false, declaration: true, emitDeclarationOnly: true, sourceMap: false, declarationMap: false,
  };
  const sources = parsed.fileNames.filter((file) => relative(repoRoot, file).startsWith('src/'));
  const program = ts.createProgram(sources, options);
  const result = program.emit(undefined, (file, text) => {
    if (!file.endsWith('.d.ts')) return;
    declarations.set(relative(outDir, file), text);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, text);
  });
  assert.deepEqual(result.diagnostics.map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n')), []);
});
after(() => rmSync(outDir, { recursive: true, force: true }));

/** Every node of every emitted declaration file, with where it is. */
function* everyNode(): Generator<{ node: ts.Node; where: string }> {
  for (const [path, text] of declarations) {
    const file = ts.createSourceFile(path, text, ts.ScriptTarget.ES2022, true);
    const stack: ts.Node[] = [file];
    while (stack.length > 0) {
      const node = stack.pop()!;
      const { line } = file.getLineAndCharacterOfPosition(node.getStart(file));
      yield { node, where: `${path}:${line + 1}` };
      stack.push(...node.getChildren(file));
    }
  }
}

/** The name a declaration or reference goes by, if it has one. */
function nameOf(node: ts.Node): string | undefined {
  if (ts.isTypeReferenceNode(node)) return node.typeName.getText();
  const name = (node as { name?: ts.Node }).name;
  if (!name || !(ts.isIdentifier(name) || ts.isPrivateIdentifier(name) || ts.isComputedPropertyName(name))) return undefined;
  return ts.isComputedPropertyName(name) ? name.expression.getText() : name.text;
}

test('the emitted declarations cover the three entry points and the modules they reach', () => {
  for (const entry of ENTRY_POINTS) assert.ok(declarations.has(entry), `${entry} is emitted`);
  assert.ok(declarations.size > 20, `${declarations.size} declaration files`);
});

test('no `any` in the published types', () => {
  const found = [...everyNode()].filter(({ node }) => node.kind === ts.SyntaxKind.AnyKeyword).map(({ where }) => where);
  assert.deepEqual(found, [], 'use unknown, or the real type');
});

test('none of the members the library keeps to itself is in the published types', () => {
  const found: string[] = [];
  for (const { node, where } of everyNode()) {
    const declares = ts.isClassElement(node) || ts.isTypeElement(node) || ts.isFunctionDeclaration(node) || ts.isVariableDeclaration(node) ||
      ts.isInterfaceDeclaration(node) || ts.isTypeAliasDeclaration(node) || ts.isParameter(node) || ts.isTypeReferenceNode(node) ||
      ts.isImportSpecifier(node) || ts.isExportSpecifier(node);
    const name = declares ? nameOf(node) : undefined;
    if (name !== undefined && INTERNAL_NAMES.has(name)) found.push(`${where} ${name}`);
  }
  assert.deepEqual(found, [], 'make them #private, module functions, or @internal (stripped)');
});

test('no public static in the published types can be assigned', () => {
  const found: string[] = [];
  for (const { node, where } of everyNode()) {
    if (!ts.isPropertyDeclaration(node)) continue;
    const modifiers = ts.getModifiers(node)?.map((m) => m.kind) ?? [];
    const hidden = modifiers.includes(ts.SyntaxKind.PrivateKeyword) || modifiers.includes(ts.SyntaxKind.ProtectedKeyword);
    if (modifiers.includes(ts.SyntaxKind.StaticKeyword) && !hidden && !modifiers.includes(ts.SyntaxKind.ReadonlyKeyword)) {
      found.push(`${where} ${nameOf(node)}`);
    }
  }
  assert.deepEqual(found, []);
});

test('the published entry points type-check on their own (nothing they refer to was stripped)', () => {
  const program = ts.createProgram(ENTRY_POINTS.map((entry) => join(outDir, entry)), {
    strict: true, noEmit: true, skipLibCheck: false, target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, lib: ['lib.es2022.d.ts', 'lib.esnext.disposable.d.ts'], types: ['node'],
  });
  const problems = ts.getPreEmitDiagnostics(program)
    .filter((d) => d.file === undefined || d.file.fileName.startsWith(outDir))
    .map((d) => `${d.file ? relative(outDir, d.file.fileName) : ''}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`);
  assert.deepEqual(problems, []);
});

/**
 * Data tables reachable from a module's exports, with their paths: plain
 * objects and arrays with no functions or accessors (a bound library, whose
 * functions bind on first use, is not a table). Namespaces are walked into.
 */
function* tables(value: unknown, path: string, seen = new Set<unknown>()): Generator<{ table: object; path: string }> {
  if (typeof value !== 'object' || value === null || seen.has(value)) return;
  seen.add(value);
  const prototype = Object.getPrototypeOf(value);
  const isNamespace = (value as { [Symbol.toStringTag]?: unknown })[Symbol.toStringTag] === 'Module';
  if (!isNamespace && prototype !== Object.prototype && !Array.isArray(value)) return;
  const holdsCode = Object.values(Object.getOwnPropertyDescriptors(value)).some((d) => d.get || d.set || typeof d.value === 'function');
  if (!isNamespace && holdsCode) return;
  if (!isNamespace) yield { table: value, path };
  for (const key of Object.keys(value)) yield* tables((value as Record<string, unknown>)[key], `${path}.${key}`, seen);
}

test('every table the entry points export is frozen, all the way down', () => {
  const thawed: string[] = [];
  for (const [name, module] of Object.entries({ rdmacm: root, 'rdmacm/net': net, 'rdmacm/raw': raw })) {
    for (const { table, path } of tables(module, name)) if (!Object.isFrozen(table)) thawed.push(path);
  }
  assert.deepEqual(thawed, []);
});
