// The results of a run and their rendering as BENCHMARKS.md.

import type { BreakdownRow } from './breakdown.js';
import type { ProfileSummary } from './cpu-profile.js';
import type { ExplainResult } from './explain.js';
import type { FanoutFigures } from './fanout.js';
import type { LatencyResult, LoadResult } from './load.js';
import { PEER_NESTED_ID, type PeerVerdict } from './peer.js';
import type { StatementCount } from './sql-counts.js';
import type { WritePathFigures } from './write-path.js';

export interface Pair<T> {
  gateway: T;
  /** The server the gateway is compared with: the baseline, or PostGraphile in `Results.peer`. */
  baseline: T;
}

export interface ScenarioRun {
  scenario: string;
  title: string;
  rounds: Pair<LoadResult>[];
}

export interface StageResult {
  totalSyncs: number;
  tenantSyncs: number;
  connections: number;
  busiestConnectionSyncs: number;
  filteredRows: number;
  loadSeconds: number;
  vacuumSeconds: number;
  runs: ScenarioRun[];
  latency: { scenario: string; title: string; pair: Pair<LatencyResult> }[];
  sqlCounts: StatementCount[];
  /** Per scenario: whether gateway and baseline answered the same bytes. */
  sameJson: { scenario: string; verdict: 'identical' | 'same JSON' | 'DIFFERENT'; detail?: string }[];
}

export interface ColdStartRow {
  label: string;
  runs: { readyMs: number; firstRequestMs: number | null; idleRssMb: number | null }[];
}

export type GatewayProfile = ProfileSummary & { scenario: string; title?: string; requests: number; windowMs: number };

export interface Results {
  quick: boolean;
  /** BENCH_ONLY: the one section measured (absent when all were). */
  only?: string;
  startedAt: string;
  finishedAt: string;
  elapsedSeconds: number;
  machine: { nproc: number; memoryGiB: number; cpu: string; node: string; postgres: string; loadStart: number[]; loadEnd: number[] };
  settings: {
    durationS: number;
    warmupS: number;
    connections: number;
    rounds: number;
    latencyS: number;
    /** The smaller tenants loaded beside the two measured ones (absent from runs before they were). */
    neighbours?: { tenants: number; connections: number; syncs: number };
  };
  stages: StageResult[];
  explain: ExplainResult[];
  explainHeader: string;
  breakdown: BreakdownRow[];
  /** `node --cpu-prof` of the gateway under the load of each scenario whose issue #16 target is missed. */
  profiles?: GatewayProfile[];
  /** The one profile of results written before `profiles` (the sync list). */
  profile?: GatewayProfile | null;
  /** The REST scenarios against a baseline that looks each token up only once (absent in older results). */
  noLookup?: ScenarioRun[];
  /** The same against the baseline with its statements prepared (BASELINE_PREPARED=1). */
  prepared?: ScenarioRun[];
  coldStart: ColdStartRow[];
  pglite: { syncs: number; connections: number; runs: { scenario: string; title: string; result: LoadResult }[] } | null;
  /** PostGraphile v5 on the same database at the largest scale (absent in results written before it existed). */
  peer?: {
    version: string;
    totalSyncs: number;
    queries: { scenario: string; gateway: string; peer: string }[];
    sameRows: PeerVerdict[];
    runs: ScenarioRun[];
  } | null;
  /** The write path (bench/write-path.ts), measured after the rest (absent in quick runs and older results). */
  writePath?: WritePathFigures | null;
  /** The live fan-out (bench/fanout.ts), measured last (absent in quick runs and older results). */
  fanout?: FanoutFigures | null;
  problems: string[];
}

const n0 = (x: number) => Math.round(x).toLocaleString('en-US');
const n1 = (x: number) => x.toFixed(1);
const n2 = (x: number) => x.toFixed(2);
const ms = (x: number) => (x < 10 ? x.toFixed(2) : x.toFixed(1));
export const median = (xs: number[]) => {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
};
const scale = (syncs: number) => (syncs >= 1_000_000 ? `${syncs / 1_000_000}M` : `${syncs / 1000}k`);

/**
 * Median over rounds of one side's figures: one round disturbed by other work on the shared machine moves
 * a median of three much less than a mean.
 */
export function summarize(rounds: LoadResult[]): LoadResult {
  const cpu = rounds.map((r) => r.cpuMsPerRequest).filter((x): x is number => x !== null);
  return {
    rps: median(rounds.map((r) => r.rps)),
    p50: median(rounds.map((r) => r.p50)),
    p99: median(rounds.map((r) => r.p99)),
    requests: rounds.reduce((a, r) => a + r.requests, 0),
    failures: rounds.reduce((a, r) => a + r.failures, 0),
    cpuMsPerRequest: cpu.length > 0 ? median(cpu) : null,
    rssMb: Math.max(...rounds.map((r) => r.rssMb ?? 0)) || null,
  };
}

/** Throughput ratio gateway/baseline per round (each round measured back to back), and their median. */
export function ratios(run: ScenarioRun): { median: number; each: number[] } {
  const each = run.rounds.map((r) => (r.baseline.rps > 0 ? r.gateway.rps / r.baseline.rps : 0));
  return { median: median(each), each };
}

/**
 * Gateway against another server, one row per scenario: ratio (each round in brackets), req/s, p50/p99 and
 * CPU per request of both. `other` names the other server in the headers ("baseline", "base" for short).
 */
function comparisonTable(runs: ScenarioRun[], other: { name: string; short: string }): string {
  const rows = runs.map((run) => {
    const g = summarize(run.rounds.map((r) => r.gateway));
    const b = summarize(run.rounds.map((r) => r.baseline));
    const ratio = ratios(run);
    const cpu = g.cpuMsPerRequest !== null && b.cpuMsPerRequest !== null ? `${n2(g.cpuMsPerRequest)} / ${n2(b.cpuMsPerRequest)}` : '–';
    return [
      run.title,
      `**${n2(ratio.median)}×**${ratio.each.length > 1 ? ` (${ratio.each.map(n2).join(', ')})` : ''}`,
      n0(g.rps),
      `${ms(g.p50)} / ${ms(g.p99)}`,
      n0(b.rps),
      `${ms(b.p50)} / ${ms(b.p99)}`,
      cpu,
      g.failures + b.failures > 0 ? `${g.failures}/${b.failures}` : '0',
    ];
  });
  const Other = other.name.charAt(0).toUpperCase() + other.name.slice(1);
  return table(
    [
      'Scenario',
      `Gateway / ${other.name} req/s`,
      'Gateway req/s',
      'Gateway p50 / p99 ms',
      `${Other} req/s`,
      `${Other} p50 / p99 ms`,
      `CPU/req ms gw / ${other.short}`,
      'Non-2xx',
    ],
    rows,
  );
}

/** A CPU profile's two tables, each followed by a blank line: the top functions, then the top `packages` packages. */
export function profileTables(p: Pick<ProfileSummary, 'functions' | 'packages'>, packages: number): string[] {
  return [
    table(['Function', 'Where', 'Self ms', 'Share'], p.functions.map((f) => [`\`${f.name}\``, f.where, n0(f.ms), `${n1(f.share * 100)}%`])),
    '',
    table(['Package / file', 'Self ms', 'Share'], p.packages.slice(0, packages).map((f) => [f.name, n0(f.ms), `${n1(f.share * 100)}%`])),
    '',
  ];
}

function table(head: string[], rows: string[][], align?: string[]): string {
  const aligns = align ?? head.map((_, i) => (i === 0 ? ':--' : '--:'));
  return [`| ${head.join(' | ')} |`, `|${aligns.map((a) => ` ${a} `).join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
}

/** The section on PostGraphile v5 on the same data (issue #16 item 6). */
function peerSection(peer: NonNullable<Results['peer']>, settings: Results['settings']): string[] {
  const out: string[] = [];
  out.push(`## Peer: PostGraphile v5 on the same data (${scale(peer.totalSyncs)} syncs, PostgreSQL)`);
  out.push('');
  out.push(
    `PostGraphile ${peer.version} (Amber preset) as a library on node:http (\`bench/postgraphile-peer.ts\`: Grafserv's node handler, \`GRAPHILE_ENV=production\`, \`NODE_ENV=production\`, no GraphiQL, no explain, no schema watch, no LISTEN client, a pool of 10 as the gateway's), a child process on the same \`bench_…\` database, ` +
      `measured against the gateway as the baseline is (${settings.rounds} round(s), the order swapped every other round, ${settings.connections} connections, medians; CPU/req is each server process's own). ` +
      'The gateway answers as the first tenant\'s token allows; PostGraphile has no credential, so its queries scope themselves with `condition: { tenantId, deletedAt: null }` and spell out the gateway\'s orders (connections by name then id, syncs newest started first then id). ' +
      'It does no authentication, no tenant scoping by credential, no cost, depth or page limits, no rate limit, no request log or metrics: the figures compare query execution, not the same service (see the analysis below).',
  );
  out.push('');
  out.push(
    `Same rows, checked before measuring (normalized: names, statuses, ids and totalCount as they are, timestamps as instants): ${peer.sameRows
      .map((v) => `${v.scenario} **${v.verdict}** (${v.rows} rows${v.detail ? `; ${v.detail}` : ''})`)
      .join('; ')}. A scenario with different rows is a problem of the run and is not measured.`,
  );
  out.push('');
  if (peer.runs.length > 0) {
    out.push(comparisonTable(peer.runs, { name: 'PostGraphile', short: 'PostGraphile' }));
    out.push('');
  }
  const nested = peer.runs.find((run) => run.scenario === PEER_NESTED_ID);
  if (nested) {
    const ratio = ratios(nested).median;
    out.push(`Target: the gateway's nested GraphQL at least 1.0× PostGraphile's req/s: **${ratio >= 1 ? 'met' : 'missed'}** (${n2(ratio)}×).`);
    out.push('');
  }
  out.push('The queries (ids of this run):');
  out.push('');
  out.push('```graphql');
  for (const q of peer.queries) {
    out.push(`# ${q.scenario}, gateway`);
    out.push(q.gateway);
    out.push(`# ${q.scenario}, PostGraphile`);
    out.push(q.peer);
  }
  out.push('```');
  out.push('');
  return out;
}

export function renderReport(results: Results, analysis: string): string {
  const largest = results.stages[results.stages.length - 1];
  const out: string[] = [];
  out.push('# Benchmarks');
  out.push('');
  out.push(
    `Generated by \`npm run bench\` (\`bench/run.ts\`)${results.quick ? ' in **quick mode** (BENCH_QUICK=1: 10k rows, short runs; not the reference figures)' : ''}` +
      `${results.only ? `, only the ${results.only} section (BENCH_ONLY=${results.only})` : ''}. ` +
      `Run ${results.startedAt.replace('T', ' ').slice(0, 16)} UTC, ${n0(results.elapsedSeconds)} s in all.`,
  );
  out.push('');
  out.push('## Machine and method');
  out.push('');
  const m = results.machine;
  out.push(
    `- ${m.nproc} vCPU (${m.cpu}), ${n1(m.memoryGiB)} GiB memory, Node ${m.node}, PostgreSQL ${m.postgres} on 127.0.0.1 (same machine). ` +
      `Load average at start ${m.loadStart.map(n2).join(' / ')}, at end ${m.loadEnd.map(n2).join(' / ')}: other work ran on the machine during the run, so absolute figures are noisy; the ratios are the robust numbers.`,
  );
  const s = results.settings;
  out.push(
    `- Load: autocannon (programmatic), ${s.connections} keep-alive connections, ${s.warmupS} s warm-up then ${s.durationS} s measured per figure; ` +
      `gateway and baseline measured back to back for each scenario (gateway A, baseline A, gateway B, …), ${s.rounds} round(s) at the largest scale, the order swapped every other round; figures and ratios are the median of the rounds (each round's ratio in brackets). ` +
      `"Latency (1 conn.)" is one request at a time for ${s.latencyS} s on an otherwise idle server.`,
  );
  out.push(
    '- Gateway: the real server, `node dist/server.js` (what `npm start` runs) as a child process with `DATABASE_URL`, `PORT`, `SEED=none`, `SCHEDULER=off`, `RATE_LIMIT_PER_MINUTE=0`, otherwise as `npm start` runs it in production: the request log at `info` (read by the runner from the child\'s stdout), `NODE_ENV` fixed to `production` by the build. ' +
      'Baseline: `bench/baseline-server.ts`, node:http + pg, the same queries written by hand (same token check, count and page in parallel), answering byte-for-byte the same JSON (checked before each measurement, see below).',
  );
  const neighbours = s.neighbours
    ? `beside them ${s.neighbours.tenants} smaller tenants of ${n0(s.neighbours.connections)} connections and ${n0(s.neighbours.syncs)} syncs each, loaded with the first step, so that one tenant is a small share of each table, as in a multi-tenant database (the counts of syncs and connections in this report are the two tenants'); `
    : '';
  out.push(
    '- Data: `seed load` of the CLI into a fresh `bench_…` database, two tenants of equal size (requests are made as the first), grown in place 10k → 100k → 1M syncs; 1,000 connections at 1M; ' +
      neighbours +
      '`VACUUM ANALYZE` and a `CHECKPOINT` after each load (so the writes of the load are not flushed during the measurements). ' +
      '"CPU/req" is the server process\'s own CPU time per request (PostgreSQL\'s not included).',
  );
  out.push('');

  if (results.problems.length > 0) {
    out.push('**Problems in this run:**');
    out.push('');
    for (const problem of results.problems) out.push(`- ${problem}`);
    out.push('');
  }

  if (largest && largest.runs.length > 0) {
    out.push(`## Gateway vs baseline at ${scale(largest.totalSyncs)} syncs (PostgreSQL)`);
    out.push('');
    out.push(comparisonTable(largest.runs, { name: 'baseline', short: 'base' }));
    out.push('');
    const loadedRss = largest.runs.flatMap((run) => run.rounds.map((r) => r.gateway.rssMb)).filter((x): x is number => x !== null);
    if (loadedRss.length > 0) {
      out.push(`Gateway RSS under load (at the end of each measurement above): ${n0(Math.min(...loadedRss))}–${n0(Math.max(...loadedRss))} MB, median ${n0(median(loadedRss))} MB.`);
      out.push('');
    }
  }

  if (results.noLookup && results.noLookup.length > 0 && largest) {
    out.push(`## Gateway vs a baseline without the token lookup (${scale(largest.totalSyncs)} syncs, PostgreSQL)`);
    out.push('');
    out.push(
      'The same REST requests against a second baseline process started with `BASELINE_TOKEN_LOOKUP=once`: it checks a token on its first request and answers its tenant from memory afterwards, with no statement and no hash, so its figure is the floor of the SQL, the JSON and node:http alone. The gateway is the same process as above (its token cache also spares the statement, but it hashes the presented secret on every request to key the cache). Measured interleaved like the table above.',
    );
    out.push('');
    out.push(comparisonTable(results.noLookup, { name: 'no-lookup baseline', short: 'floor' }));
    out.push('');
  }

  if (results.prepared && results.prepared.length > 0 && largest) {
    out.push(`## Gateway vs a baseline with prepared statements (${scale(largest.totalSyncs)} syncs, PostgreSQL)`);
    out.push('');
    out.push(
      'The gateway runs its statements prepared on PostgreSQL (`src/db/prepared-statements.ts`); the baseline above sends the same statements unnamed, so PostgreSQL parses and plans each one on every request. Here the same REST requests against a baseline process started with `BASELINE_PREPARED=1`, which names every statement as well (its token lookup included: it still runs one per request). Measured interleaved like the tables above.',
    );
    out.push('');
    out.push(comparisonTable(results.prepared, { name: 'prepared baseline', short: 'prepared' }));
    out.push('');
  }

  if (results.peer) out.push(...peerSection(results.peer, results.settings));

  // BENCH_ONLY runs measure no scale against the baseline and no cold start: their sections are left out.
  if (results.stages.some((st) => st.runs.length > 0)) {
    out.push('## Scaling: lists with a count, 10k → 100k → 1M syncs (PostgreSQL)');
    out.push('');
    const scalingIds = results.stages[0]?.runs.map((r) => r.scenario) ?? [];
    const scalingRows: string[][] = [];
    for (const id of scalingIds) {
      for (const stage of results.stages) {
        const run = stage.runs.find((r) => r.scenario === id);
        if (!run) continue;
        const g = summarize(run.rounds.map((r) => r.gateway));
        const b = summarize(run.rounds.map((r) => r.baseline));
        const latency = stage.latency.find((l) => l.scenario === id);
        const items =
          id === 'syncs-filtered' ? stage.filteredRows : id === 'syncs-tenant' ? stage.tenantSyncs : stage.busiestConnectionSyncs;
        scalingRows.push([
          run.title.replace(/^REST /, ''),
          scale(stage.totalSyncs),
          n0(items),
          latency ? `${ms(latency.pair.gateway.p50)} / ${ms(latency.pair.baseline.p50)}` : '–',
          `${n0(g.rps)} / ${n0(b.rps)}`,
          `${ms(g.p50)} / ${ms(b.p50)}`,
          `**${n2(ratios(run).median)}×**`,
        ]);
      }
    }
    out.push(
      table(
        ['List', 'Syncs in DB', 'Rows counted', 'Latency (1 conn.) p50 ms gw / base', `req/s (${results.settings.connections} conn.) gw / base`, `p50 ms (${results.settings.connections} conn.) gw / base`, 'Ratio'],
        scalingRows,
      ),
    );
    out.push('');
    out.push(
      `Load time (CLI \`seed load\`, both tenants) and VACUUM ANALYZE per step: ${results.stages
        .map((st) => `${scale(st.totalSyncs)}: ${n1(st.loadSeconds)} s + ${n1(st.vacuumSeconds)} s`)
        .join('; ')}.`,
    );
    out.push('');

    out.push('## SQL statements per request');
    out.push('');
    out.push(
      'Counted from the database\'s query events with the gateway in-process (`createGateway` + `db.onQuery`: Prisma\'s statements and the hand-written ones alike), each scenario run once warm. "auth" is the token lookup; each scenario runs warm, so the verified-token cache (`TOKEN_CACHE_TTL_MS`, 5 s) answers for the credential and it is 0 (a process looks a token up once per TTL; the throttled `last_used_at` write, at most once a minute per token, is left out); "nested" is the statement that loads the latest syncs of a whole page of connections.',
    );
    out.push('');
    const countIds = largest?.sqlCounts.map((c) => c.scenario) ?? [];
    out.push(
      table(
        ['Scenario', ...results.stages.map((st) => `${scale(st.totalSyncs)} syncs`), 'Statements (largest scale)'],
        countIds.map((id) => {
          const kinds = largest?.sqlCounts.find((c) => c.scenario === id)?.statements.map((st) => st.kind) ?? [];
          const tally = Object.entries(kinds.reduce<Record<string, number>>((acc, k) => ({ ...acc, [k]: (acc[k] ?? 0) + 1 }), {}))
            .map(([k, v]) => `${v} ${k}`)
            .join(' + ');
          return [
            id,
            ...results.stages.map((st) => {
              const c = st.sqlCounts.find((x) => x.scenario === id);
              return c ? `${c.total}${c.status !== 200 ? ` (HTTP ${c.status})` : ''}` : '–';
            }),
            tally || '0',
          ];
        }),
      ),
    );
    out.push('');

    out.push('## Query plans');
    out.push('');
    out.push(
      `\`EXPLAIN (ANALYZE, BUFFERS)\` of the statements the gateway sent, parameters inlined, in \`bench/explain/\` (${results.explainHeader}). Where the planner read a table whole, the same statement is explained again with \`SET LOCAL enable_seqscan = off\` (in the same file): the next column shows the index path it then takes and its time. The gateway runs its statements prepared on PostgreSQL, where PostgreSQL may reuse a generic plan after five runs: the last column is that plan (\`PREPARE\`, then \`EXECUTE\` with \`plan_cache_mode = force_generic_plan\`, also in the file), checked the same way.`,
    );
    out.push('');
    out.push(
      table(
        ['Plan file', 'Indexes used', 'Seq Scan', 'Execution ms', 'Check', 'With seq scans off: indexes, ms', 'Generic plan: indexes, ms'],
        results.explain.map((e) => [
          `\`${e.file}\``,
          e.indexes.join(', ') || '–',
          e.seqScans.join(', ') || '–',
          e.executionMs === null ? '–' : ms(e.executionMs),
          e.seqScanOnSyncs ? '**Seq Scan on syncs**' : 'ok',
          e.indexPath ? `${e.indexPath.indexes.join(', ') || '–'}; ${e.indexPath.executionMs === null ? '–' : ms(e.indexPath.executionMs)}` : '',
          e.generic
            ? `${e.generic.seqScanOnSyncs ? '**Seq Scan on syncs**; ' : ''}${e.generic.indexes.join(', ') || '–'}${e.generic.seqScans.length > 0 ? ` (Seq Scan on ${e.generic.seqScans.join(', ')})` : ''}; ${e.generic.executionMs === null ? '–' : ms(e.generic.executionMs)}`
            : '–',
        ]),
      ),
    );
    out.push('');
  }

  if (results.coldStart.length > 0) {
    out.push('## Cold start');
    out.push('');
    out.push(
      'From spawning `node dist/server.js` (what `npm start` runs) to the first 200 on `/readyz`, and to the first 200 on an authenticated sync list; then the resident memory (RSS) of the server left idle for 3 s. Median of the runs, all runs in brackets.',
    );
    out.push('');
    out.push(
      table(
        ['Database', '/readyz ms', 'First authenticated request ms', 'Idle RSS MB'],
        results.coldStart.map((row) => {
          const ready = row.runs.map((r) => r.readyMs);
          const first = row.runs.map((r) => r.firstRequestMs).filter((x): x is number => x !== null);
          const rss = row.runs.map((r) => r.idleRssMb).filter((x): x is number => x !== null);
          return [
            row.label,
            `${n0(median(ready))} (${ready.map(n0).join(', ')})`,
            first.length > 0 ? `${n0(median(first))} (${first.map(n0).join(', ')})` : '–',
            rss.length > 0 ? `${n0(median(rss))} (${rss.map(n0).join(', ')})` : '–',
          ];
        }),
      ),
    );
    out.push('');
  }

  if (results.pglite) {
    out.push(`## Embedded PGlite (${n0(results.pglite.syncs)} syncs, ${n0(results.pglite.connections)} connections, one tenant)`);
    out.push('');
    out.push('The same server on a PGlite data directory (one in-process database connection). Absolute figures only: the baseline needs a PostgreSQL server.');
    out.push('');
    out.push(
      table(
        ['Scenario', 'req/s', 'p50 / p99 ms', 'CPU/req ms', 'Non-2xx'],
        results.pglite.runs.map(({ title, result }) => [
          title,
          n0(result.rps),
          `${ms(result.p50)} / ${ms(result.p99)}`,
          result.cpuMsPerRequest === null ? '–' : n2(result.cpuMsPerRequest),
          String(result.failures),
        ]),
      ),
    );
    out.push('');
  }

  const breakdown = results.breakdown ?? [];
  if (breakdown.length > 0) {
    out.push(`## Where the CPU of a sync-list request goes (in-process, ${results.stages[results.stages.length - 1] ? scale(results.stages[results.stages.length - 1]!.totalSyncs) : ''} syncs)`);
    out.push('');
    out.push(
      'The request of the first scenario taken apart inside one process: each layer called by 10 concurrent loops for a few seconds, CPU time from `process.cpuUsage()` per call (no HTTP server, no load generator in the process).',
    );
    out.push('');
    out.push(table(['Layer', 'CPU ms per request'], breakdown.map((row) => [row.layer, n2(row.cpuMsPerRequest)])));
    out.push('');
  }

  const profiles = results.profiles ?? (results.profile ? [results.profile] : []);
  if (profiles.length > 0) {
    out.push('## CPU profiles of the gateway under load');
    out.push('');
    out.push(
      `\`node --cpu-prof\` on the server (a fresh process per scenario, started as the gateway above) while it served each scenario whose target is missed, ${results.settings.connections} keep-alive connections; the last ${n1(profiles[0]!.windowMs / 1000)} s of each profile (the load). Self time, share of the non-idle time. The raw profiles are written to \`bench/results/gateway-<scenario>.cpuprofile\` and not committed.`,
    );
    out.push('');
    for (const p of profiles) {
      out.push(`### \`${p.scenario}\`${p.title ? `: ${p.title}` : ''}`);
      out.push('');
      out.push(`${n0(p.requests)} requests; ${n0(p.totalMs)} ms sampled, ${n1(p.idleShare * 100)}% idle.`);
      out.push('');
      out.push(...profileTables(p, 10));
    }
  }

  if (results.writePath) out.push(...writePathSection(results.writePath));
  if (results.fanout) out.push(...fanoutSection(results.fanout));

  out.push(analysis.trim());
  out.push('');
  return out.join('\n');
}

function verdict(met: boolean): string {
  return met ? '**met**' : '**missed**';
}

export function writePathSection(w: WritePathFigures): string[] {
  const rounds = (values: number[], digits = n1) => values.map(digits).join(', ');
  return [
    '## Write path: a run\'s lifecycle through REST against the same data-layer calls (PostgreSQL)',
    '',
    `\`bench/write-path.ts\` (also \`npm run bench:writes\`), on a database of its own: ${w.workers} workers each run lifecycles back to back (trigger → claim → 10 progress reports → finish: 13 writes), through the REST API of one gateway process (\`node dist/server.js\`, production settings, keep-alive connections), against the floor: the same data-layer calls (\`src/db/sync-runs.ts\`: the same statements and transactions, events included) made through \`pg\` from the benchmark's process, with statements ${w.floorPrepared ? 'prepared, as the gateway runs them' : 'unnamed (WRITE_BENCH_FLOOR_PREPARED=off)'}. ${w.seconds} s per figure after a warm-up of both, ${w.rounds} rounds, the order swapped every other round; medians. CPU per lifecycle: each process's own (PostgreSQL: every postgres process).`,
    '',
    table(
      ['', 'Lifecycles/s (median)', 'Writes/s', 'Rounds', 'CPU per lifecycle'],
      [
        ['Gateway, REST', n1(w.gatewayPerSecond), n0(w.gatewayPerSecond * 13), rounds(w.gatewayRounds), `gateway ${n1(w.cpu.gateway)} ms, PostgreSQL ${n1(w.cpu.gatewayPostgres)} ms, client ${n1(w.cpu.client)} ms`],
        ['Floor, data layer through pg', n1(w.floorPerSecond), n0(w.floorPerSecond * 13), rounds(w.floorRounds), `floor's process ${n1(w.cpu.floorProcess)} ms, PostgreSQL ${n1(w.cpu.floorPostgres)} ms`],
      ],
      [':--', '--:', '--:', ':--', ':--'],
    ),
    '',
    // As every other ratio of the report: the median of the rounds' ratios (each round's two sides measured back to
    // back), not the ratio of the two sides' medians, which pairs figures measured minutes apart.
    `Ratio **${n2(median(w.roundRatios))}×**, the median of the rounds' ratios (${rounds(w.roundRatios, n2)}); of the two medians above ${n2(w.gatewayPerSecond / w.floorPerSecond)}×. Target (issue #16 item 7) 0.7×: ${verdict(median(w.roundRatios) >= 0.7)}.`,
    '',
    w.profile.trim(),
    '',
  ];
}

function fanoutSection(f: FanoutFigures): string[] {
  return [
    `## Live fan-out: ${n0(f.subscribers)} SSE subscribers, ${f.targetEventsPerS} status events/s (PostgreSQL)`,
    '',
    `\`bench/fanout.ts\` (also \`npm run bench:fanout\`), on a database and a gateway process of their own: ${n0(f.restStreams)} REST event streams and ${n0(f.graphqlSubscriptions)} GraphQL subscriptions over SSE, each following one of ${f.connections} connections, while runs change through the REST API (trigger → claim → finish, round robin). The commit time is when the benchmark hears the NOTIFY PostgreSQL sends at commit on a LISTEN connection of its own.`,
    '',
    table(
      ['Figure', 'Value'],
      [
        ['Status events written', `${n0(f.statusEventsWritten)} (${f.achievedEventsPerS}/s achieved; ${f.writesSkippedBusy} skipped while their connection's previous write was in flight; ${f.failedWrites} failed)`],
        ['Deliveries', `${n0(f.delivered)} of ${n0(f.expectedDeliveries)} expected; ${f.missing} missing, ${f.outOfOrder} out of order`],
        ['Commit → delivery, ms', `p50 ${f.msFromCommit.p50}, p95 ${f.msFromCommit.p95}, **p99 ${f.msFromCommit.p99}**, max ${f.msFromCommit.max} (${n0(f.commitsMeasured)} deliveries timed)`],
        ['Write acknowledged → delivery, ms', `p50 ${f.msFromWriteAcknowledged.p50}, p99 ${f.msFromWriteAcknowledged.p99}`],
        ['Write latency, ms', `p50 ${f.writeLatencyMs.p50}, p99 ${f.writeLatencyMs.p99}`],
        ['Gateway RSS, MB', `idle ${n0(f.rssMb.idle)}, with the subscribers ${n0(f.rssMb.withSubscribers)}, peak under load ${n0(f.rssMb.peakUnderLoad)}`],
        ['CPU, ms per second', `gateway ${f.gatewayCpuMsPerSecond}, PostgreSQL ${f.postgresCpuMsPerSecond}, load generator ${f.loadGeneratorCpuMsPerSecond}`],
        ['Load average at the end', f.loadAverage],
      ],
    ),
    '',
    `Target (issue #16 item 7): p99 from commit to delivery < 50 ms with nothing dropped: ${verdict(f.msFromCommit.p99 < 50 && f.missing === 0 && f.outOfOrder === 0 && f.delivered === f.expectedDeliveries)}.`,
    '',
  ];
}
