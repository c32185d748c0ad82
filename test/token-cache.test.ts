// The verified-token cache: a token-authenticated request after the first one runs no
// statement for its credential; a revocation, a role change or a deleted service user made through the API
// takes effect at once, in this process and (NOTIFY) in every other one; a change made behind the API's back
// takes effect within TOKEN_CACHE_TTL_MS; an expiry is honoured on a cache hit.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createServiceUser } from '../src/auth/service-users.js';
import { createToken } from '../src/auth/tokens.js';
import { databaseKinds, createTestDatabase, type TestDatabase } from './fixtures/databases.js';
import { createTestGateway, gatewayOver, graphql, type TestGateway } from './fixtures/gateway.js';
import { BASE, ORIGIN } from './fixtures/rest.js';
import { startServer, type RunningServer } from './fixtures/server-process.js';
import type { TestTenants } from './fixtures/gateway.js';
import type { Gateway } from '../src/http/yoga.js';

const DAY = 86_400_000;

async function status(gateway: Gateway | string, token: string, path = '/connected?limit=1'): Promise<number> {
  const url = `${typeof gateway === 'string' ? gateway : ORIGIN}${BASE}${path}`;
  const init = { headers: { authorization: `Token ${token}` } };
  const response = typeof gateway === 'string' ? await fetch(url, init) : await gateway.fetch(url, init);
  await response.arrayBuffer();
  return response.status;
}

describe.each(databaseKinds)('token cache on %s', (kind) => {
  let t: TestGateway;
  let tenantId: string;

  const freshToken = async (role: 'admin' | 'reader' = 'reader', expiresAt = new Date(Date.now() + DAY)) => {
    const user = await createServiceUser(t.db, { tenantId, name: `cache-${role}-${Math.random().toString(36).slice(2, 8)}`, role });
    const token = await createToken(t.db, { tenantId, serviceUserId: user.id, expiresAt });
    return { ...token, serviceUserId: user.id };
  };

  beforeAll(async () => {
    t = await createTestGateway(kind);
    tenantId = t.tenants.demo.id;
  });
  afterAll(() => t?.dispose());

  it('runs no credential statement for a token verified moments ago', async () => {
    const { token } = await freshToken();
    expect(await status(t.gateway, token)).toBe(200);
    const statements: string[] = [];
    const stop = t.db.onQuery((event) => statements.push(event.query));
    try {
      expect(await status(t.gateway, token)).toBe(200);
    } finally {
      stop();
    }
    expect(statements.filter((sql) => /\btokens\b/.test(sql))).toEqual([]);
    expect(statements.length).toBeGreaterThan(0);
  });

  it('a revocation, a role change and a deleted service user through the API take effect at the next request', async () => {
    const admin = t.tenants.demo.adminToken;
    const revoked = await freshToken();
    expect(await status(t.gateway, revoked.token)).toBe(200);
    const revoke = await graphql(t.gateway, 'mutation($id: ID!) { revokeToken(id: $id) { id } }', {
      token: admin,
      variables: { id: revoked.id },
    });
    expect(revoke.body.errors).toBeUndefined();
    expect(await status(t.gateway, revoked.token)).toBe(401);

    const demoted = await freshToken('admin');
    expect(await status(t.gateway, demoted.token, '/webhooks')).toBe(200);
    const change = await graphql(t.gateway, 'mutation($id: ID!) { changeServiceUserRole(id: $id, role: reader) { id } }', {
      token: admin,
      variables: { id: demoted.serviceUserId },
    });
    expect(change.body.errors).toBeUndefined();
    expect(await status(t.gateway, demoted.token, '/webhooks')).toBe(403);

    const deleted = await freshToken();
    expect(await status(t.gateway, deleted.token)).toBe(200);
    const removal = await graphql(t.gateway, 'mutation($id: ID!) { deleteServiceUser(id: $id) { id } }', {
      token: admin,
      variables: { id: deleted.serviceUserId },
    });
    expect(removal.body.errors).toBeUndefined();
    expect(await status(t.gateway, deleted.token)).toBe(401);
  });

  it('a revocation behind the API’s back takes effect within TOKEN_CACHE_TTL_MS, and an expiry on a cache hit', async () => {
    const short = gatewayOver(t.db, { config: { TOKEN_CACHE_TTL_MS: 400 } });
    try {
      const { token, id } = await freshToken();
      expect(await status(short, token)).toBe(200);
      await t.db.raw.query('UPDATE tokens SET revoked_at = now() WHERE id = $1', [id]);
      expect(await status(short, token)).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(await status(short, token)).toBe(401);

      const expiring = await freshToken('reader', new Date(Date.now() + 1500));
      expect(await status(t.gateway, expiring.token)).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 1600));
      expect(await status(t.gateway, expiring.token)).toBe(401);
    } finally {
      await short.dispose();
    }
  });
});

describe.skipIf(!process.env.TEST_DATABASE_URL)('token cache across two server processes on one PostgreSQL database', () => {
  let db: TestDatabase;
  let tenants: TestTenants;
  let a: RunningServer;
  let b: RunningServer;

  beforeAll(async () => {
    const seeded = inject('seededDatabases').postgres!;
    tenants = seeded.tenants;
    db = await createTestDatabase('postgres', { template: seeded.template });
    // A TTL of a minute: what ends the tokens below within a second is the NOTIFY, not the TTL.
    const env = { DATABASE_URL: db.url!, SEED: 'none', SCHEDULER: 'off', TOKEN_CACHE_TTL_MS: '60000', WEBHOOKS: 'off' };
    [a, b] = await Promise.all([startServer(env), startServer(env)]);
  });
  afterAll(async () => {
    await Promise.all([a?.kill(), b?.kill()]);
    await db?.dispose();
  });

  async function refusedWithin(server: RunningServer, token: string, ms: number): Promise<number> {
    const started = performance.now();
    while (performance.now() - started < ms) {
      if ((await status(server.url, token)) === 401) return performance.now() - started;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    throw new Error(`${server.url} still accepts the revoked token after ${ms} ms`);
  }

  it('a token revoked through one process is refused by the other within a second', async () => {
    const user = await createServiceUser(db, { tenantId: tenants.demo.id, name: 'two-process-reader', role: 'reader' });
    const { token, id } = await createToken(db, {
      tenantId: tenants.demo.id,
      serviceUserId: user.id,
      expiresAt: new Date(Date.now() + DAY),
    });
    expect(await status(a.url, token)).toBe(200);
    expect(await status(b.url, token)).toBe(200);
    const response = await fetch(`${a.url}/graphql`, {
      method: 'POST',
      headers: { authorization: `Token ${tenants.demo.adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query: 'mutation($id: ID!) { revokeToken(id: $id) { id } }', variables: { id } }),
    });
    expect(response.status).toBe(200);
    expect(await status(a.url, token)).toBe(401);
    const elapsed = await refusedWithin(b, token, 1000);
    expect(elapsed).toBeLessThan(1000);
  });
});
