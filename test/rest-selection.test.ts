// `select` must shape the SQL, not only the JSON: the operation's @include(if: $with_<field>) flags reach
// Pothos' query planning and the hand-written reads. Checked on the statements actually sent.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseKinds } from './fixtures/databases.js';
import { createTestGateway, gatewayOver, graphql, type TestGateway } from './fixtures/gateway.js';
import { BASE, restOk } from './fixtures/rest.js';

describe.each(databaseKinds)('REST select pushdown on %s', (kind) => {
  let t: TestGateway;
  beforeAll(async () => {
    t = await createTestGateway(kind);
  });
  afterAll(() => t?.dispose());

  /** The row-fetching statement (not the count) that a REST call sends for `table`. */
  async function rowQuery(path: string, table: string): Promise<string> {
    const statements: string[] = [];
    const stop = t.db.onQuery((event) => statements.push(event.query));
    try {
      await restOk(t.gateway, path, t.tenants.demo.readerToken);
    } finally {
      stop();
    }
    const rows = statements.filter((q) => q.includes(`FROM "public"."${table}"`) && !/COUNT\(/i.test(q));
    expect(rows, statements.join('\n')).toHaveLength(1);
    return rows[0]!;
  }

  it('syncs: select=id leaves the JSON and text columns out', async () => {
    const all = await rowQuery(`${BASE}/syncs`, 'syncs');
    for (const column of ['"summary"', '"diff"', '"checksum"', '"error_message"', '"file_url"']) expect(all).toContain(column);
    const narrow = await rowQuery(`${BASE}/syncs?select=id`, 'syncs');
    for (const column of ['"summary"', '"diff"', '"checksum"', '"error_message"', '"file_url"']) expect(narrow).not.toContain(column);
    // The id, and the sort keys' values the page's cursor is written from.
    expect(narrow.slice(0, narrow.indexOf(' FROM '))).toBe(
      'SELECT "t0"."id" AS "id", ("t0"."started_at")::text AS "__key0", ("t0"."id")::text AS "__key1"',
    );
    // Ordering still works on a column that is not selected.
    expect(narrow).toMatch(/ORDER BY "t0"\."started_at" DESC/);
  });

  it('answers the selected members in the order select names them, in JSON and in the NDJSON export', async () => {
    const page = await restOk<{ data: Array<Record<string, unknown>> }>(
      t.gateway,
      `${BASE}/connected?select=name,status,via,id`,
      t.tenants.demo.readerToken,
    );
    expect(page.data.length).toBeGreaterThan(0);
    for (const item of page.data) expect(Object.keys(item)).toEqual(['name', 'status', 'via', 'id']);
    const syncs = await restOk<{ data: Array<Record<string, unknown>> }>(
      t.gateway,
      `${BASE}/syncs?select=status,id`,
      t.tenants.demo.readerToken,
    );
    for (const item of syncs.data) expect(Object.keys(item)).toEqual(['status', 'id']);
    const exported = await t.gateway.fetch(`http://localhost${BASE}/connected?select=via,name`, {
      headers: { authorization: `Token ${t.tenants.demo.readerToken}`, accept: 'application/x-ndjson' },
    });
    const lines = (await exported.text()).trim().split('\n');
    expect(lines.length).toBe(page.data.length);
    for (const line of lines) expect(Object.keys(JSON.parse(line) as object)).toEqual(['via', 'name']);
  });

  it('available: select=id,name does not fetch features or additional_information', async () => {
    const all = await rowQuery(`${BASE}/available`, 'applications');
    expect(all).toContain('"features"');
    expect(all).toContain('"additional_information"');
    const narrow = await rowQuery(`${BASE}/available?select=id,name`, 'applications');
    for (const column of ['"features"', '"additional_information"', '"keywords"', '"description"', '"logo_url"']) {
      expect(narrow).not.toContain(column);
    }
  });

  it('every documented read (the catalog nested either way, connections, syncs, one or a page) touches no Prisma, whatever is selected', async () => {
    let prismaUses = 0;
    const counted = Object.create(t.db, {
      prisma: {
        get: () => {
          prismaUses += 1;
          return t.db.prisma;
        },
      },
    }) as typeof t.db;
    const gateway = gatewayOver(counted);
    const token = t.tenants.demo.readerToken;
    const id = (await restOk(gateway, `${BASE}/available?limit=1&select=id`, token)).data[0].id as string;
    const categoryId = (await restOk(gateway, `${BASE}/categories?limit=1&select=id`, token)).data[0].id as string;
    const syncId = (await restOk(gateway, `${BASE}/syncs?limit=1&select=id`, token)).data[0].id as string;
    const connectionId = (await restOk(gateway, `${BASE}/connected?limit=1&select=id`, token)).data[0].id as string;
    prismaUses = 0;
    for (const path of [
      `${BASE}/available`,
      `${BASE}/available?select=id,name&name=like.*a*`,
      `${BASE}/available/${id}`,
      `${BASE}/available?search=pay&order=slug.desc`,
      `${BASE}/categories`,
      `${BASE}/categories?select=id,name&search=pay&order=name.desc`,
      `${BASE}/connected`,
      `${BASE}/connected/${connectionId}`,
      `${BASE}/syncs`,
      `${BASE}/syncs/${syncId}`,
    ]) {
      await restOk(gateway, path, token);
    }
    const { body } = await graphql(
      gateway,
      `query ($id: ID!, $categoryId: ID!, $syncId: ID!) {
        categories(limit: 3) { totalCount nodes { id sortOrder applications { id name category { slug } } } }
        category(id: $categoryId) { name applications { slug } }
        application(id: $id) { category { name applications { id } } }
        sync(id: $syncId) { id status connection { name application { category { applications { id } } } } }
      }`,
      { token, variables: { id, categoryId, syncId }, expectOk: true },
    );
    expect(body.data!.categories.nodes.length).toBeGreaterThan(0);
    expect(body.data!.sync.connection.application.category.applications.length).toBeGreaterThan(0);
    expect(prismaUses).toBe(0);
    // A read still on Prisma (the webhooks, an admin's) is counted, so the count above can see a use.
    await restOk(gateway, `${BASE}/webhooks`, t.tenants.demo.adminToken);
    expect(prismaUses).toBeGreaterThan(0);
  });

  it('categories: the nested applications of a page come from one statement, whatever the page size', async () => {
    const query = `query ($limit: Int!) { categories(limit: $limit) { nodes { id applications { id name } } } }`;
    // The process's first list reads the key its cursors are signed with, once: not a statement of the page.
    await graphql(t.gateway, query, { token: t.tenants.demo.readerToken, variables: { limit: 1 }, expectOk: true });
    const counts: number[] = [];
    for (const limit of [1, 3, 100]) {
      const statements: string[] = [];
      const stop = t.db.onQuery((event) => statements.push(event.query));
      let nodes: { id: string; applications: { id: string; name: string }[] }[];
      try {
        nodes = (await graphql(t.gateway, query, { token: t.tenants.demo.readerToken, variables: { limit }, expectOk: true })).body.data!
          .categories.nodes;
      } finally {
        stop();
      }
      counts.push(statements.filter((q) => /^\s*SELECT/i.test(q)).length);
      // Each category's own applications, by name, as a per-category read would give them.
      for (const node of nodes) {
        const own = await restOk(
          t.gateway,
          `${BASE}/available?category_id=eq.${node.id}&select=id,name&limit=100`,
          t.tenants.demo.readerToken,
        );
        expect(node.applications).toEqual(own.data);
      }
    }
    expect(new Set(counts).size, String(counts)).toBe(1);
  });

  it('connected: select=id,name neither fetches metadata/settings nor joins the application and category', async () => {
    const all = await rowQuery(`${BASE}/connected`, 'connections');
    for (const part of ['"metadata"', '"settings"', '"categories"']) expect(all).toContain(part);
    const narrow = await rowQuery(`${BASE}/connected?select=id,name`, 'connections');
    for (const part of ['"metadata"', '"settings"', '"keywords"', '"categories"']) expect(narrow).not.toContain(part);
  });
});
