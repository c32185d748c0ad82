// Hostile input at the edges, on both databases, through a real server (node:http, graphql-ws): JSON bodies
// nested deeper than their bound and bodies that are not UTF-8 refused with 400 on every surface that reads a
// body; a short session idle timeout that a session in use never reaches; the Origin check comparing the scheme
// as well as the host; X-Forwarded-* read as the trusted proxy wrote them (the last entry of each); webhook URLs
// whose authority carries userinfo refused.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { networkInterfaces } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { acceptInvitation, inviteMember } from '../src/auth/members.js';
import { createHttpServer } from '../src/http/http-server.js';
import { attachGraphqlWebSocket } from '../src/http/graphql-ws.js';
import { MAX_BODY_DEPTH } from '../src/json-body.js';
import { createLogger } from '../src/logger.js';
import type { Gateway } from '../src/http/yoga.js';
import { databaseKinds } from './fixtures/databases.js';
import { createTestGateway, gatewayOver, type TestGateway } from './fixtures/gateway.js';
import { BASE } from './fixtures/rest.js';

const STRONG = 'correct horse battery staple';

/** `{"a":{"a":…1…}}`, `levels` objects deep, as text (JSON.stringify of a value this deep is what overflows). */
const nested = (levels: number) => `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;

/** A JSON text with the bytes of `raw` (latin1: one byte a character) where `@@` stands. */
const withBytes = (json: string, raw: string) => {
  const [before, after] = json.split('@@') as [string, string];
  return Buffer.concat([Buffer.from(before), Buffer.from(raw, 'latin1'), Buffer.from(after)]);
};

describe.each(databaseKinds)('hardening on %s', (kind) => {
  let t: TestGateway;
  const servers: Server[] = [];
  const closers: Array<() => Promise<void>> = [];
  const gateways: Gateway[] = [];
  let origin: string;
  let admin: string;
  let applicationId: string;

  /** A server of the default gateway listening on `host` (the others listen on loopback). */
  async function serveOn(host: string): Promise<string> {
    const server = createHttpServer(gateways[0]!, { logger: createLogger('silent') });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, host, resolve));
    return `http://${host}:${(server.address() as AddressInfo).port}`;
  }

  async function serve(config: Partial<Parameters<typeof gatewayOver>[1] & object>['config'] = {}): Promise<string> {
    const gateway = gatewayOver(t.db, {
      config: { RATE_LIMIT_PER_MINUTE: 100_000, LOGIN_FAILURES_PER_ACCOUNT: 1000, LOGIN_FAILURES_PER_ADDRESS: 1000, ...config },
      rateLimit: { keyPrefix: `test:hardening:${kind}:${process.pid}:${Date.now()}:${gateways.length}` },
    });
    gateways.push(gateway);
    const server = createHttpServer(gateway, { logger: createLogger('silent') });
    servers.push(server);
    closers.push(attachGraphqlWebSocket(server, gateway, createLogger('silent')));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  beforeAll(async () => {
    t = await createTestGateway(kind);
    admin = t.tenants.demo.adminToken;
    origin = await serve();
    const apps = await (
      await fetch(`${origin}${BASE}/available?slug=eq.stripe&select=id`, { headers: { authorization: `Token ${admin}` } })
    ).json();
    applicationId = apps.data[0].id;
  });

  afterAll(async () => {
    for (const close of closers) await close();
    for (const server of servers) {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
    for (const gateway of gateways) await gateway.dispose();
    await t?.dispose();
  });

  /** A request with a raw body; the answer's status and parsed JSON body. */
  async function send(
    method: string,
    path: string,
    body: string | Uint8Array,
    headers: Record<string, string> = {},
    at = origin,
  ): Promise<{ status: number; body: any; headers: Headers }> {
    const response = await fetch(`${at}${path}`, {
      method,
      headers: { 'content-type': 'application/json', authorization: `Token ${admin}`, ...headers },
      body: body as BodyInit,
    });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : null, headers: response.headers };
  }

  /** A spec error body: `{msg, error: {code, docs, req_id}}` (and REST's `details`), nothing else. */
  function expectErrorBody(answer: { status: number; body: any }, status: number, code: string) {
    expect({ status: answer.status, code: answer.body?.error?.code }).toEqual({ status, code });
    expect(Object.keys(answer.body).sort()).toEqual(['error', 'msg']);
    expect(answer.body.error.req_id).toMatch(/^req_\d+$/);
  }

  async function member(email: string, role: 'admin' | 'reader' = 'admin'): Promise<void> {
    const { code } = await inviteMember(t.db.raw, { tenantId: t.tenants.demo.id, email, role, createdBy: 'cli' });
    await acceptInvitation(t.db, code, STRONG);
  }

  async function signIn(email: string, at = origin, headers: Record<string, string> = {}): Promise<{ cookie: string; setCookie: string }> {
    const response = await fetch(`${at}/api/v1/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ email, password: STRONG }),
    });
    expect(response.status).toBe(200);
    const setCookie = response.headers.get('set-cookie')!;
    return { cookie: `igw_session=${/igw_session=([^;]+)/.exec(setCookie)![1]}`, setCookie };
  }

  describe('JSON nesting', () => {
    it(`refuses a REST body nested deeper than ${MAX_BODY_DEPTH} levels with 400, on POST and PATCH /connected`, async () => {
      for (const levels of [2000, 100_000]) {
        const deep = `{"application_id":"${applicationId}","metadata":${nested(levels)}}`;
        expectErrorBody(await send('POST', `${BASE}/connected`, deep), 400, 'INVALID_QUERY');
      }
      const created = await send('POST', `${BASE}/connected`, JSON.stringify({ application_id: applicationId, name: `nest ${kind}` }));
      expect(created.status).toBe(201);
      const path = `${BASE}/connected/${created.body.data.id}`;
      const patched = await send('PATCH', path, `{"metadata":${nested(100_000)}}`, { 'content-type': 'application/merge-patch+json' });
      expectErrorBody(patched, 400, 'INVALID_QUERY');
      expect(patched.body.msg).toContain(`deeper than ${MAX_BODY_DEPTH} levels`);
      // At the bound: the body is read, and the metadata is judged by its members' rules.
      const atBound = await send('PATCH', path, `{"metadata":${nested(MAX_BODY_DEPTH - 1)}}`, {
        'content-type': 'application/merge-patch+json',
      });
      expectErrorBody(atBound, 400, 'INVALID_QUERY');
      expect(atBound.body.msg).not.toContain('levels');
      const read = await fetch(`${origin}${path}`, { headers: { authorization: `Token ${admin}` } });
      expect((await read.json()).data.metadata).toEqual(created.body.data.metadata);
    });

    it('refuses GraphQL input nested as deep, as variables and as a literal, with 400', async () => {
      const mutation = 'mutation($input: CreateConnectionInput!) { createConnection(input: $input) { id } }';
      const variables = await send(
        'POST',
        '/graphql',
        `{"query":${JSON.stringify(mutation)},"variables":{"input":{"applicationId":"${applicationId}","metadata":${nested(2000)}}}}`,
        { accept: 'application/graphql-response+json' },
      );
      expect(variables.status).toBe(400);
      expect(variables.body.errors[0].extensions.code).toBe('INVALID_QUERY');
      expect(variables.body.errors[0].message).toBe('Variables nest deeper than 64 levels.');
      // A literal this deep is over the token limit; one just under it is coerced, and judged by the metadata rules.
      const literal = (levels: number) =>
        `mutation { createConnection(input: {applicationId: "${applicationId}", metadata: ${'{a: '.repeat(levels)}"x"${'}'.repeat(levels)}}) { id } }`;
      for (const levels of [2000, 450]) {
        const inline = await send('POST', '/graphql', JSON.stringify({ query: literal(levels) }), {
          accept: 'application/graphql-response+json',
        });
        expect(inline.status).toBe(400);
        expect(inline.body.errors[0].extensions.code).toBe('INVALID_QUERY');
      }
    });
  });

  describe('UTF-8', () => {
    const INVALID = ['\xff', '\xc3', '\xed\xa0\x80', '\xe2\x82'];

    it('refuses a REST body that is not UTF-8 with 400, and stores nothing', async () => {
      const name = `utf8 ${kind} ${Date.now()}`;
      for (const bytes of INVALID) {
        const answer = await send(
          'POST',
          `${BASE}/connected`,
          withBytes(`{"application_id":"${applicationId}","name":"${name}@@"}`, bytes),
        );
        expectErrorBody(answer, 400, 'INVALID_QUERY');
        expect(answer.body.error.details).toEqual([{ parameter: '(body)', message: 'the body is not valid UTF-8' }]);
      }
      const stored = await t.db.raw.query('SELECT id FROM connections WHERE name LIKE $1', [`${name}%`]);
      expect(stored).toEqual([]);
      // The same text in valid UTF-8 is stored as sent.
      const valid = await send('POST', `${BASE}/connected`, Buffer.from(`{"application_id":"${applicationId}","name":"${name} é€😀"}`));
      expect(valid.status).toBe(201);
      expect(valid.body.data.name).toBe(`${name} é€😀`);
    });

    it('refuses a GraphQL body that is not UTF-8 with 400, on both GraphQL paths, and stores nothing', async () => {
      const name = `utf8 graphql ${kind} ${Date.now()}`;
      const query = `mutation { createConnection(input: {applicationId: \\"${applicationId}\\", name: \\"${name}@@\\"}) { id } }`;
      for (const bytes of INVALID) {
        const body = withBytes(`{"query":"${query}"}`, bytes);
        // With Content-Length (the direct path takes it) and chunked (yoga's parser reads it).
        const sized = await send('POST', '/graphql', body, { accept: 'application/graphql-response+json' });
        const chunked = await fetch(`${origin}/graphql`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json', authorization: `Token ${admin}` },
          body: new ReadableStream({
            start(controller) {
              controller.enqueue(body);
              controller.close();
            },
          }),
          duplex: 'half',
        } as RequestInit);
        for (const answer of [sized, { status: chunked.status, body: await chunked.json() }]) {
          expect(answer.status).toBe(400);
          expect(answer.body.errors).toEqual([
            expect.objectContaining({
              message: 'POST body is not valid UTF-8.',
              extensions: expect.objectContaining({ code: 'INVALID_QUERY' }),
            }),
          ]);
        }
      }
      expect(await t.db.raw.query('SELECT id FROM connections WHERE name LIKE $1', [`${name}%`])).toEqual([]);
    });

    it('closes a graphql-ws socket with 1007 on a message that is not UTF-8, text or binary, and stores nothing', async () => {
      const name = `utf8 ws ${kind} ${Date.now()}`;
      const query = `mutation { createConnection(input: {applicationId: \\"${applicationId}\\", name: \\"${name}@@\\"}) { id } }`;
      const subscribe = withBytes(`{"id":"1","type":"subscribe","payload":{"query":"${query}"}}`, '\xff');
      for (const binary of [true, false]) {
        const socket = new WebSocket(`${origin.replace('http', 'ws')}/graphql`, 'graphql-transport-ws');
        const messages: string[] = [];
        socket.on('message', (data) => messages.push(String(data)));
        await new Promise((resolve) => socket.once('open', resolve));
        socket.send(JSON.stringify({ type: 'connection_init', payload: { Authorization: `Token ${admin}` } }));
        await expect.poll(() => messages.map((message) => JSON.parse(message).type)).toEqual(['connection_ack']);
        const closed = new Promise<number>((resolve) => socket.once('close', resolve));
        socket.send(subscribe, { binary });
        expect(await closed).toBe(1007);
        expect(messages).toHaveLength(1);
      }
      expect(await t.db.raw.query('SELECT id FROM connections WHERE name LIKE $1', [`${name}%`])).toEqual([]);
    });

    it('refuses sign-in and invitation bodies that are not UTF-8 with 400', async () => {
      await member(`utf8-${kind}@example.com`);
      const login = await send(
        'POST',
        '/api/v1/auth/login',
        withBytes(`{"email":"utf8-${kind}@example.com","password":"${STRONG}@@"}`, '\xff'),
        {
          authorization: '',
        },
      );
      expectErrorBody(login, 400, 'INVALID_QUERY');
      expect(login.body.msg).toBe('Invalid body: the body is not valid UTF-8');
      const { code } = await inviteMember(t.db.raw, {
        tenantId: t.tenants.demo.id,
        email: `utf8-invited-${kind}@example.com`,
        role: 'reader',
        createdBy: 'cli',
      });
      const accepted = await send('POST', `/api/v1/auth/invitations/${code}`, withBytes(`{"password":"${STRONG}@@"}`, '\xc3'), {
        authorization: '',
      });
      expectErrorBody(accepted, 400, 'INVALID_QUERY');
      // The code was not spent: the same password in valid UTF-8 is taken.
      expect(
        (await send('POST', `/api/v1/auth/invitations/${code}`, JSON.stringify({ password: `${STRONG} é` }), { authorization: '' })).status,
      ).toBe(200);
    });
  });

  describe('sessions with SESSION_IDLE_MINUTES=1', () => {
    it('keep a session in use alive: its last request is written often enough for a one-minute idle timeout', async () => {
      const at = await serve({ SESSION_IDLE_MINUTES: 1 });
      const email = `idle-${kind}@example.com`;
      await member(email, 'reader');
      const { cookie } = await signIn(email, at);
      const read = async () => (await fetch(`${at}${BASE}/connected?limit=1`, { headers: { cookie } })).status;
      const lastSeen = async () =>
        (
          await t.db.raw.query<{ age: number }>(
            `SELECT extract(epoch FROM now() - s.last_seen_at)::float AS age
               FROM member_sessions s JOIN members m ON m.id = s.member_id WHERE m.email = $1`,
            [email],
          )
        )[0]!.age;
      /** The session's clock moved back: as if its requests so far had been made `seconds` earlier. */
      const age = (seconds: number) =>
        t.db.raw.query(
          `UPDATE member_sessions SET last_seen_at = last_seen_at - make_interval(secs => $2), created_at = created_at - make_interval(secs => $2)
            WHERE member_id = (SELECT id FROM members WHERE email = $1)`,
          [email, seconds],
        );
      // Used 30 s ago: a request now is written down (a one-minute throttle would skip it)...
      await age(30);
      expect(await read()).toBe(200);
      await expect.poll(lastSeen, { timeout: 5000 }).toBeLessThan(5);
      // ...so 40 s after it, within the minute, the session is still open.
      await age(40);
      expect(await read()).toBe(200);
      // A minute without a request ends it.
      await age(61);
      expect(await read()).toBe(401);
    });
  });

  describe('the Origin check of cookie requests', () => {
    const mutation = JSON.stringify({ query: '{ currentMember { email } }' });
    const post = (at: string, cookie: string, headers: Record<string, string>) =>
      fetch(`${at}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-requested-with': 'test', cookie, ...headers },
        body: mutation,
      });

    it('compares the scheme as well as the host', async () => {
      const email = `origin-${kind}@example.com`;
      await member(email, 'reader');
      const { cookie } = await signIn(email);
      const host = new URL(origin).host;
      expect((await post(origin, cookie, { origin: `http://${host}` })).status).toBe(200);
      const https = await post(origin, cookie, { origin: `https://${host}` });
      expect(https.status).toBe(403);
      expect((await https.json()).errors[0].message).toContain(`its Origin (https://${host}) is not this server's`);
      expect((await post(origin, cookie, { origin: `http://${host.replace('127.0.0.1', 'localhost')}` })).status).toBe(403);
    });

    it('under TRUST_PROXY reads X-Forwarded-Proto and -Host as the proxy wrote them: the last entry, as for X-Forwarded-For', async () => {
      const at = await serve({ TRUST_PROXY: '1' });
      const email = `proxy-${kind}@example.com`;
      await member(email, 'reader');
      // A client that sends its own X-Forwarded-* gets the proxy's entry appended after it.
      const spoofed = {
        'x-forwarded-proto': 'https, http',
        'x-forwarded-host': 'gateway.example, evil.example',
        'x-forwarded-for': '203.0.113.9, 198.51.100.7',
      };
      const proxied = {
        'x-forwarded-proto': 'http, https',
        'x-forwarded-host': 'evil.example, gateway.example',
        'x-forwarded-for': '198.51.100.7, 203.0.113.9',
      };
      expect((await signIn(email, at, spoofed)).setCookie).not.toMatch(/Secure/);
      const { cookie, setCookie } = await signIn(email, at, proxied);
      expect(setCookie).toMatch(/Secure/);
      expect((await post(at, cookie, { ...proxied, origin: 'https://gateway.example' })).status).toBe(200);
      expect((await post(at, cookie, { ...proxied, origin: 'http://gateway.example' })).status).toBe(403);
      expect((await post(at, cookie, { ...proxied, origin: 'https://evil.example' })).status).toBe(403);
      expect((await post(at, cookie, { ...spoofed, origin: 'https://gateway.example' })).status).toBe(403);
    });
  });

  describe('GraphQL request errors', () => {
    // A document that does not parse or validate, a variable that cannot be coerced, no operation to run.
    const REQUEST_ERRORS: Array<[string, string, Record<string, unknown>?]> = [
      ['parse', '{ connections(limit: 1) {'],
      ['validation', '{ connections(limit: 1) { nope } }'],
      ['argument', '{ connections(limit: "x") { totalCount } }'],
      ['variable', 'query($l: Int) { connections(limit: $l) { totalCount } }', { l: 'x' }],
      ['operation', 'query A { categories { totalCount } } query B { categories { totalCount } }'],
    ];

    it.each(REQUEST_ERRORS)(
      '%s: INVALID_QUERY, 200 to application/json and 400 to application/graphql-response+json, on every path',
      async (_kind, query, variables) => {
        const body = JSON.stringify({ query, variables });
        for (const [accept, status] of [
          ['application/json', 200],
          ['application/graphql-response+json', 400],
        ] as const) {
          const sized = await send('POST', '/graphql', body, { accept });
          const chunked = await fetch(`${origin}/graphql`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', accept, authorization: `Token ${admin}` },
            body: new ReadableStream({
              start(controller) {
                controller.enqueue(Buffer.from(body));
                controller.close();
              },
            }),
            duplex: 'half',
          } as RequestInit);
          for (const answer of [sized, { status: chunked.status, body: await chunked.json() }]) {
            expect({ accept, status: answer.status, data: answer.body.data }).toEqual({ accept, status, data: undefined });
            expect(answer.body.errors.map((error: { extensions: object }) => error.extensions)).toEqual([{ code: 'INVALID_QUERY' }]);
          }
        }
        // graphql-ws: the same code, and nothing of an HTTP answer.
        const socket = new WebSocket(`${origin.replace('http', 'ws')}/graphql`, 'graphql-transport-ws');
        const messages: Array<{ type: string; payload?: any }> = [];
        socket.on('message', (data) => messages.push(JSON.parse(String(data))));
        await new Promise((resolve) => socket.once('open', resolve));
        socket.send(JSON.stringify({ type: 'connection_init', payload: { Authorization: `Token ${admin}` } }));
        await expect.poll(() => messages.length).toBe(1);
        socket.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query, variables } }));
        await expect.poll(() => messages.some((message) => message.type === 'error' || message.type === 'complete')).toBe(true);
        socket.close();
        const errors = messages[1]!.type === 'error' ? messages[1]!.payload : messages[1]!.payload.errors;
        expect(errors.map((error: { extensions: object }) => error.extensions)).toEqual([{ code: 'INVALID_QUERY' }]);
      },
    );
  });

  describe('/metrics', () => {
    it('without METRICS_TOKEN serves only this machine, not through a proxy; operation names a client chose are `other`', async () => {
      const names = Array.from({ length: 250 }, (_, i) => `Tenant${kind}Name${i}`);
      for (const name of names) await send('POST', '/graphql', JSON.stringify({ query: `query ${name} { categories { totalCount } }` }));
      await fetch(`${origin}${BASE}/connected?limit=1`, { headers: { authorization: `Token ${admin}` } });
      const local = await fetch(`${origin}/metrics`);
      expect(local.status).toBe(200);
      const text = await local.text();
      for (const name of names) expect(text).not.toContain(name);
      expect(text).toMatch(
        /^graphql_operations_total\{operation_name="other",operation_type="query",surface="graphql",outcome="ok"\} (\d+)$/m,
      );
      expect(
        Number(
          /^graphql_operations_total\{operation_name="other",operation_type="query",surface="graphql",outcome="ok"\} (\d+)$/m.exec(
            text,
          )?.[1],
        ),
      ).toBeGreaterThanOrEqual(250);
      expect(text).toContain('operation_name="ListConnections"');
      for (const header of [{ 'x-forwarded-for': '198.51.100.7' }, { forwarded: 'for=198.51.100.7' }] as Record<string, string>[]) {
        const proxied = await fetch(`${origin}/metrics`, { headers: header });
        expect(proxied.status).toBe(403);
        expect((await proxied.json()).error.code).toBe('UNAUTHORIZED');
      }
      // A peer on another address of this machine is not loopback.
      const lan = Object.values(networkInterfaces())
        .flat()
        .find((address) => address && address.family === 'IPv4' && !address.internal)?.address;
      if (lan) {
        const wide = await serveOn('0.0.0.0');
        expect((await fetch(`http://${lan}:${new URL(wide).port}/metrics`)).status).toBe(403);
        expect((await fetch(`${wide.replace('0.0.0.0', '127.0.0.1')}/metrics`)).status).toBe(200);
      }
    });

    it('with METRICS_TOKEN needs the token, from this machine too', async () => {
      const at = await serve({ METRICS_TOKEN: 'metrics-token-of-the-test' });
      expect((await fetch(`${at}/metrics`)).status).toBe(401);
      expect(
        (
          await fetch(`${at}/metrics`, {
            headers: { authorization: 'Bearer metrics-token-of-the-test', 'x-forwarded-for': '198.51.100.7' },
          })
        ).status,
      ).toBe(200);
    });
  });

  describe('webhook URLs', () => {
    const CREDENTIALED = ['https://93.184.216.34\\@127.0.0.1/', 'https://user@93.184.216.34/hook', 'https://93.184.216.34%40x@127.0.0.1/'];

    it('refuses a URL whose authority carries userinfo, on REST POST and PATCH and GraphQL, and stores nothing', async () => {
      const before = await t.db.raw.query<{ count: number }>('SELECT count(*)::int AS count FROM webhook_endpoints');
      for (const url of CREDENTIALED) {
        const created = await send('POST', `${BASE}/webhooks`, JSON.stringify({ url }));
        expectErrorBody(created, 400, 'INVALID_QUERY');
        expect(created.body.error.details).toEqual([{ parameter: 'url', message: 'must not carry credentials (user:password@)' }]);
        const graphql = await send(
          'POST',
          '/graphql',
          JSON.stringify({ query: 'mutation($url: String!) { createWebhookEndpoint(input: {url: $url}) { id } }', variables: { url } }),
          { accept: 'application/graphql-response+json' },
        );
        expect(graphql.body.errors?.[0]?.extensions?.code).toBe('INVALID_QUERY');
        expect(graphql.body.errors[0].message).toContain('must not carry credentials');
      }
      expect(await t.db.raw.query('SELECT count(*)::int AS count FROM webhook_endpoints')).toEqual(before);
      const endpoint = await send('POST', `${BASE}/webhooks`, JSON.stringify({ url: 'https://93.184.216.34/hook' }));
      expect(endpoint.status).toBe(201);
      const patched = await send('PATCH', `${BASE}/webhooks/${endpoint.body.data.id}`, JSON.stringify({ url: CREDENTIALED[0] }), {
        'content-type': 'application/merge-patch+json',
      });
      expectErrorBody(patched, 400, 'INVALID_QUERY');
      const [row] = await t.db.raw.query<{ url: string }>('SELECT url FROM webhook_endpoints WHERE id = $1', [endpoint.body.data.id]);
      expect(row?.url).toBe('https://93.184.216.34/hook');
    });
  });
});
