import { auditServer } from 'graphql-http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../src/logger.js';
import { createGateway, type Gateway } from '../src/http/yoga.js';
import { createTestDatabase, type TestDatabase } from './fixtures/databases.js';
import { createTestGateway, type TestGateway } from './fixtures/gateway.js';

describe('GraphQL over HTTP (graphql-http audit suite)', () => {
  let db: TestDatabase;
  let gateway: Gateway;
  beforeAll(async () => {
    db = await createTestDatabase('pglite');
    gateway = createGateway({
      db,
      config: {
        JWT_SECRET: undefined,
        JWT_PUBLIC_KEY: undefined,
        JWT_JWKS_URL: undefined,
        JWT_ISSUER: undefined,
        JWT_AUDIENCE: undefined,
        ROW_WRITER_FALLBACK: 'refuse',
      },
      logger: createLogger('silent'),
    });
  });
  afterAll(() => db?.dispose());

  it('passes every MUST audit', async () => {
    const results = await auditServer({
      url: 'http://gateway.test/graphql',
      fetchFn: (input: string, init?: RequestInit) => gateway.fetch(new URL(input), init ?? {}),
    });
    const failedMusts = results.filter((result) => result.status !== 'ok' && result.name.startsWith('MUST'));
    expect(failedMusts.map((result) => `${result.name}: ${'reason' in result ? result.reason : ''}`)).toEqual([]);
    expect(results.filter((result) => result.name.startsWith('MUST')).length).toBeGreaterThan(10);
  });
});

// Audit-style checks of the statuses the graphql-http suite does not reach: field errors (partial data), a whole
// operation failing, and the request errors that keep their 4xx/5xx, for both response media types.
let t: TestGateway;
let connectionId: string;
describe.each(['application/graphql-response+json', 'application/json'])('GraphQL over HTTP statuses (Accept: %s)', (accept) => {
  beforeAll(async () => {
    t ??= await createTestGateway('pglite', { config: { RATE_LIMIT_PER_MINUTE: 0 } });
    connectionId = (await t.db.prisma.connection.findFirstOrThrow({ where: { tenantId: t.tenants.demo.id } })).id;
  });

  async function post(body: unknown, authorization?: string) {
    const response = await t.gateway.fetch('http://gateway.test/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept, ...(authorization ? { authorization } : {}) },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
    expect(response.headers.get('content-type')).toContain(accept);
    const json = (await response.json()) as {
      data?: Record<string, unknown> | null;
      errors?: Array<{ message: string; extensions?: { code?: string } }>;
    };
    return { status: response.status, json, codes: json.errors?.map((e) => e.extensions?.code) };
  }
  const reader = () => `Token ${t.tenants.demo.readerToken}`;

  it('answers 200 when data is present and not null, whatever field errors it carries, and keeps their codes', async () => {
    const query = `{ categories(limit: 1) { totalCount } connection(id: "${connectionId}") { id syncs(limit: 1000) { id } } }`;
    const { status, json, codes } = await post({ query }, reader());
    expect(status).toBe(200);
    expect(json.data).toEqual({ categories: { totalCount: expect.any(Number) }, connection: null });
    expect(codes).toEqual(['INVALID_QUERY']);
    expect(json.errors?.[0]).toMatchObject({ path: ['connection', 'syncs'], message: expect.stringMatching(/limit/) });
  });

  it('keeps the error status when the operation failed as a whole (data: null), as REST answers the same refusal', async () => {
    const forbidden = await post({ query: `mutation { deleteConnection(id: "${connectionId}") { id } }` }, reader());
    expect([forbidden.status, forbidden.json.data, forbidden.codes]).toEqual([403, null, ['UNAUTHORIZED']]);
    const notFound = await post(
      { query: 'mutation { deleteConnection(id: "con_0000000000") { id } }' },
      `Token ${t.tenants.demo.adminToken}`,
    );
    expect([notFound.status, notFound.json.data, notFound.codes]).toEqual([404, null, ['NOT_FOUND']]);
  });

  it('refuses a request without a credential that asks for data with 401 before execution, and answers introspection', async () => {
    for (const query of [
      `{ connection(id: "${connectionId}") { id } }`,
      '{ categories { totalCount } }',
      '{ __typename ...Q } fragment Q on Query { sync(id: "syn_x") { id } }',
      '{ __typename ... on Query { application(id: "app_x") { id } } }',
    ]) {
      const { status, json, codes } = await post({ query });
      expect({ query, status, hasData: 'data' in json, codes }).toEqual({ query, status: 401, hasData: false, codes: ['UNAUTHORIZED'] });
    }
    const introspection = await post({ query: '{ __typename __schema { queryType { name } } }' });
    expect([introspection.status, introspection.json.data]).toEqual([
      200,
      { __typename: 'Query', __schema: { queryType: { name: 'Query' } } },
    ]);
  });

  const requestErrors: Array<[string, unknown, string | undefined, number, number]> = [
    // name, body, authorization, status for graphql-response+json, status for application/json
    ['broken JSON', '{"query": "{', undefined, 400, 400],
    ['a document that does not parse', { query: '{ categories {' }, 'reader', 400, 200],
    ['a document that does not validate', { query: '{ nope }' }, 'reader', 400, 200],
    [
      'a refused credential',
      { query: '{ categories { totalCount } }' },
      'Token igw_pat_aaaaaaaaaaaa_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa',
      401,
      401,
    ],
    [
      'a document over a limit',
      { query: `{ ${Array.from({ length: 31 }, (_, i) => `a${i}: __typename`).join(' ')} }` },
      'reader',
      400,
      400,
    ],
  ];
  it.each(requestErrors)(
    'answers %s, a request error, with a 4xx and no data',
    async (_name, body, authorization, responseJsonStatus, jsonStatus) => {
      const { status, json, codes } = await post(body, authorization === 'reader' ? reader() : authorization);
      expect(status).toBe(accept === 'application/json' ? jsonStatus : responseJsonStatus);
      expect('data' in json).toBe(false);
      expect(codes?.length).toBeGreaterThan(0);
    },
  );
});

afterAll(() => t?.dispose());
