// The OpenAPI document is generated from the route table; this checks that it is a valid OpenAPI 3.1
// document, that it lists exactly the routes served, and that real responses match its schemas.
import { dereference, validate } from '@readme/openapi-parser';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../src/prefixed-ids.js';
import { routes } from '../src/rest/routes.js';
import { databaseKinds } from './fixtures/databases.js';
import { createTestGateway, type TestGateway } from './fixtures/gateway.js';
import { BASE, ORIGIN, rest } from './fixtures/rest.js';

const addFormats = addFormatsModule.default;
type Json = Record<string, any>;

describe.each(databaseKinds)('OpenAPI document on %s', (kind) => {
  let t: TestGateway;
  let document: Json;
  let resolved: Json;
  const ajv = new Ajv2020({ allErrors: true, strict: true, strictTypes: false });
  addFormats(ajv);
  const validators = new Map<unknown, ValidateFunction>();

  /** Validates a real response against the schema the document gives for its operation and status. */
  function expectMatchesDocument(path: string, method: string, response: { status: number; body: unknown; request: string }) {
    const operation = resolved.paths[path]?.[method];
    expect(operation, `${method} ${path} is documented`).toBeDefined();
    const declared = operation.responses[String(response.status)];
    expect(declared, `${response.request}: status ${response.status} is documented`).toBeDefined();
    const schema = declared.content['application/json'].schema;
    let check = validators.get(schema);
    if (!check) {
      check = ajv.compile(schema);
      validators.set(schema, check);
    }
    const valid = check(response.body);
    expect(
      valid,
      `${response.request} → ${response.status}: ${ajv.errorsText(check.errors)}\n${JSON.stringify(response.body).slice(0, 500)}`,
    ).toBe(true);
  }

  beforeAll(async () => {
    t = await createTestGateway(kind);
    const response = await t.gateway.fetch(`${ORIGIN}/api/v1/openapi.json`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('application/json');
    document = (await response.json()) as Json;
    resolved = (await dereference(structuredClone(document) as never)) as Json;
  });
  afterAll(() => t?.dispose());

  it('is a valid OpenAPI 3.1 document, served without credentials', async () => {
    expect(document.openapi).toBe('3.1.0');
    expect(document.servers).toEqual([{ url: '/', description: expect.any(String) }]);
    expect(document.info.license).toEqual({ name: 'MIT', identifier: 'MIT' });
    expect(document.info.contact.name).toEqual(expect.any(String));
    const result = await validate(structuredClone(document) as never);
    expect(result.valid, JSON.stringify(result, null, 2)).toBe(true);
    expect(result.warnings).toEqual([]);
  });

  it("shows each error status with its own code and an example body that fits the status's schema", () => {
    const seen = new Set<string>();
    for (const [name, response] of Object.entries(resolved.components.responses as Record<string, Json>)) {
      const { schema, example } = response.content['application/json'];
      const check = ajv.compile(schema);
      expect(check(example), `${name}: ${ajv.errorsText(check.errors)}`).toBe(true);
      // The code the server answers that status with (the schema allows that one only), named in the description.
      expect(schema.properties.error.properties.code.enum, name).toEqual([example.error.code]);
      expect(response.description.startsWith(`${example.error.code}: `), name).toBe(true);
      expect(example.error.docs).toMatch(new RegExp(`/docs/errors/${example.error.code}$`));
      seen.add(example.msg);
    }
    // Each status its own message: not one generic body shown everywhere.
    expect(seen.size).toBe(Object.keys(resolved.components.responses).length);
  });

  it('documents exactly the routes of the route table, and the sign-in endpoints', () => {
    const documented = Object.entries(document.paths as Json).flatMap(([path, operations]) =>
      Object.keys(operations as Json).map((method) => `${method.toUpperCase()} ${path}`),
    );
    const signIn = [
      'POST /api/v1/auth/login',
      'POST /api/v1/auth/logout',
      'GET /api/v1/auth/invitations/{code}',
      'POST /api/v1/auth/invitations/{code}',
      'GET /api/v1/auth/sso/start',
      'GET /api/v1/auth/sso/callback',
    ];
    // Each route; each streamed route's stream at its own path; the sync list also at the spec's `/syncs/`.
    const expected = [
      ...routes.map((r) => `${r.method} ${r.path}`),
      ...routes.flatMap((r) => (r.stream ? [`GET ${r.path}/events`] : [])),
      `GET ${BASE}/syncs/`,
      ...signIn,
    ];
    expect(documented.sort()).toEqual(expected.sort());
    const ids = documented.map((key) => {
      const [method, path] = key.split(' ');
      return document.paths[path!][method!.toLowerCase()].operationId;
    });
    expect(new Set(ids).size).toBe(expected.length);
  });

  it('lists the query parameters each list endpoint accepts', () => {
    const names = (path: string) => (document.paths[path].get.parameters as Json[]).map((p) => p.name);
    expect(names(`${BASE}/syncs`)).toEqual(
      expect.arrayContaining([
        'connection_id',
        'limit',
        'offset',
        'page',
        'select',
        'search',
        'order',
        'status',
        'started_at',
        'finished_at',
        'error_message',
      ]),
    );
    expect(names(`${BASE}/syncs`)).not.toContain('summary');
    expect(names(`${BASE}/connected`)).toEqual(expect.arrayContaining(['category_id', 'name', 'status', 'via', 'slug']));
    expect(names(`${BASE}/connected/{id}`)).toEqual(['id']);
    const limit = (document.paths[`${BASE}/syncs`].get.parameters as Json[]).find((p) => p.name === 'limit');
    expect(limit?.schema).toMatchObject({ minimum: 1, maximum: 100, default: 10 });
    const syncParams = document.paths[`${BASE}/syncs`].get.parameters as Json[];
    const schemaOf = (name: string) => syncParams.find((p) => p.name === name)?.schema;
    expect(schemaOf('page')).toMatchObject({ minimum: 1, maximum: 10_001 });
    expect(schemaOf('search')).toMatchObject({ minLength: 1, maxLength: 200 });
    expect(document.paths[`${BASE}/syncs`].get['x-mutually-exclusive-parameters']).toEqual([
      ['offset', 'page'],
      ['cursor', 'offset'],
      ['cursor', 'page'],
    ]);
    expect(schemaOf('cursor')).toMatchObject({ type: 'string' });
    const ok = document.paths[`${BASE}/syncs`].get.responses['200'];
    expect(Object.keys(ok.content)).toEqual(['application/json']);
    expect(Object.keys(document.paths[`${BASE}/syncs`].get['x-export-media-types'])).toEqual(['application/x-ndjson', 'text/csv']);
    expect(ok.headers.Link.description).toMatch(/rel="next"/);
    const grammar = (name: string) => new RegExp(schemaOf(name).pattern, 'u');
    expect(['eq.failed', 'not.in.(failed,success)', 'is.null'].map((v) => [v, grammar('status').test(v)])).toEqual([
      ['eq.failed', true],
      ['not.in.(failed,success)', true],
      ['is.null', false],
    ]);
    expect(['ilike.*timeout*', 'like.a*b', 'gte.2026-01-01T00:00:00Z', 'is.null'].map((v) => grammar('error_message').test(v))).toEqual([
      true,
      false,
      true,
      true,
    ]);
    expect(['started_at.desc,id', 'id,status,id.desc', 'summary'].map((v) => grammar('order').test(v))).toEqual([true, false, false]);
    expect(['id, status', 'id,nope'].map((v) => grammar('select').test(v))).toEqual([true, false]);
    expect(document.paths[`${BASE}/syncs/{id}`].get.parameters[0].schema).toMatchObject({ maxLength: 64 });
  });

  it('real responses of every endpoint match the documented schemas', async () => {
    const token = t.tenants.demo.adminToken;
    const call = (path: string, method = 'GET', auth = token) => rest(t.gateway, path, { method, token: auth });
    const connections = await call(`${BASE}/connected`);
    const syncs = await call(`${BASE}/syncs`);
    const available = await call(`${BASE}/available`);
    const connectionId = connections.body.data[0].id;
    const cases: Array<[string, string, Awaited<ReturnType<typeof call>>]> = [
      [`${BASE}/categories`, 'get', await call(`${BASE}/categories`)],
      [`${BASE}/available`, 'get', available],
      [`${BASE}/available`, 'get', await call(`${BASE}/available?limit=2&page=2&order=name.desc`)],
      [`${BASE}/available/{id}`, 'get', await call(`${BASE}/available/${available.body.data[0].id}`)],
      [`${BASE}/connected`, 'get', connections],
      [`${BASE}/connected`, 'get', await call(`${BASE}/connected?status=eq.active&limit=2`)],
      [`${BASE}/connected/{id}`, 'get', await call(`${BASE}/connected/${connectionId}`)],
      [`${BASE}/syncs`, 'get', syncs],
      [`${BASE}/syncs`, 'get', await call(`${BASE}/syncs?status=not.eq.failed&order=started_at.asc&limit=100`)],
      [`${BASE}/syncs/{id}`, 'get', await call(`${BASE}/syncs/${syncs.body.data[0].id}`)],
      // Errors
      [`${BASE}/syncs`, 'get', await call(`${BASE}/syncs?limit=500`)],
      [`${BASE}/syncs`, 'get', await call(`${BASE}/syncs`, 'GET', '')],
      [`${BASE}/syncs/{id}`, 'get', await call(`${BASE}/syncs/${newId('syn')}`)],
      [`${BASE}/connected/{id}`, 'delete', await call(`${BASE}/connected/${connectionId}`, 'DELETE', t.tenants.demo.readerToken)],
      [`${BASE}/connected/{id}`, 'delete', await call(`${BASE}/connected/${connectionId}`, 'DELETE')],
      [`${BASE}/connected/{id}`, 'delete', await call(`${BASE}/connected/${connectionId}`, 'DELETE')],
    ];
    expect(cases.map(([, , r]) => r.status)).toEqual([200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 400, 401, 404, 403, 200, 404]);
    for (const [path, method, response] of cases) expectMatchesDocument(path, method, response);
  });

  it('answers of the write routes match the documented schemas, request bodies included', async () => {
    const admin = t.tenants.demo.adminToken;
    const call = async (method: string, path: string, body: unknown, contentType = 'application/json') => {
      const response = await t.gateway.fetch(`${ORIGIN}${path}`, {
        method,
        headers: { authorization: `Token ${admin}`, 'content-type': contentType },
        body: JSON.stringify(body),
      });
      const text = await response.text();
      return { status: response.status, body: text ? JSON.parse(text) : null, request: `${method} ${path}` };
    };
    const applicationId = (await rest(t.gateway, `${BASE}/available?limit=1&select=id`, { token: admin })).body.data[0].id;
    const bodySchema = (path: string, method: string, type = 'application/json') =>
      ajv.compile(resolved.paths[path][method].requestBody.content[type].schema);
    const createBody = { application_id: applicationId, name: `openapi ${kind} ${Date.now()}` };
    expect(bodySchema(`${BASE}/connected`, 'post')(createBody)).toBe(true);
    expect(bodySchema(`${BASE}/connected`, 'post')({ ...createBody, colour: 'red' })).toBe(false);
    const created = await call('POST', `${BASE}/connected`, createBody);
    expectMatchesDocument(`${BASE}/connected`, 'post', created);
    const id = created.body.data.id;
    expectMatchesDocument(
      `${BASE}/connected/{id}`,
      'patch',
      await call('PATCH', `${BASE}/connected/${id}`, { description: 'x' }, 'application/merge-patch+json'),
    );
    expectMatchesDocument(`${BASE}/connected/{id}`, 'patch', await call('PATCH', `${BASE}/connected/${id}`, { status: 'error' }));
    const queued = await call('POST', `${BASE}/syncs`, { connection_id: id });
    expectMatchesDocument(`${BASE}/syncs`, 'post', queued);
    expectMatchesDocument(`${BASE}/syncs`, 'post', await call('POST', `${BASE}/syncs`, { connection_id: id }));
    expectMatchesDocument(`${BASE}/syncs/claim`, 'post', await call('POST', `${BASE}/syncs/claim`, { connection_id: id }));
    expectMatchesDocument(
      `${BASE}/syncs/{id}`,
      'patch',
      await call('PATCH', `${BASE}/syncs/${queued.body.data.id}`, { summary: { processed: 1 } }),
    );
    expectMatchesDocument(`${BASE}/connected`, 'post', await call('POST', `${BASE}/connected`, createBody, 'text/plain'));
    const nothing = await call('POST', `${BASE}/syncs/claim`, { connection_id: id });
    expect(nothing.status).toBe(204);
    expect(resolved.paths[`${BASE}/syncs/claim`].post.responses['204']).toBeDefined();
  });

  it('serves a human-readable reference page and its assets without a CDN', async () => {
    const page = await t.gateway.fetch(`${ORIGIN}/api/v1/docs`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toContain('text/html');
    const html = await page.text();
    expect(html).toContain('/api/v1/openapi.json');
    const assets = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    expect(assets.length).toBeGreaterThanOrEqual(3);
    for (const asset of assets) {
      expect(/^\/(api\/v1\/docs|assets)\//.test(asset), `${asset} is served locally`).toBe(true);
      const response = await t.gateway.fetch(`${ORIGIN}${asset}`);
      expect(response.status, asset).toBe(200);
      expect((await response.arrayBuffer()).byteLength).toBeGreaterThan(100);
    }
    expect((await t.gateway.fetch(`${ORIGIN}/api/v1/docs/index.html`)).status).toBe(404);
    expect((await t.gateway.fetch(`${ORIGIN}/api/v1/openapi.json`, { method: 'POST' })).status).toBe(405);
  });
});
