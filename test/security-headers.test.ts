// Security headers on every kind of response, a CSP that lets the HTML pages load only from this server, and
// CORS: off unless CORS_ORIGINS lists origins.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../src/http/yoga.js';
import { createTestGateway, gatewayOver, type TestGateway } from './fixtures/gateway.js';
import { BASE, ORIGIN } from './fixtures/rest.js';

const STRICT_CSP = "default-src 'none'; frame-ancestors 'none'";

function gatewayWithCors(t: TestGateway, origins: string[] | undefined): Gateway {
  return gatewayOver(t.db, { config: { CORS_ORIGINS: origins } });
}

describe('security headers', () => {
  let t: TestGateway;
  let token: string;
  const get = (path: string, headers: Record<string, string> = {}) => t.gateway.fetch(`${ORIGIN}${path}`, { headers });
  beforeAll(async () => {
    t = await createTestGateway('pglite');
    token = t.tenants.demo.readerToken;
  });
  afterAll(() => t?.dispose());

  const commonHeaders = (response: Response) => ({
    nosniff: response.headers.get('x-content-type-options'),
    referrer: response.headers.get('referrer-policy'),
    frames: response.headers.get('x-frame-options'),
    poweredBy: response.headers.get('x-powered-by'),
    hsts: response.headers.get('strict-transport-security'),
  });
  const EXPECTED_COMMON = { nosniff: 'nosniff', referrer: 'no-referrer', frames: 'DENY', poweredBy: null, hsts: null };

  it('puts them, with a strict CSP and no-store, on JSON responses: data, errors, GraphQL, health', async () => {
    const responses = {
      restOk: await get(`${BASE}/categories`, { authorization: `Token ${token}` }),
      restUnauthorized: await get(`${BASE}/connected`),
      restNotFound: await get(`${BASE}/nowhere`),
      graphql: await t.gateway.fetch(`${ORIGIN}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Token ${token}` },
        body: JSON.stringify({ query: '{ categories { totalCount } }' }),
      }),
      graphqlRefused: await t.gateway.fetch(`${ORIGIN}/graphql`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'x' }),
      health: await get('/healthz'),
    };
    for (const [name, response] of Object.entries(responses)) {
      expect({ name, ...commonHeaders(response) }).toEqual({ name, ...EXPECTED_COMMON });
      expect({ name, csp: response.headers.get('content-security-policy') }).toEqual({ name, csp: STRICT_CSP });
      expect({ name, cache: response.headers.get('cache-control') }).toEqual({ name, cache: 'no-store' });
      await response.arrayBuffer();
    }
  });

  it('lets the HTML pages load from this server only, run no inline script, and forbids framing', async () => {
    for (const path of ['/', '/graphql', '/api/v1/docs', '/docs/errors', '/docs/errors/RATE_LIMITED']) {
      const response = await get(path, { accept: 'text/html' });
      expect({ path, status: response.status }).toEqual({ path, status: 200 });
      expect(response.headers.get('content-type')).toMatch(/^text\/html/);
      expect({ path, ...commonHeaders(response) }).toEqual({ path, ...EXPECTED_COMMON });
      const directives = Object.fromEntries(
        (response.headers.get('content-security-policy') ?? '').split(';').map((d) => {
          const [name, ...values] = d.trim().split(/\s+/);
          return [name, values.join(' ')];
        }),
      );
      expect(directives).toMatchObject({
        'default-src': "'self'",
        'script-src': "'self'",
        'connect-src': "'self'",
        'frame-ancestors': "'none'",
      });
      // Every script is a file of this server; the only inline <script> is GraphiQL's JSON options (data).
      const html = await response.text();
      const inline = [...html.matchAll(/<script(?![^>]*\ssrc=)([^>]*)>/g)].map((m) => m[1]!.trim());
      expect(
        inline.filter((attributes) => attributes !== 'type="application/json" id="graphiql-options"'),
        path,
      ).toEqual([]);
      expect(html).not.toMatch(/(src|href)="(https?:)?\/\//);
    }
  });

  it('keeps the long cache of the docs assets', async () => {
    const asset = await get('/api/v1/docs/swagger-ui.css');
    expect(asset.status).toBe(200);
    expect(asset.headers.get('cache-control')).toBe('public, max-age=86400');
    expect(asset.headers.get('x-content-type-options')).toBe('nosniff');
    await asset.arrayBuffer();
  });

  it('sends no CORS headers by default, to preflights or requests', async () => {
    const preflight = await t.gateway.fetch(`${ORIGIN}/graphql`, {
      method: 'OPTIONS',
      headers: {
        origin: 'https://evil.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization',
      },
    });
    expect(preflight.headers.get('access-control-allow-origin')).toBeNull();
    expect(preflight.headers.get('access-control-allow-headers')).toBeNull();
    await preflight.arrayBuffer();
    const simple = await get(`${BASE}/categories`, { origin: 'https://evil.example', authorization: `Token ${token}` });
    expect(simple.status).toBe(200);
    expect(simple.headers.get('access-control-allow-origin')).toBeNull();
    await simple.arrayBuffer();
  });

  it('allows the listed origins only, with the Authorization header and the rate-limit headers exposed', async () => {
    const gateway = gatewayWithCors(t, ['https://app.example.com', 'http://localhost:3000']);
    const preflight = (origin: string) =>
      gateway.fetch(`${ORIGIN}${BASE}/connected`, {
        method: 'OPTIONS',
        headers: { origin, 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization' },
      });
    const allowed = await preflight('https://app.example.com');
    expect(allowed.status).toBe(204);
    expect(allowed.headers.get('access-control-allow-origin')).toBe('https://app.example.com');
    expect(allowed.headers.get('access-control-allow-headers')).toMatch(/Authorization/);
    expect(allowed.headers.get('access-control-allow-credentials')).toBeNull();

    const refused = await preflight('https://evil.example');
    expect(refused.headers.get('access-control-allow-origin')).not.toBe('https://evil.example');
    expect(allowed.headers.get('vary')).toMatch(/\bOrigin\b/);

    const actual = await gateway.fetch(`${ORIGIN}${BASE}/categories`, {
      headers: { origin: 'http://localhost:3000', authorization: `Token ${token}` },
    });
    expect(actual.status).toBe(200);
    expect(actual.headers.get('access-control-allow-origin')).toBe('http://localhost:3000');
    expect(actual.headers.get('access-control-expose-headers')).toMatch(/RateLimit-Remaining/);
    expect(actual.headers.get('access-control-expose-headers')).toMatch(/X-Request-Id/);
    await actual.arrayBuffer();
  });

  it('gives an unlisted origin, or Origin: null, no allow-origin at all, and always varies on Origin', async () => {
    for (const origins of [['https://app.example.com'], ['https://app.example.com', 'http://localhost:3000'], ['*']]) {
      const gateway = gatewayWithCors(t, origins);
      const send = (method: string, path: string, origin?: string) =>
        gateway.fetch(`${ORIGIN}${path}`, {
          method,
          headers: {
            authorization: `Token ${token}`,
            ...(origin === undefined ? {} : { origin }),
            ...(method === 'OPTIONS' ? { 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization' } : {}),
          },
        });
      const refusedOrigins = origins.includes('*') ? ['null'] : ['null', 'https://evil.example', 'https://app.example.com.evil.example'];
      for (const origin of refusedOrigins) {
        for (const method of ['OPTIONS', 'GET']) {
          const response = await send(method, `${BASE}/categories`, origin);
          const seen = {
            origins,
            origin,
            method,
            allowOrigin: response.headers.get('access-control-allow-origin'),
            vary: response.headers.get('vary'),
          };
          expect(seen).toEqual({ ...seen, allowOrigin: null, vary: expect.stringMatching(/\bOrigin\b/) });
          expect(response.headers.get('access-control-allow-headers')).toBeNull();
          await response.arrayBuffer();
        }
      }
      const listed = origins[0] === '*' ? 'https://anything.example' : (origins.at(-1) as string);
      const allowed = await send('OPTIONS', `${BASE}/categories`, listed);
      expect(allowed.headers.get('access-control-allow-origin')).toBe(listed);
      expect(allowed.headers.get('vary')).toMatch(/\bOrigin\b/);
      // Without an Origin header the answer still depends on it, so shared caches must know.
      const sameOrigin = await send('GET', `${BASE}/categories`);
      expect(sameOrigin.status).toBe(200);
      expect(sameOrigin.headers.get('access-control-allow-origin')).toBeNull();
      expect(sameOrigin.headers.get('vary')).toMatch(/\bOrigin\b/);
      await Promise.all([allowed.arrayBuffer(), sameOrigin.arrayBuffer()]);
    }
    // CORS off: nothing varies on Origin.
    const plain = await get(`${BASE}/categories`, { authorization: `Token ${token}`, origin: 'https://app.example.com' });
    expect(plain.headers.get('vary') ?? '').not.toMatch(/Origin/);
    await plain.arrayBuffer();
  });
});
