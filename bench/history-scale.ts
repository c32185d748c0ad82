// The history at scale (manual, not in CI): 20 tenants, one holding half of all runs, grown stage by stage
// (HISTORY_SIZES, default 10k → 100k → 1M → 10M runs in all) with the bulk loader (src/db/bulk-history.ts,
// generate_series in PostgreSQL). At each stage, against the real server (`node dist/server.js`) over HTTP, on
// the big tenant: the first page, page 10,000 by cursor (walking Link rel="next" from the first; the last page
// when there are fewer) and its plan (an index range scan, or the stage fails), a filtered page, the total count
// (kept counts) and a filtered count (count(*)), the NDJSON and CSV exports' rows/s and the server's RSS during
// them, `psql \copy (SELECT …) TO STDOUT` of the same rows right after each (the floor: PostgreSQL writing the
// rows with no gateway; three rounds of both, the median reported), and the index sizes, with the load average
// beside each stage. Prints a markdown table (docs/explanation/history-at-scale.md holds a run's).
//
//   npm run build && npx tsx bench/history-scale.ts        (HISTORY_SIZES=10000,100000 for a short run;
//                                                            HISTORY_KEEP=1 keeps the database for
//                                                            bench/history-retention.ts)

import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { cpus } from 'node:os';
import { createServiceUser } from '../src/auth/service-users.js';
import { createToken } from '../src/auth/tokens.js';
import { insertSyntheticHistory } from '../src/db/bulk-history.js';
import { openDatabase } from '../src/db/client.js';
import { readSyncPage, SYNC_COLUMNS } from '../src/db/sync-queries.js';
import { SYNC_DEFAULT_ORDER } from '../src/graphql/sync.js';
import { orderKeys } from '../src/query/filter.js';
import { allOf, keysetOrder } from '../src/query/sql.js';
import { createConnection } from '../src/db/connection-writes.js';
import { migrate } from '../src/db/migrate.js';
import { newId } from '../src/prefixed-ids.js';
import { applicationBySlug, seedCatalog } from '../src/seed/catalog.js';
import { loadAverage, median } from './load.js';
import { ADMIN_URL, databaseUrl, withDatabase } from './databases.js';
import { freePort, rssMb, serverEnv, startNode, stopChild, waitFor200 } from './processes.js';

const SIZES = (process.env.HISTORY_SIZES ?? '10000,100000,1000000,10000000').split(',').map(Number);
/** Rounds of export then `\copy` per format and stage (HISTORY_EXPORT_ROUNDS). */
const EXPORT_ROUNDS = Number(process.env.HISTORY_EXPORT_ROUNDS ?? 3);
const TENANTS = 20;
const NEWEST = new Date('2026-11-01T00:00:00Z');
const APPS = ['stripe', 'slack', 'xero', 'mews-pms', 'adyen', 'kisi', 'apaleo', 'mixpanel'];

/**
 * The deep cursor page's statement, captured as the list writes it, explained. Page 10,000 must be an index range
 * scan with no sort (a small table's last page may be planned otherwise: its plan is only shown).
 */
async function deepPlan(tenantId: string, rowsBefore: number, required: boolean): Promise<string> {
  const [last] = await db.raw.query<{ started_at: string; id: string }>(
    `SELECT started_at::text, id FROM syncs WHERE tenant_id = $1 ORDER BY started_at DESC, id DESC OFFSET ${rowsBefore - 1} LIMIT 1`,
    [tenantId],
  );
  let statement: { text: string; values: unknown[] } | undefined;
  const capture = {
    query: async <Row>(text: string, values?: unknown[]): Promise<Row[]> => {
      statement = { text, values: values ?? [] };
      return [];
    },
  };
  const keys = orderKeys(null, SYNC_COLUMNS, SYNC_DEFAULT_ORDER);
  const query = { tenantId, where: allOf([]), totalFromCounts: true, indexOrdered: true, take: 101, skip: 0, properties: null };
  await readSyncPage(capture, { ...query, ...keysetOrder(keys, [last!.started_at, last!.id]) }, null);
  const [{ 'QUERY PLAN': explained }] = (await db.raw.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${statement!.text}`, statement!.values)) as {
    'QUERY PLAN': { Plan: PlanNode }[];
  }[] as [{ 'QUERY PLAN': { Plan: PlanNode }[] }];
  const nodes: PlanNode[] = [];
  const walk = (node: PlanNode): void => {
    nodes.push(node);
    for (const child of node.Plans ?? []) walk(child);
  };
  walk(explained[0]!.Plan);
  const scan = nodes.find((node) => /Index( Only)? Scan/.test(node['Node Type']));
  const read = (scan?.['Actual Rows'] ?? 0) + (scan?.['Rows Removed by Filter'] ?? 0);
  const sorted = nodes.some((node) => node['Node Type'] === 'Sort');
  if (!required) return `${nodes.map((node) => node['Node Type']).join(' ← ')}`;
  if (!scan || sorted || read > 200) {
    throw new Error(`the deep page is not an index range scan: ${JSON.stringify(explained[0]!.Plan)}`);
  }
  return `${scan['Node Type']} on ${scan['Index Name']}, ${read} rows read`;
}

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Actual Rows'?: number;
  'Rows Removed by Filter'?: number;
  Plans?: PlanNode[];
}

const ms = (value: number) => `${value.toFixed(value < 10 ? 2 : 1)} ms`;

async function timed<T>(work: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await work();
  return { value, ms: performance.now() - started };
}

const name = `bench_history_${process.pid}`;
await withDatabase(ADMIN_URL, (client) => client.query(`CREATE DATABASE ${name}`));
const url = databaseUrl(name);
const db = await openDatabase({ databaseUrl: url, poolSize: 4 });
await migrate(db);
await seedCatalog(db);
const tenants: { id: string; connections: string[]; loaded: number }[] = [];
for (let index = 0; index < TENANTS; index += 1) {
  const id = newId('ten');
  await db.prisma.tenant.create({ data: { id, slug: `history-${index}`, name: `History ${index}` } });
  const connections = [];
  for (const app of APPS) connections.push((await createConnection(db.raw, id, { applicationId: applicationBySlug(app).id })).id);
  tenants.push({ id, connections, loaded: 0 });
}
const big = tenants[0]!;
const user = await createServiceUser(db, { tenantId: big.id, name: 'bench', role: 'reader' });
const token = (await createToken(db, { tenantId: big.id, serviceUserId: user.id, expiresAt: new Date(Date.now() + 86_400_000) })).token;
const port = await freePort();
const server = startNode('history-server', 'dist/server.js', { env: serverEnv({ DATABASE_URL: url }, port) });
const origin = `http://127.0.0.1:${port}`;
await waitFor200(`${origin}/readyz`, { since: performance.now(), timeoutMs: 60_000, child: server });
const headers = { authorization: `Token ${token}` };
const get = async (path: string) => {
  const response = await fetch(`${origin}${path}`, { headers });
  const body = (await response.json()) as { data: unknown[]; meta: { pagination: { total_items: number } } };
  if (response.status !== 200) throw new Error(`${path}: ${response.status} ${JSON.stringify(body)}`);
  return { body, next: /<([^>]+)>;\s*rel="next"/.exec(response.headers.get('link') ?? '')?.[1]?.slice(origin.length) ?? null };
};
const sampleMs = async (path: string, times = 15) => {
  const samples: number[] = [];
  for (let index = 0; index < times; index += 1) samples.push((await timed(() => get(path))).ms);
  return median(samples);
};

const rows: string[][] = [];
for (const size of SIZES) {
  // The big tenant holds half of all runs; the 19 others share the other half.
  const loadedBefore = tenants.reduce((sum, tenant) => sum + tenant.loaded, 0);
  const load = await timed(async () => {
    for (const [index, tenant] of tenants.entries()) {
      const target = index === 0 ? size / 2 : Math.floor(size / 2 / (TENANTS - 1));
      if (target > tenant.loaded) {
        await insertSyntheticHistory(db.raw, {
          tenantId: tenant.id,
          connectionIds: tenant.connections,
          runs: target - tenant.loaded,
          from: tenant.loaded,
          newest: NEWEST,
        });
        tenant.loaded = target;
      }
    }
    await db.raw.query('VACUUM ANALYZE syncs');
  });
  const total = (await db.raw.query<{ n: string }>('SELECT count(*) AS n FROM syncs'))[0]!.n;

  const first = await sampleMs('/api/v1/integrations/syncs?limit=100');
  // Walk by Link to page 10,000 (or the last page), then time that page again.
  let path: string | null = '/api/v1/integrations/syncs?limit=100';
  let deepPath = path;
  let pages = 0;
  const walk = await timed(async () => {
    while (path && pages < 10_000) {
      deepPath = path;
      path = (await get(path)).next;
      pages += 1;
    }
  });
  const deep = await sampleMs(deepPath);
  const filtered = await sampleMs('/api/v1/integrations/syncs?limit=100&status=eq.failed&order=started_at.asc');
  const counted = await sampleMs('/api/v1/integrations/syncs?limit=1');
  const countedFiltered = await sampleMs('/api/v1/integrations/syncs?limit=1&started_at=gte.2025-06-01T00:00:00Z', 3);

  // The deep page's statement, as the list sends it, explained: an index range scan, no sort.
  const plan =
    deepPath === '/api/v1/integrations/syncs?limit=100' ? 'first page' : await deepPlan(big.id, (pages - 1) * 100, pages === 10_000);

  // Export through HTTP, the server's RSS sampled, and psql \copy of the same rows in the same run: first one
  // untimed \copy, so that neither side meets the rows cold (the walk above read only the index), then
  // EXPORT_ROUNDS rounds of export then \copy for each format; each ratio is the median round's.
  const idle = rssMb(server.pid) ?? 0;
  let peak = idle;
  const sampler = setInterval(() => (peak = Math.max(peak, rssMb(server.pid) ?? 0)), 200);
  const copyMs = (format: 'ndjson' | 'csv') =>
    timed(async () => {
      const options = format === 'csv' ? ' WITH (FORMAT csv, HEADER)' : '';
      const statement = `\\copy (SELECT * FROM syncs WHERE tenant_id = '${big.id}' ORDER BY started_at DESC, id DESC) TO STDOUT${options}`;
      // Asynchronously: a blocked event loop would not see the server close an idle kept connection (after its
      // 5 s keep-alive), and undici would send the next request on it.
      const run = spawn('psql', [url, '-qc', statement], { stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      run.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const [status] = await once(run, 'close');
      if (status !== 0) throw new Error(`psql: ${stderr}`);
    });
  await copyMs('ndjson');
  const exports: string[] = [];
  for (const format of ['ndjson', 'csv'] as const) {
    const rounds: { rate: number; ratio: number }[] = [];
    for (let round = 0; round < EXPORT_ROUNDS; round += 1) {
      const exported = await timed(async () => {
        const accept = format === 'ndjson' ? 'application/x-ndjson' : 'text/csv';
        // A connection of its own, as psql's.
        const response = await fetch(`${origin}/api/v1/integrations/syncs`, { headers: { ...headers, accept, connection: 'close' } });
        let lines = 0;
        // Counted with indexOf (memchr), so that the client takes as little of the shared CPU as psql does.
        for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
          for (let at = chunk.indexOf(10); at >= 0; at = chunk.indexOf(10, at + 1)) lines += 1;
        }
        return format === 'csv' ? lines - 1 : lines;
      });
      if (exported.value !== big.loaded) throw new Error(`${format} export wrote ${exported.value} rows, not ${big.loaded}`);
      const copy = await copyMs(format);
      rounds.push({ rate: exported.value / (exported.ms / 1000), ratio: copy.ms / exported.ms });
    }
    const ratios = rounds.map((round) => round.ratio).sort((a, b) => a - b);
    exports.push(
      `${format} ${Math.round(median(rounds.map((round) => round.rate))).toLocaleString('en')} (${median(ratios).toFixed(2)}× \\copy; ${ratios.map((ratio) => ratio.toFixed(2)).join(', ')})`,
    );
  }
  clearInterval(sampler);
  const indexes = await db.raw.query<{ name: string; mb: number }>(
    `SELECT indexrelid::regclass::text AS name, round(pg_relation_size(indexrelid) / 1048576.0)::int AS mb FROM pg_index WHERE indrelid = 'syncs'::regclass ORDER BY 1`,
  );
  const [table] = await db.raw.query<{ mb: number }>(`SELECT round(pg_relation_size('syncs') / 1048576.0)::int AS mb`);
  rows.push([
    Number(total).toLocaleString('en'),
    big.loaded.toLocaleString('en'),
    `${(load.ms / 1000).toFixed(0)} s (${Math.round((size - loadedBefore) / (load.ms / 1000)).toLocaleString('en')}/s)`,
    ms(first),
    `${pages.toLocaleString('en')}: ${ms(deep)} (walk ${(walk.ms / 1000).toFixed(0)} s; ${plan})`,
    ms(filtered),
    `${ms(counted)} / ${ms(countedFiltered)}`,
    exports.join('; '),
    `${Math.round(peak - idle)} MB`,
    `${table!.mb} MB; ${indexes.map((index) => `${index.name.replace(/^syncs_/, '')} ${index.mb}`).join(', ')}`,
    loadAverage(),
  ]);
  process.stderr.write(`stage ${size} done (load average ${loadAverage()}): ${rows.at(-1)!.join(' | ')}\n`);
}

await stopChild(server.process);
await db.close();
if (process.env.HISTORY_KEEP) process.stderr.write(`kept database ${name} (big tenant ${big.id})\n`);
else await withDatabase(ADMIN_URL, (client) => client.query(`DROP DATABASE ${name} WITH (FORCE)`));

const header = [
  'runs (all)',
  'big tenant',
  'load',
  'first page',
  'page N by cursor',
  'filtered page',
  'count: kept / count(*)',
  'export rows/s (\\copy time ÷ export time)',
  'RSS Δ export',
  'table; indexes (MB)',
  'load average',
];
process.stdout.write(
  [`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`, ...rows.map((row) => `| ${row.join(' | ')} |`)].join('\n') +
    `\n\nload average at the end: ${loadAverage()} (${cpus().length} cores)\n`,
);
