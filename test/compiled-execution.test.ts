// Queries run by graphql-jit's generated code (src/graphql/compiled-execution.ts) answer exactly what graphql-js
// execution answers: the same data, and the same errors (messages, paths, locations, extensions), for the REST
// routes' documents (their mutations' refusals too) and for client queries with fragments, aliases, directives,
// recursive filter variables, and failing fields; variables are refused with graphql-js's own messages.
import { normalizedExecutor } from '@graphql-tools/executor';
import { parse, print, type ExecutionResult } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { viewerOf } from '../src/auth/request-viewers.js';
import { createJwtVerifier } from '../src/auth/jwt.js';
import type { Context } from '../src/context.js';
import { CompiledExecution, loadCompiler } from '../src/graphql/compiled-execution.js';
import { schema } from '../src/graphql/schema.js';
import { routes } from '../src/rest/routes.js';
import { databaseKinds } from './fixtures/databases.js';
import { createTestGateway, WEBHOOK_TEST_KEY, type TestGateway } from './fixtures/gateway.js';
import { DEFAULT_TOKEN_CAPS } from '../src/domain/token-caps.js';
import { webhookSettingsOf } from '../src/webhooks/settings.js';
import { IdentityProviders } from '../src/auth/identity-providers.js';
import { applicationCategoryOf } from '../src/db/connection-writes.js';

describe.each(databaseKinds)('compiled queries on %s', (kind) => {
  let t: TestGateway;
  let context: () => Context;
  let ids: { connection: string; sync: string; application: string };
  const compiled = new CompiledExecution(schema);

  beforeAll(async () => {
    await loadCompiler();
    t = await createTestGateway(kind);
    const viewer = await viewerOf(`Token ${t.tenants.demo.adminToken}`, { db: t.db, jwt: createJwtVerifier({}) });
    context = () => ({
      db: t.db,
      viewer,
      requestId: 'req_test',
      idempotency: null,
      authorization: null,
      webhooks: webhookSettingsOf({ WEBHOOK_SECRET_KEY: WEBHOOK_TEST_KEY }, t.db),
      applicationCategory: applicationCategoryOf(t.db.raw),
      tokenCaps: DEFAULT_TOKEN_CAPS,
      identityProviders: new IdentityProviders({
        db: t.db,
        secretKeys: webhookSettingsOf({ WEBHOOK_SECRET_KEY: WEBHOOK_TEST_KEY }, t.db).secretKeys,
        allowPrivateIssuers: false,
      }),
      live: t.gateway.live,
    });
    const [connection] = await t.db.raw.query<{ id: string }>('SELECT id FROM connections WHERE tenant_id = $1 ORDER BY name LIMIT 1', [
      t.tenants.demo.id,
    ]);
    const [sync] = await t.db.raw.query<{ id: string }>('SELECT id FROM syncs WHERE tenant_id = $1 ORDER BY started_at LIMIT 1', [
      t.tenants.demo.id,
    ]);
    const [application] = await t.db.raw.query<{ id: string }>('SELECT id FROM applications ORDER BY name LIMIT 1');
    ids = { connection: connection!.id, sync: sync!.id, application: application!.id };
  });
  afterAll(() => t?.dispose());

  /** Both executors' answers to the same operation, as JSON (errors with their locations, paths and extensions). */
  async function both(source: string, variables: Record<string, unknown> = {}, operationName?: string): Promise<[string, string]> {
    const document = parse(source);
    const executor = compiled.executorFor(document, operationName, true);
    expect(executor, 'the query compiles').not.toBeNull();
    const viaJs = (await normalizedExecutor({
      schema,
      document,
      variableValues: variables,
      contextValue: context(),
      operationName,
    })) as ExecutionResult;
    const viaJit = await executor!({ document, variableValues: variables, contextValue: context(), operationName });
    return [JSON.stringify(viaJit), JSON.stringify(viaJs)];
  }

  it('answers each REST route query alike, every field shown and none', async () => {
    const queries = routes.filter((route) => route.method === 'GET');
    expect(queries.length).toBeGreaterThan(5);
    for (const route of queries) {
      const operation = route.document.definitions[0]!;
      const variables: Record<string, unknown> = {
        id: route.path.includes('/connected/') ? ids.connection : route.path.includes('/syncs/') ? ids.sync : ids.application,
        limit: 3,
      };
      const withNone = Object.fromEntries(
        ('variableDefinitions' in operation ? (operation.variableDefinitions ?? []) : [])
          .filter((v) => v.variable.name.value.startsWith('with_'))
          .map((v) => [v.variable.name.value, false]),
      );
      for (const vars of [variables, { ...variables, ...withNone }]) {
        const source = print(route.document);
        const [jit, js] = await both(source, vars);
        expect({ route: route.path, jit }).toEqual({ route: route.path, jit: js });
      }
    }
  });

  it('answers client queries alike: nesting, fragments, aliases, directives, recursive filters, __typename', async () => {
    const cases: Array<[string, Record<string, unknown>]> = [
      [
        `query Nested($n: Int!) { connections(limit: $n) { totalCount nodes { id name status application { name category { name slug } } syncs(limit: 3) { id status startedAt finishedAt errorMessage summaryJson } } } }`,
        { n: 5 },
      ],
      [
        `query F($skip: Boolean!) { a: connections(limit: 2) { nodes { ...C } } b: connections(limit: 2, offset: 2) { nodes { ...C name @skip(if: $skip) } } }
         fragment C on Connection { id metadata { region version } settings { syncInterval retryAttempts } ... on Connection { status } }`,
        { skip: true },
      ],
      [
        `query Filtered($f: SyncFilter, $since: DateTime) { syncs(filter: $f, limit: 5) { totalCount nodes { id status startedAt } } recent: syncs(filter: { startedAt: { gte: $since } }, limit: 2) { totalCount } }`,
        {
          f: { or: [{ status: { eq: 'failed' } }, { not: { errorMessage: { isNull: true } } }], and: [{ fileUrl: { isNull: false } }] },
          since: '2026-01-01T00:00:00Z',
        },
      ],
      [`{ connection(id: "${'con_00000000000000000000000000'}") { id name } }`, {}],
      [`{ sync(id: "not-an-id") { id } categories { __typename nodes { __typename name } } }`, {}],
      [`query V($n: Int!) { connections(limit: $n) { totalCount } }`, { n: 'many' }],
      [`query V($f: SyncFilter) { syncs(filter: $f) { totalCount } }`, { f: { status: { eq: 'NOPE' } } }],
      [`query V($n: Int!) { connections(limit: $n) { totalCount } }`, {}],
    ];
    for (const [source, variables] of cases) {
      const [jit, js] = await both(source, variables);
      expect({ source, jit }).toEqual({ source, jit: js });
    }
  });

  it('answers each REST route mutation alike when it is refused', async () => {
    const writes = routes.filter((route) => route.method !== 'GET');
    expect(writes.length).toBeGreaterThan(5);
    // Ids of nothing (NOT_FOUND from the resolvers of eight routes), and inputs that fail coercion: refusals
    // change nothing, so both executors meet the same state.
    const variables = {
      id: 'con_00000000000000000000000000',
      connectionId: 'con_00000000000000000000000000',
      delivery_id: 'msg_00000000000000000000000000',
      report: { status: 'success', summary: {} },
      input: { name: 'refused' },
    };
    let notFound = 0;
    for (const route of writes) {
      const [jit, js] = await both(print(route.document), variables);
      expect({ route: `${route.method} ${route.path}`, jit }).toEqual({ route: `${route.method} ${route.path}`, jit: js });
      if (jit.includes('"NOT_FOUND"')) notFound += 1;
    }
    expect(notFound).toBeGreaterThanOrEqual(7);
  });

  it('compiles a client document at its second run, never a client mutation or a subscription; the server’s own mutations at once', () => {
    const fresh = new CompiledExecution(schema);
    const query = parse('{ categories { totalCount } }');
    expect(fresh.executorFor(query, undefined)).toBeNull();
    expect(fresh.executorFor(query, undefined)).not.toBeNull();
    const mutation = parse('mutation { deleteConnection(id: "con_00000000000000000000000000") { id } }');
    expect(fresh.executorFor(mutation, undefined)).toBeNull();
    expect(fresh.executorFor(mutation, undefined)).toBeNull();
    expect(
      fresh.executorFor(parse('mutation { deleteConnection(id: "con_00000000000000000000000000") { id } }'), undefined, true),
    ).not.toBeNull();
    const subscription = parse(`subscription { syncChanged(connectionId: "${'con_00000000000000000000000000'}") { id } }`);
    expect(fresh.executorFor(subscription, undefined, true)).toBeNull();
    // Introspection runs as before: the compiled form would read the shadow schema with its extra scalar.
    expect(fresh.executorFor(parse('{ __schema { types { name } } }'), undefined, true)).toBeNull();
    expect(fresh.executorFor(parse('{ categories { __typename totalCount } }'), undefined, true)).not.toBeNull();
  });
});
