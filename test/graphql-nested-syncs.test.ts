import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseKinds } from './fixtures/databases.js';
import { createTestGateway, graphql, type TestGateway } from './fixtures/gateway.js';

// `Connection.syncs` and `Connection.syncCount` load every connection of a page in one statement (a LATERAL
// join, counts grouped by connection), while the root `syncs(connectionId:)` reads one connection. Both take
// the same arguments and must answer the same rows in the same order, whatever the arguments.

const SYNC_FIELDS = 'id status startedAt finishedAt errorMessage isAutoMigrate summaryJson';

/** `filter` goes to the lists and the counts alike; `page` (paging and order) to the lists only. */
const ARGUMENT_CASES: { name: string; filter: string; page: string }[] = [
  { name: 'defaults', filter: '', page: '' },
  { name: 'page with offset', filter: '', page: 'limit: 3, offset: 2' },
  { name: 'filter on status', filter: 'filter: { status: { in: [failed, success] } }', page: 'limit: 5' },
  {
    name: 'filter with or/not',
    filter: 'filter: { or: [{ status: { eq: failed } }, { not: { finishedAt: { isNull: false } } }] }',
    page: 'limit: 20',
  },
  { name: 'search', filter: 'search: "fail"', page: 'limit: 20' },
  { name: 'order by a nullable column', filter: '', page: 'orderBy: [{ field: finishedAt, direction: ASC, nulls: FIRST }], limit: 7' },
  { name: 'like on text', filter: 'filter: { errorMessage: { ilike: "*time*" } }', page: 'limit: 20' },
];

const joined = (...parts: string[]) => parts.filter(Boolean).join(', ');
const inParens = (args: string) => (args ? `(${args})` : '');

describe.each(databaseKinds)('nested sync lists on %s', (kind) => {
  let t: TestGateway;
  let connectionIds: string[];

  beforeAll(async () => {
    t = await createTestGateway(kind);
    const { body } = await graphql(t.gateway, '{ connections { nodes { id } } }', { token: t.tenants.demo.readerToken, expectOk: true });
    connectionIds = body.data!.connections.nodes.map((node: { id: string }) => node.id);
    expect(connectionIds.length).toBeGreaterThanOrEqual(3);
  });
  afterAll(() => t?.dispose());

  const token = () => t.tenants.demo.readerToken;

  it.each(ARGUMENT_CASES)('answers what the root list answers per connection: $name', async ({ filter, page }) => {
    const args = joined(filter, page);
    const nested = await graphql(
      t.gateway,
      `{ connections { nodes { id syncCount${inParens(filter)} syncs${inParens(args)} { ${SYNC_FIELDS} } } } }`,
      { token: token(), expectOk: true },
    );
    const nodes = nested.body.data!.connections.nodes as { id: string; syncCount: number; syncs: { id: string }[] }[];
    let nonEmpty = 0;
    for (const node of nodes) {
      const root = await graphql(
        t.gateway,
        `query($id: ID!) { syncs(${joined('connectionId: $id', args)}) { totalCount nodes { ${SYNC_FIELDS} } } }`,
        { token: token(), variables: { id: node.id }, expectOk: true },
      );
      expect(node.syncs).toEqual(root.body.data!.syncs.nodes);
      expect(node.syncCount).toBe(root.body.data!.syncs.totalCount);
      if (node.syncs.length > 0) nonEmpty += 1;
    }
    // The cases are chosen so that they select something: an empty answer everywhere would prove nothing.
    expect(nonEmpty).toBeGreaterThan(0);
  });

  it('loads each place in the operation with its own arguments, one statement per place', async () => {
    const statements: string[] = [];
    const stop = t.db.onQuery((event) => statements.push(event.query));
    let body;
    try {
      ({ body } = await graphql(
        t.gateway,
        `{ connections { nodes { id
            latest: syncs(limit: 1) { id startedAt }
            failed: syncs(filter: { status: { eq: failed } }, limit: 2) { id status }
            all: syncCount
            failures: syncCount(filter: { status: { eq: failed } })
        } } }`,
        { token: token(), expectOk: true },
      ));
    } finally {
      stop();
    }
    const nodes = body!.data!.connections.nodes as { latest: unknown[]; failed: { status: string }[]; all: number; failures: number }[];
    expect(nodes.length).toBeGreaterThan(0);
    for (const node of nodes) {
      expect(node.latest.length).toBeLessThanOrEqual(1);
      expect(node.failed.length).toBeLessThanOrEqual(2);
      for (const sync of node.failed) expect(sync.status).toBe('failed');
      expect(node.failures).toBeLessThanOrEqual(node.all);
    }
    expect(nodes.some((node) => node.failed.length > 0)).toBe(true);
    // The counts read sync_counts (they filter by status only), the pages read syncs.
    const syncStatements = statements.filter((q) => /FROM "public"\."sync(s|_counts)"/.test(q));
    // Two sync pages and two counts, each one statement for all the connections.
    expect(syncStatements).toHaveLength(4);
    for (const q of syncStatements) expect(q).toMatch(/"t0"\."tenant_id" = \$\d+/);
  });

  it('rejects out-of-range nested paging like the root list does', async () => {
    for (const args of ['limit: 101', 'limit: 0', 'offset: -1']) {
      const { body } = await graphql(t.gateway, `{ connections { nodes { syncs(${args}) { id } } } }`, { token: token() });
      expect(body.errors?.[0]?.extensions?.code, args).toBe('INVALID_QUERY');
    }
  });
});
