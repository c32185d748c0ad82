// Rate limits: per credential, per tenant and per client address, in memory and in the real Redis on
// 127.0.0.1:6379 (shared by two gateways), and in a Redis of the test's own that is killed and started again
// (each process counts alone while it is away, never uncounted).
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createTcpServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { SignJWT } from 'jose';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parsePersonalAccessToken } from '../src/auth/tokens.js';
import type { Gateway, GatewayOptions } from '../src/http/yoga.js';
import { createTestGateway, gatewayOver, graphql, JWT_TEST_SECRET, type TestGateway } from './fixtures/gateway.js';
import { BASE, ORIGIN, rest } from './fixtures/rest.js';

const REDIS_URL = 'redis://127.0.0.1:6379';
const BUDGET = 5;

function gatewayWith(t: TestGateway, options: Partial<GatewayOptions> & { perMinute?: number; redisUrl?: string } = {}): Gateway {
  const { perMinute = BUDGET, redisUrl, config, ...rest } = options;
  return gatewayOver(t.db, { ...rest, config: { ...config, RATE_LIMIT_PER_MINUTE: perMinute, REDIS_URL: redisUrl } });
}

function jwtFor(tenantId: string, sub: string): Promise<string> {
  return new SignJWT({ tenant_id: tenantId, role: 'reader' })
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(sub)
    .setExpirationTime('10m')
    .sign(new TextEncoder().encode(JWT_TEST_SECRET));
}

const budgetHeaders = (headers: Headers) => ({
  limit: headers.get('ratelimit-limit'),
  remaining: headers.get('ratelimit-remaining'),
  reset: Number(headers.get('ratelimit-reset')),
});

/** Spends `count` requests of a credential's budget on a cheap REST route; returns the statuses. */
async function spend(gateway: Gateway, count: number, authorization: string): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < count; i += 1) statuses.push((await rest(gateway, `${BASE}/categories`, { authorization })).status);
  return statuses;
}

function uniquePrefix(): string {
  return `igw-test:${randomBytes(6).toString('hex')}`;
}

async function deleteKeys(prefix: string): Promise<void> {
  const redis = new Redis(REDIS_URL);
  try {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
  } finally {
    redis.disconnect();
  }
}

/** A port free on the loopback right now. */
async function freePort(): Promise<number> {
  const server = createTcpServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** redis-server on `port`, keeping nothing on disk, once it answers PING. */
async function startRedis(port: number): Promise<ChildProcess> {
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: 'ignore',
  });
  const client = new Redis(`redis://127.0.0.1:${port}`, { lazyConnect: true, retryStrategy: () => 50, maxRetriesPerRequest: null });
  // Refused until the server listens: retried, not reported.
  client.on('error', () => {});
  try {
    await client.connect().catch(() => undefined);
    await Promise.race([
      client.ping(),
      new Promise((_, reject) => setTimeout(() => reject(new Error(`redis-server on ${port} did not start`)), 10_000)),
    ]);
  } finally {
    client.disconnect();
  }
  return child;
}

async function redisKeys(url: string, prefix: string): Promise<string[]> {
  const redis = new Redis(url);
  try {
    return await redis.keys(`${prefix}*`);
  } finally {
    redis.disconnect();
  }
}

let t: TestGateway;
beforeAll(async () => {
  t = await createTestGateway('pglite');
});
afterAll(() => t?.dispose());

describe('rate limits in memory', () => {
  it('counts each credential: RateLimit-* on every response, then 429 RATE_LIMITED with Retry-After', async () => {
    const gateway = gatewayWith(t);
    const reader = `Token ${t.tenants.demo.readerToken}`;
    for (let i = 0; i < BUDGET; i += 1) {
      const response = await rest(gateway, `${BASE}/categories`, { authorization: reader });
      expect(response.status).toBe(200);
      const headers = budgetHeaders(response.headers);
      expect(headers).toEqual({ limit: String(BUDGET), remaining: String(BUDGET - 1 - i), reset: expect.any(Number) });
      expect(headers.reset).toBeGreaterThanOrEqual(1);
      expect(headers.reset).toBeLessThanOrEqual(60);
    }

    const limited = await rest(gateway, `${BASE}/categories`, { authorization: reader });
    expect(limited.status).toBe(429);
    expect(limited.body).toEqual({
      msg: expect.stringContaining('this credential'),
      error: { code: 'RATE_LIMITED', docs: `${ORIGIN}/docs/errors/RATE_LIMITED`, req_id: limited.headers.get('x-request-id') },
    });
    const retryAfter = Number(limited.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(budgetHeaders(limited.headers)).toMatchObject({ limit: String(BUDGET), remaining: '0' });

    // The same budget covers GraphQL, which answers in its own error form.
    const viaGraphQL = await graphql(gateway, '{ categories { totalCount } }', { token: t.tenants.demo.readerToken });
    expect(viaGraphQL.status).toBe(429);
    expect(viaGraphQL.body).toEqual({
      errors: [{ message: expect.stringContaining('this credential'), extensions: { code: 'RATE_LIMITED' } }],
    });
    expect(viaGraphQL.headers.get('retry-after')).toMatch(/^\d+$/);

    // Another credential of the same tenant has a budget of its own.
    expect(await spend(gateway, 1, `Token ${t.tenants.demo.adminToken}`)).toEqual([200]);
  });

  it('shares a tenant budget among its credentials (multiplier × the credential budget)', async () => {
    const gateway = gatewayWith(t, { rateLimit: { tenantMultiplier: 2 } });
    const demo = t.tenants.demo;
    expect(await spend(gateway, BUDGET, `Token ${demo.readerToken}`)).toEqual(Array(BUDGET).fill(200));
    expect(await spend(gateway, BUDGET, `Token ${demo.adminToken}`)).toEqual(Array(BUDGET).fill(200));

    // A third credential of the tenant (a JWT, keyed by tenant and subject) has its own budget left, the tenant has none.
    const jwt = `Bearer ${await jwtFor(demo.id, 'reporting-job')}`;
    const limited = await rest(gateway, `${BASE}/categories`, { authorization: jwt });
    expect(limited.status).toBe(429);
    expect(limited.body.msg).toContain('tenant');
    expect(budgetHeaders(limited.headers)).toMatchObject({ limit: String(2 * BUDGET), remaining: '0' });

    // Other tenants are not affected.
    const other = await rest(gateway, `${BASE}/categories`, { token: t.tenants.other.readerToken });
    expect(other.status).toBe(200);
    expect(budgetHeaders(other.headers)).toMatchObject({ limit: String(BUDGET), remaining: String(BUDGET - 1) });
  });

  describe('over real HTTP', () => {
    let server: Server;
    let base: string;
    beforeAll(async () => {
      server = createHttpServer(gatewayWith(t));
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });
    afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

    it('keys requests without a valid credential by client address; health, docs and metrics are not limited', async () => {
      const statuses: number[] = [];
      for (let i = 0; i < BUDGET; i += 1) {
        // Unknown credentials count against the address too: guessing tokens costs budget.
        const headers: Record<string, string> =
          i % 2 === 0 ? {} : { authorization: 'Token igw_pat_aaaaaaaaaaaa_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb' };
        statuses.push((await fetch(`${base}${BASE}/categories`, { headers })).status);
      }
      expect(statuses).toEqual([401, 401, 401, 401, 401]);
      const limited = await fetch(`${base}${BASE}/categories`);
      expect(limited.status).toBe(429);
      expect(((await limited.json()) as { msg: string }).msg).toContain('client address');

      for (const path of ['/healthz', '/readyz', '/metrics', '/docs/errors/RATE_LIMITED', '/api/v1/docs', '/api/v1/openapi.json']) {
        const response = await fetch(`${base}${path}`);
        expect({ path, status: response.status }).toEqual({ path, status: 200 });
        expect(response.headers.get('ratelimit-limit')).toBeNull();
        await response.arrayBuffer();
      }
      const graphiql = await fetch(`${base}/graphql`, { headers: { accept: 'text/html' } });
      expect(graphiql.status).toBe(200);
      await graphiql.text();

      // A valid credential is counted as itself, not as the exhausted address.
      const authorized = await fetch(`${base}${BASE}/categories`, { headers: { authorization: `Token ${t.tenants.other.adminToken}` } });
      expect(authorized.status).toBe(200);
      await authorized.arrayBuffer();
    });
  });

  describe('behind a trusted proxy (TRUST_PROXY=1)', () => {
    let servers: Server[] = [];
    const listen = async (trustProxy: '0' | '1') => {
      const server = createHttpServer(gatewayWith(t, { config: { TRUST_PROXY: trustProxy } }));
      servers.push(server);
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    };
    afterAll(async () => {
      await Promise.all(servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve()))));
      servers = [];
    });
    /** Statuses of `count` requests without a credential from `forwardedFor`, alternating REST (direct) and GraphQL. */
    const anonymous = async (base: string, forwardedFor: string, count: number) => {
      const statuses: number[] = [];
      for (let i = 0; i < count; i += 1) {
        const headers = { 'x-forwarded-for': `203.0.113.9, ${forwardedFor}` };
        const response =
          i % 2 === 0
            ? await fetch(`${base}${BASE}/categories`, { headers })
            : await fetch(`${base}/graphql`, {
                method: 'POST',
                headers: { ...headers, 'content-type': 'application/json' },
                body: JSON.stringify({ query: '{ categories { totalCount } }' }),
              });
        statuses.push(response.status);
        await response.arrayBuffer();
      }
      return statuses;
    };

    it("keys a request without a credential by the proxy's X-Forwarded-For hop, on REST and GraphQL alike", async () => {
      const base = await listen('1');
      expect(await anonymous(base, '198.51.100.1', BUDGET + 1)).toEqual([401, 401, 401, 401, 401, 429]);
      // Another client behind the same proxy has a budget of its own.
      expect(await anonymous(base, '198.51.100.2', 1)).toEqual([401]);
    });

    it('ignores X-Forwarded-For without TRUST_PROXY: a client cannot pick its own budget', async () => {
      const base = await listen('0');
      expect(await anonymous(base, '198.51.100.1', BUDGET)).toEqual([401, 401, 401, 401, 401]);
      expect(await anonymous(base, '198.51.100.2', 1)).toEqual([429]);
    });
  });

  it('is off with a budget of 0', async () => {
    const gateway = gatewayWith(t, { perMinute: 0 });
    const statuses = await spend(gateway, BUDGET + 2, `Token ${t.tenants.demo.readerToken}`);
    expect(statuses).toEqual(Array(BUDGET + 2).fill(200));
    const response = await rest(gateway, `${BASE}/categories`, { token: t.tenants.demo.readerToken });
    expect(response.headers.get('ratelimit-limit')).toBeNull();
  });
});

describe('rate limits in Redis', () => {
  const prefixes: string[] = [];
  const gateways: Gateway[] = [];
  const redisGateway = (keyPrefix: string, redisUrl = REDIS_URL, logger?: GatewayOptions['logger']) => {
    const gateway = gatewayWith(t, { redisUrl, rateLimit: { keyPrefix }, ...(logger ? { logger } : {}) });
    gateways.push(gateway);
    return gateway;
  };
  afterAll(async () => {
    await Promise.all(gateways.map((gateway) => gateway.dispose()));
    await Promise.all(prefixes.map(deleteKeys));
  });

  it('two gateways sharing Redis share one budget, and keys never hold the token', async () => {
    const prefix = uniquePrefix();
    prefixes.push(prefix);
    const first = redisGateway(prefix);
    const second = redisGateway(prefix);
    const token = t.tenants.demo.readerToken;
    expect(await spend(first, 3, `Token ${token}`)).toEqual([200, 200, 200]);
    const fourth = await rest(second, `${BASE}/categories`, { token });
    expect(fourth.status).toBe(200);
    expect(budgetHeaders(fourth.headers)).toMatchObject({ limit: String(BUDGET), remaining: '1' });
    expect(await spend(second, 1, `Token ${token}`)).toEqual([200]);
    const limited = await rest(first, `${BASE}/categories`, { token });
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);

    const redis = new Redis(REDIS_URL);
    try {
      const keys = await redis.keys(`${prefix}*`);
      expect(keys.length).toBeGreaterThanOrEqual(2);
      // The secret is base64url, so it may hold '_' itself: taken as the token format defines it.
      const secret = parsePersonalAccessToken(token)!.secret;
      for (const key of keys) {
        expect(key).not.toContain(secret);
        expect(key).not.toContain(token);
      }
    } finally {
      redis.disconnect();
    }
  });

  it('counts in each process while Redis is away, never uncounted, and in Redis again once it returns', async () => {
    // A Redis of this test's own, on a free port, so it can be stopped and started again.
    const port = await freePort();
    const url = `redis://127.0.0.1:${port}`;
    let redis = await startRedis(port);
    try {
      const lines: string[] = [];
      const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(line) });
      const prefix = uniquePrefix();
      const gateway = redisGateway(prefix, url, logger);
      const token = `Token ${t.tenants.demo.adminToken}`;
      const remaining = async () => {
        const response = await rest(gateway, `${BASE}/categories`, { authorization: token });
        return { status: response.status, remaining: response.headers.get('ratelimit-remaining') };
      };

      expect(await remaining()).toEqual({ status: 200, remaining: String(BUDGET - 1) });
      expect(await redisKeys(url, prefix)).not.toHaveLength(0);

      redis.kill('SIGKILL');
      await new Promise((resolve) => redis.once('exit', resolve));
      // The budget in this process starts full and runs out as any budget does.
      const during: Array<{ status: number; remaining: string | null }> = [];
      for (let i = 0; i < BUDGET + 2; i += 1) during.push(await remaining());
      expect(during).toEqual([
        ...Array.from({ length: BUDGET }, (_, i) => ({ status: 200, remaining: String(BUDGET - 1 - i) })),
        { status: 429, remaining: '0' },
        { status: 429, remaining: '0' },
      ]);
      const messages = () => lines.map((line) => (JSON.parse(line) as { msg: string }).msg);
      expect(messages()).toContain('redis unavailable: rate-limit budgets count in this process until it returns');

      // Redis returns empty (it keeps nothing on disk): the first request it counts has the budget full again.
      redis = await startRedis(port);
      const deadline = Date.now() + 15_000;
      let back = await remaining();
      while (back.status === 429 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        back = await remaining();
      }
      expect(back).toEqual({ status: 200, remaining: String(BUDGET - 1) });
      expect(await redisKeys(url, prefix)).not.toHaveLength(0);
      expect(messages()).toContain('redis back: rate-limit budgets count in Redis again');
    } finally {
      redis.kill('SIGKILL');
    }
  });
});
