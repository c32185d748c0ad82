// Request limits: URL and body size, media type, broken JSON, GraphQL document limits (graphql-armor, a token
// count and the estimated cost with list multipliers), and the request time limit, through real HTTP handling on a real database.
import { readdirSync, readFileSync } from 'node:fs';
import { getIntrospectionQuery, parse } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { schema } from '../src/graphql/schema.js';
import { DEFAULT_REQUEST_LIMITS, operationCost } from '../src/admission/request-limits.js';
import type { Gateway, GatewayOptions } from '../src/http/yoga.js';
import { databaseKinds } from './fixtures/databases.js';
import { documentationPages } from './fixtures/documentation.js';
import { createTestGateway, gatewayOver, graphql, type TestGateway } from './fixtures/gateway.js';
import { BASE, ORIGIN, rest } from './fixtures/rest.js';

const GRAPHQL_URL = `${ORIGIN}/graphql`;

// One seeded PGlite database for the whole file; each test builds the gateway configuration it needs on it.
let pglite: TestGateway;
beforeAll(async () => {
  pglite = await createTestGateway('pglite');
});
afterAll(() => pglite?.dispose());

function gatewayWith(t: TestGateway, options: Partial<GatewayOptions> & { perMinute?: number } = {}): Gateway {
  const { perMinute = 0, config, ...rest } = options;
  return gatewayOver(t.db, { ...rest, config: { ...config, RATE_LIMIT_PER_MINUTE: perMinute } });
}

async function postGraphQL(gateway: Gateway, body: BodyInit, headers: Record<string, string> = {}, init: RequestInit = {}) {
  const response = await gateway.fetch(GRAPHQL_URL, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json', ...headers },
    body,
    ...init,
  });
  return {
    status: response.status,
    headers: response.headers,
    body: (await response.json()) as { data?: unknown; errors?: Array<{ message: string; extensions?: { code?: string } }> },
  };
}

const codesOf = (body: { errors?: Array<{ extensions?: { code?: string } }> }) => body.errors?.map((e) => e.extensions?.code);

describe('request limits', () => {
  let t: TestGateway;
  let gateway: Gateway;
  let token: string;
  beforeAll(() => {
    t = pglite;
    token = t.tenants.demo.adminToken;
    gateway = gatewayWith(t, {
      limits: { maxUrlLength: 2048, maxBodyBytes: 16 * 1024, maxTokens: 500, maxDepth: 5, maxAliases: 3, maxDirectives: 4, maxCost: 30 },
    });
  });

  it('refuses an over-long URL with 414 PAYLOAD_TOO_LARGE, in each surface’s error form', async () => {
    const long = 'x'.repeat(2100);
    const viaRest = await rest(gateway, `${BASE}/connected?name=${long}`, { token });
    expect(viaRest.status).toBe(414);
    expect(viaRest.body.error.code).toBe('PAYLOAD_TOO_LARGE');
    expect(viaRest.body.error.req_id).toBe(viaRest.headers.get('x-request-id'));
    expect(viaRest.body.error.docs).toBe(`${ORIGIN}/docs/errors/PAYLOAD_TOO_LARGE`);

    const viaGraphQL = await gateway.fetch(
      `${GRAPHQL_URL}?query=${encodeURIComponent(`{ categories(limit: 1) { totalCount } } #${long}`)}`,
      {
        headers: { accept: 'application/graphql-response+json' },
      },
    );
    expect(viaGraphQL.status).toBe(414);
    expect(viaGraphQL.headers.get('content-type')).toMatch(/^application\/graphql-response\+json/);
    expect(await viaGraphQL.json()).toEqual({
      errors: [{ message: expect.stringContaining('2048'), extensions: { code: 'PAYLOAD_TOO_LARGE' } }],
    });
  });

  it('refuses a body over the limit by Content-Length, before reading it', async () => {
    const query = `{ categories { totalCount } } #${'x'.repeat(20 * 1024)}`;
    const { status, body } = await postGraphQL(gateway, JSON.stringify({ query }));
    expect(status).toBe(413);
    expect(codesOf(body)).toEqual(['PAYLOAD_TOO_LARGE']);
  });

  it('refuses a streamed body without Content-Length once it passes the limit', async () => {
    const chunk = new TextEncoder().encode(`{"query":"{ categories { totalCount } }","extensions":{"pad":"${'x'.repeat(4096)}`);
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        sent += 1;
        if (sent > 10) controller.close();
        else controller.enqueue(sent === 1 ? chunk : new TextEncoder().encode('x'.repeat(4096)));
      },
    });
    const { status, body } = await postGraphQL(gateway, stream, {}, { duplex: 'half' } as RequestInit);
    expect(status).toBe(413);
    expect(codesOf(body)).toEqual(['PAYLOAD_TOO_LARGE']);
  });

  it('answers 415 UNSUPPORTED_MEDIA_TYPE to POST bodies that are not JSON, and accepts JSON with a charset', async () => {
    for (const contentType of [
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/graphql',
      'APPLICATION/JSON',
    ]) {
      const { status, body } = await postGraphQL(gateway, '{"query":"{ __typename }"}', { 'content-type': contentType });
      expect({ contentType, status }).toEqual({ contentType, status: 415 });
      expect(codesOf(body)).toEqual(['UNSUPPORTED_MEDIA_TYPE']);
    }
    const ok = await postGraphQL(gateway, '{"query":"{ __typename }"}', { 'content-type': 'application/json; charset=utf-8' });
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({ data: { __typename: 'Query' } });
  });

  it('answers an Accept header it cannot serve with 406 NOT_ACCEPTABLE in a JSON body, on GET and POST', async () => {
    for (const accept of ['text/plain', 'application/xml', 'image/png']) {
      for (const method of ['GET', 'POST']) {
        const response = await gateway.fetch(method === 'GET' ? `${GRAPHQL_URL}?query=%7B__typename%7D` : GRAPHQL_URL, {
          method,
          headers: { accept, 'content-type': 'application/json' },
          ...(method === 'POST' ? { body: '{"query":"{ __typename }"}' } : {}),
        });
        expect({ accept, method, status: response.status }).toEqual({ accept, method, status: 406 });
        expect(response.headers.get('content-type')).toMatch(/^application\/json/);
        expect(response.headers.get('x-request-id')).toMatch(/^req_/);
        const body = (await response.json()) as { errors?: Array<{ message: string; extensions?: { code?: string } }> };
        expect(codesOf(body)).toEqual(['NOT_ACCEPTABLE']);
        expect(body.errors?.[0]?.message).toContain(accept);
      }
    }
  });

  it('answers broken JSON with 400 INVALID_QUERY for both GraphQL response types', async () => {
    for (const accept of ['application/json', 'application/graphql-response+json']) {
      const { status, body } = await postGraphQL(gateway, '{"query": "{ __typename }"', { accept });
      expect(status).toBe(400);
      expect(codesOf(body)).toEqual(['INVALID_QUERY']);
      expect(JSON.stringify(body)).not.toContain('originalError');
    }
  });

  it('gives GraphQL syntax, validation and operation-selection errors the INVALID_QUERY code', async () => {
    const syntax = await graphql(gateway, '{ categories {', { token });
    expect(codesOf(syntax.body)).toEqual(['INVALID_QUERY']);
    const unknownField = await graphql(gateway, '{ nope }', { token });
    expect(unknownField.status).toBe(400);
    expect(codesOf(unknownField.body)).toEqual(['INVALID_QUERY']);
    const unknownOperation = await postGraphQL(gateway, JSON.stringify({ query: 'query A { __typename }', operationName: 'B' }), {
      accept: 'application/graphql-response+json',
    });
    expect(unknownOperation.status).toBe(400);
    expect(codesOf(unknownOperation.body)).toEqual(['INVALID_QUERY']);
  });

  it('answers HEAD with the status and headers of the refusal, without a body', async () => {
    const response = await gateway.fetch(`${ORIGIN}${BASE}/categories?q=${'x'.repeat(2100)}`, { method: 'HEAD' });
    expect(response.status).toBe(414);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await response.text()).toBe('');
  });

  const overLimit: Array<[string, string, RegExp]> = [
    ['depth', '{ connections { nodes { application { category { applications { nodes { name } } } } } } }', /depth limit of 5/],
    [
      'aliases',
      '{ a: categories { totalCount } b: categories { totalCount } c: categories { totalCount } d: categories { totalCount } }',
      /aliases limit of 3/i,
    ],
    [
      'directives',
      '{ categories @include(if: true) @skip(if: false) { totalCount @include(if: true) @skip(if: false) nodes @include(if: true) { name } } }',
      /directives limit of 4/i,
    ],
    // A page of n items with two fields costs 1 + n × (nodes 1 + 2): 7 + 7 + 16 = 30 is the budget; 6 applications make it 33.
    [
      'cost',
      '{ categories(limit: 2) { nodes { id name } } connections(limit: 2) { nodes { id name } } applications(limit: 6) { nodes { id name } } }',
      /estimated cost is 33, over the budget of 30/,
    ],
    ['tokens', `{ categories { ${'totalCount '.repeat(600)} } }`, /token limit of 500/i],
  ];
  it.each(overLimit)(
    'refuses a document over the %s limit with 400 INVALID_QUERY, to application/json clients too',
    async (_name, query, message) => {
      const { status, body } = await postGraphQL(gateway, JSON.stringify({ query }), { authorization: `Token ${token}` });
      expect(status).toBe(400);
      expect(body.data).toBeUndefined();
      expect(codesOf(body)?.[0]).toBe('INVALID_QUERY');
      expect(body.errors?.map((e) => e.message).join('; ')).toMatch(message);
    },
  );
});

describe('default limits admit every document this project ships', () => {
  let t: TestGateway;
  beforeAll(() => {
    t = pglite;
  });

  /** The REST operations, the GraphQL examples of README.md and docs/, GraphiQL's default query and its introspection query. */
  function shippedDocuments(): Array<{ name: string; query: string; variables: Record<string, unknown> }> {
    const read = (file: string) => readFileSync(`schema/operations/${file}`, 'utf8');
    const files = readdirSync('schema/operations').filter((file) => file.endsWith('.graphql'));
    // Shared fragments live in their own file; an operation is sent with the ones it spreads.
    const fragmentFiles = files.filter((file) => !/^\s*(query|mutation|subscription)\b/m.test(read(file)));
    const fragments = fragmentFiles.map(read).join('\n');
    const operations = files
      .filter((file) => !fragmentFiles.includes(file))
      .map((file) => {
        const query = read(file);
        const spread = new Set([...query.matchAll(/\.\.\.\s*(\w+)/g)].map((m) => m[1]));
        const used = [...fragments.matchAll(/fragment\s+(\w+)[^{]*\{/g)].some((m) => spread.has(m[1]));
        return { name: file, query: used ? `${query}\n${fragments}` : query, variables: { id: 'con_x' } };
      });
    const readme = documentationPages()
      .map((page) => readFileSync(page, 'utf8'))
      .join('\n');
    // A shell variable spliced into a body ('"$USER_ID"') stands for an id the previous example printed.
    const curlBodies = [...readme.matchAll(/-d '(\{"query".*?\})'/g)].map((m, i) => {
      const json = (m[1] ?? '{}').replace(/'"\$\w+"'/g, 'usr_placeholder');
      const body = JSON.parse(json) as { query: string; variables?: Record<string, unknown> };
      return { name: `docs curl #${i + 1}`, query: body.query, variables: body.variables ?? {} };
    });
    const graphqlBlocks = [...readme.matchAll(/```graphql\n([\s\S]*?)```/g)].map((m, i) => ({
      name: `docs graphql block #${i + 1}`,
      query: m[1] ?? '',
      variables: { since: '2026-01-01T00:00:00+00:00' },
    }));
    expect(curlBodies.length).toBeGreaterThan(1);
    return [...operations, ...curlBodies, ...graphqlBlocks, { name: 'introspection', query: getIntrospectionQuery(), variables: {} }];
  }

  it('passes the REST operations, the examples of README.md and docs/ and introspection through /graphql', async () => {
    const documents = shippedDocuments();
    expect(documents.length).toBeGreaterThan(10);
    for (const { name, query, variables } of documents) {
      const { body } = await graphql(t.gateway, query, { variables, token: t.tenants.demo.adminToken });
      const limitErrors = (body.errors ?? []).filter((e) => /limit of \d+|budget of \d+/i.test(e.message));
      expect({ name, limitErrors }).toEqual({ name, limitErrors: [] });
    }
  });

  // What lets the document limits skip the cost walk for the REST routes' own documents (REST_DOCUMENTS in src/http/yoga.ts):
  // each is measured here at the largest page its route accepts.
  it('keeps every shipped document at most half the cost budget, with its largest page', () => {
    for (const { name, query, variables } of shippedDocuments()) {
      // The REST operations take their page size as $limit: measured at the largest one a route accepts.
      // Required inputs of the write operations get placeholders: a cost depends on no input's value.
      const inputs: Record<string, Record<string, unknown>> = {
        CreateConnection: { applicationId: 'app_x' },
        CreateWebhookEndpoint: { url: 'https://example.com/x' },
      };
      const placeholders = {
        connectionId: 'con_x',
        delivery_id: 'msg_x',
        report: {},
        role: 'reader',
        email: 'ada@example.com',
        name: 'A partner application',
        redirectUris: ['https://partner.example/callback'],
        serviceUserId: 'svc_x',
        input: inputs[name.replace(/\.graphql$/, '')] ?? {},
      };
      const cost = operationCost({
        schema,
        document: parse(query),
        contextValue: {},
        variableValues: { ...placeholders, ...variables, limit: 100 },
      });
      expect({ name, measured: cost !== null }).toEqual({ name, measured: true });
      expect({ name, withinHalf: (cost ?? 0) <= DEFAULT_REQUEST_LIMITS.maxCost / 2 }).toEqual({ name, withinHalf: true });
    }
  });

  it('counts an alias named __typename on a real field like any other alias', async () => {
    const aliases = Array.from({ length: DEFAULT_REQUEST_LIMITS.maxAliases }, (_, i) => `a${i}: categories { totalCount }`).join(' ');
    const atLimit = await graphql(t.gateway, `{ ${aliases} }`, { token: t.tenants.demo.readerToken });
    expect(atLimit.status).toBe(200);
    const disguised = await graphql(t.gateway, `{ ${aliases} __typename: categories { totalCount } }`, {
      token: t.tenants.demo.readerToken,
    });
    expect(disguised.status).toBe(400);
    expect(codesOf(disguised.body)).toEqual(['INVALID_QUERY']);
    expect(disguised.body.errors?.[0]?.message).toMatch(/aliases limit of 30 exceeded, found 31/i);
    // The plain meta field, as clients add it, is no alias.
    expect((await graphql(t.gateway, `{ ${aliases} __typename }`, { token: t.tenants.demo.readerToken })).status).toBe(200);
  });

  it('has the documented defaults', () => {
    expect(DEFAULT_REQUEST_LIMITS).toEqual({
      maxUrlLength: 8192,
      maxBodyBytes: 1_048_576,
      maxTokens: 2000,
      maxDepth: 8,
      maxAliases: 30,
      maxDirectives: 50,
      maxCost: 20_000,
      timeoutMs: 15_000,
    });
  });
});

describe.each(databaseKinds)('request time limit on %s', (kind) => {
  let t: TestGateway;
  let gateway: Gateway;
  beforeAll(async () => {
    t = kind === 'pglite' ? pglite : await createTestGateway(kind);
    // Rate limiting on: it looks the credential up too, and that lookup must not outlive the limit either.
    gateway = gatewayWith(t, { limits: { timeoutMs: 400 }, perMinute: 600 });
  });
  afterAll(() => (kind === 'pglite' ? undefined : t?.dispose()));

  it('answers 503 UNAVAILABLE when the database holds the request past the limit, then recovers', async () => {
    const token = t.tenants.demo.readerToken;
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let locked!: () => void;
    const lockTaken = new Promise<void>((resolve) => (locked = resolve));
    // A transaction holding an exclusive lock on connections: PostgreSQL queues readers of that table, and
    // PGlite (one connection) queues every statement behind the open transaction.
    const transaction = t.db.raw.transaction(async (tx) => {
      await tx.exec('LOCK TABLE connections IN ACCESS EXCLUSIVE MODE');
      locked();
      await held;
    });
    try {
      await lockTaken;
      const started = performance.now();
      const viaGraphQL = await graphql(gateway, '{ connections { totalCount } }', { token });
      expect(viaGraphQL.status).toBe(503);
      expect(codesOf(viaGraphQL.body)).toEqual(['UNAVAILABLE']);
      const viaRest = await rest(gateway, `${BASE}/connected`, { token });
      expect(viaRest.status).toBe(503);
      expect(viaRest.body.error.code).toBe('UNAVAILABLE');
      expect(performance.now() - started).toBeLessThan(5000);
    } finally {
      release();
      await transaction;
    }
    const after = await graphql(gateway, '{ connections { totalCount } }', { token, expectOk: true });
    expect(after.body.data?.connections.totalCount).toBeGreaterThan(0);
  });
});

describe('the cost of a document counts its lists at their limits', () => {
  const reader = () => pglite.tenants.demo.readerToken;
  // The reviewer's query: 100 × 100 × 100 × 100 runs through connection → syncs → connection → syncs.
  const nested = '{ connections(limit:100){nodes{syncs(limit:100){connection{syncs(limit:100){connection{syncs(limit:100){id}}}}}}} }';

  it('refuses nested pages whose product is over the budget, naming the cost and the budget, before any resolver runs', async () => {
    const { status, body } = await graphql(pglite.gateway, nested, { token: reader() });
    expect(status).toBe(400);
    expect(body.data).toBeUndefined();
    expect(codesOf(body)).toEqual(['INVALID_QUERY']);
    expect(body.errors?.[0]?.message).toMatch(/^The query's estimated cost is 102020201, over the budget of 20000/);
  });

  it('refuses aliased copies of a query each within the budget when together they are over it', async () => {
    const page = 'connections(limit: 100) { nodes { syncs(limit: 25) { id status startedAt } } }'; // 7,701 each
    const one = await graphql(pglite.gateway, `{ a: ${page} }`, { token: reader() });
    expect(one.status).toBe(200);
    const three = await graphql(pglite.gateway, `{ a: ${page} b: ${page} c: ${page} }`, { token: reader() });
    expect(three.status).toBe(400);
    expect(three.body.errors?.[0]?.message).toMatch(/estimated cost is \d+, over the budget of 20000/);
  });

  it("takes the multiplier from variables and from a field's default limit", async () => {
    const query = 'query($n: Int) { connections(limit: $n) { nodes { syncs(limit: 100) { connection { syncs(limit: 100) { id } } } } } }';
    // connections: 1 + n × (nodes 1 + syncs (1 + 100 × (connection 1 + syncs (1 + 100 × id 1)))) = 1 + n × 10202
    const cost = (n: number) => operationCost({ schema, document: parse(query), contextValue: {}, variableValues: { n } });
    expect([cost(1), cost(2)]).toEqual([10_203, 20_405]);
    expect((await graphql(pglite.gateway, query, { token: reader(), variables: { n: 1 } })).status).toBe(200);
    const over = await graphql(pglite.gateway, query, { token: reader(), variables: { n: 2 } });
    expect(over.status).toBe(400);
    expect(over.body.errors?.[0]?.message).toMatch(/estimated cost is 20405, over the budget of 20000/);
    // Without limit, connections counts 100 and a connection's syncs 10: 1 + 100 × (1 + 1 + 10 × 1).
    expect(
      operationCost({ schema, document: parse('{ connections { nodes { syncs { id } } } }'), contextValue: {}, variableValues: {} }),
    ).toBe(1_201);
  });

  it('serves the largest REST page: the routes stay far inside the budget', async () => {
    const response = await rest(pglite.gateway, `${BASE}/syncs?limit=100`, { token: reader() });
    expect(response.status).toBe(200);
  });

  it('keeps answering health checks while refusing an over-budget query', async () => {
    const [refused, health] = await Promise.all([
      graphql(pglite.gateway, nested, { token: reader() }),
      pglite.gateway.fetch(`${ORIGIN}/healthz`),
    ]);
    expect([refused.status, health.status]).toEqual([400, 200]);
  });
});
