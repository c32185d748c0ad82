// The layering that src/*/README.md states, checked on the import statements themselves: no import cycle in
// src/ (type-only imports included, as a reader follows them too), no cycle between folders either (each folder,
// and each module at the root of src/, is one node: the folders form an order a reader can follow downwards),
// and each folder's "never imports" rule.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = resolve(import.meta.dirname, '../src');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'generated' ? [] : sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** Each module's relative imports (`import … from`, `export … from`, `import('…')`) inside src/, as paths from src/. */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles(SRC)) {
    const text = readFileSync(file, 'utf8');
    const targets = [...text.matchAll(/(?:\bfrom\s+|\bimport\s*\(\s*|^import\s+)'(\.{1,2}\/[^']+)'/gm)]
      .map((match) => resolve(dirname(file), match[1]!.replace(/\.js$/, '.ts')))
      .filter((target) => target.startsWith(SRC) && !target.includes('/generated/'))
      .map((target) => relative(SRC, target));
    graph.set(relative(SRC, file), [...new Set(targets)]);
  }
  return graph;
}

function cycles(graph: Map<string, string[]>): string[][] {
  const found: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (node: string) => {
    state.set(node, 'open');
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      if (state.get(next) === 'open') found.push([...stack.slice(stack.indexOf(next)), next]);
      else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(node, 'done');
  };
  for (const node of graph.keys()) if (!state.has(node)) visit(node);
  return found;
}

/** The folder of a module (`db/events.ts` → `db`), or the module itself at the root of src/. */
function nodeOf(path: string): string {
  return path.split('/')[0]!;
}

/**
 * Imports between folders that point up, known and being moved away: each entry must still exist (a stale
 * one is removed with the import it excused). None today.
 */
const KNOWN_UPWARD_IMPORTS: readonly string[] = [];

/** The graph between folders: node → node → the module imports that make that edge. */
function folderGraph(graph: Map<string, string[]>): Map<string, Map<string, string[]>> {
  const folders = new Map<string, Map<string, string[]>>();
  for (const [file, targets] of graph) {
    const from = nodeOf(file);
    const edges = folders.get(from) ?? new Map<string, string[]>();
    folders.set(from, edges);
    for (const target of targets) {
      const to = nodeOf(target);
      if (to === from || KNOWN_UPWARD_IMPORTS.includes(`${file} → ${target}`)) continue;
      edges.set(to, [...(edges.get(to) ?? []), `${file} → ${target}`]);
    }
  }
  return folders;
}

/** Folder → folders (or top-level modules) it must never import, as its README says. */
const NEVER_IMPORTS: Record<string, readonly string[]> = {
  query: ['graphql', 'rest', 'db', 'plugins', 'live', 'auth', 'domain'],
  rest: ['db', 'graphql', 'context.ts'],
  graphql: ['rest', 'plugins'],
  db: ['graphql', 'rest', 'plugins', 'live', 'webhooks', 'seed'],
  domain: ['graphql', 'rest', 'plugins', 'db', 'webhooks', 'seed', 'live', 'auth'],
  cli: ['graphql', 'rest', 'plugins'],
  seed: ['graphql', 'rest', 'plugins', 'live'],
  webhooks: ['graphql', 'rest', 'plugins'],
  pages: ['db', 'graphql', 'auth'],
  auth: ['graphql', 'rest', 'plugins', 'oauth'],
  oauth: ['graphql', 'rest', 'plugins', 'http', 'live', 'governor', 'webhooks', 'seed'],
  admission: ['http', 'plugins', 'graphql', 'live'],
  governor: ['graphql', 'rest', 'plugins', 'db', 'live', 'auth', 'domain', 'webhooks', 'query', 'http'],
};

/**
 * The read plan's contract, where REST and GraphQL meet on a list's reads: a root list field hands its page's plan
 * (query/list-plan.ts) to an execution that asks for it, and an export reads the plan's rows as binary COPY output
 * (db/binary-rows.ts: types only, the one module of db/ that rest/ imports, and only as types).
 */
const READ_PLAN = 'query/list-plan.ts';
const BINARY_ROWS = 'db/binary-rows.ts';

describe('the layering of src/', () => {
  const graph = importGraph();

  it('reads the whole tree', () => {
    expect(graph.size).toBeGreaterThan(100);
    expect(graph.get('graphql/sync.ts')).toContain('db/sync-queries.ts');
  });

  it('has no import cycle', () => {
    expect(cycles(graph).map((cycle) => cycle.join(' → '))).toEqual([]);
  });

  it('orders the folders: no folder reaches back up to one that imports it', () => {
    const folders = folderGraph(graph);
    const simple = new Map([...folders].map(([node, edges]) => [node, [...edges.keys()]]));
    const explained = cycles(simple).map((cycle) =>
      cycle
        .slice(1)
        .map((to, i) => `${cycle[i]} → ${to} (${folders.get(cycle[i]!)!.get(to)![0]})`)
        .join(', '),
    );
    expect(explained).toEqual([]);
  });

  it('still has every import it excuses as known', () => {
    const edges = [...graph].flatMap(([file, targets]) => targets.map((target) => `${file} → ${target}`));
    expect(KNOWN_UPWARD_IMPORTS.filter((edge) => !edges.includes(edge))).toEqual([]);
  });

  it('keeps each folder to what its README allows', () => {
    const breaches: string[] = [];
    for (const [file, targets] of graph) {
      const folder = file.split('/')[0]!;
      for (const target of targets) {
        const targetFolder = target.split('/')[0]!;
        if (folder === 'rest' && target === BINARY_ROWS) continue;
        if (NEVER_IMPORTS[folder]?.includes(targetFolder)) breaches.push(`${file} imports ${target}`);
      }
    }
    expect(breaches).toEqual([]);
  });

  it('meets REST and GraphQL on a list only through the read plan contract', () => {
    const importers = (module: string) => [...graph].filter(([, targets]) => targets.includes(module)).map(([file]) => file);
    // The plan: handed back by the root list fields (graphql/list.ts), asked for by the row writer's route and the export.
    expect(importers(READ_PLAN)).toEqual(expect.arrayContaining(['graphql/list.ts', 'rest/handler.ts', 'rest/export.ts']));
    expect(graph.get(READ_PLAN)).toEqual([]);
    // The binary rows: types only, imported only as types by rest/.
    const rows = readFileSync(join(SRC, BINARY_ROWS), 'utf8');
    expect(rows).not.toMatch(/^export (const|let|function|class|async|enum)/m);
    expect(graph.get(BINARY_ROWS)).toEqual([]);
    for (const file of importers(BINARY_ROWS).filter((file) => file.startsWith('rest/'))) {
      expect(readFileSync(join(SRC, file), 'utf8'), file).toMatch(/^import type \{[^}]*\} from '\.\.\/db\/binary-rows\.js';$/m);
      expect(readFileSync(join(SRC, file), 'utf8'), file).not.toMatch(/^import \{[^}]*\} from '\.\.\/db\/binary-rows\.js';$/m);
    }
    // Neither context carries a list's reads or a stream's position any more: the plan and the root value do.
    for (const file of ['context.ts', 'rest/request-context.ts']) {
      expect(readFileSync(join(SRC, file), 'utf8'), file).not.toMatch(/rowCapture|listExport|streamCursor/);
    }
  });

  it('keeps http/ at the top: no folder below it imports it (src/server.ts, the entry point, starts it)', () => {
    const breaches = [...graph].flatMap(([file, targets]) =>
      // cli/export.ts runs the REST export in process (src/cli/README.md): the one other entry point that starts a gateway.
      file.startsWith('http/') || file === 'server.ts' || file === 'cli/export.ts'
        ? []
        : targets.filter((target) => target.startsWith('http/')).map((target) => `${file} imports ${target}`),
    );
    expect(breaches).toEqual([]);
  });

  it('keeps a transport below its server: graphql-ws takes the gateway as a structural type', () => {
    expect(graph.get('http/graphql-ws.ts')).toBeDefined();
    expect(graph.get('http/graphql-ws.ts')).not.toContain('http/yoga.ts');
    for (const file of graph.keys()) if (file.startsWith('live/')) expect(graph.get(file), file).not.toContain('http/yoga.ts');
  });

  it('has a README in every folder', () => {
    const folders = readdirSync(SRC, { withFileTypes: true }).filter((e) => e.isDirectory() && e.name !== 'generated');
    expect(folders.length).toBeGreaterThan(10);
    for (const folder of folders) expect(readFileSync(join(SRC, folder.name, 'README.md'), 'utf8')).toMatch(/^# src\//);
  });
});
