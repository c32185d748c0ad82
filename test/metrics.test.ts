// Prometheus metrics at /metrics (route patterns, operation names, pool, process) and the request log
// (route pattern, and never a credential).
import { SignJWT } from 'jose';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { routeOf } from '../src/plugins/use-metrics.js';
import type { Gateway, GatewayOptions } from '../src/http/yoga.js';
import { databaseKinds } from './fixtures/databases.js';
import { createTestGateway, gatewayOver, graphql, JWT_TEST_SECRET, type TestGateway } from './fixtures/gateway.js';
import { BASE, ORIGIN, rest } from './fixtures/rest.js';

// One seeded PGlite database for the whole file (PostgreSQL gets its own in the suite that needs it).
let pglite: TestGateway;
beforeAll(async () => {
  pglite = await createTestGateway('pglite');
});
afterAll(() => pglite?.dispose());

function gatewayWith(t: TestGateway, options: Partial<GatewayOptions> & { metricsToken?: string } = {}): Gateway {
  const { metricsToken, config, ...rest } = options;
  return gatewayOver(t.db, { ...rest, config: { ...config, METRICS_TOKEN: metricsToken } });
}

async function scrape(
  gateway: Gateway,
  headers: Record<string, string> = {},
): Promise<{ status: number; contentType: string | null; text: string }> {
  const response = await gateway.fetch(`${ORIGIN}/metrics`, { headers });
  return { status: response.status, contentType: response.headers.get('content-type'), text: await response.text() };
}

/** The value of the sample with exactly these labels (in any order), or undefined. */
function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  for (const line of text.split('\n')) {
    const match = /^(\w+)\{(.*)\} (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const found = Object.fromEntries([...(match[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.keys(labels).length === Object.keys(found).length && Object.entries(labels).every(([k, v]) => found[k] === v)) {
      return Number(match[3]);
    }
  }
  return undefined;
}

describe('route patterns', () => {
  it.each([
    ['/graphql', '/graphql'],
    [`${BASE}/connected/con_123`, `${BASE}/connected/{id}`],
    [`${BASE}/connected/con_123/`, `${BASE}/connected/{id}`],
    [`${BASE}/syncs`, `${BASE}/syncs`],
    [`${BASE}/syncs/claim`, `${BASE}/syncs/claim`],
    [`${BASE}/syncs/syn_1`, `${BASE}/syncs/{id}`],
    [`${BASE}/available/app_9`, `${BASE}/available/{id}`],
    ['/api/v1/docs/swagger-ui.css', '/api/v1/docs/{asset}'],
    ['/api/v1/openapi.json', '/api/v1/openapi.json'],
    ['/docs/errors/NOT_FOUND', '/docs/errors/{code}'],
    ['/healthz', '/healthz'],
    [`${BASE}/connected/con_1/extra`, 'unmatched'],
    ['/wp-admin/login.php', 'unmatched'],
  ])('%s → %s', (path, route) => {
    expect(routeOf(path)).toBe(route);
  });
});

describe.each(databaseKinds)('metrics on %s', (kind) => {
  let t: TestGateway;
  let gateway: Gateway;
  beforeAll(async () => {
    t = kind === 'pglite' ? pglite : await createTestGateway(kind);
    gateway = gatewayWith(t);
  });
  afterAll(() => (kind === 'pglite' ? undefined : t?.dispose()));

  it('counts requests by route pattern and status, operations by name and surface, and reports the process', async () => {
    const token = t.tenants.demo.readerToken;
    const connections = await rest(gateway, `${BASE}/connected`, { token, expectStatus: 200 });
    const id = (connections.body.data as Array<{ id: string }>)[0]?.id ?? '';
    await rest(gateway, `${BASE}/connected/${id}`, { token, expectStatus: 200 });
    await rest(gateway, `${BASE}/connected/con_missing`, { token, expectStatus: 404 });
    await graphql(gateway, 'query DashboardConnections { connections(limit: 2) { totalCount } }', { token, expectOk: true });
    await graphql(gateway, '{ categories { totalCount } }', { token, expectOk: true });

    // Every request above is answered, but a fire-and-forget bookkeeping write (the token's lastUsedAt) may
    // still hold a pooled connection: wait until none is in use, so the scrape sees a known pool.
    if (kind === 'postgres') {
      await vi.waitFor(
        () => {
          const pool = t.db.poolStats!();
          expect(pool.idle).toBe(pool.total);
        },
        { timeout: 5000 },
      );
    }
    const { status, contentType, text } = await scrape(gateway);
    expect(status).toBe(200);
    expect(contentType).toMatch(/^text\/plain; version=0\.0\.4/);

    expect(sample(text, 'http_requests_total', { method: 'GET', route: `${BASE}/connected/{id}`, status: '200' })).toBe(1);
    expect(sample(text, 'http_requests_total', { method: 'GET', route: `${BASE}/connected/{id}`, status: '404' })).toBe(1);
    expect(sample(text, 'http_requests_total', { method: 'GET', route: `${BASE}/connected`, status: '200' })).toBe(1);
    expect(sample(text, 'http_requests_total', { method: 'POST', route: '/graphql', status: '200' })).toBe(2);
    expect(sample(text, 'http_request_duration_seconds_count', { method: 'POST', route: '/graphql', status: '200' })).toBe(2);
    expect(text).not.toContain(id);
    expect(text).not.toContain('con_missing');

    expect(
      sample(text, 'graphql_operations_total', {
        operation_name: 'GetConnection',
        operation_type: 'query',
        surface: 'rest',
        outcome: 'ok',
      }),
    ).toBe(2);
    expect(
      sample(text, 'graphql_operations_total', {
        operation_name: 'ListConnections',
        operation_type: 'query',
        surface: 'rest',
        outcome: 'ok',
      }),
    ).toBe(1);
    expect(
      sample(text, 'graphql_operations_total', {
        operation_name: 'other',
        operation_type: 'query',
        surface: 'graphql',
        outcome: 'ok',
      }),
    ).toBe(1);
    expect(
      sample(text, 'graphql_operations_total', { operation_name: 'anonymous', operation_type: 'query', surface: 'graphql', outcome: 'ok' }),
    ).toBe(1);
    expect(
      sample(text, 'graphql_operation_duration_seconds_count', {
        operation_name: 'other',
        operation_type: 'query',
        surface: 'graphql',
      }),
    ).toBe(1);

    // A name a client chose is no label: `other`, as every name the server's own documents do not have.
    expect(text).not.toContain('DashboardConnections');

    expect(text).toMatch(/^process_cpu_user_seconds_total \d/m);
    // Since the process started, not since the first scrape: at least the CPU this process had used by now.
    const reported = Number(/^process_cpu_user_seconds_total (\S+)$/m.exec(text)?.[1]);
    const used = process.cpuUsage().user / 1e6;
    expect(reported).toBeLessThanOrEqual(used);
    expect(reported).toBeGreaterThan(used - 5);
    expect(text).toMatch(/^nodejs_eventloop_lag_seconds \d/m);
    expect(text).toMatch(/^process_resident_memory_bytes \d/m);

    if (kind === 'postgres') {
      expect(sample(text, 'db_pool_connections', { state: 'max' })).toBe(5);
      // The requests opened at least one connection and at most the pool's size, and none is in use now.
      const total = sample(text, 'db_pool_connections', { state: 'total' });
      expect(total).toBeGreaterThanOrEqual(1);
      expect(total).toBeLessThanOrEqual(5);
      expect(sample(text, 'db_pool_connections', { state: 'idle' })).toBe(total);
      expect(sample(text, 'db_pool_connections', { state: 'waiting' })).toBe(0);
      // Live delivery's own pool: no stream was opened, so it opened nothing.
      expect(sample(text, 'db_live_pool_connections', { state: 'max' })).toBe(2);
      expect(sample(text, 'db_live_pool_connections', { state: 'total' })).toBe(0);
      expect(sample(text, 'db_live_pool_connections', { state: 'waiting' })).toBe(0);
    } else {
      expect(text).not.toContain('db_pool_connections');
      expect(text).not.toContain('db_live_pool_connections');
    }
  });
});

describe('metrics access and request logs', () => {
  let t: TestGateway;
  beforeAll(() => {
    t = pglite;
  });

  it('needs the bearer token when METRICS_TOKEN is set', async () => {
    const metricsToken = 'metrics-token-0123456789';
    const gateway = gatewayWith(t, { metricsToken });
    const anonymous = await scrape(gateway);
    expect(anonymous.status).toBe(401);
    expect(JSON.parse(anonymous.text).error.code).toBe('UNAUTHORIZED');
    expect((await scrape(gateway, { authorization: 'Bearer metrics-token-0123456780' })).status).toBe(401);
    expect((await scrape(gateway, { authorization: `Bearer ${metricsToken}` })).status).toBe(200);
  });

  it('logs each request with its route pattern and never a credential, even at trace level', async () => {
    const lines: string[] = [];
    const logger = pino({ level: 'trace' }, { write: (line: string) => void lines.push(line) });
    const gateway = gatewayWith(t, { logger });
    const token = t.tenants.demo.adminToken;
    const unknownToken = `igw_pat_zzzzzzzzzzzz_${'q'.repeat(43)}`;
    const jwt = await new SignJWT({ tenant_id: t.tenants.demo.id, role: 'reader' })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('log-check')
      .setExpirationTime('5m')
      .sign(new TextEncoder().encode(JWT_TEST_SECRET));

    await rest(gateway, `${BASE}/connected`, { token, expectStatus: 200 });
    await rest(gateway, `${BASE}/connected/con_nope`, { token, expectStatus: 404 });
    await rest(gateway, `${BASE}/connected`, { token: unknownToken, expectStatus: 401 });
    await rest(gateway, `${BASE}/connected`, { authorization: `Bearer ${jwt}`, expectStatus: 200 });
    await rest(gateway, `${BASE}/connected`, { authorization: `Bearer ${jwt}x`, expectStatus: 401 });
    await rest(gateway, `${BASE}/connected?token=${token}`, { token });
    await graphql(gateway, '{ connections { totalCount } }', { token, expectOk: true });
    await graphql(gateway, '{ connections { totalCount } }', { token: unknownToken });
    await graphql(gateway, '{ connections { totalCount }', { token });
    await gateway.fetch(`${ORIGIN}/graphql?query=${encodeURIComponent('{ __typename }')}&token=${token}`, {
      headers: { authorization: `Token ${token}` },
    });

    const log = lines.join('');
    expect(lines.length).toBeGreaterThanOrEqual(10);
    // The secret part of the token is everything after `igw_pat_<prefix>_` (base64url: it may hold `_` itself).
    const tokenSecret = /^igw_pat_[^_]+_(.+)$/.exec(token)?.[1];
    expect(tokenSecret?.length).toBeGreaterThanOrEqual(40);
    for (const secret of [token, tokenSecret!, unknownToken, jwt, jwt.split('.')[2] ?? jwt]) {
      expect(log).not.toContain(secret);
    }
    const requests = lines.map((line) => JSON.parse(line) as Record<string, unknown>).filter((entry) => entry.msg === 'request');
    expect(requests).toContainEqual(
      expect.objectContaining({ method: 'GET', path: `${BASE}/connected/con_nope`, route: `${BASE}/connected/{id}`, status: 404 }),
    );
    expect(requests).toContainEqual(expect.objectContaining({ method: 'POST', path: '/graphql', route: '/graphql', status: 200 }));
  });
});
