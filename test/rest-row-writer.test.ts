// A REST list's items are written from its rows (src/rest/row-writer.ts), not executed field by field: they
// must be what executing the route's own document gives. For every list route the writer serves, the REST
// answer's items are compared with the items of the same document and variables executed over /graphql, with
// all fields, with a few (the others' @include false), filtered and ordered; and the REST answer must not have
// fallen back to execution, which would show as its statements run twice (and, under the suite's
// ROW_WRITER_FALLBACK=refuse, as a 500).
import { print } from 'graphql';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { schema } from '../src/graphql/schema.js';
import { compileRoutes, type CompiledRoute } from '../src/rest/compile-routes.js';
import { withoutNullMembers } from '../src/rest/envelope.js';
import { listVariables } from '../src/rest/list-variables.js';
import { parseListQuery, withFilterFormParams } from '../src/rest/query-params.js';
import { routes } from '../src/rest/routes.js';
import { databaseKinds } from './fixtures/databases.js';
import { createTestGateway, gatewayOver, graphql, SEED_NOW, type TestGateway } from './fixtures/gateway.js';
import { seedDemoMembersAndWebhooks } from '../src/seed/demo-members-webhooks.js';
import { ORIGIN, rest, restOk } from './fixtures/rest.js';

type Json = Record<string, unknown>;

const compiled = compileRoutes(schema, routes);
const listRoutes = compiled.filter((route) => route.spec.response.kind === 'list');
const written = listRoutes.filter((route) => route.rowWriter !== null);

/** Query strings each route is asked with: every field, two fields, and (where it has them) a filter and an order. */
function questions(route: CompiledRoute): string[] {
  const names = route.fields.map((field) => field.name);
  const sortable = route.fields.find((field) => field.orderValue !== null && field.name !== 'id');
  return [
    '',
    `select=${names.slice(0, 2).join(',')}`,
    `select=${names.at(-1)},${names[0]}&limit=3`,
    ...(sortable ? [`order=${sortable.name}.desc&limit=5`] : []),
  ];
}

describe('the REST lists written from their rows', () => {
  // The lists of objects plugin-prisma resolves in its select mode (their fields take more than the row): the
  // members, and the OAuth applications and clients, which only admins list, a page now and then.
  const executed = new Set(['listMembers', 'listOAuthApplications', 'listOAuthClients']);
  it('are every list route but those of objects resolved in select mode', () => {
    expect(written.map((route) => route.spec.operationId).sort()).toEqual(
      listRoutes
        .map((route) => route.spec.operationId)
        .filter((id) => !executed.has(id))
        .sort(),
    );
  });
});

describe.each(databaseKinds)('REST list items written from rows match execution (%s)', (kind) => {
  let t: TestGateway;
  let token: string;
  let statements = 0;

  beforeAll(async () => {
    t = await createTestGateway(kind);
    token = t.tenants.demo.adminToken;
    // Webhook endpoints with deliveries, and members, as the demo of a new server has them.
    await seedDemoMembersAndWebhooks(t.db, t.tenants.demo.id, SEED_NOW);
    const raw = t.db.raw;
    const query = raw.query.bind(raw);
    raw.query = ((text: string, values?: unknown[]) => {
      statements += 1;
      return query(text, values);
    }) as typeof raw.query;
  });
  afterAll(() => t?.dispose());

  /**
   * The fewest statements `run` made in three runs, and its last result. The count is of every statement of the
   * database, so the gateway's own background work (a timer firing in between) can add one to a run; it never
   * takes one away, and a fallback runs a page's statements twice in every run.
   */
  async function fewestStatements<T>(run: () => Promise<T>): Promise<{ statements: number; result: T }> {
    let fewest = Number.POSITIVE_INFINITY;
    let result: T | undefined;
    for (let attempt = 0; attempt < 3; attempt++) {
      statements = 0;
      result = await run();
      fewest = Math.min(fewest, statements);
    }
    return { statements: fewest, result: result as T };
  }

  /** The path of a route, its `{id}` that of an item of the list above it whose own list has items (a webhook's deliveries). */
  async function pathOf(route: CompiledRoute): Promise<string> {
    if (route.pathParams.length === 0) return route.spec.path;
    const parent = route.spec.path.slice(0, route.spec.path.lastIndexOf('/{'));
    for (const item of (await restOk<{ data: Json[] }>(t.gateway, parent, token)).data) {
      const path = route.spec.path.replace('{id}', encodeURIComponent(String(item.id)));
      if ((await restOk<{ data: Json[] }>(t.gateway, path, token)).data.length > 0) return path;
    }
    throw new Error(`no item of ${parent} has items at ${route.spec.path}`);
  }

  it('hands a page it cannot write back to execution, counted and logged once per route; refused under test', async () => {
    // A null inside a list of non-null strings: the database allows it, the schema does not.
    const [victim] = await t.db.raw.query<{ id: string }>(
      'SELECT id FROM connections WHERE tenant_id = $1 AND deleted_at IS NULL ORDER BY name, id LIMIT 1',
      [t.tenants.demo.id],
    );
    await t.db.raw.query("UPDATE connections SET keywords = ARRAY['kept', NULL] WHERE id = $1", [victim!.id]);
    // This test asks for the fallback: a gateway that answers it by execution, as a server does by default.
    const lines: Json[] = [];
    const executing = gatewayOver(t.db, {
      config: { ROW_WRITER_FALLBACK: 'execute' },
      logger: pino({ level: 'warn' }, { write: (line: string) => void lines.push(JSON.parse(line) as Json) }),
    });
    try {
      const route = written.find((candidate) => candidate.spec.operationId === 'listConnections')!;
      const url = `${route.spec.path}?limit=5`;
      await rest(executing, url, { token });
      statements = 0;
      const viaRest = await rest<{ error?: { code: string } }>(executing, url, { token });
      const restStatements = statements;
      const document = print(route.spec.document);
      const variables = { limit: 5 };
      await graphql(t.gateway, document, { token, variables });
      statements = 0;
      const executed = await graphql(t.gateway, document, { token, variables });
      expect(executed.body.errors?.length).toBeGreaterThan(0);
      // Executed twice: once with the rows handed over, once whole.
      expect(restStatements).toBe(2 * statements);
      expect(viaRest.status).not.toBe(200);
      expect(viaRest.body.error?.code).toBe(executed.body.errors![0]!.extensions?.code);
      // Counted each time, by route and reason; logged the first time only.
      const metrics = await (await executing.fetch(`${ORIGIN}/metrics`)).text();
      expect(metrics).toContain(`rest_row_writer_fallbacks_total{route="${route.spec.path}",reason="null-in-non-null"} 2`);
      const logged = lines.filter((line) => line.route === route.spec.path && line.reason === 'null-in-non-null');
      expect(logged).toHaveLength(1);
      // The suite's gateways (ROW_WRITER_FALLBACK=refuse) answer it 500: a fallback no test asks for fails the test.
      const refused = await rest<{ error?: { code: string } }>(t.gateway, url, { token });
      expect(refused.status).toBe(500);
      expect(refused.body.error?.code).toBe('INTERNAL');
    } finally {
      await executing.dispose();
      await t.db.raw.query("UPDATE connections SET keywords = ARRAY['restored'] WHERE id = $1", [victim!.id]);
    }
  });

  it.each(written.map((route) => [route.spec.operationId, route] as const))('%s', async (_id, route) => {
    const path = await pathOf(route);
    const list = route.spec.response.kind === 'list' ? route.spec.response.list : null;
    const omit = new Set(route.spec.omitNullMembers ?? []);
    let compared = 0;
    for (const question of questions(route)) {
      const params = new URLSearchParams(question);
      const parsed = parseListQuery(params, withFilterFormParams(route.resource!, params));
      if (!parsed.ok) throw new Error(`${question}: ${JSON.stringify(parsed.problems)}`);
      const variables: Json = { ...listVariables(route, list!, parsed.query) };
      // The path's values as runRoute takes them: the route's own pattern, its parameters in order.
      const values = route.pathPattern.exec(path)!.slice(1);
      for (const [index, param] of route.pathParams.entries()) variables[param] = decodeURIComponent(values[index]!);
      // Warm both ways (credential cache, statement names), then count each one's statements.
      const url = `${path}${question ? `?${question}` : ''}`;
      await restOk(t.gateway, url, token);
      const rest = await fewestStatements(() => restOk<{ data: Json[] }>(t.gateway, url, token));
      const viaRest = rest.result;
      const document = print(route.spec.document);
      await graphql(t.gateway, document, { token, variables, expectOk: true });
      const execution = await fewestStatements(() => graphql(t.gateway, document, { token, variables, expectOk: true }));
      const executed = execution.result.body.data![route.rootKey] as { nodes: Json[] };
      expect(rest.statements, `${url}: statements (a fallback would run them twice)`).toBe(execution.statements);
      // REST answers the members in the order `select` names them; GraphQL in the document's.
      const order = parsed.query.select;
      const items = executed.nodes
        .map((node) => withoutNullMembers(node, omit))
        .map((item) => (order ? Object.fromEntries(order.map((name) => [name, item[name]])) : item));
      expect(JSON.stringify(viaRest.data), url).toBe(JSON.stringify(items));
      compared += viaRest.data.length;
    }
    expect(compared, `${route.spec.path} answered items to compare`).toBeGreaterThan(0);
  });
});
