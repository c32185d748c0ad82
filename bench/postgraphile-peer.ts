// The PostGraphile peer (bench/postgraphile/server.mjs) beside the gateway, on the same database: the same
// questions in each one's schema, the answers reduced to their rows and compared before anything is measured.
// The peer's dependencies are a set of their own (bench/postgraphile/package-lock.json, see
// scripts/own-dependencies.ts), so that the project's install stays as it is.

import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { SignJWT } from 'jose';
import { installOwnDependencies } from '../scripts/own-dependencies.js';
import { withDatabase } from './databases.js';
import { fetchOnce, measureLoad, median, type Target } from './load.js';
import { freePort, ROOT, startNode, waitFor200 } from './processes.js';
import { graphqlScenario, NESTED_SYNCS, type Scenario } from './scenarios.js';

const PEER_DIR = join(ROOT, 'bench', 'postgraphile');
const NESTED_CONNECTIONS = 50;
const SYNC_FIELDS = 'status startedAt finishedAt errorMessage';

/** The role the peer's requests take, and row-level security on the tenant's tables for it (idempotent). */
const SCOPE_SQL = `
DO $$ BEGIN CREATE ROLE bench_peer NOLOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$;
GRANT USAGE ON SCHEMA public TO bench_peer;
GRANT SELECT ON connections, syncs, applications, categories TO bench_peer;
ALTER TABLE connections ENABLE ROW LEVEL SECURITY;
ALTER TABLE syncs ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS bench_peer_tenant ON connections;
CREATE POLICY bench_peer_tenant ON connections FOR SELECT TO bench_peer
  USING (tenant_id = current_setting('jwt.claims.tenant_id', true) AND deleted_at IS NULL);
DROP POLICY IF EXISTS bench_peer_tenant ON syncs;
CREATE POLICY bench_peer_tenant ON syncs FOR SELECT TO bench_peer
  USING (tenant_id = current_setting('jwt.claims.tenant_id', true));`;

/** Starts the peer on `url`, scoped to `tenantId` by a token of its own; the headers that carry the token. */
export async function startPeer(url: string, tenantId: string): Promise<{ target: Target; headers: Record<string, string> }> {
  installOwnDependencies(PEER_DIR);
  await withDatabase(url, (client) => client.query(SCOPE_SQL));
  const secret = randomBytes(32).toString('hex');
  const jwt = await new SignJWT({ tenant_id: tenantId })
    .setProtectedHeader({ alg: 'HS256' })
    .setExpirationTime('1d')
    .sign(new TextEncoder().encode(secret));
  const port = await freePort();
  const env = { DATABASE_URL: url, PORT: String(port), JWT_SECRET: secret, GRAPHILE_ENV: 'production', NODE_ENV: 'production' };
  const since = performance.now();
  const child = startNode('postgraphile', 'bench/postgraphile/server.mjs', { env });
  await waitFor200(`http://127.0.0.1:${port}/readyz`, { since, timeoutMs: 120_000, child });
  return { target: { label: 'PostGraphile', port, pid: child.pid }, headers: { authorization: `Bearer ${jwt}` } };
}

interface PeerScenario {
  title: string;
  gateway: Scenario;
  peer: Scenario;
}

export function peerScenarios(connectionId: string, peerHeaders: Record<string, string>): PeerScenario[] {
  const connection = JSON.stringify(connectionId);
  const pair = (id: string, title: string, gateway: string, peer: string): PeerScenario => ({
    title,
    gateway: graphqlScenario(id, title, gateway, true),
    peer: { ...graphqlScenario(id, title, peer, false), headers: peerHeaders },
  });
  return [
    pair(
      'peer-nested',
      `nested: ${NESTED_CONNECTIONS} connections × application × ${NESTED_SYNCS} latest runs`,
      `{ connections(limit: ${NESTED_CONNECTIONS}) { nodes { name application { name } syncs(limit: ${NESTED_SYNCS}) { id ${SYNC_FIELDS} } } } }`,
      `{ allConnections(first: ${NESTED_CONNECTIONS}, orderBy: [NAME_ASC, ROW_ID_ASC]) { nodes { name applicationByApplicationId { name } syncsByTenantIdAndConnectionId(first: ${NESTED_SYNCS}, orderBy: [STARTED_AT_DESC, ROW_ID_DESC]) { nodes { rowId ${SYNC_FIELDS} } } } } }`,
    ),
    pair(
      'peer-flat',
      `flat: one connection's ${NESTED_SYNCS} latest runs`,
      `{ syncs(connectionId: ${connection}, limit: ${NESTED_SYNCS}) { nodes { id ${SYNC_FIELDS} } } }`,
      `{ allSyncs(first: ${NESTED_SYNCS}, condition: { connectionId: ${connection} }, orderBy: [STARTED_AT_DESC, ROW_ID_DESC]) { nodes { rowId ${SYNC_FIELDS} } } }`,
    ),
  ];
}

/** An answer's rows as values in selection order: instants as instants, enum values in one case, `nodes` unwrapped. */
function rows(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(rows);
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value);
    return entries.length === 1 && entries[0]![0] === 'nodes' ? rows(entries[0]![1]) : entries.map(([, v]) => rows(v));
  }
  if (typeof value !== 'string') return value;
  return /^\d{4}-\d\d-\d\dT/.test(value) ? new Date(value).toISOString() : value.toLowerCase();
}

/** The gateway's ratio to the peer per scenario, interleaved rounds; throws when the two answer differently. */
export async function measurePeer(
  gateway: Target,
  peer: Target,
  list: PeerScenario[],
  options: { token: string; rounds: number; durationS: number; warmupS: number },
): Promise<string> {
  for (const s of list) {
    const [a, b] = await Promise.all([fetchOnce(gateway, s.gateway, options.token), fetchOnce(peer, s.peer, options.token)]);
    const [ra, rb] = [rows(JSON.parse(a.body)), rows(JSON.parse(b.body))];
    if (a.status !== 200 || b.status !== 200 || !isDeepStrictEqual(ra, rb) || JSON.stringify(ra).length < 200)
      throw new Error(`${s.title}: the gateway and PostGraphile answer differently (${a.body.slice(0, 200)} / ${b.body.slice(0, 200)})`);
  }
  const load = (target: Target, scenario: Scenario, durationS: number, warmupS: number) =>
    measureLoad(target, scenario, { token: options.token, connections: 10, durationS, warmupS, quiet: [gateway.pid, peer.pid] });
  for (const s of list) {
    await load(gateway, s.gateway, options.warmupS, 0);
    await load(peer, s.peer, options.warmupS, 0);
  }
  const lines = [
    `| Gateway / PostGraphile ${peerVersion()}, ${options.rounds} interleaved rounds | ratio | gateway req/s | PostGraphile req/s | CPU ms/req (gateway / PostGraphile) |`,
    '| :-- | --: | --: | --: | --: |',
  ];
  for (const s of list) {
    const runs = { gateway: [] as Awaited<ReturnType<typeof load>>[], peer: [] as Awaited<ReturnType<typeof load>>[] };
    for (let round = 0; round < options.rounds; round++) {
      const order = round % 2 === 0 ? (['gateway', 'peer'] as const) : (['peer', 'gateway'] as const);
      for (const side of order) {
        const result = await load(side === 'gateway' ? gateway : peer, s[side], options.durationS, 1);
        if (result.failures > 0) throw new Error(`${s.title}: ${result.failures} failed requests on ${side}`);
        runs[side].push(result);
      }
    }
    const ratios = runs.gateway.map((r, i) => r.rps / runs.peer[i]!.rps);
    const rps = (side: 'gateway' | 'peer') => Math.round(median(runs[side].map((r) => r.rps))).toLocaleString('en-US');
    const cpu = (side: 'gateway' | 'peer') => median(runs[side].map((r) => r.cpuMsPerRequest ?? Number.NaN)).toFixed(2);
    lines.push(
      `| ${s.title} | **${median(ratios).toFixed(2)}×** (${ratios.map((x) => x.toFixed(2)).join(', ')}) | ${rps('gateway')} | ${rps('peer')} | ${cpu('gateway')} / ${cpu('peer')} |`,
    );
  }
  lines.push(
    '',
    "PostGraphile (Amber preset, `GRAPHILE_ENV=production`, `NODE_ENV=production`, a pool of 10) as its users scope it: an HS256 JWT verified on every request names the tenant, each request's statements run as a role of their own under row-level security on the tenant's tables; the gateway with its reader token. The same rows in the same order, compared before measuring.",
  );
  return lines.join('\n');
}

const peerVersion = () =>
  (JSON.parse(readFileSync(join(PEER_DIR, 'node_modules', 'postgraphile', 'package.json'), 'utf8')) as { version: string }).version;
