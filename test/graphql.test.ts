import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestGateway, graphql, type TestGateway } from './fixtures/gateway.js';
import { databaseKinds } from './fixtures/databases.js';
import { seedLoad } from '../src/seed/load.js';
import { newId } from '../src/prefixed-ids.js';
import { createServiceUser } from '../src/auth/service-users.js';
import { createToken } from '../src/auth/tokens.js';

const NESTED = `query Nested($limit: Int) {
  connections(limit: $limit) {
    totalCount
    nodes {
      id name applicationName categoryName
      category { slug name }
      application { name category { name } }
      metadata { region version gatewayId }
      settings { syncInterval webhookEnabled }
      syncs(limit: 10) { id status startedAt finishedAt errorMessage summary { processed } checksum { b file } summaryJson }
    }
  }
}`;

describe.each(databaseKinds)('GraphQL read model on %s', (kind) => {
  let t: TestGateway;
  let bulkToken: string;
  beforeAll(async () => {
    t = await createTestGateway(kind);
    const tenant = await t.db.prisma.tenant.create({ data: { id: newId('ten'), slug: 'bulk', name: 'Bulk' } });
    await seedLoad(t.db, 'bulk', { connections: 60, syncs: 3000 });
    const user = await createServiceUser(t.db, { tenantId: tenant.id, name: 'bench', role: 'reader' });
    bulkToken = (await createToken(t.db, { tenantId: tenant.id, serviceUserId: user.id, expiresAt: new Date(Date.now() + 86_400_000) }))
      .token;
  });
  afterAll(() => t?.dispose());

  it('lists connections with nested application, category and syncs', async () => {
    const { body } = await graphql(t.gateway, NESTED, { token: t.tenants.demo.readerToken, expectOk: true });
    const list = body.data!.connections;
    expect(list.totalCount).toBeGreaterThanOrEqual(6);
    expect(list.nodes).toHaveLength(list.totalCount);
    for (const node of list.nodes) {
      expect(node.application.name).toBe(node.applicationName);
      expect(node.category.name).toBe(node.categoryName);
      expect(node.syncs.length).toBeGreaterThan(0);
      expect(node.syncs.length).toBeLessThanOrEqual(10);
      const started = node.syncs.map((s: { startedAt: string }) => s.startedAt);
      expect([...started].sort().reverse()).toEqual(started);
      for (const sync of node.syncs) {
        expect(sync.startedAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00$/);
        expect(JSON.parse(sync.summaryJson)).toBeTypeOf('object');
      }
    }
  });

  it('runs the nested query in a constant number of SQL statements, with the nested limit in SQL', async () => {
    const counts: number[] = [];
    let statements: string[] = [];
    // The credential is verified once; the token cache answers for it afterwards (no statement).
    await graphql(t.gateway, NESTED, { token: bulkToken, variables: { limit: 1 }, expectOk: true });
    const stop = t.db.onQuery((event) => statements.push(event.query));
    try {
      for (const limit of [1, 5, 20, 60]) {
        statements = [];
        const { body } = await graphql(t.gateway, NESTED, { token: bulkToken, variables: { limit }, expectOk: true });
        expect(body.data!.connections.nodes).toHaveLength(limit);
        for (const node of body.data!.connections.nodes) expect(node.syncs).toHaveLength(10);
        counts.push(statements.filter((q) => /^\s*(SELECT|WITH)/i.test(q)).length);
      }
    } finally {
      stop();
    }
    // Page of connections with application and category nested, total count, and the
    // latest syncs of all the page's connections in one statement (per-connection LIMIT in a LATERAL join).
    expect(new Set(counts).size).toBe(1);
    expect(counts[0]).toBeLessThanOrEqual(3);
    const page = statements.find((q) => q.includes('"syncs"'));
    expect(page).toMatch(/LIMIT/i);
  });
});
