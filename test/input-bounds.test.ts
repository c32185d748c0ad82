// What the service does with inputs at its edges, on both surfaces and both databases: ids that name nothing
// (404 / null, whatever their shape), ids that cannot be ids (400), GraphQL text under the REST caps from one
// place, one timestamp parser for both surfaces, a missing credential answered 401 before anything of the
// request is read, and no path that ends in /health answered by yoga's built-in check.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEXT_LIMITS } from '../src/query/filter.js';
import { databaseKinds } from './fixtures/databases.js';
import { createTestGateway, graphql, type TestGateway } from './fixtures/gateway.js';
import { BASE, rest } from './fixtures/rest.js';

describe.each(databaseKinds)('inputs at the edges on %s', (kind) => {
  let t: TestGateway;
  let reader: string;
  beforeAll(async () => {
    t = await createTestGateway(kind);
    reader = t.tenants.demo.readerToken;
  });
  afterAll(() => t?.dispose());

  // Strings the spec allows as ids (it types them as strings) but that are not in our `con_…` shape.
  const strangers = ['00000000-0000-0000-0000-000000000000', '0', 'does-not-exist-0000', 'CON_ABC', 'con_', 'naïve', 'a b'];

  it.each(['connected', 'syncs', 'available'])('answers 404 NOT_FOUND on /%s/{id} for any string that names nothing', async (resource) => {
    for (const id of strangers) {
      const response = await rest(t.gateway, `${BASE}/${resource}/${encodeURIComponent(id)}`, { token: reader });
      expect({ id, status: response.status, code: response.body.error?.code }).toEqual({ id, status: 404, code: 'NOT_FOUND' });
    }
  });

  it('keeps 400 INVALID_QUERY for ids that cannot be ids: over-long, or holding NUL', async () => {
    const tooLong = `con_${'a'.repeat(100)}`;
    for (const resource of ['connected', 'syncs', 'available']) {
      for (const id of [tooLong, 'con_a\0b']) {
        const response = await rest(t.gateway, `${BASE}/${resource}/${encodeURIComponent(id)}`, { token: reader });
        expect({ resource, status: response.status, code: response.body.error?.code }).toEqual({
          resource,
          status: 400,
          code: 'INVALID_QUERY',
        });
      }
    }
  });

  it('answers null on GraphQL for ids that name nothing, with 200 and no error', async () => {
    for (const id of strangers) {
      const { status, body } = await graphql(
        t.gateway,
        'query($id: ID!) { connection(id: $id) { id } sync(id: $id) { id } application(id: $id) { id } category(id: $id) { id } }',
        { token: reader, variables: { id } },
      );
      expect({ id, status, body }).toEqual({
        id,
        status: 200,
        body: { data: { connection: null, sync: null, application: null, category: null } },
      });
    }
    const connectionFilter = await graphql(t.gateway, '{ syncs(connectionId: "0") { totalCount } }', { token: reader });
    expect(connectionFilter.body).toEqual({ data: { syncs: { totalCount: 0 } } });
  });

  it('caps GraphQL filter values and search with the REST caps', async () => {
    const long = 'x'.repeat(TEXT_LIMITS.maxValueLength + 1);
    const atCap = 'x'.repeat(TEXT_LIMITS.maxValueLength);
    const cases: Array<[string, Record<string, unknown>, RegExp]> = [
      [
        'query($v: String) { syncs(filter: { errorMessage: { ilike: $v } }) { totalCount } }',
        { v: `*${long}*` },
        /errorMessage\.ilike is longer than 4096/,
      ],
      [
        'query($v: String) { syncs(filter: { errorMessage: { like: $v } }) { totalCount } }',
        { v: long },
        /errorMessage\.like is longer than 4096/,
      ],
      ['query($v: String) { connections(filter: { name: { eq: $v } }) { totalCount } }', { v: long }, /name\.eq is longer than 4096/],
      [
        'query($v: String!) { applications(filter: { slug: { in: ["a", $v] } }) { totalCount } }',
        { v: long },
        /slug\.in is longer than 4096/,
      ],
      ['query($v: String) { connections(name: $v) { totalCount } }', { v: long }, /name is longer than 4096/],
      [
        'query($v: String) { syncs(search: $v) { totalCount } }',
        { v: 's'.repeat(TEXT_LIMITS.maxSearchLength + 1) },
        /search is longer than 200/,
      ],
      [
        'query($v: String) { applications(search: $v) { totalCount } }',
        { v: 's'.repeat(TEXT_LIMITS.maxSearchLength + 1) },
        /search is longer than 200/,
      ],
    ];
    for (const [query, variables, message] of cases) {
      const { status, body } = await graphql(t.gateway, query, { token: reader, variables });
      expect({ query, status, code: body.errors?.[0]?.extensions?.code }).toEqual({ query, status: 400, code: 'INVALID_QUERY' });
      expect(body.errors?.[0]?.message).toMatch(message);
    }
    // At the cap it is an ordinary filter.
    const { body } = await graphql(
      t.gateway,
      'query($v: String) { syncs(filter: { errorMessage: { eq: $v } }) { totalCount } syncs2: syncs(search: $s) { totalCount } }'.replace(
        'query($v: String)',
        'query($v: String, $s: String)',
      ),
      {
        token: reader,
        variables: { v: atCap, s: 's'.repeat(TEXT_LIMITS.maxSearchLength) },
      },
    );
    expect(body).toEqual({ data: { syncs: { totalCount: 0 }, syncs2: { totalCount: 0 } } });
    // REST refuses the same lengths.
    const restSearch = await rest(t.gateway, `${BASE}/syncs?search=${'s'.repeat(TEXT_LIMITS.maxSearchLength + 1)}`, { token: reader });
    expect([restSearch.status, restSearch.body.error?.code]).toEqual([400, 'INVALID_QUERY']);
  });

  it('answers 401 without a credential before reading the query string or the path', async () => {
    const requests = [
      `${BASE}/syncs?order=`,
      `${BASE}/syncs?limit=ten&select=nope`,
      `${BASE}/connected?name=eq.`,
      `${BASE}/connected/${'x'.repeat(100)}`,
      `${BASE}/available?page=0&offset=1`,
      `${BASE}/syncs/con_a%zz`,
    ];
    for (const path of requests) {
      const response = await rest(t.gateway, path);
      expect({ path, status: response.status, code: response.body.error?.code }).toEqual({ path, status: 401, code: 'UNAUTHORIZED' });
      expect(response.headers.get('www-authenticate')).toMatch(/Bearer/);
    }
    // With a credential the same query string is the caller's mistake.
    expect((await rest(t.gateway, `${BASE}/syncs?order=`, { token: reader })).status).toBe(400);
  });

  it('refuses impossible dates on both surfaces with the one parser, and accepts real ones', async () => {
    const admin = t.tenants.demo.adminToken;
    for (const value of [
      '2027-02-31T00:00:00Z',
      '2026-04-31',
      '2026-13-01',
      '2026-01-01T24:00:00Z',
      '0000-12-31T23:00:00Z',
      '0001-01-01T00:00:00+01:00',
    ]) {
      const viaRest = await rest(t.gateway, `${BASE}/syncs?started_at=gte.${encodeURIComponent(value)}`, { token: reader });
      expect({ value, status: viaRest.status }).toEqual({ value, status: 400 });
      const viaGraphQL = await graphql(t.gateway, 'query($v: DateTime) { syncs(filter: { startedAt: { gte: $v } }) { totalCount } }', {
        token: reader,
        variables: { v: value },
      });
      expect({ value, status: viaGraphQL.status, code: viaGraphQL.body.errors?.[0]?.extensions?.code }).toEqual({
        value,
        status: 400,
        code: 'INVALID_QUERY',
      });
    }
    // A token asked to expire on 31 February is refused, not rolled over to 3 March.
    const users = await graphql(t.gateway, '{ serviceUsers { id } }', { token: admin, expectOk: true });
    const serviceUserId = users.body.data?.serviceUsers[0].id;
    const token = await graphql(
      t.gateway,
      'mutation($u: ID!) { createToken(serviceUserId: $u, expiresAt: "2027-02-31T00:00:00Z") { token } }',
      {
        token: admin,
        variables: { u: serviceUserId },
      },
    );
    expect([token.status, token.body.errors?.[0]?.extensions?.code]).toEqual([400, 'INVALID_QUERY']);
    for (const value of ['2024-02-29', '2026-01-31T23:59:59.999+02:00', '2026-06-30t12:00:00z']) {
      expect((await rest(t.gateway, `${BASE}/syncs?started_at=gte.${encodeURIComponent(value)}`, { token: reader })).status).toBe(200);
      const viaGraphQL = await graphql(t.gateway, 'query($v: DateTime) { syncs(filter: { startedAt: { gte: $v } }) { totalCount } }', {
        token: reader,
        variables: { v: value },
      });
      expect({ value, status: viaGraphQL.status }).toEqual({ value, status: 200 });
    }
  });

  it("answers paths that end in /health like any other path: yoga's built-in check is off", async () => {
    const anonymous = await rest(t.gateway, `${BASE}/connected/health`);
    expect([anonymous.status, anonymous.body.error?.code]).toEqual([401, 'UNAUTHORIZED']);
    const withToken = await rest(t.gateway, `${BASE}/connected/health`, { token: reader });
    expect([withToken.status, withToken.body.error?.code]).toEqual([404, 'NOT_FOUND']);
    for (const path of ['/health', '/api/health', '/graphql/health', `${BASE}/syncs?x=/health`]) {
      const response = await t.gateway.fetch(`http://gateway.test${path}`);
      expect({ path, status: response.status, yoga: response.headers.get('x-yoga-id') }).toEqual({
        path,
        status: path.startsWith(BASE) ? 401 : 404,
        yoga: null,
      });
    }
    expect((await t.gateway.fetch('http://gateway.test/healthz')).status).toBe(200);
  });
});
