// GraphQL queries of validated documents are served directly (src/http/direct-graphql.ts), without yoga's request
// pipeline. Every answer must be the one yoga's pipeline gives: the same status, headers and body for the same
// request, over node:http and in-process, its first time (when yoga validates the document), its second (the
// direct path, not yet compiled) and its third (compiled); whatever the direct path declines reaches yoga intact.
import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../src/http/yoga.js';
import { databaseKinds } from './fixtures/databases.js';
import {
  capturingLogger,
  createTestGateway,
  gatewayOver,
  leaveMidBody,
  listenOnLoopback,
  type LogLine,
  type TestGateway,
} from './fixtures/gateway.js';
import { ORIGIN } from './fixtures/rest.js';

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Headers that differ between two answers by nature: the request id, the date, the budget's reset second. */
const VARYING_HEADERS = new Set(['x-request-id', 'date', 'ratelimit-reset', 'connection', 'keep-alive']);

async function answerOf(response: Response): Promise<Answer> {
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    if (!VARYING_HEADERS.has(name)) headers[name] = value;
  });
  return { status: response.status, headers, body: (await response.text()).replace(/req_\d+/g, 'req_…') };
}

interface Case {
  label: string;
  body: string;
  headers: Record<string, string>;
  /** Whether the direct path answers it (from its second time on); otherwise yoga does, every time. */
  direct: boolean;
}

describe.each(databaseKinds)('GraphQL queries served directly on %s', (kind) => {
  let t: TestGateway;
  let direct: Gateway;
  let viaYoga: Gateway;
  let cases: Case[];
  const servers: Server[] = [];
  const listen = (gateway: Gateway) => listenOnLoopback(gateway, servers);

  beforeAll(async () => {
    t = await createTestGateway(kind);
    // Rate limits on, so the budget headers are compared too; each gateway counts its own requests.
    direct = gatewayOver(t.db, { config: { RATE_LIMIT_PER_MINUTE: 10_000 } });
    viaYoga = gatewayOver(t.db, { config: { RATE_LIMIT_PER_MINUTE: 10_000 }, directGraphQL: false, directRest: false });
    const { demo } = t.tenants;
    const [connection] = await t.db.raw.query<{ id: string }>('SELECT id FROM connections WHERE tenant_id = $1 ORDER BY name LIMIT 1', [
      demo.id,
    ]);
    const reader = { authorization: `Token ${demo.readerToken}` };
    const json = { 'content-type': 'application/json' };
    const query = (label: string, body: unknown, headers: Record<string, string>, isDirect = true): Case => ({
      label,
      body: typeof body === 'string' ? body : JSON.stringify(body),
      headers: { ...json, ...headers },
      direct: isDirect,
    });
    const nested =
      '{ connections(limit: 3) { totalCount nodes { id name status application { name category { name } } syncs(limit: 2) { id status startedAt finishedAt } } } }';
    const withVariables = `query Page($limit: Int, $filter: SyncFilter, $connection: ID) {
      syncs(limit: $limit, filter: $filter, connectionId: $connection) { totalCount nodes { id status startedAt ...Failure } }
    }
    fragment Failure on Sync { errorMessage }`;
    cases = [
      query('{ __typename } without credential', { query: '{ __typename }' }, {}),
      query('nested connections and syncs', { query: nested }, reader),
      query(
        'variables, fragments and a recursive filter',
        {
          query: withVariables,
          variables: {
            limit: 3,
            connection: connection!.id,
            filter: { or: [{ status: { eq: 'failed' } }, { not: { status: { eq: 'pending' } } }] },
          },
        },
        reader,
      ),
      query('null variables and operation name', { query: nested, variables: null, operationName: null }, reader),
      query(
        'one of several operations by name',
        { query: `query A { __typename } query B ${nested.slice(1, -1).replace(/^/, '{')}}`, operationName: 'B' },
        reader,
      ),
      query(
        'an item that names nothing (null data member)',
        { query: '{ connection(id: "con_00000000000000000000000000") { id } }' },
        reader,
      ),
      query('an id of another shape (a field error)', { query: '{ connection(id: "nope") { id name } }' }, reader),
      query('variables of the wrong type', { query: withVariables, variables: { limit: 'three' } }, reader),
      query('graphql-response+json', { query: nested }, { ...reader, accept: 'application/graphql-response+json' }),
      query(
        'graphql-response+json with a field error',
        { query: '{ connection(id: "nope") { id } }' },
        { ...reader, accept: 'application/graphql-response+json' },
      ),
      query(
        'both JSON types, charset',
        { query: nested },
        { ...reader, accept: 'application/json; charset=utf-8, application/graphql-response+json' },
      ),
      query('any type', { query: nested }, { ...reader, accept: '*/*' }),
      query('content type with charset', { query: nested }, { ...reader, 'content-type': 'application/json; charset=utf-8' }),
      query(
        'fragments at the root',
        { query: `{ ...Root ... on Query { __typename } } fragment Root on Query { connections(limit: 2) { totalCount nodes { id } } }` },
        reader,
      ),
      // Declined by the direct path, answered by yoga.
      query('no credential, asking for data', { query: nested }, {}, false),
      query('a malformed credential', { query: '{ __typename }' }, { authorization: 'Token nope' }, false),
      query('an unknown token', { query: nested }, { authorization: `Token igw_pat_000000000000_${'A'.repeat(43)}` }, false),
      query('a document that does not validate', { query: '{ nope }' }, reader, false),
      query('a document that does not parse', { query: '{ connections(' }, reader, false),
      query(
        'a cost over the budget by its variables',
        {
          query: 'query ($n: Int) { connections(limit: $n) { nodes { syncs(limit: 100) { id status startedAt } } } }',
          variables: { n: 100 },
        },
        reader,
        false,
      ),
      query('NUL in a variable', { query: withVariables, variables: { filter: { errorMessage: { eq: 'a\u0000b' } } } }, reader, false),
      query('a schema query', { query: '{ __schema { queryType { name } } }' }, reader, false),
      query(
        'a schema query in a root fragment',
        { query: '{ ...Schema } fragment Schema on Query { __type(name: "Sync") { name } }' },
        reader,
        false,
      ),
      query('a mutation', { query: 'mutation { deleteConnection(id: "con_00000000000000000000000000") { id } }' }, reader, false),
      query('an extensions member', { query: nested, extensions: { persistedQuery: null } }, reader, false),
      query('an unknown member', { query: nested, colour: 'red' }, reader, false),
      query('a batch', [{ query: nested }], reader, false),
      query('broken JSON', '{"query": ', reader, false),
      query('variables as a string', { query: withVariables, variables: '{}' }, reader, false),
      query('Accept with a quality', { query: nested }, { ...reader, accept: 'application/json;q=0.9' }, false),
      query('Accept text/html', { query: nested }, { ...reader, accept: 'text/html' }, false),
      query('another media type', { query: nested }, { ...reader, 'content-type': 'text/plain' }, false),
    ];
  });
  afterAll(async () => {
    for (const server of servers) server.close();
    await direct?.dispose();
    await viaYoga?.dispose();
    await t?.dispose();
  });

  it('answers as yoga does over node:http, three times each, and takes what it should', async () => {
    const [directBase, yogaBase] = [await listen(direct), await listen(viaYoga)];
    // A document yoga validated for an earlier case is answered directly from its first time.
    const validated = new Set<string>();
    for (const { label, body, headers, direct: isDirect } of cases) {
      const text = isDirect ? (JSON.parse(body) as { query: string }).query : null;
      const before = { ...direct.directGraphQL!.counts };
      for (const time of [1, 2, 3]) {
        const fromDirect = await answerOf(await fetch(`${directBase}/graphql`, { method: 'POST', headers, body }));
        const fromYoga = await answerOf(await fetch(`${yogaBase}/graphql`, { method: 'POST', headers, body }));
        expect({ label, time, ...fromDirect }).toEqual({ label, time, ...fromYoga });
      }
      const answered = direct.directGraphQL!.counts.answered - before.answered;
      expect({ label, answered }).toEqual({ label, answered: text === null ? 0 : validated.has(text) ? 3 : 2 });
      if (text !== null) validated.add(text);
    }
  });

  it('answers as yoga does in-process (gateway.fetch) when the request declares its length', async () => {
    for (const { label, body, headers, direct: isDirect } of cases.filter((c) => c.direct)) {
      const init = { method: 'POST', headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) }, body };
      const taken = direct.directGraphQL!.fetch(new Request(`${ORIGIN}/graphql`, init));
      expect({ label, taken: taken !== null }).toEqual({ label, taken: isDirect });
      const fromDirect = await answerOf(await taken!);
      const fromYoga = await answerOf(await viaYoga.fetch(`${ORIGIN}/graphql`, init));
      expect({ label, ...fromDirect }).toEqual({ label, ...fromYoga });
    }
  });

  it('answers as yoga does with CORS on: Vary on every answer, and a cross-origin request left to yoga', async () => {
    const cors = { config: { RATE_LIMIT_PER_MINUTE: 0, CORS_ORIGINS: ['https://app.example'] } };
    const pair = [gatewayOver(t.db, cors), gatewayOver(t.db, { ...cors, directGraphQL: false })];
    try {
      const [directBase, yogaBase] = [await listen(pair[0]!), await listen(pair[1]!)];
      const body = JSON.stringify({ query: '{ connections(limit: 2) { totalCount nodes { name } } }' });
      const reader = { 'content-type': 'application/json', authorization: `Token ${t.tenants.demo.readerToken}` };
      for (const [label, headers] of [
        ['same origin', reader],
        ['an allowed origin', { ...reader, origin: 'https://app.example' }],
        ['another origin', { ...reader, origin: 'https://elsewhere.example' }],
      ] as const) {
        for (const time of [1, 2, 3]) {
          const fromDirect = await answerOf(await fetch(`${directBase}/graphql`, { method: 'POST', headers, body }));
          const fromYoga = await answerOf(await fetch(`${yogaBase}/graphql`, { method: 'POST', headers, body }));
          expect({ label, time, ...fromDirect }).toEqual({ label, time, ...fromYoga });
        }
      }
      // Only the requests without an Origin, after the first, were answered directly.
      expect(pair[0]!.directGraphQL!.counts.answered).toBe(2);
    } finally {
      await Promise.all(pair.map((gateway) => gateway.dispose()));
    }
  });

  it('a client that leaves in the middle of its body: logged as 499, no error line, and the next request answered', async () => {
    const lines: LogLine[] = [];
    const logged = gatewayOver(t.db, { logger: capturingLogger(lines) });
    try {
      const base = await listen(logged);
      const body = JSON.stringify({ query: '{ __typename }' });
      await leaveMidBody(new URL(base), '/graphql', {}, body);
      const after = await fetch(`${base}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      expect(after.status).toBe(200);
      expect(await after.json()).toEqual({ data: { __typename: 'Query' } });
      expect(lines.filter((line) => line.level >= 50)).toEqual([]);
      expect(lines.filter((line) => line.msg === 'request').map((line) => line.status)).toEqual([499, 200]);
    } finally {
      await logged.dispose();
    }
  });

  it('refuses over the rate limit as yoga does, counting each request once', async () => {
    const limited = [
      gatewayOver(t.db, { config: { RATE_LIMIT_PER_MINUTE: 3 } }),
      gatewayOver(t.db, { config: { RATE_LIMIT_PER_MINUTE: 3 }, directGraphQL: false }),
    ];
    try {
      const [directBase, yogaBase] = [await listen(limited[0]!), await listen(limited[1]!)];
      const headers = { 'content-type': 'application/json', authorization: `Token ${t.tenants.other.readerToken}` };
      const body = JSON.stringify({ query: '{ connections(limit: 1) { totalCount } }' });
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) {
        const fromDirect = await answerOf(await fetch(`${directBase}/graphql`, { method: 'POST', headers, body }));
        const fromYoga = await answerOf(await fetch(`${yogaBase}/graphql`, { method: 'POST', headers, body }));
        expect({ i, ...fromDirect }).toEqual({ i, ...fromYoga });
        statuses.push(fromDirect.status);
      }
      expect(statuses).toEqual([200, 200, 200, 429, 429]);
      expect(limited[0]!.directGraphQL!.counts.answered).toBe(4);
    } finally {
      await Promise.all(limited.map((gateway) => gateway.dispose()));
    }
  });
});
