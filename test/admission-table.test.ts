// The admission spine's table (src/http/admission.ts): for each check of ADMISSION_CHECKS, one request it must
// refuse (or, for the checks that refuse nothing, one request whose answer must show it), sent over every surface
// of SURFACES through a real server: REST, GraphQL over HTTP, GraphQL over SSE, graphql-ws and REST event
// streams. A check without a row, or a surface without a cell in a row, fails here; a cell that does not apply
// says why, in words a reviewer can judge.
import { request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { createServiceUser } from '../src/auth/service-users.js';
import { SESSION_COOKIE } from '../src/auth/session-cookie.js';
import { createToken } from '../src/auth/tokens.js';
import { ADMISSION_CHECKS, SURFACES, type AdmissionCheck, type Surface } from '../src/http/admission.js';
import { createHttpServer } from '../src/http/http-server.js';
import { attachGraphqlWebSocket, type WebSocketOptions } from '../src/http/graphql-ws.js';
import { createLogger } from '../src/logger.js';
import type { Gateway } from '../src/http/yoga.js';
import { signInPaths } from '../src/rest/sign-in-openapi.js';
import { databaseKinds } from './fixtures/databases.js';
import { capturingLogger, createTestGateway, gatewayOver, type LogLine, type TestGateway } from './fixtures/gateway.js';

/** What one request over one surface came to. */
interface Outcome {
  /** The HTTP status (of the answer, or of a refused WebSocket upgrade). */
  status?: number;
  /** The error code of the body, the SSE error message or the graphql-ws error. */
  code?: string;
  /** The WebSocket close code. */
  close?: number;
  /** The answer's text (the body, the SSE messages, the graphql-ws messages), for what it must not show. */
  text: string;
  headers: Record<string, string | string[] | undefined>;
  /** A cell of the `auth` column: what each endpoint's answer came to. */
  each?: Array<{ endpoint: string; outcome: Outcome }>;
}

/** A request over one surface: `token` null sends no credential; `authorization` sends that header instead. */
interface Attempt {
  token?: string | null;
  authorization?: string;
  host?: string;
  /** REST: the path below /api/v1/integrations (default /connected; streams /syncs). */
  path?: string;
  /** GraphQL: the document (default: a query on HTTP and graphql-ws, a subscription on SSE). */
  query?: string;
  variables?: unknown;
  /** A raw body (replaces the JSON one). */
  body?: string;
  method?: string;
  headers?: Record<string, string>;
}

const QUERY = 'query { connections(limit: 1) { totalCount } }';
/** Client authentication at the token endpoint for a client that does not exist. */
const UNKNOWN_CLIENT = `Basic ${Buffer.from('oac_unknown:igw_cs_wrong').toString('base64')}`;
/** An OAuth access token's shape, naming no token. */
const UNKNOWN_ACCESS_TOKEN = `Bearer ${'A'.repeat(43)}`;
const SUBSCRIPTION = 'subscription { syncChanged { id status } }';
const BIG = 'x'.repeat(1024 * 1024 + 10);
/** Variables nested 100,000 deep, as JSON text (JSON.stringify itself would overflow the test's stack). */
const DEEP = `{"f":${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}}`;
const deepBody = (query: string) => `{"query":${JSON.stringify(query)},"variables":${DEEP}}`;
const ALIASES = (root: string) => `${root} { ${Array.from({ length: 31 }, (_, i) => `a${i}: id`).join(' ')} }`;

/**
 * The auth surface's endpoints, as the OpenAPI document lists them (a new one is in every cell of the `auth`
 * column): `{code}` is a code no member holds.
 */
const AUTH_ENDPOINTS = Object.entries(signInPaths()).flatMap(([path, operations]) =>
  Object.keys(operations).map((method) => ({
    method: method.toUpperCase(),
    path: path.replace('{code}', 'c0de-that-nobody-holds'),
    pattern: path,
  })),
);
/** A JSON body nested deeper than any body a route takes, inside the sign-in's 4 KiB. */
const DEEP_SMALL = `{"email":${'['.repeat(1500)}${']'.repeat(1500)}}`;

describe.each(databaseKinds)('admission table on %s', (kind) => {
  let t: TestGateway;
  const servers: Server[] = [];
  const closers: Array<() => Promise<void>> = [];
  const lines: LogLine[] = [];
  /** Origins of the servers: the default limits, tight caps, a short deadline, a deadline past on arrival. */
  const origin: Record<'main' | 'tight' | 'slow' | 'expired', string> = { main: '', tight: '', slow: '', expired: '' };

  async function serve(gateway: Gateway, ws: WebSocketOptions = {}): Promise<string> {
    const server = createHttpServer(gateway, { logger: createLogger('silent') });
    servers.push(server);
    closers.push(attachGraphqlWebSocket(server, gateway, createLogger('silent'), { connectionInitWaitMs: 1000, ...ws }));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  let tokens = 0;
  /** A reader token of its own, so budgets and caps one request spends are no other request's. */
  async function freshToken(): Promise<string> {
    const user = await createServiceUser(t.db, { tenantId: t.tenants.demo.id, name: `table-${kind}-${++tokens}`, role: 'reader' });
    return (await createToken(t.db, { tenantId: t.tenants.demo.id, serviceUserId: user.id, expiresAt: new Date(Date.now() + 86_400_000) }))
      .token;
  }

  beforeAll(async () => {
    t = await createTestGateway(kind);
    const prefix = `igw:table:${kind}:${Date.now()}`;
    origin.main = await serve(gatewayOver(t.db, { logger: capturingLogger(lines), rateLimit: { keyPrefix: `${prefix}:main` } }));
    origin.tight = await serve(
      gatewayOver(t.db, {
        config: { RATE_LIMIT_PER_MINUTE: 2, LOGIN_FAILURES_PER_ADDRESS: 2 },
        rateLimit: { keyPrefix: `${prefix}:tight`, tenantMultiplier: 1000 },
        live: { limits: { stream: { perCredential: 1 } }, heartbeatMs: 100 },
      }),
      { perCredential: 1 },
    );
    origin.slow = await serve(gatewayOver(t.db, { limits: { timeoutMs: 1 }, rateLimit: { keyPrefix: `${prefix}:slow` } }));
    // An endpoint of the auth column may answer within a millisecond (a code nobody holds: one indexed read).
    origin.expired = await serve(gatewayOver(t.db, { limits: { timeoutMs: 0 }, rateLimit: { keyPrefix: `${prefix}:expired` } }));
  });
  afterAll(async () => {
    for (const close of closers) await close();
    for (const server of servers) {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
    await t?.dispose();
  });

  function authorizationOf(attempt: Attempt): string | undefined {
    if (attempt.authorization !== undefined) return attempt.authorization;
    return attempt.token ? `Token ${attempt.token}` : undefined;
  }

  /** One HTTP request through node:http (so the Host header is the test's), read whole or, for a stream, until its first error or 1.5 s. */
  function http(
    base: string,
    method: string,
    path: string,
    attempt: Attempt,
    headers: Record<string, string>,
    body?: string,
  ): Promise<Outcome> {
    const url = new URL(path, base);
    const authorization = authorizationOf(attempt);
    return new Promise((resolve, reject) => {
      const req = httpRequest(
        {
          host: url.hostname,
          port: url.port,
          method,
          path: `${url.pathname}${url.search}`,
          headers: {
            ...headers,
            ...(authorization ? { authorization } : {}),
            ...(attempt.host ? { host: attempt.host } : {}),
            ...(body !== undefined ? { 'content-length': String(Buffer.byteLength(body)) } : {}),
            ...attempt.headers,
          },
        },
        (res) => {
          let text = '';
          const finish = () => {
            res.destroy();
            const streamed = (res.headers['content-type'] ?? '').startsWith('text/event-stream');
            resolve({ status: res.statusCode, code: streamed ? sseCode(text) : jsonCode(text), text, headers: res.headers });
          };
          const timer = setTimeout(finish, 1500);
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => {
            text += chunk;
            if (/event: (error|complete)\n/.test(text) && text.endsWith('\n\n')) {
              clearTimeout(timer);
              finish();
            }
          });
          res.on('end', () => {
            clearTimeout(timer);
            finish();
          });
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  }

  /** One graphql-ws operation: connection_init with the credential, one subscribe; the first error, or the close. */
  function websocket(base: string, attempt: Attempt, query: string, frame?: string): Promise<Outcome> {
    const authorization = authorizationOf(attempt);
    return new Promise((resolve) => {
      const socket = new WebSocket(`${base.replace('http', 'ws')}/graphql`, 'graphql-transport-ws', {
        headers: attempt.host ? { host: attempt.host } : {},
      });
      let text = '';
      const done = (outcome: Partial<Outcome>) => {
        socket.terminate();
        resolve({ text, headers: {}, ...outcome });
      };
      const timer = setTimeout(() => done({}), 3000);
      socket.on('unexpected-response', (_req, res) => {
        clearTimeout(timer);
        done({ status: res.statusCode });
      });
      socket.on('error', () => {});
      socket.on('open', () =>
        socket.send(JSON.stringify({ type: 'connection_init', payload: authorization ? { Authorization: authorization } : {} })),
      );
      socket.on('message', (data) => {
        text += String(data);
        const message = JSON.parse(String(data));
        if (message.type === 'connection_ack') {
          socket.send(frame ?? JSON.stringify({ id: '1', type: 'subscribe', payload: { query, variables: attempt.variables ?? {} } }));
        } else if (message.type === 'error' || (message.type === 'next' && message.payload.errors)) {
          clearTimeout(timer);
          const errors = message.type === 'error' ? message.payload : message.payload.errors;
          done({ code: errors[0]?.extensions?.code, status: 200 });
        } else if (message.type === 'next' || message.type === 'complete') {
          clearTimeout(timer);
          done({ status: 200 });
        }
      });
      socket.on('close', (code) => {
        clearTimeout(timer);
        done({ close: code });
      });
    });
  }

  /** Sends `attempt` over `surface` to the server at `base`. */
  function send(surface: Surface, base: string, attempt: Attempt = {}): Promise<Outcome> {
    const json = { 'content-type': 'application/json' };
    const graphqlBody = (query: string) =>
      attempt.body ?? JSON.stringify({ query: attempt.query ?? query, variables: attempt.variables ?? {} });
    switch (surface) {
      case 'rest':
        return http(
          base,
          attempt.method ?? (attempt.body ? 'POST' : 'GET'),
          `/api/v1/integrations${attempt.path ?? '/connected'}`,
          attempt,
          json,
          attempt.body,
        );
      case 'rest-stream':
        return http(base, 'GET', `/api/v1/integrations${attempt.path ?? '/syncs'}`, attempt, { accept: 'text/event-stream' });
      case 'graphql-http':
        return http(base, 'POST', '/graphql', attempt, { ...json, accept: 'application/graphql-response+json' }, graphqlBody(QUERY));
      case 'graphql-sse':
        return http(base, 'POST', '/graphql', attempt, { ...json, accept: 'text/event-stream' }, graphqlBody(SUBSCRIPTION));
      case 'graphql-ws':
        return websocket(base, attempt, attempt.query ?? QUERY);
      case 'oauth':
        return http(
          base,
          'POST',
          '/oauth/token',
          attempt,
          { 'content-type': 'application/x-www-form-urlencoded' },
          attempt.body ?? 'grant_type=client_credentials',
        );
      case 'auth': {
        const method = attempt.method ?? 'POST';
        const body = attempt.body ?? (method === 'POST' ? '{}' : undefined);
        return http(base, method, attempt.path ?? '/api/v1/auth/login', attempt, json, body);
      }
    }
  }

  type AuthEndpoint = (typeof AUTH_ENDPOINTS)[number];
  /**
   * A cell of the `auth` column: the same attempt at every endpoint of the surface (`attempt` gives what differs
   * by endpoint), each answer held to `expectEach`.
   */
  const everyAuth = (
    attempt: (endpoint: AuthEndpoint) => () => Promise<Outcome>,
    expectEach: (outcome: Outcome, endpoint: AuthEndpoint) => void,
  ): Cell => ({
    run: async () => {
      const each: NonNullable<Outcome['each']> = [];
      for (const endpoint of AUTH_ENDPOINTS)
        each.push({ endpoint: `${endpoint.method} ${endpoint.pattern}`, outcome: await attempt(endpoint)() });
      return { text: '', headers: {}, each };
    },
    expect: (outcome) => {
      expect(outcome.each?.length).toBe(AUTH_ENDPOINTS.length);
      for (const [index, { endpoint, outcome: answered }] of outcome.each!.entries()) {
        try {
          expectEach(answered, AUTH_ENDPOINTS[index]!);
        } catch (error) {
          throw new Error(`${endpoint}: ${(error as Error).message}`);
        }
      }
    },
  });
  /** A request an endpoint does its work for: a well-formed sign-in, a password for a code, a session cookie. */
  const doingItsWork = (endpoint: AuthEndpoint): Attempt => {
    if (endpoint.method !== 'POST') return {};
    if (endpoint.pattern.endsWith('/login')) return { body: JSON.stringify({ email: 'nobody@example.com', password: 'not the password' }) };
    if (endpoint.pattern.endsWith('/logout')) return { headers: { cookie: `${SESSION_COOKIE}=igw_ses_${'s'.repeat(43)}` } };
    return { body: JSON.stringify({ password: 'a password long enough to be hashed' }) };
  };
  /** An auth endpoint's request: its method and path, and `attempt` over them. */
  const toAuth =
    (base: string, endpoint: AuthEndpoint, attempt: Attempt = {}) =>
    () =>
      send('auth', base, { method: endpoint.method, path: endpoint.path, ...attempt });

  /** A cell: what the request over one surface must come to, or why the check does not apply there. */
  type Cell = { run: () => Promise<Outcome>; expect: (outcome: Outcome) => void } | { notApplicable: string };
  const refused = (status: number, code: string) => (outcome: Outcome) =>
    expect({ status: outcome.status, code: outcome.code }).toEqual({ status, code });
  const closed = (close: number) => (outcome: Outcome) => expect(outcome.close).toBe(close);
  /** The same request sent `times` times (a fresh credential each cell); the last outcome. */
  const repeated = (times: number, run: (token: string) => Promise<Outcome>) => async () => {
    const token = await freshToken();
    let outcome!: Outcome;
    for (let i = 0; i < times; i++) outcome = await run(token);
    return outcome;
  };
  /** Opens `first` and keeps it open while `second` is sent (a stream cap). */
  const whileOpen = (surface: Surface, attempt: (token: string) => Attempt) => async () => {
    const token = await freshToken();
    const held = send(surface, origin.tight, attempt(token));
    await new Promise((resolve) => setTimeout(resolve, 800));
    const second = await send(surface, origin.tight, attempt(token));
    await held;
    return second;
  };
  const reader = () => t.tenants.demo.readerToken;
  /** A log line a request left on the main server: one per request, with its status. */
  const loggedAs = (status: number, method?: string) => (outcome: Outcome) => {
    expect(outcome.status === undefined && outcome.close === undefined).toBe(false);
    const line = lines.findLast((entry) => entry.msg === 'request');
    expect(line).toMatchObject({ status, ...(method ? { method } : {}) });
  };
  const withLogLine = (run: () => Promise<Outcome>) => async () => {
    lines.length = 0;
    return run();
  };
  /** The request's series in the main server's /metrics rose by one. */
  const counted = (series: string, run: () => Promise<Outcome>) => async () => {
    const value = async () => {
      const text = await (await fetch(`${origin.main}/metrics`)).text();
      const line = text.split('\n').find((entry) => entry.startsWith(series));
      return line ? Number(line.split(' ').at(-1)) : 0;
    };
    const before = await value();
    const outcome = await run();
    expect(await value()).toBe(before + 1);
    return outcome;
  };
  const securityHeaders = (outcome: Outcome) => {
    expect(outcome.headers['x-content-type-options']).toBe('nosniff');
    expect(outcome.headers['content-security-policy']).toContain("default-src 'none'");
    expect(outcome.headers['x-request-id']).toMatch(/^req_/);
  };
  const clean = (status: number) => (outcome: Outcome) => {
    expect(outcome.status ?? 200).toBe(status);
    expect(outcome.code).toBe('INVALID_QUERY');
    expect(outcome.text).not.toMatch(/RangeError|Maximum call stack|\n\s+at /);
  };

  const metricsText = async () => (await fetch(`${origin.main}/metrics`)).text();
  /** The value of one series in a /metrics text; 0 when absent. */
  const sampleOf = (text: string, series: string) => {
    const line = text.split('\n').find((entry) => entry.startsWith(`${series} `));
    return line ? Number(line.split(' ').at(-1)) : 0;
  };

  const TABLE: Record<AdmissionCheck, Record<Surface, Cell>> = {
    host: {
      oauth: {
        run: () => send('oauth', origin.main, { host: 'x/y', authorization: UNKNOWN_CLIENT }),
        expect: refused(400, 'INVALID_QUERY'),
      },
      rest: {
        run: () => send('rest', origin.main, { host: 'x/api/v1/integrations/connected?#', token: reader() }),
        expect: refused(400, 'INVALID_QUERY'),
      },
      'rest-stream': {
        run: () => send('rest-stream', origin.main, { host: 'a@b', token: reader() }),
        expect: refused(400, 'INVALID_QUERY'),
      },
      'graphql-http': {
        run: () => send('graphql-http', origin.main, { host: 'x y', token: reader() }),
        expect: refused(400, 'INVALID_QUERY'),
      },
      'graphql-sse': {
        run: () => send('graphql-sse', origin.main, { host: 'x?y', token: reader() }),
        expect: refused(400, 'INVALID_QUERY'),
      },
      'graphql-ws': {
        run: () => send('graphql-ws', origin.main, { host: 'x#y', token: reader() }),
        expect: (outcome) => expect(outcome.status).toBe(400),
      },
      auth: everyAuth((endpoint) => toAuth(origin.main, endpoint, { host: 'x/y?#' }), refused(400, 'INVALID_QUERY')),
    },
    size: {
      oauth: {
        run: () =>
          send('oauth', origin.main, { authorization: UNKNOWN_CLIENT, body: `grant_type=client_credentials&x=${'a'.repeat(60_000)}` }),
        expect: refused(413, 'PAYLOAD_TOO_LARGE'),
      },
      rest: { run: () => send('rest', origin.main, { token: reader(), body: BIG }), expect: refused(413, 'PAYLOAD_TOO_LARGE') },
      'rest-stream': {
        run: () => send('rest-stream', origin.main, { token: reader(), path: `/syncs?connection_id=${'x'.repeat(9000)}` }),
        expect: refused(414, 'PAYLOAD_TOO_LARGE'),
      },
      'graphql-http': {
        run: () => send('graphql-http', origin.main, { token: reader(), body: BIG }),
        expect: refused(413, 'PAYLOAD_TOO_LARGE'),
      },
      'graphql-sse': {
        run: () => send('graphql-sse', origin.main, { token: reader(), body: BIG }),
        expect: refused(413, 'PAYLOAD_TOO_LARGE'),
      },
      'graphql-ws': { run: () => websocket(origin.main, { token: reader() }, QUERY, BIG), expect: closed(1009) },
      auth: everyAuth(
        (endpoint) =>
          toAuth(origin.main, endpoint, endpoint.method === 'GET' ? { path: `${endpoint.path}?${'x'.repeat(9000)}` } : { body: BIG }),
        (outcome, endpoint) => refused(endpoint.method === 'GET' ? 414 : 413, 'PAYLOAD_TOO_LARGE')(outcome),
      ),
    },
    credential: {
      // The token endpoint authenticates clients; the consent steps take the member's console session.
      oauth: {
        run: async () => {
          const session = { cookie: `${SESSION_COOKIE}=igw_ses_${'s'.repeat(43)}` };
          return {
            text: '',
            headers: {},
            each: [
              { endpoint: 'POST /oauth/token', outcome: await send('oauth', origin.main, { authorization: UNKNOWN_CLIENT }) },
              {
                endpoint: 'GET /oauth/interaction/{id}/details',
                outcome: await http(origin.main, 'GET', '/oauth/interaction/none/details', { headers: session }, {}),
              },
              {
                endpoint: 'POST /oauth/interaction/{id}/approve (cross-site)',
                outcome: await http(origin.main, 'POST', '/oauth/interaction/none/approve', { headers: session }, {}, ''),
              },
            ],
          };
        },
        expect: (outcome) => {
          const [token, details, approve] = outcome.each!.map((entry) => entry.outcome);
          refused(401, 'invalid_client')(token!);
          refused(401, 'UNAUTHORIZED')(details!);
          refused(403, 'UNAUTHORIZED')(approve!);
        },
      },
      rest: {
        run: () => send('rest', origin.main, { authorization: 'Token igw_pat_unknown_000000000000000000000000' }),
        expect: refused(401, 'UNAUTHORIZED'),
      },
      'rest-stream': {
        run: () => send('rest-stream', origin.main, { authorization: 'Bearer not-a-jwt' }),
        expect: refused(401, 'UNAUTHORIZED'),
      },
      'graphql-http': {
        run: () => send('graphql-http', origin.main, { authorization: UNKNOWN_ACCESS_TOKEN }),
        expect: refused(401, 'UNAUTHORIZED'),
      },
      'graphql-sse': {
        run: () => send('graphql-sse', origin.main, { authorization: 'Token igw_pat_unknown_000000000000000000000000' }),
        expect: refused(401, 'UNAUTHORIZED'),
      },
      'graphql-ws': {
        run: () => send('graphql-ws', origin.main, { authorization: 'Token igw_pat_unknown_000000000000000000000000' }),
        expect: closed(4401),
      },
      auth: {
        notApplicable:
          'these endpoints read no credential: sign-in takes a password, a code its path, sign-out the session its cookie names; a credential sent along is not resolved (the rate limit counts it by address)',
      },
    },
    'rate-limit': {
      // Failed client authentications per address (LOGIN_FAILURES_PER_ADDRESS is 2 on the tight server), and
      // authorization requests and consent steps per address (RATE_LIMIT_PER_MINUTE is 2).
      oauth: {
        run: async () => {
          const token = await repeated(3, () => send('oauth', origin.tight, { authorization: UNKNOWN_CLIENT }))();
          const authorize = await repeated(3, () => http(origin.tight, 'GET', '/oauth/authorize?client_id=oaa_none', {}, {}))();
          const consent = await repeated(3, () => http(origin.tight, 'GET', '/oauth/interaction/none/details', {}, {}))();
          return {
            text: '',
            headers: {},
            each: [
              { endpoint: 'POST /oauth/token', outcome: token },
              { endpoint: 'GET /oauth/authorize', outcome: authorize },
              { endpoint: 'GET /oauth/interaction/{id}/details', outcome: consent },
            ],
          };
        },
        expect: (outcome) => {
          for (const { outcome: answered } of outcome.each!) refused(429, 'RATE_LIMITED')(answered);
        },
      },
      rest: { run: repeated(3, (token) => send('rest', origin.tight, { token })), expect: refused(429, 'RATE_LIMITED') },
      'rest-stream': {
        run: repeated(3, (token) => send('rest-stream', origin.tight, { token, path: '/syncs?connection_id=con_none' })),
        expect: refused(429, 'RATE_LIMITED'),
      },
      'graphql-http': { run: repeated(3, (token) => send('graphql-http', origin.tight, { token })), expect: refused(429, 'RATE_LIMITED') },
      'graphql-sse': {
        run: repeated(3, (token) => send('graphql-sse', origin.tight, { token, query: QUERY })),
        expect: refused(429, 'RATE_LIMITED'),
      },
      'graphql-ws': { run: repeated(3, (token) => send('graphql-ws', origin.tight, { token })), expect: refused(200, 'RATE_LIMITED') },
      auth: everyAuth((endpoint) => repeated(3, (token) => toAuth(origin.tight, endpoint, { token })()), refused(429, 'RATE_LIMITED')),
    },
    'document-limits': {
      oauth: {
        notApplicable:
          'no GraphQL document: a form of parameters, bounded by the body size, of which oidc-provider takes only those it knows',
      },
      rest: {
        run: () => send('rest', origin.main, { token: reader(), path: '/connected?limit=100000' }),
        expect: refused(400, 'INVALID_QUERY'),
      },
      'rest-stream': { notApplicable: 'the stream runs a fixed document of the server; its only parameters are ids (checked as such)' },
      'graphql-http': {
        run: () => send('graphql-http', origin.main, { token: reader(), query: `${ALIASES('query { connections(limit: 1) { nodes')} } }` }),
        expect: refused(400, 'INVALID_QUERY'),
      },
      'graphql-sse': {
        run: () => send('graphql-sse', origin.main, { token: reader(), query: `${ALIASES('subscription { syncChanged')} }` }),
        expect: refused(400, 'INVALID_QUERY'),
      },
      'graphql-ws': {
        run: () => send('graphql-ws', origin.main, { token: reader(), query: `${ALIASES('subscription { syncChanged')} }` }),
        expect: refused(200, 'INVALID_QUERY'),
      },
      auth: {
        notApplicable: 'no GraphQL document runs there; a body is JSON of at most 4 KiB (size), nested at most 32 deep (error-masking)',
      },
    },
    'credential-requirement': {
      oauth: { run: () => send('oauth', origin.main, {}), expect: refused(400, 'invalid_request') },
      rest: { run: () => send('rest', origin.main, { token: null }), expect: refused(401, 'UNAUTHORIZED') },
      'rest-stream': { run: () => send('rest-stream', origin.main, { token: null }), expect: refused(401, 'UNAUTHORIZED') },
      'graphql-http': { run: () => send('graphql-http', origin.main, { token: null }), expect: refused(401, 'UNAUTHORIZED') },
      'graphql-sse': { run: () => send('graphql-sse', origin.main, { token: null }), expect: refused(401, 'UNAUTHORIZED') },
      'graphql-ws': { run: () => send('graphql-ws', origin.main, { token: null }), expect: closed(4401) },
      auth: { notApplicable: 'signing in is how a member gets a credential; signing out and reading or using a code need none' },
    },
    'stream-caps': {
      oauth: { notApplicable: 'a JSON answer holds no stream; the throttle and the deadline bound it' },
      rest: { notApplicable: 'a JSON answer holds no stream; the rate limit and the deadline bound it' },
      'graphql-http': { notApplicable: 'a JSON answer holds no stream; the rate limit and the deadline bound it' },
      'rest-stream': { run: whileOpen('rest-stream', (token) => ({ token })), expect: refused(429, 'RATE_LIMITED') },
      'graphql-sse': { run: whileOpen('graphql-sse', (token) => ({ token })), expect: refused(429, 'RATE_LIMITED') },
      'graphql-ws': { run: whileOpen('graphql-ws', (token) => ({ token, query: SUBSCRIPTION })), expect: closed(4429) },
      auth: { notApplicable: 'a JSON answer holds no stream; the rate limit and the deadline bound it' },
    },
    deadline: {
      oauth: { run: () => send('oauth', origin.slow, { authorization: UNKNOWN_CLIENT }), expect: refused(503, 'UNAVAILABLE') },
      rest: { run: () => send('rest', origin.slow, { token: reader() }), expect: refused(503, 'UNAVAILABLE') },
      // A stream opens with little work (its events come later), within a millisecond when every lookup is cached:
      // the stream cells use a deadline already past on arrival, so an opening in time cannot hide the check.
      'rest-stream': { run: () => send('rest-stream', origin.expired, { token: reader() }), expect: refused(503, 'UNAVAILABLE') },
      'graphql-http': { run: () => send('graphql-http', origin.slow, { token: reader() }), expect: refused(503, 'UNAVAILABLE') },
      'graphql-sse': { run: () => send('graphql-sse', origin.expired, { token: reader() }), expect: refused(503, 'UNAVAILABLE') },
      'graphql-ws': { run: () => send('graphql-ws', origin.expired, { token: reader() }), expect: refused(200, 'UNAVAILABLE') },
      auth: everyAuth((endpoint) => toAuth(origin.expired, endpoint, doingItsWork(endpoint)), refused(503, 'UNAVAILABLE')),
    },
    'error-masking': {
      oauth: {
        // A body the provider cannot parse: refused with the protocol's error, no stack.
        run: () =>
          send('oauth', origin.main, {
            authorization: UNKNOWN_CLIENT,
            headers: { 'content-type': 'application/json' },
            body: '{"grant_type":',
          }),
        expect: (outcome) => {
          expect({ status: outcome.status, code: outcome.code }).toEqual({ status: 400, code: 'invalid_request' });
          expect(outcome.text).not.toMatch(/\n\s+at /);
        },
      },
      rest: {
        run: () => send('rest', origin.main, { token: reader(), path: `/connected?or=${'(or'.repeat(1500)}${')'.repeat(1500)}` }),
        expect: clean(400),
      },
      'rest-stream': {
        run: () => send('rest-stream', origin.main, { token: reader(), headers: { 'last-event-id': '9'.repeat(40) } }),
        expect: clean(400),
      },
      'graphql-http': { run: () => send('graphql-http', origin.main, { token: reader(), body: deepBody(QUERY) }), expect: clean(400) },
      'graphql-sse': { run: () => send('graphql-sse', origin.main, { token: reader(), body: deepBody(SUBSCRIPTION) }), expect: clean(400) },
      'graphql-ws': {
        run: () => websocket(origin.main, { token: reader() }, QUERY, `{"id":"1","type":"subscribe","payload":${deepBody(QUERY)}}`),
        expect: clean(200),
      },
      auth: everyAuth(
        (endpoint) =>
          toAuth(
            origin.main,
            endpoint,
            endpoint.method === 'GET'
              ? { path: endpoint.path.replace(/[^/]+$/, '%00%ff') }
              : { body: DEEP_SMALL, headers: { cookie: `${SESSION_COOKIE}=%00%ff${'s'.repeat(4000)}` } },
          ),
        (outcome) => {
          expect(outcome.text).not.toMatch(/RangeError|Maximum call stack|\n\s+at |SELECT|invalid byte sequence/);
          // Sign-out reads no body: it answers 200, showing nothing.
          if ((outcome.status ?? 0) < 400) return;
          expect(outcome.code).toBeDefined();
          expect(outcome.text).toMatch(/"req_id":"req_/);
        },
      ),
    },
    'request-log': {
      oauth: { run: withLogLine(() => send('oauth', origin.main, { authorization: UNKNOWN_CLIENT })), expect: loggedAs(401, 'POST') },
      rest: { run: withLogLine(() => send('rest', origin.main, { token: null })), expect: loggedAs(401) },
      'rest-stream': { run: withLogLine(() => send('rest-stream', origin.main, { token: null })), expect: loggedAs(401) },
      'graphql-http': { run: withLogLine(() => send('graphql-http', origin.main, { token: null })), expect: loggedAs(401) },
      'graphql-sse': { run: withLogLine(() => send('graphql-sse', origin.main, { token: null })), expect: loggedAs(401) },
      'graphql-ws': {
        run: withLogLine(() => send('graphql-ws', origin.main, { token: reader(), query: '{ nope }' })),
        expect: loggedAs(400, 'WS'),
      },
      auth: everyAuth(
        (endpoint) => async () => {
          lines.length = 0;
          const outcome = await toAuth(origin.main, endpoint)();
          return { ...outcome, text: JSON.stringify(lines.filter((entry) => entry.msg === 'request')) };
        },
        (outcome, endpoint) => expect(JSON.parse(outcome.text)).toMatchObject([{ status: outcome.status, route: endpoint.pattern }]),
      ),
    },
    metrics: {
      oauth: {
        run: counted('http_requests_total{method="POST",route="/oauth/token",status="401"}', () =>
          send('oauth', origin.main, { authorization: UNKNOWN_CLIENT }),
        ),
        expect: () => {},
      },
      rest: {
        run: counted('http_requests_total{method="GET",route="/api/v1/integrations/connected",status="401"}', () =>
          send('rest', origin.main, { token: null }),
        ),
        expect: () => {},
      },
      'rest-stream': {
        run: counted('http_requests_total{method="GET",route="/api/v1/integrations/syncs",status="401"}', () =>
          send('rest-stream', origin.main, { token: null }),
        ),
        expect: () => {},
      },
      'graphql-http': {
        run: counted('http_requests_total{method="POST",route="/graphql",status="401"}', () =>
          send('graphql-http', origin.main, { token: null }),
        ),
        expect: () => {},
      },
      'graphql-sse': {
        run: counted('http_requests_total{method="POST",route="/graphql",status="401"}', () =>
          send('graphql-sse', origin.main, { token: null }),
        ),
        expect: () => {},
      },
      'graphql-ws': {
        run: counted('http_requests_total{method="WS",route="/graphql",status="400"}', () =>
          send('graphql-ws', origin.main, { token: reader(), query: '{ nope }' }),
        ),
        expect: () => {},
      },
      auth: everyAuth(
        (endpoint) => async () => {
          const before = await metricsText();
          const outcome = await toAuth(origin.main, endpoint)();
          const series = `http_requests_total{method="${endpoint.method}",route="${endpoint.pattern}",status="${outcome.status}"}`;
          return { ...outcome, text: `${sampleOf(await metricsText(), series) - sampleOf(before, series)}` };
        },
        (outcome) => expect(outcome.text).toBe('1'),
      ),
    },
    'security-headers': {
      oauth: { run: () => send('oauth', origin.main, { authorization: UNKNOWN_CLIENT }), expect: securityHeaders },
      rest: { run: () => send('rest', origin.main, { token: null }), expect: securityHeaders },
      'rest-stream': { run: () => send('rest-stream', origin.main, { token: null }), expect: securityHeaders },
      'graphql-http': { run: () => send('graphql-http', origin.main, { token: null }), expect: securityHeaders },
      'graphql-sse': { run: () => send('graphql-sse', origin.main, { token: null }), expect: securityHeaders },
      'graphql-ws': { notApplicable: 'after the 101 upgrade no HTTP answer is sent; messages are graphql-ws frames' },
      auth: everyAuth((endpoint) => toAuth(origin.main, endpoint), securityHeaders),
    },
  };

  it('has a row for every check and a cell for every surface', () => {
    expect(Object.keys(TABLE).sort()).toEqual([...ADMISSION_CHECKS].sort());
    for (const check of ADMISSION_CHECKS) expect(Object.keys(TABLE[check]).sort(), check).toEqual([...SURFACES].sort());
  });

  it('refuses a crafted Host before routing: POST /healthz creates nothing, GET /healthz lists nothing', async () => {
    const admin = t.tenants.demo.adminToken;
    const before = await t.db.prisma.webhookEndpoint.count({ where: { tenantId: t.tenants.demo.id } });
    const body = JSON.stringify({ url: 'https://example.com/hook', event_types: [] });
    for (const host of ['x/api/v1/integrations/webhooks?#', 'x/api/v1/integrations/webhooks?', 'evil@x', 'x\t/']) {
      const posted = await http(origin.main, 'POST', '/healthz', { token: admin, host }, { 'content-type': 'application/json' }, body);
      expect({ host, status: posted.status, code: posted.code }).toEqual({ host, status: 400, code: 'INVALID_QUERY' });
    }
    const listed = await http(origin.main, 'GET', '/healthz', { token: admin, host: 'x/api/v1/integrations/connected?limit=5#' }, {});
    expect(listed.status).toBe(400);
    expect(listed.text).not.toContain('"data"');
    expect(await t.db.prisma.webhookEndpoint.count({ where: { tenantId: t.tenants.demo.id } })).toBe(before);
    // The docs link of the refusal names this server, not the Host sent.
    expect(JSON.parse(listed.text).error.docs).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/docs\/errors\/INVALID_QUERY$/);
  });

  it('puts the sign-in routes, single sign-on included, through the same spine: the Host check and the rate limit', async () => {
    const paths = ['/api/v1/auth/sso/start?organization=none', '/api/v1/auth/sso/callback?state=x&code=y', '/api/v1/auth/login'];
    for (const path of paths) {
      const crafted = await http(origin.main, path.endsWith('login') ? 'POST' : 'GET', path, { token: null, host: 'x y' }, {});
      expect({ path, status: crafted.status, code: crafted.code }).toEqual({ path, status: 400, code: 'INVALID_QUERY' });
    }
    // Without a credential every /api/v1/auth request counts against its client address's budget, whichever route.
    const sparing = await serve(
      gatewayOver(t.db, { config: { RATE_LIMIT_PER_MINUTE: 2 }, rateLimit: { keyPrefix: `igw:table:${kind}:${Date.now()}:sign-in` } }),
    );
    const statuses = [];
    for (const path of [paths[0]!, paths[1]!, paths[0]!, paths[1]!])
      statuses.push((await http(sparing, 'GET', path, { token: null }, {})).status);
    expect(statuses).toEqual([303, 303, 429, 429]);
    const login = await http(sparing, 'POST', paths[2]!, { token: null }, { 'content-type': 'application/json' }, '{}');
    expect(login.status).toBe(429);
  });

  for (const check of ADMISSION_CHECKS) {
    for (const surface of SURFACES) {
      it(`${check} × ${surface}`, async (context) => {
        const cell = TABLE[check][surface];
        if ('notApplicable' in cell) {
          expect(cell.notApplicable.length).toBeGreaterThan(20);
          context.skip(cell.notApplicable);
          return;
        }
        cell.expect(await cell.run());
      });
    }
  }
});

/** The error code of a JSON answer: the REST body's `error.code`, or the GraphQL body's first error's. */
function jsonCode(text: string): string | undefined {
  try {
    const body = JSON.parse(text);
    // The API's error body, GraphQL's errors, or the OAuth protocol's `{error}` (RFC 6749 §5.2).
    return typeof body.error === 'string' ? body.error : (body.error?.code ?? body.errors?.[0]?.extensions?.code);
  } catch {
    return undefined;
  }
}

/** The error code in an event stream: an `event: error` message (REST) or a `next` with errors (GraphQL). */
function sseCode(text: string): string | undefined {
  for (const block of text.split('\n\n')) {
    const data = block.split('\n').find((line) => line.startsWith('data: '));
    if (!data) continue;
    const code = jsonCode(data.slice(6));
    if (code) return code;
  }
  return undefined;
}
