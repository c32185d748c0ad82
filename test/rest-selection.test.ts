// `select` must shape the SQL, not only the JSON: the operation's @include(if: $with_<field>) flags reach
// Pothos' query planning and the hand-written reads. Checked on the statements actually sent.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseKinds } from './fixtures/databases.js';
import { createTestGateway, gatewayOver, type TestGateway } from './fixtures/gateway.js';
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
    expect(narrow.slice(0, narrow.indexOf(' FROM '))).toBe('SELECT "t0"."id"');
    // Ordering still works on a column that is not selected.
    expect(narrow).toMatch(/ORDER BY "t0"\."started_at" DESC/);
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

  it('available: the applications are read without Prisma, whatever is selected', async () => {
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
    const id = (await restOk(gateway, `${BASE}/available?limit=1&select=id`, t.tenants.demo.readerToken)).data[0].id as string;
    prismaUses = 0;
    for (const path of [`${BASE}/available`, `${BASE}/available?select=id,name&name=like.*a*`, `${BASE}/available/${id}`, `${BASE}/available?search=pay&order=slug.desc`]) {
      await restOk(gateway, path, t.tenants.demo.readerToken);
    }
    expect(prismaUses).toBe(0);
    // The categories still are (counted, so the count above can see a use).
    await restOk(gateway, `${BASE}/categories`, t.tenants.demo.readerToken);
    expect(prismaUses).toBeGreaterThan(0);
  });

  it('connected: select=id,name neither fetches metadata/settings nor joins the application and category', async () => {
    const all = await rowQuery(`${BASE}/connected`, 'connections');
    for (const part of ['"metadata"', '"settings"', '"categories"']) expect(all).toContain(part);
    const narrow = await rowQuery(`${BASE}/connected?select=id,name`, 'connections');
    for (const part of ['"metadata"', '"settings"', '"keywords"', '"categories"']) expect(narrow).not.toContain(part);
  });
});
