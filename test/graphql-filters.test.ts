import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseKinds } from './fixtures/databases.js';
import { createTestGateway, graphql, type TestGateway } from './fixtures/gateway.js';

// Every filterable field of every list is checked against the same predicate evaluated in JavaScript over the
// full, unfiltered list: the database must return exactly the rows the spec's operator semantics select.

type Row = Record<string, unknown> & { id: string };

interface ListCase {
  query: string;
  fields: Record<string, 'string' | 'nullableString' | 'enum' | 'dateTime' | 'nullableDateTime' | 'boolean'>;
  pageSize: number;
}

const LISTS: Record<string, ListCase> = {
  categories: {
    query: 'id slug name description',
    fields: { id: 'string', slug: 'string', name: 'string', description: 'string' },
    pageSize: 100,
  },
  applications: {
    query: 'id name slug description logoUrl categoryId',
    fields: { id: 'string', name: 'string', slug: 'string', description: 'string', logoUrl: 'string', categoryId: 'string' },
    pageSize: 100,
  },
  connections: {
    query:
      'id name slug description applicationId applicationName applicationSlug categoryId categorySlug categoryName via status createdAt',
    fields: {
      id: 'string',
      name: 'string',
      slug: 'string',
      description: 'string',
      applicationId: 'string',
      applicationName: 'string',
      applicationSlug: 'string',
      categoryId: 'string',
      categorySlug: 'string',
      categoryName: 'string',
      via: 'enum',
      status: 'enum',
      createdAt: 'dateTime',
    },
    pageSize: 100,
  },
  syncs: {
    query: 'id connectionId status startedAt finishedAt errorMessage fileUrl isAutoMigrate',
    fields: {
      id: 'string',
      connectionId: 'string',
      status: 'enum',
      startedAt: 'dateTime',
      finishedAt: 'nullableDateTime',
      errorMessage: 'nullableString',
      fileUrl: 'nullableString',
      isAutoMigrate: 'boolean',
    },
    pageSize: 100,
  },
};

function likeRegex(pattern: string, insensitive: boolean): RegExp {
  const body = pattern
    .split('*')
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*');
  return new RegExp(`^${body}$`, insensitive ? 'is' : 's');
}

function matches(value: unknown, operator: string, operand: unknown): boolean {
  switch (operator) {
    case 'eq':
      return value !== null && value === operand;
    case 'neq':
      return value !== null && value !== operand;
    case 'in':
      return value !== null && (operand as unknown[]).includes(value);
    case 'isNull':
      return operand ? value === null : value !== null;
    case 'gt':
      return value !== null && String(value) > String(operand);
    case 'lt':
      return value !== null && String(value) < String(operand);
    case 'gte':
      return value !== null && String(value) >= String(operand);
    case 'lte':
      return value !== null && String(value) <= String(operand);
    case 'like':
      return typeof value === 'string' && likeRegex(String(operand), false).test(value);
    case 'ilike':
      return typeof value === 'string' && likeRegex(String(operand), true).test(value);
    default:
      throw new Error(operator);
  }
}

/** Operator → operand cases for a field, built from values that occur in the data. */
function casesFor(kind: ListCase['fields'][string], rows: Row[], field: string): Array<[string, unknown]> {
  const values = rows.map((row) => row[field]).filter((v) => v !== null);
  const sample = values[Math.floor(values.length / 3)];
  const other = values[Math.floor((2 * values.length) / 3)];
  const cases: Array<[string, unknown]> = [];
  if (sample === undefined)
    return [
      ['isNull', true],
      ['isNull', false],
    ];
  cases.push(['eq', sample], ['neq', sample], ['in', [sample, other]]);
  if (kind === 'nullableString' || kind === 'nullableDateTime' || kind === 'boolean') cases.push(['isNull', true], ['isNull', false]);
  if (kind === 'dateTime' || kind === 'nullableDateTime') cases.push(['gt', sample], ['lt', sample], ['gte', sample], ['lte', sample]);
  if (kind === 'string' || kind === 'nullableString') {
    const text = String(sample);
    const middle = text.slice(1, Math.max(2, Math.floor(text.length / 2)));
    cases.push(
      ['like', `*${middle}*`],
      ['like', `${text.slice(0, 3)}*`],
      ['like', `*${text.slice(-3)}`],
      ['like', text],
      ['ilike', `*${middle.toUpperCase()}*`],
      ['ilike', `${text.slice(0, 3).toLowerCase()}*`],
    );
  }
  if (kind === 'boolean')
    return [
      ['eq', true],
      ['eq', false],
      ['neq', true],
      ['isNull', true],
      ['isNull', false],
    ];
  return cases;
}

describe.each(databaseKinds)('typed filters and search on %s', (kind) => {
  let t: TestGateway;
  const all: Record<string, Row[]> = {};

  async function list(name: string, args: string, variables: Record<string, unknown> = {}, types = ''): Promise<Row[]> {
    const spec = LISTS[name]!;
    const rows: Row[] = [];
    for (let offset = 0; ; offset += spec.pageSize) {
      const { body } = await graphql(
        t.gateway,
        `query Q($offset: Int${types}) { ${name}(limit: ${spec.pageSize}, offset: $offset${args}) { totalCount nodes { ${spec.query} } } }`,
        { token: t.tenants.demo.readerToken, variables: { ...variables, offset }, expectOk: true },
      );
      const page = body.data![name];
      rows.push(...page.nodes);
      if (rows.length >= page.totalCount) {
        expect(rows.length).toBe(page.totalCount);
        return rows;
      }
    }
  }

  beforeAll(async () => {
    t = await createTestGateway(kind);
    for (const name of Object.keys(LISTS)) all[name] = await list(name, '');
  });
  afterAll(() => t?.dispose());

  for (const [name, spec] of Object.entries(LISTS)) {
    it(`${name}: every field and operator selects exactly the matching rows`, async () => {
      const rows = all[name]!;
      expect(rows.length).toBeGreaterThan(0);
      const filterType = `${name.charAt(0).toUpperCase()}${name.slice(1, -1).replace(/ie$/, 'y')}Filter`;
      for (const [field, fieldKind] of Object.entries(spec.fields)) {
        for (const [operator, operand] of casesFor(fieldKind, rows, field)) {
          const filter = { [field]: { [operator]: operand } };
          const got = await list(name, ', filter: $filter', { filter }, `, $filter: ${filterType}`);
          const want = rows.filter((row) => matches(row[field], operator, operand));
          expect({ filter, ids: got.map((r) => r.id).sort() }).toEqual({ filter, ids: want.map((r) => r.id).sort() });
        }
      }
    });
  }

  it('combines conditions with and / or / not', async () => {
    const rows = all.syncs!;
    const filter = { or: [{ status: { eq: 'failed' } }, { status: { eq: 'pending' } }], not: { isAutoMigrate: { eq: true } } };
    const got = await list('syncs', ', filter: $filter', { filter }, ', $filter: SyncFilter');
    // NOT follows SQL: a null is neither true nor not true, so rows with a null isAutoMigrate drop out.
    const want = rows.filter((r) => (r.status === 'failed' || r.status === 'pending') && r.isAutoMigrate === false);
    expect(got.map((r) => r.id).sort()).toEqual(want.map((r) => r.id).sort());
  });

  it('searches case-insensitively over the documented fields', async () => {
    const failed = all.syncs!.filter((r) => r.status === 'failed');
    const word = String(failed[0]!.errorMessage)
      .split(/\s+/)
      .find((w) => w.length > 4)!;
    const got = await list('syncs', ', search: $search', { search: word.toUpperCase() }, ', $search: String');
    const want = all.syncs!.filter(
      (r) =>
        String(r.errorMessage ?? '')
          .toLowerCase()
          .includes(word.toLowerCase()) || String(r.status).includes(word.toLowerCase()),
    );
    expect(got.map((r) => r.id).sort()).toEqual(want.map((r) => r.id).sort());
    const inProgress = await list('syncs', ', search: "IN_PROG"');
    expect(inProgress.length).toBeGreaterThan(0);
    expect(inProgress.every((r) => r.status === 'in_progress')).toBe(true);

    const apps = await list('applications', ', search: "PAYMENT"');
    expect(apps.length).toBeGreaterThan(0);
    const connections = await list(
      'connections',
      ', search: $search',
      { search: String(all.connections![0]!.name).slice(0, 5).toUpperCase() },
      ', $search: String',
    );
    expect(connections.map((c) => c.id)).toContain(all.connections![0]!.id);
  });

  it('rejects like patterns with an inner wildcard, out-of-range limits and over-long ids with INVALID_QUERY', async () => {
    // A nullable field's error leaves data non-null, which GraphQL over HTTP answers with 200; a non-null root
    // field's error nulls data, and the error's own status stays.
    for (const [query, expectedStatus] of [
      ['{ syncs(filter: { errorMessage: { like: "a*b" } }) { totalCount } }', 400],
      ['{ syncs(filter: { errorMessage: { ilike: "*a*b*" } }) { nodes { id } } }', 400],
      ['{ syncs(limit: 101) { totalCount } }', 400],
      ['{ syncs(offset: -1) { totalCount } }', 400],
      [`{ connection(id: "con_${'a'.repeat(61)}") { id } }`, 200],
    ] as const) {
      const { status, body } = await graphql(t.gateway, query, { token: t.tenants.demo.readerToken });
      expect({ query, status, code: body.errors?.[0]?.extensions?.code }).toEqual({ query, status: expectedStatus, code: 'INVALID_QUERY' });
    }
  });

  it('treats % and _ in like patterns as literal characters', async () => {
    for (const text of ['%', '_', '\\']) {
      const got = await list('syncs', ', filter: $filter', { filter: { errorMessage: { like: `*${text}*` } } }, ', $filter: SyncFilter');
      expect(got.map((r) => r.id).sort()).toEqual(
        all
          .syncs!.filter((r) => String(r.errorMessage ?? '').includes(text))
          .map((r) => r.id)
          .sort(),
      );
      // Exactly the rows holding the text: an empty answer passes only when no row holds it.
      const searched = await list('syncs', ', search: $search', { search: text }, ', $search: String');
      const holding = all.syncs!.filter((r) => String(r.errorMessage ?? '').includes(text) || String(r.status).includes(text));
      expect(searched.map((r) => r.id).sort()).toEqual(holding.map((r) => r.id).sort());
    }
    const exact = await list('categories', ', filter: $filter', { filter: { name: { ilike: '_%' } } }, ', $filter: CategoryFilter');
    expect(exact).toEqual([]);
  });

  it('orders by any sortable field with nulls placement', async () => {
    const { body } = await graphql(
      t.gateway,
      '{ syncs(limit: 100, orderBy: [{ field: finishedAt, direction: ASC, nulls: FIRST }]) { nodes { finishedAt } } }',
      { token: t.tenants.demo.readerToken, expectOk: true },
    );
    const finished = body.data!.syncs.nodes.map((n: { finishedAt: string | null }) => n.finishedAt);
    const firstSet = finished.findIndex((f: string | null) => f !== null);
    // Both kinds are on the page: some nulls first, then the set values.
    expect(firstSet).toBeGreaterThan(0);
    expect(finished.slice(0, firstSet).every((f: string | null) => f === null)).toBe(true);
    const rest = finished.slice(firstSet);
    expect([...rest].sort()).toEqual(rest);
  });
});
