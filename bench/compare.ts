// `npm run bench:compare`: a short A/B for working on the hot path. One kept database (`bench_compare`,
// loaded once: 100k syncs over 250 connections for the measured tenant, beside neighbour tenants), the
// gateway (`dist/server.js`, or `GATEWAY=<script>`), the baseline, and optionally a second gateway build
// (`GATEWAY_B=<dir>/server.js`), measured interleaved for a few rounds. Prints each scenario's req/s, CPU per
// request and the ratio to the baseline, medians of the rounds. The full report is still `npm run bench`.
//
//   COMPARE_SCENARIOS=syncs-connection,connected   the scenarios (ids of bench/scenarios.ts; default: the REST ones
//                                                   and graphql-nested-50)
//   COMPARE_ROUNDS=3  COMPARE_DURATION=4           rounds and measured seconds per figure
//   COMPARE_WARMUP=3                               seconds of each scenario on each server before the rounds
//   COMPARE_RELOAD=1                               drop and load the database again
//   COMPARE_PREPARED_BASELINE=1                    also the baseline with its statements prepared (BASELINE_PREPARED=1)
//   COMPARE_NODE_ARGS='--cpu-prof --cpu-prof-dir=/tmp/p'  node options for the gateway(s), e.g. a CPU profile
//   COMPARE_NODE_ARGS_B='--max-semi-space-size=32'       other node options for gateway B (GATEWAY_B may be dist/server.js)

import { loadavg } from 'node:os';
import { serverEnv } from './cold-start.js';
import { ADMIN_URL, databaseUrl, withDatabase } from './databases.js';
import { fetchOnce, measureLoad, type LoadResult } from './load.js';
import { freePort, runCli, startNode, stopAllChildren, waitFor200, type NodeChild } from './processes.js';
import { scenarios as buildScenarios, type Scenario } from './scenarios.js';

const DATABASE = 'bench_compare';
const ROUNDS = Number(process.env.COMPARE_ROUNDS ?? 3);
const DURATION_S = Number(process.env.COMPARE_DURATION ?? 4);
const WARMUP_S = Number(process.env.COMPARE_WARMUP ?? 3);
const gatewayNodeArgs = process.env.COMPARE_NODE_ARGS?.split(' ').filter(Boolean);
const gatewayBNodeArgs = process.env.COMPARE_NODE_ARGS_B?.split(' ').filter(Boolean) ?? gatewayNodeArgs;
const WANTED = (process.env.COMPARE_SCENARIOS ?? 'syncs-connection,syncs-filtered,connected,connected-one,graphql-nested-50').split(',');

interface Server {
  label: string;
  port: number;
  pid: number;
  child: NodeChild;
}

const log = (message: string) => process.stderr.write(`[compare] ${message}\n`);
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function start(label: string, script: string, env: Record<string, string>, nodeArgs?: string[]): Promise<Server> {
  const since = performance.now();
  const child = startNode(label, script, { env, nodeArgs });
  await waitFor200(`http://127.0.0.1:${env.PORT}/readyz`, { since, timeoutMs: 120_000, child });
  return { label, port: Number(env.PORT), pid: child.pid, child };
}

/** The kept database, loaded on first use: the measured tenant `compare-a` and its reader token. */
async function prepare(): Promise<{ url: string; token: string; tenantId: string }> {
  const url = databaseUrl(DATABASE);
  const exists = await withDatabase(ADMIN_URL, async (client) => (await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [DATABASE])).rowCount === 1);
  if (exists && process.env.COMPARE_RELOAD === '1') await withDatabase(ADMIN_URL, (client) => client.query(`DROP DATABASE ${DATABASE} WITH (FORCE)`));
  const env = { DATABASE_URL: url };
  if (!exists || process.env.COMPARE_RELOAD === '1') {
    log('loading the database (once)');
    await withDatabase(ADMIN_URL, (client) => client.query(`CREATE DATABASE ${DATABASE}`));
    await runCli(['db', 'migrate'], env);
    for (let i = 1; i <= 8; i++) {
      await runCli(['tenant', 'create', `compare-neighbour-${i}`], env);
      await runCli(['seed', 'load', '--tenant', `compare-neighbour-${i}`, '--connections', '300', '--syncs', '3000'], env);
    }
    await runCli(['tenant', 'create', 'compare-a'], env);
    await runCli(['seed', 'load', '--tenant', 'compare-a', '--connections', '250', '--syncs', '100000'], env);
    await runCli(['service-user', 'create', '--tenant', 'compare-a', '--name', 'compare-reader', '--role', 'reader'], env);
    await withDatabase(url, async (client) => {
      await client.query('VACUUM (ANALYZE)');
      await client.query('CHECKPOINT');
    });
  }
  const expires = new Date(Date.now() + 2 * 86_400_000).toISOString().slice(0, 10);
  const token = await runCli(['token', 'create', '--tenant', 'compare-a', '--service-user', 'compare-reader', '--expires', expires], env);
  const tenantId = await withDatabase(url, async (client) => ((await client.query("SELECT id FROM tenants WHERE slug = 'compare-a'")).rows[0] as { id: string }).id);
  return { url, token, tenantId };
}

async function main(): Promise<void> {
  const { url, token, tenantId } = await prepare();
  const busiest = await withDatabase(url, async (client) =>
    (
      await client.query('SELECT connection_id, count(*)::int AS n FROM syncs WHERE tenant_id = $1 GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 1', [tenantId])
    ).rows[0] as { connection_id: string; n: number },
  );
  const since = new Date(Date.now() - 30 * 86_400_000).toISOString().slice(0, 10);
  const list = buildScenarios({ token, connectionId: busiest.connection_id, connectionSyncs: busiest.n, since }).filter((s) => WANTED.includes(s.id));
  const servers: Server[] = [
    await start('gateway', process.env.GATEWAY ?? 'dist/server.js', serverEnv({ DATABASE_URL: url }, await freePort()), gatewayNodeArgs),
    ...(process.env.GATEWAY_B ? [await start('gateway B', process.env.GATEWAY_B, serverEnv({ DATABASE_URL: url }, await freePort()), gatewayBNodeArgs)] : []),
    ...(process.env.COMPARE_PREPARED_BASELINE === '1'
      ? [await start('baseline prepared', 'bench/baseline-server.ts', { DATABASE_URL: url, PORT: String(await freePort()), HOST: '127.0.0.1', BASELINE_PREPARED: '1' })]
      : []),
    await start('baseline', 'bench/baseline-server.ts', { DATABASE_URL: url, PORT: String(await freePort()), HOST: '127.0.0.1' }),
  ];
  const baseline = servers[servers.length - 1]!;
  try {
    for (const scenario of list) {
      const answers = await Promise.all(servers.map((server) => fetchOnce(server, scenario, token)));
      const same = answers.every((a) => a.status === 200 && a.body === answers[answers.length - 1]!.body);
      if (!same) log(`${scenario.id}: answers differ (${answers.map((a) => `${a.status} ${a.body.length} B`).join(' / ')})`);
    }
    // A first pass warms every server up on every scenario (V8 optimises the gateway's larger code later than the
    // baseline's): without it the first round measures the gateway half-compiled.
    for (const scenario of list) {
      for (const server of servers) await measureLoad(server, scenario, { token, connections: 10, durationS: WARMUP_S, warmupS: 0 });
    }
    log(`load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}; ${ROUNDS} rounds of ${DURATION_S} s`);
    const results = new Map<string, Map<Server, LoadResult[]>>(list.map((s) => [s.id, new Map(servers.map((v) => [v, []]))]));
    for (let round = 0; round < ROUNDS; round++) {
      for (const scenario of list) {
        const order = round % 2 === 0 ? servers : [...servers].reverse();
        for (const server of order) {
          const result = await measureLoad(server, scenario, { token, connections: 10, durationS: DURATION_S, warmupS: 1, quiet: servers.map((s) => s.pid) });
          if (result.failures > 0) log(`${server.label} ${scenario.id}: ${result.failures} failures`);
          results.get(scenario.id)!.get(server)!.push(result);
        }
      }
    }
    process.stdout.write(`\n| Scenario | ${servers.map((s) => `${s.label} req/s (CPU ms/req)`).join(' | ')} | ${servers.slice(0, -1).map((s) => `${s.label} / baseline`).join(' | ')} |\n`);
    process.stdout.write(`| :-- | ${servers.map(() => '--:').join(' | ')} | ${servers.slice(0, -1).map(() => '--:').join(' | ')} |\n`);
    for (const scenario of list as Scenario[]) {
      const byServer = results.get(scenario.id)!;
      const cells = servers.map((s) => {
        const runs = byServer.get(s)!;
        return `${median(runs.map((r) => r.rps)).toFixed(0)} (${median(runs.map((r) => r.cpuMsPerRequest ?? Number.NaN)).toFixed(2)})`;
      });
      const ratios = servers.slice(0, -1).map((s) => {
        const per = byServer.get(s)!.map((r, i) => r.rps / byServer.get(baseline)![i]!.rps);
        return `**${median(per).toFixed(2)}×** (${per.map((r) => r.toFixed(2)).join(', ')})`;
      });
      process.stdout.write(`| ${scenario.id} | ${cells.join(' | ')} | ${ratios.join(' | ')} |\n`);
    }
    log(`load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  } finally {
    await stopAllChildren();
  }
}

await main();
