// Retention at scale (manual, not in CI), on the database bench/history-scale.ts kept (HISTORY_KEEP=1; its name
// in HISTORY_DATABASE): 10M runs, the big tenant holding half.
//
// Bounded batches (src/db/retention.ts, what SYNC_RETENTION_DAYS runs): the big tenant's runs past a window are
// removed while the real server (`node dist/server.js`) answers reads over HTTP. Retention runs in 2-second windows,
// paused in every other one, so the load of the machine (shared) falls on the reads of both kinds of window alike;
// reported: the time to remove the window, the runs a second, every batch's transaction time (how long its row locks
// are held), and the reads' p50/p99 with and without retention.
// The time-partition experiment that decided against partitioning (docs/explanation/history-at-scale.md) is in
// git: `git show 265c378:bench/history-retention.ts`.
//
//   npm run build && HISTORY_DATABASE=bench_history_<pid> npx tsx bench/history-retention.ts
//   (HISTORY_RETENTION_RUNS=250000: how many runs the window leaves out; HISTORY_DROP=1 drops the database at the end)

import { createServiceUser } from '../src/auth/service-users.js';
import { createToken } from '../src/auth/tokens.js';
import { openDatabase } from '../src/db/client.js';
import { removeExpiredRuns } from '../src/db/retention.js';
import { loadAverage, quantile } from './load.js';
import { ADMIN_URL, databaseUrl, withDatabase } from './databases.js';
import { freePort, serverEnv, startNode, stopChild, waitFor200 } from './processes.js';

const name = process.env.HISTORY_DATABASE;
if (!name) throw new Error('HISTORY_DATABASE names the database bench/history-scale.ts kept');
const url = databaseUrl(name);
const db = await openDatabase({ databaseUrl: url, poolSize: 4 });
const NEWEST = new Date('2026-11-01T00:00:00Z');
/** How many of the big tenant's oldest runs the window leaves out: enough for several months of its history. */
const REMOVE = Number(process.env.HISTORY_RETENTION_RUNS ?? 250_000);

const out: string[] = [];
const say = (line: string) => {
  out.push(line);
  process.stderr.write(`${line}\n`);
};

const [big] = await db.raw.query<{ tenant_id: string; runs: number }>(
  'SELECT tenant_id, sum(count)::int AS runs FROM sync_counts GROUP BY tenant_id ORDER BY 2 DESC LIMIT 1',
);
const tenantId = big!.tenant_id;
// The window (SYNC_RETENTION_DAYS) that leaves out about REMOVE of the big tenant's runs: whole days, counted
// back from the newest run (the time the synthetic history ends).
const [oldest] = await db.raw.query<{ finished_at: string }>(
  'SELECT finished_at::text FROM syncs WHERE tenant_id = $1 ORDER BY finished_at ASC OFFSET $2 LIMIT 1',
  [tenantId, REMOVE],
);
const DAYS = Math.floor((NEWEST.getTime() - new Date(oldest!.finished_at).getTime()) / 86_400_000);
const cutoff = new Date(NEWEST.getTime() - DAYS * 86_400_000);
const [{ all }] = (await db.raw.query<{ all: number }>('SELECT count(*)::int AS "all" FROM syncs')) as [{ all: number }];
const [{ doomed }] = (await db.raw.query<{ doomed: number }>(
  'SELECT count(*)::int AS doomed FROM syncs WHERE tenant_id = $1 AND finished_at < $2',
  [tenantId, cutoff.toISOString()],
)) as [{ doomed: number }];
say(
  `${all.toLocaleString('en')} runs; the big tenant ${big!.runs.toLocaleString('en')}, of which ${doomed.toLocaleString('en')} finished before ${cutoff.toISOString()} (load average ${loadAverage()})`,
);

say('\n## Bounded batches (the product), on syncs, reads over HTTP meanwhile');
const user = await createServiceUser(db, { tenantId, name: 'retention-bench', role: 'reader' });
const token = (await createToken(db, { tenantId, serviceUserId: user.id, expiresAt: new Date(Date.now() + 86_400_000) })).token;
const port = await freePort();
const server = startNode('history-server', 'dist/server.js', { env: serverEnv({ DATABASE_URL: url }, port) });
const origin = `http://127.0.0.1:${port}`;
await waitFor200(`${origin}/readyz`, { since: performance.now(), timeoutMs: 60_000, child: server });

let retaining = false;
let done = false;
const batchMs: number[] = [];
let removed = 0;
const timedBatches = {
  query: async <Row>(text: string, values?: unknown[]) => {
    const started = performance.now();
    const rows = await db.raw.query<Row>(text, values);
    batchMs.push(performance.now() - started);
    removed += (rows[0] as { runs?: number } | undefined)?.runs ?? 0;
    return rows;
  },
};
const toggle = setInterval(() => {
  retaining = !retaining;
}, 2_000);
let busyMs = 0;
const retentionStarted = performance.now();
const retention = (async () => {
  let more = true;
  while (more) {
    if (!retaining) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      continue;
    }
    const started = performance.now();
    more = (await removeExpiredRuns(timedBatches, tenantId, { days: DAYS, now: NEWEST })).more;
    busyMs += performance.now() - started;
  }
  done = true;
})();
const without: number[] = [];
const withRetention: number[] = [];
const paths = [
  '/api/v1/integrations/syncs?limit=100',
  '/api/v1/integrations/syncs?limit=100&status=eq.failed',
  '/api/v1/integrations/syncs?limit=100&order=started_at.asc',
];
let reads = 0;
while (!done) {
  const retainingThen: boolean = retaining;
  const started = performance.now();
  const response = await fetch(`${origin}${paths[reads % paths.length]}`, { headers: { authorization: `Token ${token}` } });
  await response.arrayBuffer();
  if (response.status !== 200) throw new Error(`read answered ${response.status}`);
  if (retainingThen === retaining) (retainingThen ? withRetention : without).push(performance.now() - started);
  reads += 1;
}
clearInterval(toggle);
await retention;
const wallMs = performance.now() - retentionStarted;
say(
  `- removed ${removed.toLocaleString('en')} runs in ${batchMs.length} batches of at most 1,000: ${(busyMs / 1000).toFixed(0)} s of retention steps (${Math.round(removed / (busyMs / 1000)).toLocaleString('en')} runs/s while running, pauses included; ${(wallMs / 1000).toFixed(0)} s wall with the paused windows)`,
);
say(
  `- each batch's transaction (its row locks held that long): median ${quantile(batchMs, 0.5).toFixed(1)} ms, p99 ${quantile(batchMs, 0.99).toFixed(1)} ms, longest ${Math.max(...batchMs).toFixed(1)} ms`,
);
const p = (values: number[]) =>
  `p50 ${quantile(values, 0.5).toFixed(1)} ms, p99 ${quantile(values, 0.99).toFixed(1)} ms (${values.length} reads)`;
say(
  `- reads without retention: ${p(without)}; with: ${p(withRetention)}; p99 ratio ${(quantile(withRetention, 0.99) / quantile(without, 0.99)).toFixed(2)}`,
);
const [{ left }] = (await db.raw.query<{ left: number }>(
  'SELECT count(*)::int AS "left" FROM syncs WHERE tenant_id = $1 AND finished_at < $2',
  [tenantId, cutoff.toISOString()],
)) as [{ left: number }];
const [{ kept, counted }] = (await db.raw.query<{ kept: number; counted: number }>(
  'SELECT (SELECT sum(count)::int FROM sync_counts WHERE tenant_id = $1) AS kept, (SELECT count(*)::int FROM syncs WHERE tenant_id = $1) AS counted',
  [tenantId],
)) as [{ kept: number; counted: number }];
say(
  `- afterwards: ${left} runs past the window; sync_counts ${kept.toLocaleString('en')} = count(*) ${counted.toLocaleString('en')}: ${kept === counted}`,
);
say(`(load average at the end ${loadAverage()}, 2 cores)`);

await stopChild(server.process);
await db.close();
if (process.env.HISTORY_DROP) await withDatabase(ADMIN_URL, (client) => client.query(`DROP DATABASE ${name} WITH (FORCE)`));
process.stdout.write(`${out.join('\n')}\n`);
