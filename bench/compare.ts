// The benchmark: the built gateway (`dist/server.js`, as `npm start` runs it) against the baseline
// (bench/baseline-server.ts: node:http and pg, the same SQL and the same JSON, its statements prepared as the
// gateway prepares its own), on a kept PostgreSQL database, measured interleaved for a few rounds. The ratio
// gateway / baseline is what the GraphQL layer costs. That both answer alike, that no request's statement count
// grows with the data and that the hot statements read through an index are checked by the suite
// (test/baseline-parity.test.ts, test/statement-counts.test.ts, test/query-plans.test.ts), not here.
//
//   npm run bench:compare     prints the table (a few minutes)
//   npm run bench             the same at the report's size, and writes BENCHMARKS.md
//   BENCH_QUICK=1 npm run bench   a smoke run: small data, one short round; writes bench/results/quick.md
//
//   COMPARE_SCENARIOS=syncs-connection,connected   the scenarios (ids of bench/scenarios.ts)
//   COMPARE_ROUNDS=3  COMPARE_DURATION=4           rounds and measured seconds per figure
//   COMPARE_WARMUP=3                               seconds of each scenario on each server before the rounds
//   COMPARE_RELOAD=1                               drop and load the database again
//   COMPARE_PREPARED_BASELINE=0                    the baseline with unnamed statements instead (PostgreSQL plans
//                                                  each one every time)
//   COMPARE_TOKEN_LOOKUP=every                     the baseline looks the token up on every request (one more
//                                                  statement and a hash), where the gateway's cache does not
//   COMPARE_EXTRAS=write-lifecycle,cold-start      beside the scenarios: the write lifecycle against the same calls
//                                                  through pg, and the start to /readyz with the idle memory;
//                                                  postgraphile (npm run bench's default too): the PostGraphile peer
//   COMPARE_ONLY=cold-start  COMPARE_COLD_STARTS=7 the starts alone (seconds, not minutes), on a migrated empty
//                                                  database of their own: a start reads no tenant's data
//   GATEWAY=<script>  GATEWAY_B=<dir>/server.js    the gateway build, and a second one to compare with it
//   COMPARE_NODE_ARGS='--cpu-prof --cpu-prof-dir=/tmp/p'   node options for the gateway(s), e.g. a CPU profile,
//                                                  after scripts/server-node-args.ts (GATEWAY_B_NODE_ARGS: B's own)

import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { ADMIN_URL, databaseUrl, serverVersion, withDatabase } from './databases.js';
import { fetchOnce, loadAverage, measureLoad, median, waitIdle, type LoadResult } from './load.js';
import {
  freePort,
  ROOT,
  rssMb,
  runCli,
  serverEnv,
  startNode,
  stopAllChildren,
  stopChild,
  waitFor200,
  type NodeChild,
} from './processes.js';
import { scenarios as buildScenarios, type Scenario } from './scenarios.js';
import { measurePeer, peerScenarios, startPeer } from './postgraphile-peer.js';
import { SERVER_NODE_ARGS } from '../scripts/server-node-args.js';
import { LIFECYCLE_WRITES, WriteLifecycle, type LifecycleResult, type WriteTenant } from './write-lifecycle.js';

const REPORT = process.argv.includes('--report');
const QUICK = process.env.BENCH_QUICK === '1';
/** The measured tenant's size, beside neighbour tenants, so that it is a small share of each table. */
const SIZE = QUICK
  ? { database: 'bench_quick', connections: 50, syncs: 10_000, neighbours: 2 }
  : REPORT
    ? { database: 'bench_report', connections: 1_000, syncs: 1_000_000, neighbours: 20 }
    : { database: 'bench_compare', connections: 250, syncs: 100_000, neighbours: 8 };
const ROUNDS = Number(process.env.COMPARE_ROUNDS ?? (QUICK ? 1 : 3));
const DURATION_S = Number(process.env.COMPARE_DURATION ?? (QUICK ? 2 : REPORT ? 5 : 4));
const WARMUP_S = Number(process.env.COMPARE_WARMUP ?? (QUICK ? 1 : 3));
const PREPARED = process.env.COMPARE_PREPARED_BASELINE !== '0';
/** The floor remembers a checked token, as the gateway's credential cache does (no statement, no hash after the first). */
const TOKEN_LOOKUP = process.env.COMPARE_TOKEN_LOOKUP === 'every' ? 'every' : 'once';
const DEFAULT_SCENARIOS = 'syncs-connection,syncs-filtered,connected,connected-one,graphql-nested-50,graphql-trivial';
const WANTED = process.env.COMPARE_SCENARIOS?.split(',') ?? (REPORT ? null : DEFAULT_SCENARIOS.split(','));
const EXTRAS = (process.env.COMPARE_EXTRAS ?? `write-lifecycle,cold-start${REPORT ? ',postgraphile' : ''}`).split(',').filter(Boolean);
/** Concurrent lifecycles of the write path, and cold starts measured (the median is reported). */
const WRITERS = 10;
const COLD_STARTS = Number(process.env.COMPARE_COLD_STARTS ?? 3);
const COLD_START_ONLY = process.env.COMPARE_ONLY === 'cold-start';
/** How long a started gateway is left alone before its idle memory is read. */
const IDLE_MS = 3000;
/** How the gateways' node starts: as `npm start` starts it, or for B GATEWAY_B_NODE_ARGS (a build from before them). */
const startArgs = {
  gateway: SERVER_NODE_ARGS,
  'gateway B': process.env.GATEWAY_B_NODE_ARGS?.split(' ').filter(Boolean) ?? SERVER_NODE_ARGS,
};
/** COMPARE_NODE_ARGS after those while they are measured under load (a profiler's, say). */
const measuredArgs = (label: keyof typeof startArgs) => [
  ...startArgs[label],
  ...(process.env.COMPARE_NODE_ARGS?.split(' ').filter(Boolean) ?? []),
];

interface Server {
  label: string;
  port: number;
  pid: number;
  child: NodeChild;
}

const log = (message: string) => process.stderr.write(`[bench] ${message}\n`);

async function start(label: string, script: string, env: Record<string, string>, nodeArgs?: string[]): Promise<Server> {
  const since = performance.now();
  const child = startNode(label, script, { env, nodeArgs });
  await waitFor200(`http://127.0.0.1:${env.PORT}/readyz`, { since, timeoutMs: 120_000, child });
  return { label, port: Number(env.PORT), pid: child.pid, child };
}

/** The kept database, loaded on first use: the measured tenant `bench-a`, its neighbours, and a reader token. */
async function prepare(): Promise<{ url: string; token: string; tenantId: string; writes: WriteTenant }> {
  const url = databaseUrl(SIZE.database);
  const exists = await withDatabase(
    ADMIN_URL,
    async (client) => (await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [SIZE.database])).rowCount === 1,
  );
  if (exists && process.env.COMPARE_RELOAD === '1')
    await withDatabase(ADMIN_URL, (client) => client.query(`DROP DATABASE ${SIZE.database} WITH (FORCE)`));
  const env = { DATABASE_URL: url };
  if (!exists || process.env.COMPARE_RELOAD === '1') {
    log(`loading ${SIZE.database} (once): ${SIZE.syncs} syncs over ${SIZE.connections} connections, ${SIZE.neighbours} neighbours`);
    await withDatabase(ADMIN_URL, (client) => client.query(`CREATE DATABASE ${SIZE.database}`));
    await runCli(['db', 'migrate'], env);
    for (let i = 1; i <= SIZE.neighbours; i++) {
      await runCli(['tenant', 'create', `bench-neighbour-${i}`], env);
      await runCli(['seed', 'load', '--tenant', `bench-neighbour-${i}`, '--connections', '300', '--syncs', '3000'], env);
    }
    await runCli(['tenant', 'create', 'bench-a'], env);
    await runCli(['seed', 'load', '--tenant', 'bench-a', '--connections', String(SIZE.connections), '--syncs', String(SIZE.syncs)], env);
    await runCli(['service-user', 'create', '--tenant', 'bench-a', '--name', 'bench-reader', '--role', 'reader'], env);
    // Statistics for the planner, and the load's writes flushed before anything is measured.
    await withDatabase(url, async (client) => {
      await client.query('VACUUM (ANALYZE)');
      await client.query('CHECKPOINT');
    });
  }
  const tenantIdOf = (slug: string) =>
    withDatabase(
      url,
      async (client) => (await client.query('SELECT id FROM tenants WHERE slug = $1', [slug])).rows[0]?.id as string | undefined,
    );
  // The write path's tenant, apart from the measured one: its runs never show in the read scenarios' counts.
  if ((await tenantIdOf('bench-writes')) === undefined) {
    await runCli(['tenant', 'create', 'bench-writes'], env);
    for (const role of ['admin', 'engine']) {
      await runCli(['service-user', 'create', '--tenant', 'bench-writes', '--name', `bench-${role}`, '--role', role], env);
    }
  }
  // The tokens of the runs before are revoked: a kept database would otherwise reach TOKENS_PER_SERVICE_USER.
  await withDatabase(url, (client) => client.query('UPDATE tokens SET revoked_at = now() WHERE revoked_at IS NULL'));
  const expires = new Date(Date.now() + 2 * 86_400_000).toISOString().slice(0, 10);
  const tokenOf = (tenant: string, user: string) =>
    runCli(['token', 'create', '--tenant', tenant, '--service-user', user, '--expires', expires], env);
  const writes: WriteTenant = {
    tenantId: (await tenantIdOf('bench-writes'))!,
    adminToken: await tokenOf('bench-writes', 'bench-admin'),
    engineToken: await tokenOf('bench-writes', 'bench-engine'),
  };
  return { url, token: await tokenOf('bench-a', 'bench-reader'), tenantId: (await tenantIdOf('bench-a'))!, writes };
}

/** The write lifecycle on each gateway and on the floor, interleaved as the scenarios are; per side, the rounds' results. */
async function measureWrites(gateways: Server[], floor: WriteLifecycle): Promise<Map<string, LifecycleResult[]>> {
  const sides: { label: string; run: (durationS: number) => Promise<LifecycleResult>; pids: number[] }[] = [
    ...gateways.map((server) => ({ label: server.label, run: (d: number) => floor.gateway(server, WRITERS, d), pids: [server.pid] })),
    { label: 'pg', run: (d: number) => floor.floor(WRITERS, d), pids: [] },
  ];
  const results = new Map(sides.map((side) => [side.label, [] as LifecycleResult[]]));
  for (const side of sides) await side.run(WARMUP_S);
  for (let round = 0; round < ROUNDS; round++) {
    for (const side of round % 2 === 0 ? sides : [...sides].reverse()) {
      await waitIdle(gateways.map((g) => g.pid));
      const result = await side.run(DURATION_S);
      if (result.failures > 0) log(`PROBLEM write lifecycle on ${side.label}: ${result.failures} failed`);
      results.get(side.label)!.push(result);
    }
  }
  return results;
}

function writesTable(results: Map<string, LifecycleResult[]>): string {
  const floor = results.get('pg')!;
  const lines = [
    `| Write lifecycle (trigger, claim, 10 progress reports, finish: ${LIFECYCLE_WRITES} writes), ${WRITERS} at once | ratio to pg | lifecycles/s | CPU ms/lifecycle |`,
    '| :-- | --: | --: | --: |',
  ];
  for (const [label, runs] of results) {
    const rounds = runs.map((r, i) => r.perSecond / floor[i]!.perSecond);
    const ratio = label === 'pg' ? '' : `**${median(rounds).toFixed(2)}×** (${rounds.map((x) => x.toFixed(2)).join(', ')})`;
    const cpu = median(runs.map((r) => r.cpuMsPerLifecycle ?? Number.NaN)).toFixed(2);
    lines.push(
      `| ${label === 'pg' ? 'the same calls through pg (this process)' : label} | ${ratio} | ${median(runs.map((r) => r.perSecond)).toFixed(1)} | ${cpu} |`,
    );
  }
  return lines.join('\n');
}

/** Spawn to the first 200 on /readyz, and the resident memory after IDLE_MS idle: the medians of COLD_STARTS starts. */
async function coldStarts(url: string, label: string, script: string, nodeArgs: readonly string[]): Promise<string> {
  const ready: number[] = [];
  const rss: number[] = [];
  for (let i = 0; i < COLD_STARTS; i++) {
    const port = await freePort();
    const since = performance.now();
    const child = startNode(`${label} (cold start)`, script, { env: serverEnv({ DATABASE_URL: url }, port), nodeArgs: [...nodeArgs] });
    try {
      ready.push(await waitFor200(`http://127.0.0.1:${port}/readyz`, { since, timeoutMs: 60_000, child, intervalMs: 2 }));
      await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
      rss.push(rssMb(child.pid) ?? Number.NaN);
    } finally {
      await stopChild(child.process);
    }
  }
  return `| ${label} | ${Math.round(median(ready))} ms (${ready.map((ms) => Math.round(ms)).join(', ')}) | ${median(rss)} MB (${rss.join(', ')}) |`;
}

interface Row {
  scenario: Scenario;
  /** Per server: the rounds' results. */
  runs: Map<Server, LoadResult[]>;
}

async function measure(list: Scenario[], servers: Server[], token: string): Promise<Row[]> {
  const problems: string[] = [];
  const reference = servers[servers.length - 1]!;
  for (const scenario of list) {
    const answers = await Promise.all(servers.map((server) => fetchOnce(server, scenario, token)));
    const expected = answers[answers.length - 1]!;
    if (!answers.every((a) => a.status === 200 && a.body === expected.body)) {
      problems.push(`${scenario.id}: answers differ (${answers.map((a) => `${a.status} ${a.body.length} B`).join(' / ')})`);
    }
  }
  // A first pass warms every server up on every scenario (V8 optimises the gateway's larger code later than the
  // baseline's): without it the first round measures the gateway half-compiled.
  for (const scenario of list) {
    for (const server of servers) await measureLoad(server, scenario, { token, connections: 10, durationS: WARMUP_S, warmupS: 0 });
  }
  log(`load average ${loadAverage()}; ${ROUNDS} round(s) of ${DURATION_S} s per figure`);
  const rows: Row[] = list.map((scenario) => ({ scenario, runs: new Map(servers.map((server) => [server, []])) }));
  for (let round = 0; round < ROUNDS; round++) {
    for (const row of rows) {
      // The order swaps every other round, so that neither server always runs on a machine the other just warmed.
      for (const server of round % 2 === 0 ? servers : [...servers].reverse()) {
        const result = await measureLoad(server, row.scenario, {
          token,
          connections: 10,
          durationS: DURATION_S,
          warmupS: 1,
          quiet: servers.map((s) => s.pid),
        });
        if (result.failures > 0) problems.push(`${server.label} ${row.scenario.id}: ${result.failures} failed requests`);
        row.runs.get(server)!.push(result);
      }
    }
  }
  if (problems.length > 0) {
    for (const problem of problems) log(`PROBLEM ${problem}`);
    process.exitCode = 1;
  }
  log(`load average ${loadAverage()}; reference: ${reference.label}`);
  return rows;
}

/** Each gateway's ratio to the reference (the last server): the median of the rounds' ratios, and each round's. */
function ratio(row: Row, server: Server, reference: Server): { median: number; rounds: number[] } {
  const rounds = row.runs.get(server)!.map((r, i) => r.rps / row.runs.get(reference)![i]!.rps);
  return { median: median(rounds), rounds };
}

function table(rows: Row[], servers: Server[]): string {
  const reference = servers[servers.length - 1]!;
  const gateways = servers.slice(0, -1);
  const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
  const lines = [
    `| Scenario | ${gateways.map((g) => `${g.label} / ${reference.label}`).join(' | ')} | ${servers.map((s) => `${s.label} req/s`).join(' | ')} | CPU ms/req (${servers.map((s) => s.label).join(' / ')}) |`,
    `| :-- | ${[...gateways, ...servers].map(() => '--:').join(' | ')} | --: |`,
  ];
  for (const row of rows) {
    const ratios = gateways.map((g) => {
      const r = ratio(row, g, reference);
      return `**${r.median.toFixed(2)}×** (${r.rounds.map((x) => x.toFixed(2)).join(', ')})`;
    });
    const rps = servers.map((s) => fmt(median(row.runs.get(s)!.map((r) => r.rps))));
    const cpu = servers.map((s) => median(row.runs.get(s)!.map((r) => r.cpuMsPerRequest ?? Number.NaN)).toFixed(2)).join(' / ');
    lines.push(`| ${row.scenario.title} | ${ratios.join(' | ')} | ${rps.join(' | ')} | ${cpu} |`);
  }
  return lines.join('\n');
}

/**
 * The sections of the report kept by hand (a run's reading against the targets, the context, the CPU split and the
 * history's measurements, which other benchmarks write, how to run it),
 * taken over from the file as it is: `before` go ahead of the method, the others after it.
 */
const HAND_WRITTEN = {
  before: ['Against the targets', 'Context: the other baselines', 'CPU per request, part by part', 'The sync history at scale'],
  after: ['Running it'],
};

/** The named `## ` sections of a report, each with its heading, as they stand in `text`. */
function sectionsOf(text: string, names: readonly string[]): string[] {
  return names.flatMap((name) => {
    const start = text.indexOf(`\n## ${name}\n`);
    if (start < 0) return [];
    const end = text.indexOf('\n## ', start + 1);
    return [text.slice(start + 1, end < 0 ? undefined : end).trimEnd(), ''];
  });
}

async function report(
  rows: Row[],
  servers: Server[],
  startedAt: Date,
  loadAtStart: string,
  extras: string[],
  previous: string,
): Promise<string> {
  const reference = servers[servers.length - 1]!;
  return [
    '# Benchmarks',
    '',
    `The latest run of \`npm run bench\` (\`bench/compare.ts\`), ${startedAt.toISOString().slice(0, 16).replace('T', ' ')} UTC. Earlier runs are in the history of this file.`,
    '',
    `## The gateway against the ${reference.label}, ${SIZE.syncs.toLocaleString('en-US')} syncs (PostgreSQL)`,
    '',
    table(rows, servers),
    '',
    "Ratios are the median of the rounds' ratios (each round in brackets): above 1× the gateway answered more requests a second than the baseline.",
    '',
    ...extras.flatMap((extra) => [extra, '']),
    ...sectionsOf(previous, HAND_WRITTEN.before),
    '## Method',
    '',
    `- Machine: ${cpus().length} vCPU (${cpus()[0]?.model.trim() ?? 'unknown'}), Node ${process.version}, PostgreSQL ${await serverVersion()} on the same machine. Load average ${loadAtStart} at the start, ${loadAverage()} at the end: the ratios are the robust figures, the absolute ones move with the machine.`,
    `- Data: the CLI's \`seed load\` into a kept database: the measured tenant has ${SIZE.syncs.toLocaleString('en-US')} syncs over ${SIZE.connections.toLocaleString('en-US')} connections, beside ${SIZE.neighbours} neighbour tenants of 300 connections and 3,000 syncs, so that it is a small share of each table; \`VACUUM ANALYZE\` and a \`CHECKPOINT\` after loading.`,
    '- Gateway: `node dist/server.js` as `npm start` runs it (request log at `info`, `NODE_ENV=production` from the build), with `SCHEDULER=off` so the data stays as loaded and `RATE_LIMIT_PER_MINUTE=0`.',
    `- Floor: \`bench/baseline-server.ts\`, node:http and pg, the same SQL written by hand and byte for byte the same JSON; ${PREPARED ? 'its statements prepared, as the gateway prepares its own on PostgreSQL' : 'its statements unnamed'}; ${TOKEN_LOOKUP === 'once' ? 'a token checked on its first request (one statement and a SHA-256) and remembered, as the gateway caches a checked token' : 'a token checked on every request (one statement and a SHA-256)'}. Both answers are compared before measuring; the suite checks the same (\`test/baseline-parity.test.ts\`).`,
    `- Write lifecycle: ${WRITERS} lifecycles at once, each on a connection of its own (the tenant \`bench-writes\`), through the gateway's REST API (autocannon) and through the data layer's own functions on pg in the runner's process (\`bench/write-lifecycle.ts\`); CPU ms/lifecycle is the gateway's process, or the runner's for pg. Start: spawn to the first 200 on /readyz, then the resident memory after ${IDLE_MS / 1000} s idle, before any load.`,
    `- Load: autocannon, 10 keep-alive connections; after a warm-up of every scenario on every server, ${ROUNDS} round(s) of ${DURATION_S} s per figure after 1 s of warm-up, the servers measured back to back for each scenario, the order swapped every other round. CPU ms/req is each server process's own CPU time (PostgreSQL's not counted).`,
    "- Correctness is the suite's: statement counts that do not grow with the data (`test/statement-counts.test.ts`), index paths for every hot statement, generic plans included (`test/query-plans.test.ts`).",
    '',
    ...sectionsOf(previous, HAND_WRITTEN.after),
  ].join('\n');
}

/** The start table: one row per gateway build (GATEWAY, GATEWAY_B). */
async function startTable(url: string): Promise<string> {
  const gateways = [
    ['gateway', process.env.GATEWAY ?? 'dist/server.js', startArgs.gateway] as const,
    ...(process.env.GATEWAY_B ? [['gateway B', process.env.GATEWAY_B, startArgs['gateway B']] as const] : []),
  ];
  const rows = [];
  for (const [label, script, nodeArgs] of gateways) rows.push(await coldStarts(url, label, script, nodeArgs));
  return [
    `| Start (PostgreSQL), median of ${COLD_STARTS} | spawn to 200 on /readyz | RSS after ${IDLE_MS / 1000} s idle |`,
    '| :-- | --: | --: |',
    ...rows,
  ].join('\n');
}

/** COMPARE_ONLY=cold-start: the starts on a migrated, empty database, without loading the scenarios' data. */
async function coldStartsOnly(): Promise<void> {
  const database = 'bench_start';
  const url = databaseUrl(database);
  const exists = await withDatabase(
    ADMIN_URL,
    async (client) => (await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database])).rowCount === 1,
  );
  if (!exists) await withDatabase(ADMIN_URL, (client) => client.query(`CREATE DATABASE ${database}`));
  await runCli(['db', 'migrate'], { DATABASE_URL: url });
  log(`load average ${loadAverage()} at the start`);
  try {
    const table = await startTable(url);
    log(`load average ${loadAverage()} at the end`);
    process.stdout.write(`\n${table}\n`);
  } finally {
    await stopAllChildren();
  }
}

async function main(): Promise<void> {
  if (COLD_START_ONLY) return coldStartsOnly();
  const startedAt = new Date();
  const loadAtStart = loadAverage();
  const { url, token, tenantId, writes } = await prepare();
  const busiest = await withDatabase(
    url,
    async (client) =>
      (
        await client.query(
          'SELECT connection_id, count(*)::int AS n FROM syncs WHERE tenant_id = $1 GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 1',
          [tenantId],
        )
      ).rows[0] as { connection_id: string; n: number },
  );
  const since = new Date(Date.now() - 30 * 86_400_000).toISOString().slice(0, 10);
  const list = buildScenarios({ token, connectionId: busiest.connection_id, connectionSyncs: busiest.n, since }).filter(
    (s) => WANTED === null || WANTED.includes(s.id),
  );
  const baselineEnv = async () => ({
    DATABASE_URL: url,
    PORT: String(await freePort()),
    HOST: '127.0.0.1',
    ...(PREPARED ? { BASELINE_PREPARED: '1' } : {}),
    ...(TOKEN_LOOKUP === 'once' ? { BASELINE_TOKEN_LOOKUP: 'once' } : {}),
  });
  const extras: string[] = [];
  // Before anything else runs: a start measured on a machine the load just left would include its tail.
  if (EXTRAS.includes('cold-start')) extras.push(await startTable(url));
  const servers: Server[] = [
    await start(
      'gateway',
      process.env.GATEWAY ?? 'dist/server.js',
      serverEnv({ DATABASE_URL: url }, await freePort()),
      measuredArgs('gateway'),
    ),
    ...(process.env.GATEWAY_B
      ? [await start('gateway B', process.env.GATEWAY_B, serverEnv({ DATABASE_URL: url }, await freePort()), measuredArgs('gateway B'))]
      : []),
    await start(PREPARED ? 'prepared floor' : 'baseline', 'bench/baseline-server.ts', await baselineEnv()),
  ];
  try {
    const rows = await measure(list, servers, token);
    if (EXTRAS.includes('write-lifecycle')) {
      const floor = await WriteLifecycle.open(url, writes, WRITERS);
      try {
        extras.push(writesTable(await measureWrites(servers.slice(0, -1), floor)));
      } finally {
        await floor.close();
      }
    }
    if (EXTRAS.includes('postgraphile')) {
      const peer = await startPeer(url, tenantId);
      const peerOptions = { token, rounds: ROUNDS, durationS: DURATION_S, warmupS: WARMUP_S };
      extras.push(await measurePeer(servers[0]!, peer.target, peerScenarios(busiest.connection_id, peer.headers), peerOptions));
    }
    log(`load average ${loadAverage()} at the end`);
    if (!REPORT) {
      process.stdout.write(`\n${[table(rows, servers), ...extras].join('\n\n')}\n`);
      return;
    }
    mkdirSync(join(ROOT, 'bench', 'results'), { recursive: true });
    const file = QUICK ? join(ROOT, 'bench', 'results', 'quick.md') : join(ROOT, 'BENCHMARKS.md');
    // The sections kept by hand are carried over; the one against the targets is then to be read again by hand.
    const previous = existsSync(file) ? readFileSync(file, 'utf8') : '';
    writeFileSync(file, await report(rows, servers, startedAt, loadAtStart, extras, previous));
    log(`wrote ${file}`);
  } finally {
    await stopAllChildren();
  }
}

await main();
