// Property test driven by the OpenAPI document alone: requests are generated from the parameter schemas the
// document publishes (patterns, bounds, enums, x-mutually-exclusive-parameters), sent to the real REST surface,
// and every answer must be one the document allows (no 400 for a request it allows) and match the response
// schema it declares for that status.
import { dereference } from '@readme/openapi-parser';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DatabaseKind } from '../src/db/client.js';
import { databaseKinds } from './fixtures/databases.js';
import { createTestGateway, gatewayOver, type TestGateway } from './fixtures/gateway.js';
import type { Gateway } from '../src/http/yoga.js';
import { ORIGIN, rest } from './fixtures/rest.js';

type Json = Record<string, any>;

/**
 * Cases per operation and database: 500 per operation in CI (FUZZ_HEAVY=1) over both databases, PostgreSQL taking
 * the larger share (a request costs this process several times more CPU on PGlite, whose database runs in it as Wasm).
 */
function runsPerOperation(kind: DatabaseKind): number {
  if (!process.env.FUZZ_HEAVY) return 100;
  return kind === 'pglite' && databaseKinds.length > 1 ? 150 : 350;
}
const MAX_URL_LENGTH = 8 * 1024;

/**
 * fast-check generates from a regular expression without lookaheads; a pattern that opens with one (`order`'s
 * "each field once") is generated without it and then filtered by the whole pattern.
 */
function generationPattern(pattern: string): string {
  if (!pattern.startsWith('^(?!')) return pattern;
  let depth = 0;
  for (let i = 1; i < pattern.length; i += 1) {
    const ch = pattern[i];
    if (ch === '\\') {
      i += 1;
      continue;
    }
    if (ch === '(') depth += 1;
    if (ch === ')') {
      depth -= 1;
      if (depth === 0) return `^${pattern.slice(i + 1)}`;
    }
  }
  throw new Error(`unbalanced lookahead in ${pattern}`);
}

/**
 * Values a schema allows, by the schema's own words only. Built once per schema: fast-check parses a pattern
 * when its arbitrary is made, and the requests' arbitraries are chained, so they are made again for every case.
 */
const arbitraries = new Map<Json, fc.Arbitrary<string>>();
function valuesOf(schema: Json): fc.Arbitrary<string> {
  let arbitrary = arbitraries.get(schema);
  if (!arbitrary) {
    arbitrary = arbitraryOf(schema);
    arbitraries.set(schema, arbitrary);
  }
  return arbitrary;
}

function arbitraryOf(schema: Json): fc.Arbitrary<string> {
  if (schema.anyOf) return fc.oneof(...(schema.anyOf as Json[]).map(valuesOf));
  if (schema.type === 'integer') {
    return fc.integer({ min: schema.minimum ?? -(2 ** 31), max: schema.maximum ?? 2 ** 31 - 1 }).map(String);
  }
  if (schema.type === 'string') {
    const full = schema.pattern ? new RegExp(schema.pattern, 'u') : null;
    const base = full ? fc.stringMatching(new RegExp(generationPattern(schema.pattern), 'u')) : fc.string({ unit: 'grapheme' });
    const length = (s: string) => [...s].length;
    return base.filter(
      (s) => (full === null || full.test(s)) && length(s) >= (schema.minLength ?? 0) && length(s) <= (schema.maxLength ?? Infinity),
    );
  }
  throw new Error(`no generator for parameter schema ${JSON.stringify(schema)}`);
}

describe.each(databaseKinds)('requests the OpenAPI document allows, on %s', (kind) => {
  const RUNS_PER_OPERATION = runsPerOperation(kind);
  let t: TestGateway;
  // Thousands of requests with one token: rate limiting off, the rest of the pipeline as served.
  let gateway: Gateway;
  let resolved: Json;
  const realIds: Record<string, string[]> = {};

  beforeAll(async () => {
    t = await createTestGateway(kind);
    gateway = gatewayOver(t.db, { config: { RATE_LIMIT_PER_MINUTE: 0 } });
    const response = await gateway.fetch(`${ORIGIN}/api/v1/openapi.json`);
    resolved = (await dereference((await response.json()) as never)) as Json;
    const token = t.tenants.demo.adminToken;
    for (const resource of ['available', 'connected', 'syncs']) {
      const list = await rest(gateway, `/api/v1/integrations/${resource}?limit=5&select=id`, { token, expectStatus: 200 });
      realIds[resource] = list.body.data.map((item: { id: string }) => item.id);
    }
  });
  afterAll(() => t?.dispose());

  /** The GET operations that answer JSON (an event stream never ends, so it is not one request to check). */
  function operations(): Array<{ path: string; operation: Json }> {
    return Object.entries(resolved.paths as Json).flatMap(([path, methods]) => {
      const get = (methods as Json).get as Json | undefined;
      return get?.responses?.['200']?.content?.['application/json'] ? [{ path, operation: get }] : [];
    });
  }

  it('documents every GET operation with parameter schemas a generator can follow', () => {
    const all = operations();
    expect(all.length).toBeGreaterThanOrEqual(7);
    for (const { operation } of all) {
      for (const parameter of (operation.parameters ?? []) as Json[]) expect(() => valuesOf(parameter.schema)).not.toThrow();
    }
  });

  it('answers every generated request as documented, never 400, with a body that matches the document', { timeout: 300_000 }, async () => {
    const token = t.tenants.demo.adminToken;
    // Not vacuous: parameters are sent, and lists answer with items.
    let parametersSent = 0;
    let nonEmptyLists = 0;
    for (const { path, operation } of operations()) {
      const parameters = (operation.parameters ?? []) as Json[];
      const exclusive = (operation['x-mutually-exclusive-parameters'] ?? []) as string[][];
      // A cursor is only ever one the server issued (x-server-issued): its shape alone is refused.
      const query = parameters.filter((p) => p.in === 'query' && !p['x-server-issued']);
      const pathParams = parameters.filter((p) => p.in === 'path');
      const resource = path.split('/')[4] ?? '';
      const request = fc.record({
        // A few parameters at a time, so that lists still answer items and their bodies get checked too.
        query: fc
          .subarray(query, { maxLength: Math.min(3, query.length) })
          .chain((chosen) => fc.record(Object.fromEntries(chosen.map((p) => [p.name, valuesOf(p.schema)])))),
        path: fc.record(
          Object.fromEntries(
            pathParams.map((p) => [
              p.name,
              realIds[resource]?.length ? fc.oneof(valuesOf(p.schema), fc.constantFrom(...realIds[resource]!)) : valuesOf(p.schema),
            ]),
          ),
        ),
      });
      await fc.assert(
        fc.asyncProperty(request, async ({ query: values, path: ids }) => {
          const chosen: Record<string, string> = { ...(values as Record<string, string>) };
          // One parameter of each mutually exclusive group.
          for (const group of exclusive) for (const name of group.filter((n) => n in chosen).slice(1)) delete chosen[name];
          let url = path;
          for (const [name, value] of Object.entries(ids as Record<string, string>))
            url = url.replace(`{${name}}`, encodeURIComponent(value));
          const search = new URLSearchParams(chosen).toString();
          const target = search ? `${url}?${search}` : url;
          fc.pre(target.length <= MAX_URL_LENGTH);
          const response = await rest(gateway, target, { token });
          parametersSent += Object.keys(chosen).length;
          if (Array.isArray(response.body?.data) && response.body.data.length > 0 && pathParams.length === 0) nonEmptyLists += 1;
          const allowed = pathParams.length > 0 ? [200, 404] : [200];
          // Reading an invitation spends this address's invitation attempts (INVITATION_ATTEMPTS_PER_ADDRESS),
          // whatever the code: past them the document's 429 is the answer.
          if (path.startsWith('/api/v1/auth/invitations/')) allowed.push(429);
          // The demo organization has no identity provider until an admin sets one up.
          if (path.endsWith('/identity-provider')) allowed.push(404);
          if (!allowed.includes(response.status)) {
            expect.fail(`${target} → ${response.status} ${JSON.stringify(response.body).slice(0, 400)}`);
          }
          // The body against the operation's documented schema (with `select`, its selection schema): the
          // contract check every test's responses go through (test/fixtures/contract.ts) did it already.
        }),
        { numRuns: RUNS_PER_OPERATION, seed: Number(process.env.FUZZ_SEED ?? Date.now() % 2 ** 31) },
      );
    }
    expect(parametersSent).toBeGreaterThan(RUNS_PER_OPERATION * 2);
    expect(nonEmptyLists).toBeGreaterThan(RUNS_PER_OPERATION / 4);
  });
});
