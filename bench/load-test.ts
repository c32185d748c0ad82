// The hardening load test: the real server on PostgreSQL, saturated on loopback by autocannon with a mix of
// valid and invalid requests for 60 s (LOAD_SECONDS). Every request names the status it must get; the run
// fails (exit 1) on any other status, on connection errors or on timeouts. `npm run loadtest`.
import autocannon from 'autocannon';
import { createDatabase, databaseUrl, dropAllDatabases } from './databases.js';
import { freePort, runCli, startNode, stopAllChildren, waitFor200 } from './processes.js';

const SECONDS = Number(process.env.LOAD_SECONDS ?? 60);
const CONNECTIONS = Number(process.env.LOAD_CONNECTIONS ?? 20);

interface Probe {
  name: string;
  method: 'GET' | 'POST' | 'DELETE' | 'PUT';
  path: string;
  headers?: Record<string, string>;
  body?: string;
  expect: number;
}

function probes(token: string, connectionId: string, syncId: string): Probe[] {
  const auth = { authorization: `Token ${token}` };
  // graphql-response+json: request errors are 4xx there (with application/json they are 200, per GraphQL over HTTP).
  const json = { ...auth, 'content-type': 'application/json', accept: 'application/graphql-response+json' };
  const api = '/api/v1/integrations';
  return [
    { name: 'sync list', method: 'GET', path: `${api}/syncs?connection_id=${connectionId}`, headers: auth, expect: 200 },
    { name: 'filtered syncs', method: 'GET', path: `${api}/syncs?status=eq.failed&started_at=gte.2026-01-01&select=id,status,started_at`, headers: auth, expect: 200 },
    { name: 'one sync', method: 'GET', path: `${api}/syncs/${syncId}`, headers: auth, expect: 200 },
    { name: 'connected', method: 'GET', path: `${api}/connected?select=id,name,status`, headers: auth, expect: 200 },
    { name: 'one connection', method: 'GET', path: `${api}/connected/${connectionId}`, headers: auth, expect: 200 },
    { name: 'catalog', method: 'GET', path: `${api}/available?search=lock&select=id,name`, headers: auth, expect: 200 },
    {
      name: 'graphql nested',
      method: 'POST',
      path: '/graphql',
      headers: json,
      body: JSON.stringify({ query: '{ connections(limit: 5) { nodes { name application { category { name } } syncs(limit: 10) { status startedAt } } } }' }),
      expect: 200,
    },
    { name: 'malformed filter', method: 'GET', path: `${api}/syncs?status=eq`, headers: auth, expect: 400 },
    { name: 'unknown field', method: 'GET', path: `${api}/syncs?colour=eq.red`, headers: auth, expect: 400 },
    { name: 'oversized page', method: 'GET', path: `${api}/syncs?limit=100000`, headers: auth, expect: 400 },
    // Any string names an item or nothing (404); only one that cannot be an id (over 64 characters) is 400.
    { name: 'id naming nothing', method: 'GET', path: `${api}/syncs/not%20an%20id`, headers: auth, expect: 404 },
    { name: 'over-long id', method: 'GET', path: `${api}/syncs/syn_${'x'.repeat(80)}`, headers: auth, expect: 400 },
    { name: 'missing id', method: 'GET', path: `${api}/connected/con_doesnotexist000000000000000`, headers: auth, expect: 404 },
    { name: 'no credential', method: 'GET', path: `${api}/syncs`, expect: 401 },
    { name: 'bad token', method: 'GET', path: `${api}/syncs`, headers: { authorization: 'Token igw_pat_zzzzzzzzzzzz_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' }, expect: 401 },
    { name: 'wrong scheme', method: 'GET', path: `${api}/syncs`, headers: { authorization: 'Basic dXNlcjpwYXNz' }, expect: 401 },
    { name: 'wrong method', method: 'PUT', path: `${api}/syncs`, headers: auth, expect: 405 },
    { name: 'unknown version', method: 'GET', path: '/api/v2/integrations/syncs', headers: auth, expect: 404 },
    { name: 'broken JSON', method: 'POST', path: '/graphql', headers: json, body: '{"query": "{ syncs {', expect: 400 },
    { name: 'invalid GraphQL', method: 'POST', path: '/graphql', headers: json, body: JSON.stringify({ query: '{ nope }' }), expect: 400 },
    { name: 'health', method: 'GET', path: '/healthz', expect: 200 },
  ];
}

async function main(): Promise<void> {
  const name = await createDatabase('load');
  const url = databaseUrl(name);
  const env = { DATABASE_URL: url };
  await runCli(['db', 'migrate'], env);
  await runCli(['tenant', 'create', 'load'], env);
  await runCli(['seed', 'load', '--tenant', 'load', '--connections', '200', '--syncs', '100000'], env);
  await runCli(['service-user', 'create', '--tenant', 'load', '--name', 'load', '--role', 'reader'], env);
  const expires = new Date(Date.now() + 86_400_000).toISOString();
  const token = await runCli(['token', 'create', '--tenant', 'load', '--service-user', 'load', '--expires', expires], env);

  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const server = startNode('gateway', 'dist/server.js', {
    env: { ...env, PORT: String(port), SEED: 'none', SCHEDULER: 'off', LOG_LEVEL: 'warn', RATE_LIMIT_PER_MINUTE: '0', NODE_ENV: 'production' },
  });
  const auth = { authorization: `Token ${token}` };
  await waitFor200(`${base}/readyz`, { since: performance.now(), timeoutMs: 60_000, child: server });
  const first = (await (await fetch(`${base}/api/v1/integrations/syncs?limit=1&select=id,connection_id`, { headers: auth })).json()) as {
    data: Array<{ id: string; connection_id: string }>;
  };
  const sample = first.data[0]!;
  const mix = probes(token, sample.connection_id, sample.id);

  const unexpected = new Map<string, number>();
  const counts = new Map<string, number>();
  const result = await autocannon({
    url: base,
    connections: CONNECTIONS,
    duration: SECONDS,
    timeout: 20,
    requests: mix.map((probe) => ({
      method: probe.method,
      path: probe.path,
      headers: probe.headers ?? {},
      body: probe.body,
      onResponse: (status: number) => {
        counts.set(probe.name, (counts.get(probe.name) ?? 0) + 1);
        if (status !== probe.expect) {
          const key = `${probe.name}: expected ${probe.expect}, got ${status}`;
          unexpected.set(key, (unexpected.get(key) ?? 0) + 1);
        }
      },
    })),
  });

  const statuses = Object.entries(result.statusCodeStats)
    .map(([status, { count }]) => `${status}: ${count}`)
    .join(', ');
  const lines = [
    `load test: ${SECONDS} s, ${CONNECTIONS} connections, ${mix.length} request kinds, ${result.requests.total} requests (${Math.round(result.requests.average)} req/s)`,
    `latency p50 ${result.latency.p50} ms, p99 ${result.latency.p99} ms; statuses ${statuses}`,
    `errors ${result.errors}, timeouts ${result.timeouts}, unexpected statuses ${[...unexpected.values()].reduce((a, b) => a + b, 0)}`,
    ...[...unexpected].map(([key, count]) => `  ${key} ×${count}`),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  if (unexpected.size > 0 || result.errors > 0 || result.timeouts > 0) process.exitCode = 1;
}

try {
  await main();
} catch (error) {
  process.stderr.write(`load test failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exitCode = 1;
} finally {
  await stopAllChildren();
  await dropAllDatabases();
}
