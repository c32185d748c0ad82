// Where a gateway's CPU goes, by part of the program: reads CPU profiles of the built server (`--cpu-prof`, e.g.
// through COMPARE_NODE_ARGS) and sorts each sample by the module it ran in (the build keeps esbuild's
// `// src/…` and `// node_modules/…` markers) into the parts below, then spreads the measured CPU time per
// request over them. The time the profiler saw in socket writes is left out: on two busy cores it is mostly the
// process waiting to run again, which CPU time (from /proc) does not count.
//
//   COMPARE_EXTRAS=none COMPARE_SCENARIOS=connected COMPARE_ROUNDS=1 COMPARE_DURATION=8 \
//     COMPARE_NODE_ARGS='--cpu-prof --cpu-prof-dir=/tmp/prof-connected' npm run bench:compare
//   npx tsx bench/cpu-split.ts connected=/tmp/prof-connected:3.82 …   (name=profile dir:CPU ms per request)

import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

interface Profile {
  nodes: { id: number; callFrame: CallFrame }[];
  samples: number[];
  timeDeltas: number[];
}

/** The parts, in the order the table shows them; the first is what the floor does as well. */
const PARTS = [
  'node:http, pg and Node core (the floor does these too)',
  'GraphQL execution (graphql-jit, the resolvers)',
  'REST route, envelope and JSON bytes',
  'SQL text, prepared statements, cursors',
  'admission spine and its transport',
  'metrics',
  'request log line',
  'async context (AsyncLocalStorage)',
  'garbage collection',
  'V8: microtasks, natives, other',
] as const;
type Part = (typeof PARTS)[number];

const SOCKET_WRITES = new Set(['writev', 'writeBuffer', 'writeUtf8String', 'writeLatin1String', 'writeString', 'utf8Write']);

/** The module markers of each bundled file: [line, module path], in line order. */
const markers = new Map<string, [number, string][]>();

function moduleAt(url: string, line: number): string | null {
  if (!url.startsWith('file://') || !url.includes('/dist/')) return null;
  const path = fileURLToPath(url);
  let starts = markers.get(path);
  if (!starts) {
    starts = [];
    for (const [index, text] of readFileSync(path, 'utf8').split('\n').entries()) {
      if (/^\/\/ (src|node_modules)\//.test(text)) starts.push([index, text.slice(3)]);
    }
    markers.set(path, starts);
  }
  let found = '(bundle)';
  for (const [start, name] of starts) {
    if (start > line) break;
    found = name;
  }
  return found;
}

/** The part a sample's function belongs to; null for idle time and socket writes. */
function partOf({ functionName, url, lineNumber }: CallFrame): Part | null {
  if (functionName === '(idle)' || SOCKET_WRITES.has(functionName)) return null;
  if (functionName === '(garbage collector)') return 'garbage collection';
  const module = moduleAt(url, lineNumber);
  if (module !== null) {
    if (/^node_modules\/(pg|pg-[\w-]+|postgres-[\w-]+|pgpass)\//.test(module)) return PARTS[0];
    if (/^node_modules\/(graphql-jit|graphql|@graphql-tools|@pothos|@prisma)\//.test(module) || module.startsWith('src/graphql/')) {
      return 'GraphQL execution (graphql-jit, the resolvers)';
    }
    if (
      /^node_modules\/(pino|sonic-boom|fast-redact|quick-format-unescaped)\//.test(module) ||
      /src\/(logger|paths)\.ts|admission\/request-log/.test(module)
    ) {
      return 'request log line';
    }
    if (/^node_modules\/(prom-client|tdigest|bintrees)\//.test(module) || module.includes('use-metrics')) return 'metrics';
    if (/^src\/(http|plugins|auth)\//.test(module) || module === 'src/errors.ts') return 'admission spine and its transport';
    if (module.startsWith('src/rest/') || module === 'src/json-bytes.ts') return 'REST route, envelope and JSON bytes';
    if (/^src\/(db|query)\//.test(module)) return 'SQL text, prepared statements, cursors';
    return 'V8: microtasks, natives, other';
  }
  // graphql-jit's generated functions have no file.
  if (url === '' && /Handler$|Resolver|__/.test(functionName)) return 'GraphQL execution (graphql-jit, the resolvers)';
  if (/async_hooks|async_local_storage|async_context_frame/.test(url)) return 'async context (AsyncLocalStorage)';
  if (url.startsWith('node:') || /^(internal|streams|timers|events|buffer|crypto)\//.test(url)) return PARTS[0];
  return 'V8: microtasks, natives, other';
}

/** Microseconds of CPU per request, by part, for one profile directory and its measured CPU ms per request. */
function split(directory: string, cpuMsPerRequest: number): Map<Part, number> {
  const file = readdirSync(directory).find((name) => name.endsWith('.cpuprofile'));
  if (!file) throw new Error(`no .cpuprofile in ${directory}`);
  const profile = JSON.parse(readFileSync(join(directory, file), 'utf8')) as Profile;
  const frames = new Map(profile.nodes.map((node) => [node.id, node.callFrame]));
  const byPart = new Map<Part, number>();
  let counted = 0;
  for (const [index, id] of profile.samples.entries()) {
    const part = partOf(frames.get(id)!);
    if (part === null) continue;
    const micros = profile.timeDeltas[index] ?? 0;
    counted += micros;
    byPart.set(part, (byPart.get(part) ?? 0) + micros);
  }
  for (const [part, micros] of byPart) byPart.set(part, (1000 * cpuMsPerRequest * micros) / counted);
  return byPart;
}

const columns = process.argv.slice(2).map((argument) => {
  const match = /^([^=]+)=(.+):([\d.]+)$/.exec(argument);
  if (!match) throw new Error(`expected name=profile-dir:cpu-ms-per-request, got ${argument}`);
  return { name: match[1]!, parts: split(match[2]!, Number(match[3])), cpuMs: Number(match[3]) };
});
console.log(`| CPU µs per request | ${columns.map((column) => column.name).join(' | ')} |`);
console.log(`| :-- | ${columns.map(() => '--:').join(' | ')} |`);
for (const part of PARTS) {
  console.log(`| ${part} | ${columns.map((column) => Math.round(column.parts.get(part) ?? 0).toLocaleString('en-US')).join(' | ')} |`);
}
console.log(
  `| **measured CPU per request** | ${columns.map((column) => Math.round(column.cpuMs * 1000).toLocaleString('en-US')).join(' | ')} |`,
);
