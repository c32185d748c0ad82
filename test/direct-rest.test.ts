// REST requests are served directly (src/http/direct-rest.ts), without yoga's request pipeline. Every answer must be
// the one yoga's pipeline gives: the same status, headers and body for the same request, in-process and over
// node:http, successes and refusals alike; requests the direct path does not take go to yoga untouched.
import type { Server } from 'node:http';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../src/http/yoga.js';
import { databaseKinds } from './fixtures/databases.js';
import {
  capturingLogger,
  createTestGateway,
  gatewayOver,
  JWT_TEST_SECRET,
  leaveMidBody,
  listenOnLoopback,
  type LogLine,
  type TestGateway,
} from './fixtures/gateway.js';
import { BASE, ORIGIN } from './fixtures/rest.js';

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Headers that differ between two answers by nature: the request id (also in error bodies), the date, the budget's reset second. */
const VARYING_HEADERS = new Set(['x-request-id', 'date', 'ratelimit-reset', 'connection', 'keep-alive']);

async function answerOf(response: Response, origin: string): Promise<Answer> {
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    // A list page's Link names the server it came from.
    if (!VARYING_HEADERS.has(name)) headers[name] = name === 'link' ? value.replaceAll(origin, 'ORIGIN') : value;
  });
  const body = (await response.text()).replace(/req_\d+/g, 'req_…').replaceAll(origin, 'ORIGIN');
  return { status: response.status, headers, body };
}

describe.each(databaseKinds)('REST requests served directly on %s', (kind) => {
  let t: TestGateway;
  let direct: Gateway;
  let viaYoga: Gateway;
  let paths: Array<[label: string, path: string, authorization: string | null]>;

  beforeAll(async () => {
    t = await createTestGateway(kind);
    // Rate limits on, so the budget headers are compared too; each gateway counts its own requests.
    direct = gatewayOver(t.db, { config: { RATE_LIMIT_PER_MINUTE: 10_000 } });
    viaYoga = gatewayOver(t.db, { config: { RATE_LIMIT_PER_MINUTE: 10_000 }, directRest: false });
    const { demo, other } = t.tenants;
    const [connection] = await t.db.raw.query<{ id: string }>('SELECT id FROM connections WHERE tenant_id = $1 ORDER BY name LIMIT 1', [
      demo.id,
    ]);
    const [foreign] = await t.db.raw.query<{ id: string }>('SELECT id FROM connections WHERE tenant_id = $1 LIMIT 1', [other.id]);
    const [sync] = await t.db.raw.query<{ id: string }>('SELECT id FROM syncs WHERE tenant_id = $1 LIMIT 1', [demo.id]);
    const [application] = await t.db.raw.query<{ id: string }>('SELECT id FROM applications LIMIT 1');
    const jwt = await new SignJWT({ tenant_id: demo.id, role: 'reader' })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('direct-test')
      .setExpirationTime('1h')
      .sign(new TextEncoder().encode(JWT_TEST_SECRET));
    const token = `Token ${demo.readerToken}`;
    paths = [
      ['categories', '/categories', token],
      ['available list with select and order', '/available?select=id,name&order=name.desc&limit=5', token],
      ['one available application', `/available/${application!.id}`, token],
      ['connected list', '/connected', token],
      ['connected, filtered and searched', '/connected?status=eq.active&q=a&limit=3&page=1', token],
      ['one connection', `/connected/${connection!.id}`, token],
      ['one connection, trailing slash', `/connected/${connection!.id}/`, token],
      ["another tenant's connection", `/connected/${foreign!.id}`, token],
      ['an id that names nothing', '/connected/con_00000000000000000000000000', token],
      ['an id of another shape', '/connected/not-an-id', token],
      ['an id over 64 characters', `/connected/${'x'.repeat(70)}`, token],
      ['a percent-encoded id', `/connected/${encodeURIComponent('con_%zz')}`, token],
      ['sync list of a connection', `/syncs?connection_id=${connection!.id}`, token],
      [
        'sync list, filtered, ordered, selected',
        '/syncs?status=in.(failed,success)&started_at=gte.2026-01-01&order=started_at.asc&select=id,status,started_at&limit=4&offset=2',
        token,
      ],
      ['sync list, or and not', '/syncs?or=(status.eq.failed,error_message.is.null)&file_url=not.is.null', token],
      ['one sync', `/syncs/${sync!.id}`, token],
      ['a malformed filter', '/syncs?status=eq', token],
      ['an unknown field', '/syncs?colour=eq.red', token],
      ['an unknown operator', '/syncs?status=approx.failed', token],
      ['an oversized page', '/syncs?limit=101', token],
      ['a bad offset and a bad page together', '/connected?offset=2&page=3', token],
      ['NUL in a filter value', '/connected?name=eq.a%00b', token],
      ['query parameters on an item', `/connected/${connection!.id}?x=1`, token],
      ['JWT', '/connected?limit=2', `Bearer ${jwt}`],
      ['webhook endpoints as a reader (403)', '/webhooks', token],
      ['webhook endpoints as an admin', '/webhooks', `Token ${demo.adminToken}`],
      ['deliveries of an unknown endpoint', '/webhooks/whk_00000000000000000000000000/deliveries', `Token ${demo.adminToken}`],
      ['no credential', '/connected', null],
      ['a malformed credential', '/connected', 'Token nope'],
      ['an unknown token', '/connected', `Token igw_pat_000000000000_${'A'.repeat(43)}`],
      ['an unknown scheme', '/syncs', 'Basic dXNlcjpwYXNz'],
    ];
  });
  afterAll(async () => {
    await direct?.dispose();
    await viaYoga?.dispose();
    await t?.dispose();
  });

  it('takes the GET requests of REST routes and answers them as yoga does (in-process)', async () => {
    for (const [label, path, authorization] of paths) {
      const headers: Record<string, string> = authorization ? { authorization } : {};
      // The direct path must take each of these: otherwise both answers would come from yoga.
      const taken = direct.directRest!.fetch(new Request(`${ORIGIN}${BASE}${path}`, { headers }));
      expect(taken, label).not.toBeNull();
      const fromDirect = await answerOf(await taken!, ORIGIN);
      const fromYoga = await answerOf(await viaYoga.fetch(`${ORIGIN}${BASE}${path}`, { headers }), ORIGIN);
      expect({ label, ...fromDirect }).toEqual({ label, ...fromYoga });
    }
  });

  it('answers as yoga does over node:http, with node:http framing', async () => {
    const servers: Server[] = [];
    const listen = (gateway: Gateway) => listenOnLoopback(gateway, servers);
    try {
      const [directBase, yogaBase] = [await listen(direct), await listen(viaYoga)];
      for (const [label, path, authorization] of paths) {
        const headers: Record<string, string> = authorization ? { authorization } : {};
        const fromDirect = await answerOf(await fetch(`${directBase}${BASE}${path}`, { headers }), directBase);
        const fromYoga = await answerOf(await fetch(`${yogaBase}${BASE}${path}`, { headers }), yogaBase);
        expect({ label, ...fromDirect }).toEqual({ label, ...fromYoga });
      }
    } finally {
      for (const server of servers) server.close();
    }
  });

  it('takes the writes of REST routes and answers them as yoga does: refusals, and successes with their ids aside', async () => {
    const admin = `Token ${t.tenants.demo.adminToken}`;
    const reader = `Token ${t.tenants.demo.readerToken}`;
    const [application] = await t.db.raw.query<{ id: string }>('SELECT id FROM applications ORDER BY name LIMIT 1');
    const [finished] = await t.db.raw.query<{ id: string }>("SELECT id FROM syncs WHERE tenant_id = $1 AND status = 'success' LIMIT 1", [
      t.tenants.demo.id,
    ]);
    const json = (body: unknown) => ({ 'content-type': 'application/json', body: typeof body === 'string' ? body : JSON.stringify(body) });
    const writes: Array<
      [
        label: string,
        method: string,
        path: string,
        authorization: string,
        body: { 'content-type': string; body: string } | null,
        key?: string,
      ]
    > = [
      ['broken JSON', 'POST', '/connected', admin, json('{"application_id": ')],
      ['a body that is no object', 'POST', '/connected', admin, json('[1]')],
      ['another media type', 'POST', '/connected', admin, { 'content-type': 'text/plain', body: '{}' }],
      ['no body where one is needed', 'POST', '/connected', admin, null],
      ['unknown members and bad values', 'POST', '/connected', admin, json({ application_id: application!.id, colour: 'red', name: 5 })],
      ['an application that names nothing', 'POST', '/connected', admin, json({ application_id: 'app_nope' })],
      ['a reader may not write', 'POST', '/connected', reader, json({ application_id: application!.id })],
      ['PATCH of nothing', 'PATCH', '/connected/con_00000000000000000000000000', admin, json({ name: 'x' })],
      ['DELETE of nothing', 'DELETE', '/connected/con_00000000000000000000000000', admin, null],
      ['a run of nothing', 'POST', '/syncs', admin, json({ connection_id: 'con_00000000000000000000000000' })],
      ['a claim by a reader', 'POST', '/syncs/claim', reader, json({})],
      ['finishing a finished run', 'PATCH', `/syncs/${finished!.id}`, admin, json({ status: 'failed', summary: {} })],
      [
        'a new connection',
        'POST',
        '/connected',
        admin,
        json({ application_id: application!.id, name: 'Parity check', settings: { sync_interval: '2h' } }),
      ],
      [
        'a new connection, sent twice with a key',
        'POST',
        '/connected',
        admin,
        json({ application_id: application!.id, name: 'Parity key' }),
        'parity',
      ],
    ];
    const ids = /\b(con|syn|req)_[0-9a-z]{26}\b/g;
    for (const [label, method, path, authorization, body, key] of writes) {
      const init = (suffix: string): RequestInit => ({
        method,
        headers: {
          authorization,
          ...(body ? { 'content-type': body['content-type'] } : {}),
          ...(key ? { 'idempotency-key': `${key}-${suffix}` } : {}),
        },
        ...(body ? { body: body.body } : {}),
      });
      const taken = direct.directRest!.fetch(new Request(`${ORIGIN}${BASE}${path}`, init('direct')));
      expect(taken, label).not.toBeNull();
      const answers = [
        await answerOf(await taken!, ORIGIN),
        await answerOf(await viaYoga.fetch(`${ORIGIN}${BASE}${path}`, init('yoga')), ORIGIN),
      ];
      if (key) {
        answers.push(await answerOf(await direct.fetch(`${ORIGIN}${BASE}${path}`, init('direct')), ORIGIN));
        answers.push(await answerOf(await viaYoga.fetch(`${ORIGIN}${BASE}${path}`, init('yoga')), ORIGIN));
        expect(answers[2]!.headers['idempotent-replayed'], label).toBe('true');
      }
      // Both sides create in the same database: the second connection of a name gets its slug with a suffix.
      const [fromDirect, fromYoga, ...replays] = answers.map(({ headers: { 'content-length': _length, ...headers }, ...answer }) => ({
        ...answer,
        body: answer.body.replace(ids, '$1_…').replace(/"slug":"([a-z-]+?)(-\d+)?"/, '"slug":"$1"'),
        headers: { ...headers, ...(headers.location ? { location: headers.location.replace(ids, '$1_…') } : {}) },
      }));
      expect({ label, ...fromDirect }).toEqual({ label, ...fromYoga });
      if (key) expect({ label, ...replays[0] }).toEqual({ label, ...replays[1] });
    }
  });

  it('a client that leaves in the middle of a write body: logged as 499, no error line, nothing written', async () => {
    const lines: LogLine[] = [];
    const logged = gatewayOver(t.db, { logger: capturingLogger(lines) });
    const servers: Server[] = [];
    try {
      const base = await listenOnLoopback(logged, servers);
      const before = await t.db.raw.query<{ n: number }>('SELECT count(*)::int AS n FROM connections');
      await leaveMidBody(
        new URL(base),
        `${BASE}/connected`,
        { authorization: `Token ${t.tenants.demo.adminToken}` },
        '{"application_id": "app_',
      );
      const after = await fetch(`${base}${BASE}/connected?limit=1`, { headers: { authorization: `Token ${t.tenants.demo.readerToken}` } });
      expect(after.status).toBe(200);
      expect(await t.db.raw.query<{ n: number }>('SELECT count(*)::int AS n FROM connections')).toEqual(before);
      expect(lines.filter((line) => line.level >= 50)).toEqual([]);
      expect(lines.filter((line) => line.msg === 'request').map((line) => line.status)).toEqual([499, 200]);
    } finally {
      for (const server of servers) server.close();
      await logged.dispose();
    }
  });

  it('leaves every other request to yoga: HEAD and other methods, event streams, oversized requests, unknown paths, the docs', async () => {
    const [sync] = await t.db.raw.query<{ id: string }>('SELECT id FROM syncs WHERE tenant_id = $1 LIMIT 1', [t.tenants.demo.id]);
    const authorization = `Token ${t.tenants.demo.readerToken}`;
    const declined: Array<[string, RequestInit & { url: string }]> = [
      ['HEAD', { url: `${BASE}/connected`, method: 'HEAD', headers: { authorization } }],
      ['PUT', { url: `${BASE}/connected`, method: 'PUT', headers: { authorization } }],
      ['OPTIONS', { url: `${BASE}/connected`, method: 'OPTIONS', headers: { authorization } }],
      [
        'a body declared over the limit',
        {
          url: `${BASE}/syncs`,
          method: 'POST',
          headers: { authorization, 'content-type': 'application/json', 'content-length': String(2 * 1024 * 1024) },
        },
      ],
      ['an event stream', { url: `${BASE}/syncs/${sync!.id}`, headers: { authorization, accept: 'text/event-stream' } }],
      ['an unknown path', { url: `${BASE}/nothing`, headers: { authorization } }],
      ['a path no GET route has', { url: `${BASE}/webhooks/deliveries/x/y`, headers: { authorization } }],
      ['the OpenAPI document', { url: '/api/v1/openapi.json' }],
      ['GraphQL', { url: '/graphql?query=%7B__typename%7D' }],
      ['health', { url: '/healthz' }],
      ['a URL over the limit', { url: `${BASE}/connected?q=${'a'.repeat(9000)}`, headers: { authorization } }],
    ];
    for (const [label, { url, ...init }] of declined) {
      expect({ label, taken: direct.directRest!.fetch(new Request(`${ORIGIN}${url}`, init)) !== null }).toEqual({ label, taken: false });
    }
    // And through the gateway those still get yoga's answers.
    expect((await direct.fetch(`${ORIGIN}${BASE}/connected?q=${'a'.repeat(9000)}`, { headers: { authorization } })).status).toBe(414);
    expect((await direct.fetch(`${ORIGIN}${BASE}/connected`, { method: 'PUT', headers: { authorization } })).status).toBe(405);
  });

  it('counts its requests in the metrics and its operations under the rest surface', async () => {
    const metrics = gatewayOver(t.db, { config: { RATE_LIMIT_PER_MINUTE: 0 } });
    try {
      const headers = { authorization: `Token ${t.tenants.demo.readerToken}` };
      for (let i = 0; i < 3; i++)
        expect((await metrics.directRest!.fetch(new Request(`${ORIGIN}${BASE}/categories`, { headers })))!.status).toBe(200);
      const text = await (await metrics.fetch(`${ORIGIN}/metrics`)).text();
      expect(text).toMatch(/http_requests_total\{method="GET",route="\/api\/v1\/integrations\/categories",status="200"\} 3/);
      expect(text).toMatch(
        /graphql_operations_total\{operation_name="ListCategories",operation_type="query",surface="rest",outcome="ok"\} 3/,
      );
    } finally {
      await metrics.dispose();
    }
  });
});
