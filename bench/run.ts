// `npm run bench`: prepares its own databases, loads 10k → 100k → 1M syncs with the CLI, starts the real
// server and the baseline, measures them interleaved with autocannon, counts SQL statements, EXPLAINs the
// main queries, profiles the gateway, measures cold starts and writes BENCHMARKS.md.
// At the largest scale it also measures the REST requests against a baseline without the token lookup.
// Last, on databases of their own, the write path (bench/write-path.ts) and the live fan-out (bench/fanout.ts).
//
//   BENCH_QUICK=1     10k rows only, short runs; writes bench/results/BENCHMARKS.quick.md; exits 1, as every run
//                     does, when a scenario reports a problem
//   BENCH_DURATION=s  measured seconds per figure (default 5; 2 in quick mode)
//   BENCH_ROUNDS=n    rounds of the full matrix at the largest scale (default 3; 1 in quick mode)
//   BENCH_ADMIN_URL   maintenance database for CREATE/DROP DATABASE (default postgres://postgres@127.0.0.1:5432/postgres)
//   BENCH_ONLY=peer   load the data as usual, then measure only the PostGraphile peer; the report and results go to
//                     bench/results/ (BENCHMARKS.peer[.quick].md), never to BENCHMARKS.md
//   --report          only render the report again from bench/results/results*.json and bench/analysis.md

import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { openDatabase } from '../src/db/client.js';
import { cpuBreakdown } from './breakdown.js';
import { measureColdStart, serverEnv } from './cold-start.js';
import { mainThreadProfile, summarizeProfile } from './cpu-profile.js';
import {
  createDatabase,
  databaseUrl,
  dropAllDatabases,
  dropDatabase,
  removeAllDirectories,
  serverVersion,
  tempDirectory,
  withDatabase,
} from './databases.js';
import { explainAll } from './explain.js';
import { fetchOnce, measureLatency, measureLoad, type LoadResult, type Target } from './load.js';
import { comparePeer, peerScenarios, postgraphileVersion, type PeerData } from './peer.js';
import { freePort, ROOT, runCli, startNode, stopAllChildren, stopChild, waitFor200, type NodeChild } from './processes.js';
import { renderReport, type ColdStartRow, type GatewayProfile, type Results, type ScenarioRun, type StageResult } from './report.js';
import { scenarios as buildScenarios, type Scenario, type ScenarioData } from './scenarios.js';
import { countStatements } from './sql-counts.js';
import { measureFanout } from './fanout.js';
import { measureWritePath } from './write-path.js';

const QUICK = process.env.BENCH_QUICK === '1';
// Quick runs measure 2 s: in 1 s the heaviest scenario completed no request on a loaded machine.
const DURATION_S = Number(process.env.BENCH_DURATION ?? (QUICK ? 2 : 5));
const WARMUP_S = QUICK ? 0.5 : 1;
const CONNECTIONS = 10;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? (QUICK ? 1 : 3));
const LATENCY_S = QUICK ? 0.5 : 2;
const COLD_REPEATS = QUICK ? 1 : 3;
const TENANTS = ['bench-a', 'bench-b'] as const;
/**
 * Smaller tenants beside the two measured ones, loaded once with the first step: a multi-tenant database
 * holds many tenants, so one tenant's rows are a small share of each table, as the planner sees it in
 * production. With the two equal tenants alone, every tenant-wide statement matched half of a small table
 * (`sync_counts`, `connections`) and a whole-table read was the planner's right choice.
 */
const NEIGHBOURS = { tenants: QUICK ? 4 : 20, connections: 500, syncs: 2_000 } as const;
const ONLY = process.env.BENCH_ONLY;
if (ONLY !== undefined && ONLY !== 'peer') throw new Error(`BENCH_ONLY=${ONLY}: the only section that runs alone is "peer"`);

/** Each step adds this much to each of the two tenants; the database grows in place. */
const STAGES: { totalSyncs: number; perTenant: { connections: number; syncs: number } }[] = QUICK
  ? [{ totalSyncs: 10_000, perTenant: { connections: 500, syncs: 5_000 } }]
  : [
      { totalSyncs: 10_000, perTenant: { connections: 250, syncs: 5_000 } },
      { totalSyncs: 100_000, perTenant: { connections: 125, syncs: 45_000 } },
      { totalSyncs: 1_000_000, perTenant: { connections: 125, syncs: 450_000 } },
    ];

const OUT_DIR = join(ROOT, 'bench', 'results');
const EXPLAIN_DIR = QUICK ? join(OUT_DIR, 'explain') : join(ROOT, 'bench', 'explain');
const SUFFIX = `${ONLY ? `.${ONLY}` : ''}${QUICK ? '.quick' : ''}`;
const REPORT_FILE = SUFFIX ? join(OUT_DIR, `BENCHMARKS${SUFFIX}.md`) : join(ROOT, 'BENCHMARKS.md');

const RESULTS_FILE = join(OUT_DIR, `results${SUFFIX}.json`);
const ANALYSIS_FILE = join(ROOT, 'bench', 'analysis.md');

const problems: string[] = [];
const log = (message: string) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
const seconds = (since: number) => (performance.now() - since) / 1000;

async function timed<T>(work: () => Promise<T>): Promise<[T, number]> {
  const since = performance.now();
  const value = await work();
  return [value, seconds(since)];
}

interface Server extends Target {
  child: NodeChild;
}

async function startServer(label: string, script: string, env: Record<string, string>, nodeArgs: string[] = []): Promise<Server> {
  const port = Number(env.PORT);
  const since = performance.now();
  const child = startNode(label, script, { env, nodeArgs });
  await waitFor200(`http://127.0.0.1:${port}/readyz`, { since, timeoutMs: 120_000, child });
  return { label, port, pid: child.pid, child };
}

async function startGateway(database: { DATABASE_URL?: string; DATA_DIR?: string }, nodeArgs: string[] = []): Promise<Server> {
  return startServer('gateway', 'dist/server.js', serverEnv(database, await freePort()), nodeArgs);
}

/**
 * The baseline server. Lower floors: `tokenLookup: 'once'` checks each token on its first request only (the
 * no-lookup floor); `prepared` runs its statements prepared (named), as the gateway does on PostgreSQL.
 */
async function startBaseline(url: string, floor: { tokenLookup?: 'every request' | 'once'; prepared?: boolean } = {}): Promise<Server> {
  const env = {
    DATABASE_URL: url,
    PORT: String(await freePort()),
    HOST: '127.0.0.1',
    ...(floor.tokenLookup === 'once' ? { BASELINE_TOKEN_LOOKUP: 'once' } : {}),
    ...(floor.prepared ? { BASELINE_PREPARED: '1' } : {}),
  };
  const label = [floor.tokenLookup === 'once' ? 'no-lookup' : '', floor.prepared ? 'prepared' : '', 'baseline'].filter(Boolean).join(' ');
  return startServer(label, 'bench/baseline-server.ts', env);
}

/** The scenarios measured against the lower floors: the sync list of issue #16 item 3, and one connection. */
const FLOOR_SCENARIOS = ['syncs-connection', 'connected-one'];

/** The REST scenarios against a lower floor at the largest scale, answers compared first. */
async function floorFigures(
  url: string,
  gateway: Server,
  list: Scenario[],
  token: string,
  floor: Parameters<typeof startBaseline>[1],
): Promise<ScenarioRun[]> {
  const server = await startBaseline(url, floor);
  try {
    const measured = list.filter((s) => FLOOR_SCENARIOS.includes(s.id));
    await compareAnswers(gateway, server, measured, token);
    return await measurePairs(gateway, server, measured.map((s) => ({ gateway: s, other: s })), token, ROUNDS);
  } finally {
    await stopChild(server.child.process);
  }
}

function checkFailures(label: string, scenario: Scenario, result: LoadResult): void {
  if (result.failures > 0) problems.push(`${label} ${scenario.id}: ${result.failures} of ${result.requests + result.failures} responses were not 2xx or failed`);
  if (result.requests === 0) problems.push(`${label} ${scenario.id}: no request completed within ${DURATION_S} s`);
}

/** One question as the gateway is asked it and as the server it is compared with is (the baseline: the same request). */
interface ScenarioPair {
  gateway: Scenario;
  other: Scenario;
}

/** Each scenario on the gateway then on the other server (the order swapped every other round). */
async function measurePairs(gateway: Server, other: Server, list: ScenarioPair[], token: string, rounds: number): Promise<ScenarioRun[]> {
  const runs: ScenarioRun[] = list.map(({ gateway: s }) => ({ scenario: s.id, title: s.title, rounds: [] }));
  for (let round = 0; round < rounds; round++) {
    for (const [i, scenarios] of list.entries()) {
      const options = { token, connections: CONNECTIONS, durationS: DURATION_S, warmupS: WARMUP_S, quiet: [gateway.pid, other.pid] };
      const order = round % 2 === 0 ? [gateway, other] : [other, gateway];
      const measured = new Map<Server, LoadResult>();
      for (const target of order) {
        const scenario = target === gateway ? scenarios.gateway : scenarios.other;
        const result = await measureLoad(target, scenario, options);
        checkFailures(target.label, scenario, result);
        measured.set(target, result);
      }
      const pair = { gateway: measured.get(gateway)!, baseline: measured.get(other)! };
      runs[i]!.rounds.push(pair);
      log(
        `  ${scenarios.gateway.id}: gateway ${pair.gateway.rps.toFixed(0)} req/s p50 ${pair.gateway.p50} ms | ${other.label} ${pair.baseline.rps.toFixed(0)} req/s p50 ${pair.baseline.p50} ms | ratio ${(pair.gateway.rps / pair.baseline.rps).toFixed(2)}`,
      );
    }
  }
  return runs;
}

/**
 * The PostGraphile peer at the largest scale: started on the same database, both queries answered with the
 * same rows by both servers (a scenario that is not is reported and not measured), then measured against
 * the gateway as the baseline is.
 */
async function peerFigures(url: string, gateway: Server, data: PeerData, token: string, totalSyncs: number): Promise<Results['peer']> {
  const version = postgraphileVersion();
  const env = { DATABASE_URL: url, PORT: String(await freePort()), HOST: '127.0.0.1', NODE_ENV: 'production', GRAPHILE_ENV: 'production' };
  let peer: Server | undefined;
  try {
    peer = await startServer('PostGraphile', 'bench/postgraphile-peer.ts', env);
    log(`PostGraphile ${version} on :${peer.port} (pid ${peer.pid})`);
    const list = peerScenarios(data);
    const sameRows = await comparePeer(gateway, peer, list, token);
    for (const v of sameRows) {
      if (v.verdict === 'DIFFERENT') problems.push(`gateway and PostGraphile answer ${v.scenario} with different rows: ${v.detail}`);
    }
    log(`PostGraphile answers: ${sameRows.map((v) => `${v.scenario} ${v.verdict} (${v.rows} rows)`).join(', ')}`);
    const same = list.filter((s) => sameRows.some((v) => v.scenario === s.id && v.verdict === 'same rows'));
    const runs = await measurePairs(gateway, peer, same.map((s) => ({ gateway: s.gateway, other: s.peer })), token, ROUNDS);
    const queryOf = (s: Scenario) => (JSON.parse(s.body ?? '{}') as { query: string }).query;
    const queries = list.map((s) => ({ scenario: s.id, gateway: queryOf(s.gateway), peer: queryOf(s.peer) }));
    return { version, totalSyncs, queries, sameRows, runs };
  } catch (error) {
    problems.push(`PostGraphile peer: ${error instanceof Error ? error.message : String(error)}`);
    return null;
  } finally {
    if (peer) await stopChild(peer.child.process);
  }
}

async function compareAnswers(gateway: Server, baseline: Server, list: Scenario[], token: string): Promise<StageResult['sameJson']> {
  const verdicts: StageResult['sameJson'] = [];
  for (const scenario of list) {
    const [a, b] = [await fetchOnce(gateway, scenario, token), await fetchOnce(baseline, scenario, token)];
    if (a.status !== 200 || b.status !== 200) {
      verdicts.push({ scenario: scenario.id, verdict: 'DIFFERENT', detail: `HTTP ${a.status} / ${b.status}: ${a.body.slice(0, 300)}` });
    } else if (a.body === b.body) {
      verdicts.push({ scenario: scenario.id, verdict: 'identical' });
    } else if (isDeepStrictEqual(JSON.parse(a.body), JSON.parse(b.body))) {
      verdicts.push({ scenario: scenario.id, verdict: 'same JSON' });
    } else {
      let at = 0;
      while (at < a.body.length && a.body[at] === b.body[at]) at++;
      verdicts.push({
        scenario: scenario.id,
        verdict: 'DIFFERENT',
        detail: `first difference at byte ${at}: gateway …${a.body.slice(Math.max(0, at - 60), at + 60)}… baseline …${b.body.slice(Math.max(0, at - 60), at + 60)}…`,
      });
    }
  }
  for (const v of verdicts) if (v.verdict === 'DIFFERENT') problems.push(`gateway and baseline answer ${v.scenario} differently: ${v.detail}`);
  return verdicts;
}

/** The busiest connection of the measured tenant, and the counts of the two measured tenants (not the neighbours). */
async function stageData(url: string, [tenantId, otherId]: string[], since: string) {
  return withDatabase(url, async (client) => {
    const busiest = (
      await client.query(
        'SELECT connection_id, count(*)::int AS n FROM syncs WHERE tenant_id = $1 GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 1',
        [tenantId],
      )
    ).rows[0] as { connection_id: string; n: number };
    const totals = (
      await client.query(
        `SELECT (SELECT count(*)::int FROM syncs WHERE tenant_id IN ($1, $3)) AS total,
                (SELECT count(*)::int FROM syncs WHERE tenant_id = $1) AS tenant,
                (SELECT count(*)::int FROM syncs WHERE tenant_id = $1 AND status = 'failed' AND started_at >= $2::date) AS filtered,
                (SELECT count(*)::int FROM connections WHERE tenant_id IN ($1, $3)) AS connections`,
        [tenantId, since, otherId],
      )
    ).rows[0] as { total: number; tenant: number; filtered: number; connections: number };
    return { busiest, totals };
  });
}

/** The scenarios profiled under load: those whose issue #16 target is missed. */
const PROFILED_SCENARIOS = ['syncs-connection', 'connected', 'connected-one', 'graphql-nested-50'];

/** `node --cpu-prof` of a fresh gateway process under one scenario's load, summarized (the last DURATION_S). */
async function profileGateway(url: string, scenario: Scenario, token: string): Promise<GatewayProfile> {
  const dir = tempDirectory('cpuprof');
  const server = await startGateway({ DATABASE_URL: url }, ['--cpu-prof', `--cpu-prof-dir=${dir}`]);
  try {
    await measureLoad(server, scenario, { token, connections: CONNECTIONS, durationS: WARMUP_S + 1, warmupS: 0 });
    const result = await measureLoad(server, scenario, { token, connections: CONNECTIONS, durationS: DURATION_S, warmupS: 0 });
    checkFailures('gateway (profiled)', scenario, result);
    await stopChild(server.child.process);
    const file = mainThreadProfile(dir, server.pid);
    const windowMs = DURATION_S * 1000;
    mkdirSync(OUT_DIR, { recursive: true });
    writeFileSync(join(OUT_DIR, `gateway-${scenario.id}.cpuprofile`), readFileSync(file));
    const summary = summarizeProfile(file, ROOT, { top: 12, windowMs });
    return { ...summary, scenario: scenario.id, title: scenario.title, requests: result.requests, windowMs };
  } finally {
    await stopChild(server.child.process);
  }
}

async function coldStarts(url: string, token: string, authPath: string): Promise<ColdStartRow[]> {
  const rows: ColdStartRow[] = [];
  const repeat = async (label: string, once: () => Promise<ColdStartRow['runs'][number]>) => {
    const row: ColdStartRow = { label, runs: [] };
    for (let i = 0; i < COLD_REPEATS; i++) row.runs.push(await once());
    rows.push(row);
    log(`  cold start ${label}: ${row.runs.map((r) => `${r.readyMs.toFixed(0)}/${r.firstRequestMs?.toFixed(0) ?? '-'} ms`).join(', ')}`);
  };
  await repeat(`PostgreSQL, existing database (${STAGES[STAGES.length - 1]!.totalSyncs.toLocaleString('en-US')} syncs)`, () =>
    measureColdStart({ DATABASE_URL: url }, { path: authPath, token }),
  );
  await repeat('PostgreSQL, new empty database (migrations applied at start)', async () => {
    const name = await createDatabase('cold');
    try {
      return await measureColdStart({ DATABASE_URL: databaseUrl(name) });
    } finally {
      await dropDatabase(name);
    }
  });
  await repeat('PGlite, new data directory (migrations applied at start)', () => measureColdStart({ DATA_DIR: tempDirectory('pglite-new') }));
  return rows;
}

async function createToken(env: Record<string, string>, tenant: string): Promise<string> {
  await runCli(['service-user', 'create', '--tenant', tenant, '--name', 'bench-reader', '--role', 'reader'], env);
  const expires = new Date(Date.now() + 7 * 86_400_000).toISOString().slice(0, 10);
  return runCli(['token', 'create', '--tenant', tenant, '--service-user', 'bench-reader', '--expires', expires], env);
}

async function busiestOf(dataDir: string, tenantId: string): Promise<{ connection_id: string; n: number }> {
  const db = await openDatabase({ dataDir });
  try {
    const rows = await db.raw.query<{ connection_id: string; n: number }>(
      'SELECT connection_id, count(*)::int AS n FROM syncs WHERE tenant_id = $1 GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 1',
      [tenantId],
    );
    return rows[0]!;
  } finally {
    await db.close();
  }
}

async function pgliteFigures(since: string, coldRows: ColdStartRow[]): Promise<Results['pglite']> {
  const dir = tempDirectory('pglite');
  const env = { DATA_DIR: dir };
  const syncs = 10_000;
  const connections = 100;
  await runCli(['db', 'migrate'], env);
  const tenantId = await runCli(['tenant', 'create', 'bench-a'], env);
  const [, loadS] = await timed(() =>
    runCli(['seed', 'load', '--tenant', 'bench-a', '--connections', String(connections), '--syncs', String(syncs)], env),
  );
  log(`  PGlite: loaded ${syncs} syncs in ${loadS.toFixed(1)} s`);
  const token = await createToken(env, 'bench-a');
  const busiest = await busiestOf(dir, tenantId);
  const list = buildScenarios({ token, connectionId: busiest.connection_id, connectionSyncs: busiest.n, since });
  const authPath = list.find((s) => s.id === 'syncs-connection')!.path;
  const row: ColdStartRow = { label: `PGlite, existing data directory (${syncs.toLocaleString('en-US')} syncs)`, runs: [] };
  for (let i = 0; i < COLD_REPEATS; i++) row.runs.push(await measureColdStart({ DATA_DIR: dir }, { path: authPath, token }));
  coldRows.push(row);
  log(`  cold start ${row.label}: ${row.runs.map((r) => `${r.readyMs.toFixed(0)}/${r.firstRequestMs?.toFixed(0)} ms`).join(', ')}`);

  const server = await startGateway({ DATA_DIR: dir });
  try {
    const wanted = ['graphql-trivial', 'syncs-connection', 'syncs-filtered', 'connected', 'graphql-nested-5', 'graphql-nested-50'];
    const runs: NonNullable<Results['pglite']>['runs'] = [];
    for (const scenario of list.filter((s) => wanted.includes(s.id))) {
      const result = await measureLoad(server, scenario, { token, connections: CONNECTIONS, durationS: DURATION_S, warmupS: WARMUP_S });
      checkFailures('gateway (PGlite)', scenario, result);
      runs.push({ scenario: scenario.id, title: scenario.title, result });
      log(`  PGlite ${scenario.id}: ${result.rps.toFixed(0)} req/s p50 ${result.p50} ms`);
    }
    return { syncs, connections, runs };
  } finally {
    await stopChild(server.child.process);
  }
}

/** One data scale: answers compared, SQL counted, the scenarios measured against the baseline, single-request latency. */
async function measureStage(
  url: string,
  gateway: Server,
  baseline: Server,
  all: Scenario[],
  token: string,
  largest: boolean,
): Promise<Pick<StageResult, 'sameJson' | 'sqlCounts' | 'runs' | 'latency'>> {
  const measured = largest ? all : all.filter((s) => s.scaling);
  const sameJson = await compareAnswers(gateway, baseline, measured, token);
  const sqlCounts = await countStatements(url, all, token);
  for (const count of sqlCounts) if (count.status !== 200) problems.push(`in-process ${count.scenario} answered HTTP ${count.status}`);
  log(`SQL statements: ${sqlCounts.map((c) => `${c.scenario}=${c.total}`).join(' ')}`);

  const runs = await measurePairs(gateway, baseline, measured.map((s) => ({ gateway: s, other: s })), token, largest ? ROUNDS : 1);
  const latency: StageResult['latency'] = [];
  for (const scenario of all.filter((s) => s.scaling)) {
    const quiet = [gateway.pid, baseline.pid];
    const g = await measureLatency(gateway, scenario, { token, durationS: LATENCY_S, quiet });
    const b = await measureLatency(baseline, scenario, { token, durationS: LATENCY_S, quiet });
    latency.push({ scenario: scenario.id, title: scenario.title, pair: { gateway: g, baseline: b } });
    log(`  latency ${scenario.id}: gateway p50 ${g.p50.toFixed(2)} ms, baseline p50 ${b.p50.toFixed(2)} ms`);
  }
  return { sameJson, sqlCounts, runs, latency };
}

/** After the scales: query plans, the in-process CPU breakdown, the profile, cold starts and PGlite. */
async function measureRest(
  url: string,
  final: StageResult,
  last: { list: Scenario[]; data: ScenarioData },
  context: { token: string; tenantId: string; since: string; postgres: string; startedAt: string },
): Promise<Pick<Results, 'explain' | 'explainHeader' | 'breakdown' | 'profiles' | 'coldStart' | 'pglite'>> {
  const { token, since } = context;
  const explainHeader = `${final.totalSyncs.toLocaleString('en-US')} syncs, PostgreSQL ${context.postgres}, ${context.startedAt.slice(0, 10)}`;
  const explain = await withDatabase(url, (client) => explainAll(client, final.sqlCounts, last.list, { dir: EXPLAIN_DIR, header: explainHeader }));
  for (const e of explain) {
    if (e.seqScanOnSyncs) problems.push(`${e.file}: Seq Scan on syncs`);
    if (e.generic?.seqScanOnSyncs) problems.push(`${e.file}: Seq Scan on syncs in the generic plan`);
    if (e.indexes.length === 0 && (e.indexPath?.indexes.length ?? 0) === 0) problems.push(`${e.file}: no index path, even with sequential scans off`);
  }
  log(`EXPLAIN: ${explain.map((e) => `${e.file}${e.seqScanOnSyncs ? ' SEQ SCAN' : ''}`).join(', ')}`);

  const breakdown = await cpuBreakdown(url, {
    token,
    tenantId: context.tenantId,
    connectionId: last.data.connectionId,
    seconds: QUICK ? 0.5 : 2,
  });
  log(`CPU breakdown: ${breakdown.map((b) => `${b.cpuMsPerRequest.toFixed(2)} ms`).join(', ')}`);

  const profiles: GatewayProfile[] = [];
  for (const id of PROFILED_SCENARIOS) {
    const profile = await profileGateway(url, last.list.find((s) => s.id === id)!, token);
    profiles.push(profile);
    log(`profile ${id}: top ${profile.functions.slice(0, 3).map((f) => f.name).join(', ')}`);
  }
  const syncList = last.list.find((s) => s.id === 'syncs-connection')!;

  const coldStart = await coldStarts(url, token, syncList.path);
  const pglite = await pgliteFigures(since, coldStart);
  return { explain, explainHeader, breakdown, profiles, coldStart, pglite };
}

async function main(): Promise<void> {
  const started = performance.now();
  const startedAt = new Date().toISOString();
  const loadStart = loadavg();
  const postgres = await serverVersion().catch((error: unknown) => {
    throw new Error(`PostgreSQL is not reachable (${String(error)}); start it or set BENCH_ADMIN_URL`);
  });
  log(`quick=${QUICK} duration=${DURATION_S}s rounds=${ROUNDS}; PostgreSQL ${postgres}`);

  const name = await createDatabase('main');
  const url = databaseUrl(name);
  const env = { DATABASE_URL: url };
  await runCli(['db', 'migrate'], env);
  const tenantIds: string[] = [];
  for (const tenant of TENANTS) tenantIds.push(await runCli(['tenant', 'create', tenant], env));
  const neighbours = Array.from({ length: NEIGHBOURS.tenants }, (_, i) => `bench-neighbour-${i + 1}`);
  for (const tenant of neighbours) await runCli(['tenant', 'create', tenant], env);
  const token = await createToken(env, TENANTS[0]);
  const since = new Date(Date.now() - 30 * 86_400_000).toISOString().slice(0, 10);

  const gateway = await startGateway({ DATABASE_URL: url });
  const baseline = ONLY ? undefined : await startBaseline(url);
  log(`gateway on :${gateway.port} (pid ${gateway.pid})${baseline ? `, baseline on :${baseline.port} (pid ${baseline.pid})` : ''}`);

  const stages: StageResult[] = [];
  let last: { list: Scenario[]; data: ScenarioData } | undefined;
  for (const [index, stage] of STAGES.entries()) {
    const largest = index === STAGES.length - 1;
    const [, loadSeconds] = await timed(async () => {
      for (const tenant of index === 0 ? neighbours : []) {
        await runCli(['seed', 'load', '--tenant', tenant, '--connections', String(NEIGHBOURS.connections), '--syncs', String(NEIGHBOURS.syncs)], env);
      }
      for (const tenant of TENANTS) {
        await runCli(
          ['seed', 'load', '--tenant', tenant, '--connections', String(stage.perTenant.connections), '--syncs', String(stage.perTenant.syncs)],
          env,
        );
      }
    });
    // The checkpoint writes the load's dirty pages now rather than during the measurements.
    const [, vacuumSeconds] = await timed(() =>
      withDatabase(url, async (client) => {
        await client.query('VACUUM (ANALYZE) syncs, connections, sync_counts');
        await client.query('CHECKPOINT');
      }),
    );
    const { busiest, totals } = await stageData(url, tenantIds, since);
    if (totals.total !== stage.totalSyncs) problems.push(`expected ${stage.totalSyncs} syncs after loading, found ${totals.total}`);
    log(`${totals.total} syncs, ${totals.connections} connections (load ${loadSeconds.toFixed(1)} s, vacuum ${vacuumSeconds.toFixed(1)} s)`);

    const data: ScenarioData = { token, connectionId: busiest.connection_id, connectionSyncs: busiest.n, since };
    const all = buildScenarios(data);
    const measured = baseline
      ? await measureStage(url, gateway, baseline, all, token, largest)
      : { sameJson: [], sqlCounts: [], runs: [], latency: [] };
    stages.push({
      totalSyncs: totals.total,
      tenantSyncs: totals.tenant,
      connections: totals.connections,
      busiestConnectionSyncs: busiest.n,
      filteredRows: totals.filtered,
      loadSeconds,
      vacuumSeconds,
      ...measured,
    });
    last = { list: all, data };
  }

  const final = stages[stages.length - 1]!;
  const peer = await peerFigures(url, gateway, { tenantId: tenantIds[0]!, connectionId: last!.data.connectionId }, token, final.totalSyncs);
  const noLookup = ONLY ? [] : await floorFigures(url, gateway, last!.list, token, { tokenLookup: 'once' });
  const prepared = ONLY ? [] : await floorFigures(url, gateway, last!.list, token, { prepared: true });
  await stopChild(gateway.child.process);
  if (baseline) await stopChild(baseline.child.process);

  const rest = ONLY
    ? { explain: [], explainHeader: '', breakdown: [], profiles: [], coldStart: [], pglite: null }
    : await measureRest(url, final, last!, { token, tenantId: tenantIds[0]!, since, postgres, startedAt });

  // The write side's two targets, each on a database and a gateway of its own (a quick run leaves them out).
  const writePath = ONLY || QUICK ? null : await measureWritePath();
  const fanout = ONLY || QUICK ? null : await measureFanout();
  for (const found of [writePath, fanout]) problems.push(...(found?.problems ?? []));

  const results: Results = {
    quick: QUICK,
    ...(ONLY ? { only: ONLY } : {}),
    startedAt,
    finishedAt: new Date().toISOString(),
    elapsedSeconds: seconds(started),
    machine: {
      nproc: cpus().length,
      memoryGiB: totalmem() / 2 ** 30,
      cpu: cpus()[0]?.model ?? 'unknown',
      node: process.version,
      postgres,
      loadStart,
      loadEnd: loadavg(),
    },
    settings: { durationS: DURATION_S, warmupS: WARMUP_S, connections: CONNECTIONS, rounds: ROUNDS, latencyS: LATENCY_S, neighbours: NEIGHBOURS },
    stages,
    ...rest,
    peer,
    noLookup,
    prepared,
    writePath,
    fanout,
    problems,
  };
  mkdirSync(OUT_DIR, { recursive: true });
  writeFileSync(RESULTS_FILE, JSON.stringify(results, null, 2));
  writeReport(results);
  log(`wrote ${REPORT_FILE} in ${results.elapsedSeconds.toFixed(0)} s${problems.length > 0 ? `; ${problems.length} problem(s):\n  ${problems.join('\n  ')}` : ''}`);
  // A figure measured while a scenario failed is no figure: the run fails, and the report says why.
  if (problems.length > 0) process.exitCode = 1;
}

function writeReport(results: Results): void {
  const analysis = existsSync(ANALYSIS_FILE) ? readFileSync(ANALYSIS_FILE, 'utf8') : '';
  writeFileSync(REPORT_FILE, renderReport(results, analysis));
}

let cleaning: Promise<void> | undefined;
function cleanUp(): Promise<void> {
  cleaning ??= (async () => {
    await stopAllChildren();
    await dropAllDatabases();
    removeAllDirectories();
  })();
  return cleaning;
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    log(`${signal}: cleaning up`);
    void cleanUp().finally(() => process.exit(130));
  });
}

try {
  if (process.argv.includes('--report')) {
    writeReport(JSON.parse(readFileSync(RESULTS_FILE, 'utf8')) as Results);
    log(`wrote ${REPORT_FILE} from ${RESULTS_FILE}`);
  } else {
    await main();
  }
} catch (error) {
  process.exitCode = 1;
  log(`failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
} finally {
  await cleanUp();
}
