import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseKinds } from './fixtures/databases.js';
import { createTestGateway, graphql, type TestGateway } from './fixtures/gateway.js';

// The overview's reads: syncStats (runs per day by status, duration percentiles per connection) against the
// same history read another way (the syncs list with its filters), scoped to the caller's tenant, with its
// window bounded; organization; Category.connectionKind.

const STATS = `query Stats($days: Int) {
  syncStats(days: $days) {
    days
    since
    perDay { day status count }
    durations { connectionId connectionName runs p50Ms p95Ms }
  }
}`;

interface Stats {
  syncStats: {
    days: number;
    since: string;
    perDay: { day: string; status: string; count: number }[];
    durations: { connectionId: string; connectionName: string | null; runs: number; p50Ms: number; p95Ms: number }[];
  };
}

describe.each(databaseKinds)('syncStats and organization on %s', (kind) => {
  let t: TestGateway;

  beforeAll(async () => {
    t = await createTestGateway(kind);
  });

  afterAll(async () => {
    await t?.dispose();
  });

  const stats = async (token: string, days = 90) =>
    (await graphql<Stats>(t.gateway, STATS, { token, variables: { days }, expectOk: true })).body.data!.syncStats;

  async function totalCount(token: string, filter: Record<string, unknown>): Promise<number> {
    const answer = await graphql<{ syncs: { totalCount: number } }>(
      t.gateway,
      'query($filter: SyncFilter) { syncs(filter: $filter) { totalCount } }',
      { token, variables: { filter }, expectOk: true },
    );
    return answer.body.data!.syncs.totalCount;
  }

  it('counts the runs of each UTC day and status as the sync history lists them', async () => {
    const token = t.tenants.demo.readerToken;
    const result = await stats(token);
    expect(result.days).toBe(90);
    const since = new Date(result.since);
    expect(since.getUTCHours() + since.getUTCMinutes() + since.getUTCSeconds()).toBe(0);
    const today = new Date();
    today.setUTCHours(0, 0, 0, 0);
    expect(today.getTime() - since.getTime()).toBe(89 * 86_400_000);
    expect(result.perDay.length).toBeGreaterThan(0);
    const sum = result.perDay.reduce((total, row) => total + row.count, 0);
    expect(sum).toBe(await totalCount(token, { startedAt: { gte: result.since } }));
    for (const status of ['pending', 'in_progress', 'success', 'failed']) {
      const ofStatus = result.perDay.filter((row) => row.status === status).reduce((total, row) => total + row.count, 0);
      expect(ofStatus, status).toBe(await totalCount(token, { startedAt: { gte: result.since }, status: { eq: status } }));
    }
    // One day read both ways.
    const busiest = result.perDay.reduce((a, b) => (b.count > a.count ? b : a));
    const dayStart = `${busiest.day}T00:00:00.000Z`;
    const dayEnd = new Date(Date.parse(dayStart) + 86_400_000).toISOString();
    expect(busiest.count).toBe(await totalCount(token, { startedAt: { gte: dayStart, lt: dayEnd }, status: { eq: busiest.status } }));
    // Ordered by day, then status; one row per pair.
    const keys = result.perDay.map((row) => `${row.day} ${row.status}`);
    expect(new Set(keys).size).toBe(keys.length);
    expect([...keys].sort()).toEqual(keys);
  });

  it('gives the duration percentiles of each connection over its finished runs, the slowest p95 first', async () => {
    const token = t.tenants.demo.adminToken;
    const result = await stats(token);
    expect(result.durations.length).toBeGreaterThan(0);
    for (const row of result.durations) {
      expect(row.p50Ms).toBeGreaterThanOrEqual(0);
      expect(row.p95Ms).toBeGreaterThanOrEqual(row.p50Ms);
      expect(row.runs).toBe(
        await totalCount(token, {
          startedAt: { gte: result.since },
          finishedAt: { isNull: false },
          connectionId: { eq: row.connectionId },
        }),
      );
    }
    const p95s = result.durations.map((row) => row.p95Ms);
    expect([...p95s].sort((a, b) => b - a)).toEqual(p95s);
    // The median of one connection's durations, computed here from its runs.
    const first = result.durations[0]!;
    const runs = await graphql<{ syncs: { nodes: { startedAt: string; finishedAt: string }[] } }>(
      t.gateway,
      'query($filter: SyncFilter) { syncs(filter: $filter, limit: 100) { nodes { startedAt finishedAt } } }',
      {
        token,
        variables: {
          filter: { startedAt: { gte: result.since }, finishedAt: { isNull: false }, connectionId: { eq: first.connectionId } },
        },
        expectOk: true,
      },
    );
    const durations = runs.body
      .data!.syncs.nodes.map((run) => Date.parse(run.finishedAt) - Date.parse(run.startedAt))
      .sort((a, b) => a - b);
    const middle = (durations.length - 1) / 2;
    const median = (durations[Math.floor(middle)]! + durations[Math.ceil(middle)]!) / 2;
    expect(Math.abs(first.p50Ms - median)).toBeLessThanOrEqual(1);
  });

  it("is scoped to the caller's tenant: another tenant's runs never count", async () => {
    const before = await stats(t.tenants.demo.adminToken);
    const other = await stats(t.tenants.other.adminToken);
    const demoConnections = new Set(before.durations.map((row) => row.connectionId));
    expect(other.durations.some((row) => demoConnections.has(row.connectionId))).toBe(false);
    const otherConnection = await graphql<{ connections: { nodes: { id: string }[] } }>(
      t.gateway,
      '{ connections(filter: { status: { eq: active } }, limit: 1) { nodes { id } } }',
      {
        token: t.tenants.other.adminToken,
        expectOk: true,
      },
    );
    await graphql(t.gateway, 'mutation($id: ID!) { triggerSync(connectionId: $id) { id } }', {
      token: t.tenants.other.adminToken,
      variables: { id: otherConnection.body.data!.connections.nodes[0]!.id },
      expectOk: true,
    });
    expect(await stats(t.tenants.demo.adminToken)).toEqual(before);
    const afterOther = await stats(t.tenants.other.adminToken);
    expect(afterOther.perDay.reduce((s, r) => s + r.count, 0)).toBe(other.perDay.reduce((s, r) => s + r.count, 0) + 1);
  });

  it('bounds the window to 1..90 days and needs a credential', async () => {
    for (const days of [0, 91, -5]) {
      const answer = await graphql(t.gateway, STATS, { token: t.tenants.demo.adminToken, variables: { days } });
      expect(answer.status, String(days)).toBe(400);
      expect(answer.body.errors?.[0]?.extensions?.code).toBe('INVALID_QUERY');
      expect(answer.body.errors?.[0]?.message).toBe('days must be between 1 and 90');
    }
    const defaults = await graphql<Stats>(t.gateway, '{ syncStats { days } }', { token: t.tenants.demo.readerToken, expectOk: true });
    expect(defaults.body.data!.syncStats.days).toBe(30);
    const anonymous = await graphql(t.gateway, '{ syncStats { days } }');
    expect(anonymous.status).toBe(401);
  });

  it("names the caller's organization and role, and each category's kind of connection", async () => {
    const demo = await graphql<{ organization: { slug: string; name: string; viewerRole: string } }>(
      t.gateway,
      '{ organization { slug name viewerRole } }',
      { token: t.tenants.demo.readerToken, expectOk: true },
    );
    expect(demo.body.data!.organization).toMatchObject({ slug: 'demo', viewerRole: 'reader' });
    expect(demo.body.data!.organization.name.length).toBeGreaterThan(0);
    const other = await graphql<{ organization: { slug: string; viewerRole: string } }>(t.gateway, '{ organization { slug viewerRole } }', {
      token: t.tenants.other.adminToken,
      expectOk: true,
    });
    expect(other.body.data!.organization).toEqual({ slug: 'other', viewerRole: 'admin' });
    expect((await graphql(t.gateway, '{ organization { slug } }')).status).toBe(401);
    const categories = await graphql<{ categories: { nodes: { slug: string; connectionKind: string | null }[] } }>(
      t.gateway,
      '{ categories(limit: 100) { nodes { slug connectionKind } } }',
      {
        token: t.tenants.demo.readerToken,
        expectOk: true,
      },
    );
    const kinds = Object.fromEntries(categories.body.data!.categories.nodes.map((c) => [c.slug, c.connectionKind]));
    expect(kinds).toMatchObject({
      payments: 'payments',
      messaging: 'messaging',
      'smart-locks': 'lock',
      'property-management': 'pms',
      analytics: 'analytics',
      accounting: 'accounting',
    });
  });
});
