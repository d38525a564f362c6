// Rules about the library's own source that no compiler checks.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
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
