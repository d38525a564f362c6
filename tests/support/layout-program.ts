// Generates a C program that prints, for every declared layout, its size and
// alignment and the offset and size of every field path, from the real headers.
import { spawnSync } from 'node:child_process';
import type { TypeObject } from 'koffi';
import type { DeclaredLayout } from '../../src/structs/registry.js';

export interface FieldFact {
  readonly layout: string;
  /** '' for the layout itself, else a C member path like 'wr.rdma.rkey'. */
  readonly path: string;
  readonly offset: number;
  /** sizeof the field (or of the layout). */
  readonly size: number;
  /** alignof, for the layout itself only. */
  readonly align?: number;
}

/** Every field path koffi knows for a type, with koffi's offsets and sizes. */
export function koffiFacts(layout: DeclaredLayout): FieldFact[] {
  const facts: FieldFact[] = [
    { layout: layout.cName, path: '', offset: 0, size: layout.type.size, align: layout.type.alignment },
  ];
  const walk = (type: TypeObject, prefix: string, base: number) => {
    for (const member of Object.values(type.members ?? {})) {
      const path = prefix ? `${prefix}.${member.name}` : member.name;
      const offset = base + (type.primitive === 'Union' ? 0 : member.offset);
      facts.push({ layout: layout.cName, path, offset, size: member.type.size });
      if (member.type.primitive === 'Record' || member.type.primitive === 'Union') walk(member.type, path, offset);
    }
  };
  walk(layout.type, '', 0);
  return facts;
}

export function layoutProgram(layouts: readonly DeclaredLayout[]): string {
  const lines = [
    '#include <stddef.h>',
    '#include <stdio.h>',
    '#include <netinet/in.h>',
    '#include <sys/socket.h>',
    '#include <infiniband/verbs.h>',
    '#include <rdma/rdma_cma.h>',
    '#include <rdma/rdma_verbs.h>',
    '#define LAYOUT(T) printf("%s||0|%zu|%zu\\n", #T, sizeof(T), _Alignof(T));',
    '#define FIELD(T, P) printf("%s|%s|%zu|%zu\\n", #T, #P, offsetof(T, P), sizeof(((T *)0)->P));',
    'int main(void) {',
  ];
  for (const layout of layouts) {
    for (const fact of koffiFacts(layout)) {
      lines.push(fact.path === '' ? `  LAYOUT(${layout.cName})` : `  FIELD(${layout.cName}, ${fact.path})`);
    }
  }
  lines.push('  return 0;', '}', '');
  return lines.join('\n');
}

export function parseProgramOutput(output: string): FieldFact[] {
  return output
    .trim()
    .split('\n')
    .map((line) => {
      const [layout, path, offset, size, align] = line.split('|');
      const fact: FieldFact = { layout: layout!, path: path!, offset: Number(offset), size: Number(size) };
      return align === undefined ? fact : { ...fact, align: Number(align) };
    });
}

/**
 * The rdma-core release of the installed headers (libibverbs-dev's package
 * version: Debian 12's 44.0-2 is 44), or undefined where no package manager says.
 */
export function installedHeadersRelease(): string | undefined {
  const queries: [string, string[]][] = [
    ['dpkg-query', ['-W', '-f=${Version}', 'libibverbs-dev']],
    ['rpm', ['-q', '--qf', '%{VERSION}', 'rdma-core-devel']],
  ];
  for (const [command, args] of queries) {
    const result = spawnSync(command, args, { encoding: 'utf8' });
    const release = result.status === 0 ? /^(\d+)\./.exec(result.stdout)?.[1] : undefined;
    if (release) return release;
  }
  return undefined;
}
