// The write path (issue #16 item 7): a run's whole lifecycle, trigger → claim → progress × 10 → finish, done by
// concurrent workers through the REST API of the real server (`node dist/server.js`, production settings),
// against the floor: the same data-layer calls (src/db/sync-runs.ts, so the very same statements and
// transactions, events included) made straight through `pg` from this process, with the same bodies parsed
// by the same domain parsers. Gateway and floor alternate, 5 rounds; the figure is lifecycles per second
// (13 writes each), medians, and the ratio. Then a fresh gateway process serves one more gateway round under
// `node --cpu-prof`, and the profile's self time is printed (functions and packages) to show where the rest goes.
// Each side's CPU per lifecycle is printed too: the gateway's, PostgreSQL's (every postgres process) and this
// process's (the HTTP client, or the floor itself), since the four share the machine's two cores.
//
//   npm run bench:writes            (WRITE_BENCH_SECONDS, WRITE_BENCH_WORKERS, WRITE_BENCH_ROUNDS to change the defaults;
//                                    WRITE_BENCH_KEEP_PROFILE=<file> keeps the raw profile, GATEWAY=<script> measures another build;
//                                    WRITE_BENCH_FLOOR_PREPARED=off: the floor's statements unnamed, as before the gateway
//                                    prepared its own; by default the floor runs them prepared, as the gateway does)

import { copyFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { createServiceUser } from '../src/auth/service-users.js';
import { createToken } from '../src/auth/tokens.js';
import { openDatabase, type Database } from '../src/db/client.js';
import { createConnection } from '../src/db/connection-writes.js';
import { migrate } from '../src/db/migrate.js';
import { claimSync, finishSync, reportSyncProgress, triggerSync } from '../src/db/sync-runs.js';
import { parseSyncReport } from '../src/domain/sync-reports.js';
import { newId } from '../src/prefixed-ids.js';
import { applicationBySlug, seedCatalog } from '../src/seed/catalog.js';
import { serverEnv } from './cold-start.js';
import { jsonClient } from './http-client.js';
import { mainThreadProfile, summarizeProfile } from './cpu-profile.js';
import { median, profileTables, writePathSection } from './report.js';
import { createDatabase, databaseUrl, dropDatabase, removeAllDirectories, tempDirectory } from './databases.js';
import { cpuTimeMs, freePort, PostgresCpuMeter, ROOT, startNode, stopChild, waitFor200 } from './processes.js';

const SECONDS = Number(process.env.WRITE_BENCH_SECONDS ?? 10);
const WORKERS = Number(process.env.WRITE_BENCH_WORKERS ?? 8);
const ROUNDS = Number(process.env.WRITE_BENCH_ROUNDS ?? 5);
const WARMUP_SECONDS = 3;
const PROGRESS_REPORTS = 10;
const FLOOR_PREPARED = process.env.WRITE_BENCH_FLOOR_PREPARED !== 'off';
const WORKER_ID = 'bench-engine';
const API = '/api/v1/integrations';

const log = (message: string) => process.stderr.write(`[write-bench ${new Date().toISOString().slice(11, 19)}] ${message}\n`);

const progressBody = (i: number) => ({ summary: { processed: (i + 1) * 100, estimated_items: PROGRESS_REPORTS * 100 } });
const finishBody = { status: 'success', summary: { processed: PROGRESS_REPORTS * 100, inserted: 400, updated: 500, deleted: 100 } };

interface Side {
  label: string;
  /** One whole lifecycle of a run of `connectionId`. */
  lifecycle(connectionId: string): Promise<void>;
  /** CPU time of the process doing the API's work, for CPU per lifecycle (the gateway's; null for the floor). */
  cpuMs(): number | null;
}

interface Measured {
  perSecond: number;
  /** The gateway's CPU per lifecycle (null for the floor). */
  cpuMsPerLifecycle: number | null;
  /** PostgreSQL's CPU per lifecycle (every postgres process), and this process's (the client, or the floor itself). */
  postgresMsPerLifecycle: number;
  clientMsPerLifecycle: number;
}

async function measure(side: Side, connections: string[], seconds = SECONDS): Promise<Measured> {
  const started = performance.now();
  const until = started + seconds * 1000;
  const cpuBefore = side.cpuMs();
  const postgresCpu = new PostgresCpuMeter();
  const ownBefore = process.cpuUsage();
  let done = 0;
  await Promise.all(
    connections.map(async (connectionId) => {
      while (performance.now() < until) {
        await side.lifecycle(connectionId);
        done += 1;
      }
    }),
  );
  const cpuAfter = side.cpuMs();
  const own = process.cpuUsage(ownBefore);
  // Over the time the lifecycles took: the last ones end after `until`.
  return {
    perSecond: done / ((performance.now() - started) / 1000),
    cpuMsPerLifecycle: cpuBefore !== null && cpuAfter !== null ? (cpuAfter - cpuBefore) / done : null,
    postgresMsPerLifecycle: postgresCpu.stop() / done,
    clientMsPerLifecycle: (own.user + own.system) / 1000 / done,
  };
}

function floorSide(db: Database, tenantId: string): Side {
  const report = (body: unknown) => {
    const parsed = parseSyncReport(body);
    if ('problems' in parsed) throw new Error(`bad report body: ${JSON.stringify(parsed.problems)}`);
    return parsed.report;
  };
  return {
    label: 'floor (data layer through pg)',
    cpuMs: () => null,
    async lifecycle(connectionId) {
      await triggerSync(db.raw, tenantId, { connectionId });
      const run = await claimSync(db.raw, tenantId, { workerId: WORKER_ID, connectionId, leaseSeconds: 60 });
      if (!run) throw new Error('floor: nothing to claim');
      for (let i = 0; i < PROGRESS_REPORTS; i++) {
        const progress = report(progressBody(i));
        if (progress.kind !== 'progress') throw new Error('not a progress report');
        await reportSyncProgress(db.raw, tenantId, { syncId: run.id, workerId: WORKER_ID, summary: progress.summary });
      }
      const finish = report(finishBody);
      if (finish.kind !== 'finish') throw new Error('not an outcome');
      await finishSync(db.raw, tenantId, { syncId: run.id, workerId: WORKER_ID, outcome: finish.outcome });
    },
  };
}

/** The gateway's side as an engine would drive it, over keep-alive connections (one per worker; bench/http-client.ts). */
function gatewaySide(baseUrl: string, pid: number, adminToken: string, engineToken: string): Side {
  const client = jsonClient(baseUrl);
  const call = async (token: string, method: string, path: string, body: unknown, expected: number) => {
    const response = await client.call<{ data: { id: string } }>(method, `${API}${path}`, token, body);
    if (response.status !== expected || !response.body) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(response.body).slice(0, 300)}`);
    return response.body;
  };
  return {
    label: 'gateway (REST)',
    cpuMs: () => cpuTimeMs(pid),
    async lifecycle(connectionId) {
      await call(adminToken, 'POST', '/syncs', { connection_id: connectionId }, 201);
      const run = (await call(engineToken, 'POST', '/syncs/claim', { connection_id: connectionId, lease_seconds: 60 }, 200)).data;
      for (let i = 0; i < PROGRESS_REPORTS; i++) await call(engineToken, 'PATCH', `/syncs/${run.id}`, progressBody(i), 200);
      await call(engineToken, 'PATCH', `/syncs/${run.id}`, finishBody, 200);
    },
  };
}

/** What one measurement of the write path found (medians over the rounds); rendered by report.ts. */
export interface WritePathFigures {
  workers: number;
  seconds: number;
  rounds: number;
  gatewayPerSecond: number;
  floorPerSecond: number;
  /** Gateway / floor of each round; the report's ratio is their median, as for every other ratio. */
  roundRatios: number[];
  gatewayRounds: number[];
  floorRounds: number[];
  /** CPU per lifecycle, ms: the gateway process, PostgreSQL and the client on the gateway's side; PostgreSQL and the floor's process on the floor's. */
  cpu: { gateway: number; gatewayPostgres: number; client: number; floorPostgres: number; floorProcess: number };
  floorPrepared: boolean;
  /** The profiled round's self time, as Markdown. */
  profile: string;
  /** What went wrong (a run left in a state other than success); empty when nothing did. */
  problems: string[];
}

/**
 * Measures the write path on a database of its own (dropped afterwards) with a gateway process of its own;
 * `npm run bench` calls it for its report, `npm run bench:writes` prints it.
 */
export async function measureWritePath(): Promise<WritePathFigures> {
  const name = await createDatabase('writes');
  const url = databaseUrl(name);
  const db = await openDatabase({ databaseUrl: url, poolSize: WORKERS + 2, preparedStatements: FLOOR_PREPARED });
  await migrate(db);
  await seedCatalog(db);
  const tenant = await db.prisma.tenant.create({ data: { id: newId('ten'), slug: 'writes', name: 'writes' } });
  const application = applicationBySlug('stripe');
  // Two sets of connections, one per side, so neither meets the other's active runs.
  const connectionsOf = async (side: string) => {
    const ids: string[] = [];
    for (let i = 0; i < WORKERS; i++) {
      ids.push((await createConnection(db.raw, tenant.id, { applicationId: application.id, name: `${side} ${i}` })).id);
    }
    return ids;
  };
  const gatewayConnections = await connectionsOf('gateway');
  const floorConnections = await connectionsOf('floor');
  const expiresAt = new Date(Date.now() + 86_400_000);
  const tokenOf = async (role: 'admin' | 'engine') =>
    (await createToken(db, { tenantId: tenant.id, serviceUserId: (await createServiceUser(db, { tenantId: tenant.id, name: `${role}-bench`, role })).id, expiresAt })).token;
  const [adminToken, engineToken] = [await tokenOf('admin'), await tokenOf('engine')];

  // The gateway as the benchmarks run it (bench/cold-start.ts: production settings, no scheduler, no rate limit).
  let measured: Omit<WritePathFigures, 'profile'>;
  const port = await freePort();
  const server = startNode('gateway', process.env.GATEWAY ?? 'dist/server.js', { env: serverEnv({ DATABASE_URL: url }, port) });
  try {
    await waitFor200(`http://127.0.0.1:${port}/readyz`, { since: performance.now(), timeoutMs: 60_000, child: server });
    const sides = [gatewaySide(`http://127.0.0.1:${port}`, server.pid, adminToken, engineToken), floorSide(db, tenant.id)];
    const connections = [gatewayConnections, floorConnections];
    // Warm both up under the measured load (V8's optimisation of the gateway's larger code, its compiled
    // queries, the pools, the token cache) before measuring: a first round measured a half-warm gateway.
    for (const [i, side] of sides.entries()) await measure(side, connections[i]!, WARMUP_SECONDS);
    const results: Array<Measured[]> = [[], []];
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? [0, 1] : [1, 0];
      for (const i of order) {
        const result = await measure(sides[i]!, connections[i]!);
        results[i]!.push(result);
        log(`round ${round + 1}: ${sides[i]!.label}: ${result.perSecond.toFixed(1)} lifecycles/s${result.cpuMsPerLifecycle === null ? '' : `, ${result.cpuMsPerLifecycle.toFixed(1)} ms gateway CPU per lifecycle`}`);
      }
    }
    const gateway = median(results[0]!.map((r) => r.perSecond));
    const roundRatios = results[0]!.map((r, i) => r.perSecond / results[1]![i]!.perSecond);
    const floor = median(results[1]!.map((r) => r.perSecond));
    const runs = await db.raw.query<{ status: string; n: number }>(
      `SELECT "status"::text AS "status", count(*)::int AS "n" FROM "public"."syncs" WHERE "tenant_id" = $1 GROUP BY 1 ORDER BY 1`,
      [tenant.id],
    );
    const medianOf = (side: number, figure: (r: Measured) => number | null) => median(results[side]!.map((r) => figure(r) ?? 0));
    const cpu = {
      gateway: medianOf(0, (r) => r.cpuMsPerLifecycle),
      gatewayPostgres: medianOf(0, (r) => r.postgresMsPerLifecycle),
      client: medianOf(0, (r) => r.clientMsPerLifecycle),
      floorPostgres: medianOf(1, (r) => r.postgresMsPerLifecycle),
      floorProcess: medianOf(1, (r) => r.clientMsPerLifecycle),
    };
    measured = {
      workers: WORKERS,
      seconds: SECONDS,
      rounds: ROUNDS,
      gatewayPerSecond: gateway,
      floorPerSecond: floor,
      roundRatios,
      gatewayRounds: results[0]!.map((r) => r.perSecond),
      floorRounds: results[1]!.map((r) => r.perSecond),
      cpu,
      floorPrepared: FLOOR_PREPARED,
      problems: runs.filter((r) => r.status !== 'success').map((r) => `write path: ${r.n} run(s) left ${r.status}`),
    };
  } finally {
    await stopChild(server.process);
  }
  try {
    return { ...measured, profile: await profileGateway(url, gatewayConnections, adminToken, engineToken) };
  } finally {
    await db.close();
    await dropDatabase(name);
  }
}

/** One more gateway round on a fresh process under `node --cpu-prof`: its self time, as two Markdown tables. */
async function profileGateway(url: string, connections: string[], adminToken: string, engineToken: string): Promise<string> {
  const dir = tempDirectory('write-cpuprof');
  const port = await freePort();
  const server = startNode('gateway (profiled)', 'dist/server.js', { env: serverEnv({ DATABASE_URL: url }, port), nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${dir}`] });
  let lifecycles: number;
  try {
    await waitFor200(`http://127.0.0.1:${port}/readyz`, { since: performance.now(), timeoutMs: 60_000, child: server });
    const side = gatewaySide(`http://127.0.0.1:${port}`, server.pid, adminToken, engineToken);
    await side.lifecycle(connections[0]!);
    lifecycles = (await measure(side, connections)).perSecond * SECONDS;
  } finally {
    await stopChild(server.process);
  }
  const file = mainThreadProfile(dir, server.pid);
  if (process.env.WRITE_BENCH_KEEP_PROFILE) copyFileSync(file, process.env.WRITE_BENCH_KEEP_PROFILE);
  const p = summarizeProfile(file, ROOT, { top: 15, windowMs: SECONDS * 1000 });
  return [
    `Profile: \`node --cpu-prof\` on a fresh gateway process for one more gateway round (${Math.round(lifecycles)} lifecycles, ${Math.round(lifecycles * 13)} writes); the last ${SECONDS} s, ${Math.round(p.totalMs)} ms sampled, ${(p.idleShare * 100).toFixed(1)}% idle; self time, share of the non-idle time.`,
    '',
    ...profileTables(p, 12),
  ].join('\n');
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  try {
    const figures = await measureWritePath();
    process.stdout.write(`${writePathSection(figures).join('\n')}\n`);
    if (figures.problems.length > 0) process.exitCode = 1;
  } finally {
    removeAllDirectories();
  }
}
