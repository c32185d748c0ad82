// The gateway as an OAuth 2.0 resource server for an outside identity provider, played by a real one:
// `oidc-provider` (a certified OpenID Connect provider) started here, issuing client-credentials access tokens as
// JWTs (RFC 9068) signed with keys from its JWKS. The gateway verifies them through JWT_JWKS_URL, maps their
// claims to a tenant and a role by configuration, follows a key rotation, and refuses what it must.
import { createHmac } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, exportSPKI, generateKeyPair, SignJWT, type JWK } from 'jose';
import Provider from 'oidc-provider';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../src/logger.js';
import { attachGraphqlWebSocket } from '../src/http/graphql-ws.js';
import { databaseKinds } from './fixtures/databases.js';
import { graphqlWsResult } from './fixtures/graphql-ws.js';
import { createTestGateway, gatewayOver, JWT_TEST_SECRET, type TestGateway } from './fixtures/gateway.js';

const AUDIENCE = 'https://api.integrations.example/';
const OTHER_AUDIENCE = 'https://other.example/';
const BASE = '/api/v1/integrations';

/** The provider's clients, each a backend of one organization with the claims its tokens carry. */
const CLIENTS: Record<string, { org: string; groups?: string[] }> = {
  'acme-admin': { org: 'acme', groups: ['integration-admins', 'staff'] },
  'acme-reader': { org: 'acme', groups: ['staff'] },
  'acme-engine': { org: 'acme', groups: ['sync-engines'] },
  'acme-both': { org: 'acme', groups: ['staff', 'sync-engines'] },
  'acme-nobody': { org: 'acme', groups: ['marketing'] },
  'globex-admin': { org: 'globex', groups: ['integration-admins'] },
};
const CLIENT_SECRET = 'a-client-secret-for-the-test-provider-0123456789';

interface SigningKey {
  kid: string;
  privateJwk: JWK;
  privateKey: CryptoKey;
  publicPem: string;
}

async function signingKey(kid: string): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
  return {
    kid,
    privateJwk: { ...(await exportJWK(privateKey)), kid, alg: 'RS256', use: 'sig' },
    privateKey,
    publicPem: await exportSPKI(publicKey),
  };
}

/**
 * One identity provider at a fixed address whose keys can be rotated: each rotation is a new `oidc-provider`
 * instance with the given keys (the first one signs), served on the same port. `jwksFetches` counts the key set's
 * requests.
 */
class IdentityProvider {
  jwksFetches = 0;
  private provider!: Provider;
  private constructor(
    private readonly server: Server,
    readonly issuer: string,
  ) {}

  static async start(keys: SigningKey[]): Promise<IdentityProvider> {
    let handle: (req: IncomingMessage, res: ServerResponse) => void = () => {};
    const server = createServer((req, res) => handle(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const idp = new IdentityProvider(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    handle = (req, res) => {
      if (req.url?.startsWith('/jwks')) idp.jwksFetches++;
      idp.provider.callback()(req, res);
    };
    idp.rotate(keys);
    return idp;
  }

  rotate(keys: SigningKey[]): void {
    this.provider = new Provider(this.issuer, {
      clients: Object.keys(CLIENTS).map((clientId) => ({
        client_id: clientId,
        client_secret: CLIENT_SECRET,
        grant_types: ['client_credentials'],
        redirect_uris: [],
        response_types: [],
        scope: 'api',
      })),
      scopes: ['api'],
      jwks: { keys: keys.map((key) => key.privateJwk) },
      features: {
        devInteractions: { enabled: false },
        clientCredentials: { enabled: true },
        resourceIndicators: {
          enabled: true,
          defaultResource: () => AUDIENCE,
          useGrantedResource: () => true,
          getResourceServerInfo: (_ctx, resource) => ({
            scope: 'api',
            audience: resource,
            accessTokenTTL: 300,
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: 'RS256' } },
          }),
        },
      },
      extraTokenClaims: (_ctx, token) => {
        const client = CLIENTS[(token as { clientId: string }).clientId]!;
        return { org: { id: client.org }, ...(client.groups ? { groups: client.groups } : {}) };
      },
    });
  }

  /** A client-credentials access token, as a backend gets one (RFC 6749 §4.4, with a resource indicator). */
  async token(clientId: string, resource = AUDIENCE): Promise<string> {
    const response = await fetch(`${this.issuer}/token`, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from(`${clientId}:${CLIENT_SECRET}`).toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams({ grant_type: 'client_credentials', scope: 'api', resource }),
    });
    const body = (await response.json()) as { access_token?: string; error?: string; error_description?: string };
    if (!body.access_token) throw new Error(`no token for ${clientId}: ${JSON.stringify(body)}`);
    return body.access_token;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

function headerOf(jwt: string): { kid?: string; alg?: string } {
  return JSON.parse(Buffer.from(jwt.split('.')[0]!, 'base64url').toString()) as { kid?: string; alg?: string };
}

describe.each(databaseKinds)('an outside identity provider on %s', (kind) => {
  let fixture: TestGateway;
  let idp: IdentityProvider;
  let first: SigningKey;
  const servers: Server[] = [];
  let origin = '';

  beforeAll(async () => {
    first = await signingKey('key-1');
    idp = await IdentityProvider.start([first]);
    fixture = await createTestGateway(kind);
    await fixture.gateway.dispose();
    // The same database, served by a gateway configured for this provider (the fixture's HS256 secret stays).
    const gateway = gatewayOver(fixture.db, {
      config: {
        JWT_JWKS_URL: `${idp.issuer}/jwks`,
        JWT_ISSUER: idp.issuer,
        JWT_AUDIENCE: AUDIENCE,
        JWT_TENANT_CLAIM: '/org/id',
        JWT_TENANT_MAP: { acme: fixture.tenants.demo.id, globex: fixture.tenants.other.id },
        JWT_ROLE_CLAIM: 'groups',
        JWT_ROLE_MAP: { 'integration-admins': 'admin', staff: 'reader', 'sync-engines': 'engine' },
        JWT_JWKS_ALGORITHMS: ['RS256'],
        JWT_CLOCK_SKEW_SECONDS: 5,
        JWT_JWKS_COOLDOWN_SECONDS: 1,
        JWT_JWKS_MAX_AGE_SECONDS: 2,
      },
    });
    fixture.gateway = gateway;
    const server = createServer(gateway);
    servers.push(server);
    const closeWs = attachGraphqlWebSocket(server, gateway, createLogger('silent'));
    server.on('close', () => void closeWs());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }, 60_000);

  afterAll(async () => {
    for (const server of servers) {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
    await fixture?.dispose();
    await idp?.close();
  });

  const get = (path: string, token: string, accept = 'application/json') =>
    fetch(`${origin}${path}`, { headers: { authorization: `Bearer ${token}`, accept } });
  const graphqlAs = async (token: string, query: string) => {
    const response = await fetch(`${origin}/graphql`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query }),
    });
    return {
      status: response.status,
      body: (await response.json()) as { data?: Record<string, unknown>; errors?: { extensions?: { code?: string } }[] },
    };
  };
  async function expectRefused(token: string): Promise<void> {
    const response = await get(`${BASE}/connected?limit=1`, token);
    expect(response.status).toBe(401);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('UNAUTHORIZED');
  }

  it('accepts its client-credentials access token on REST, GraphQL, SSE and graphql-ws, as the mapped tenant and role', async () => {
    const token = await idp.token('acme-admin');
    expect(headerOf(token)).toMatchObject({ alg: 'RS256', kid: 'key-1' });

    const rest = await get(`${BASE}/connected?limit=1&select=id`, token);
    expect(rest.status).toBe(200);
    const graphql = await graphqlAs(token, '{ organization { slug viewerRole } }');
    expect(graphql.body.data?.organization).toEqual({ slug: fixture.tenants.demo.slug, viewerRole: 'admin' });

    const controller = new AbortController();
    const stream = await fetch(`${origin}${BASE}/syncs`, {
      headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' },
      signal: controller.signal,
    });
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
    controller.abort();

    expect(await graphqlWsResult(origin, `Bearer ${token}`, '{ organization { slug } }')).toEqual({
      data: { organization: { slug: fixture.tenants.demo.slug } },
    });

    // Another organization's client lands in its own tenant.
    const globex = await graphqlAs(await idp.token('globex-admin'), '{ organization { slug } }');
    expect(globex.body.data?.organization).toEqual({ slug: fixture.tenants.other.slug });
  });

  it('maps groups to the role that holds the others, and refuses a token whose tenant or role cannot be mapped', async () => {
    // staff → reader: reads, cannot write.
    const reader = await idp.token('acme-reader');
    expect((await graphqlAs(reader, '{ organization { viewerRole } }')).body.data?.organization).toEqual({ viewerRole: 'reader' });
    const write = await fetch(`${origin}${BASE}/webhooks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${reader}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: 'https://hooks.example/x', event_types: ['sync.succeeded'] }),
    });
    expect(write.status).toBe(403);
    // sync-engines → engine.
    expect((await graphqlAs(await idp.token('acme-engine'), '{ organization { viewerRole } }')).body.data?.organization).toEqual({
      viewerRole: 'engine',
    });
    // staff and sync-engines: reader and engine each hold a permission the other lacks; refused, not guessed.
    await expectRefused(await idp.token('acme-both'));
    // No group the map knows.
    await expectRefused(await idp.token('acme-nobody'));
    // An organization the tenant map does not know, signed by the provider's own key.
    const stranger = await new SignJWT({ org: { id: 'initech' }, groups: ['integration-admins'] })
      .setProtectedHeader({ alg: 'RS256', kid: first.kid })
      .setIssuer(idp.issuer)
      .setAudience(AUDIENCE)
      .setSubject('initech-backend')
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(first.privateKey);
    await expectRefused(stranger);
  });

  it('refuses tokens for another audience or issuer, expired, not yet valid, unsigned, or signed another way', async () => {
    await expectRefused(await idp.token('acme-admin', OTHER_AUDIENCE));
    const claims = { org: { id: 'acme' }, groups: ['integration-admins'] };
    const now = Math.floor(Date.now() / 1000);
    const signed = (build: (jwt: SignJWT) => SignJWT, alg = 'RS256') =>
      build(new SignJWT(claims).setProtectedHeader({ alg, kid: first.kid }).setSubject('backend')).sign(first.privateKey);
    // The shape that is accepted, to show the refusals below are for their one difference.
    const good = await signed((jwt) => jwt.setIssuer(idp.issuer).setAudience(AUDIENCE).setIssuedAt().setExpirationTime('5m'));
    expect((await get(`${BASE}/connected?limit=1`, good)).status).toBe(200);

    await expectRefused(await signed((jwt) => jwt.setIssuer('https://evil.example').setAudience(AUDIENCE).setExpirationTime('5m')));
    await expectRefused(
      await signed((jwt) =>
        jwt
          .setIssuer(idp.issuer)
          .setAudience(AUDIENCE)
          .setIssuedAt(now - 600)
          .setExpirationTime(now - 1),
      ),
    );
    // Not before: 30 s ahead is beyond the configured 5 s of skew; 3 s ahead is within it.
    await expectRefused(
      await signed((jwt) =>
        jwt
          .setIssuer(idp.issuer)
          .setAudience(AUDIENCE)
          .setNotBefore(now + 30)
          .setExpirationTime('5m'),
      ),
    );
    const withinSkew = await signed((jwt) =>
      jwt
        .setIssuer(idp.issuer)
        .setAudience(AUDIENCE)
        .setNotBefore(now + 3)
        .setExpirationTime('5m'),
    );
    expect((await get(`${BASE}/connected?limit=1`, withinSkew)).status).toBe(200);
    // RSA-PSS with the same key: a valid signature, but not the pinned algorithm (JWT_JWKS_ALGORITHMS=RS256).
    const pss = await generateKeyPair('PS256', { extractable: true });
    const pssToken = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'PS256', kid: first.kid })
      .setIssuer(idp.issuer)
      .setAudience(AUDIENCE)
      .setSubject('backend')
      .setExpirationTime('5m')
      .sign(pss.privateKey);
    await expectRefused(pssToken);

    const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const payload = { ...claims, sub: 'backend', iss: idp.issuer, aud: AUDIENCE, exp: now + 300 };
    // alg none.
    await expectRefused(`${part({ alg: 'none', kid: first.kid })}.${part(payload)}.`);
    // HS256 keyed with the provider's public key (the classic confusion): the public key is no HMAC secret here.
    for (const secret of [first.publicPem, JSON.stringify({ kty: 'RSA', n: first.privateJwk.n, e: first.privateJwk.e })]) {
      const unsigned = `${part({ alg: 'HS256', kid: first.kid })}.${part(payload)}`;
      await expectRefused(`${unsigned}.${createHmac('sha256', secret).update(unsigned).digest('base64url')}`);
    }
  });

  it('follows a key rotation: a new key is fetched when a token names it, a removed one stops within the cache age', async () => {
    const before = await idp.token('acme-admin');
    expect((await get(`${BASE}/connected?limit=1`, before)).status).toBe(200);
    const second = await signingKey('key-2');
    idp.rotate([second, first]);
    const after = await idp.token('acme-admin');
    expect(headerOf(after).kid).toBe('key-2');
    // The first request may fall within the cooldown of the last fetch (1 s): it is refused then, and accepted
    // once the cooldown has passed.
    await expect.poll(async () => (await get(`${BASE}/connected?limit=1`, after)).status, { timeout: 5000, interval: 250 }).toBe(200);
    // Both keys are in the set: a token of the first key still works.
    expect((await get(`${BASE}/connected?limit=1`, before)).status).toBe(200);

    // The first key leaves the set: its tokens stop working once the cached set is older than its 2 s.
    idp.rotate([second]);
    await expect.poll(async () => (await get(`${BASE}/connected?limit=1`, before)).status, { timeout: 8000, interval: 250 }).toBe(401);
    expect((await get(`${BASE}/connected?limit=1`, after)).status).toBe(200);
    // Back to the first key for the other tests.
    idp.rotate([first, second]);
  });

  it('fetches the key set at most once a cooldown, whatever a flood of unknown kids asks', async () => {
    const stranger = await generateKeyPair('RS256');
    const tokens = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        new SignJWT({ org: { id: 'acme' }, groups: ['integration-admins'] })
          .setProtectedHeader({ alg: 'RS256', kid: `unknown-${i}` })
          .setIssuer(idp.issuer)
          .setAudience(AUDIENCE)
          .setSubject('flood')
          .setExpirationTime('5m')
          .sign(stranger.privateKey),
      ),
    );
    const fetchesBefore = idp.jwksFetches;
    const started = Date.now();
    const statuses: number[] = [];
    for (let i = 0; i < tokens.length; i += 20) {
      const batch = await Promise.all(tokens.slice(i, i + 20).map((token) => get(`${BASE}/connected?limit=1`, token)));
      statuses.push(...batch.map((response) => response.status));
    }
    const seconds = (Date.now() - started) / 1000;
    expect(new Set(statuses)).toEqual(new Set([401]));
    // One fetch per cooldown (1 s) at most, plus one for the cache's age running out (2 s), plus one in flight.
    const fetches = idp.jwksFetches - fetchesBefore;
    expect(fetches).toBeLessThanOrEqual(Math.ceil(seconds) + Math.ceil(seconds / 2) + 1);
    expect(fetches).toBeLessThan(tokens.length / 10);
  });

  it('keeps the HS256 shared secret working beside the key set, with the same claim mapping', async () => {
    const token = await new SignJWT({ org: { id: 'acme' }, groups: ['staff'] })
      .setProtectedHeader({ alg: 'HS256' })
      .setIssuer(idp.issuer)
      .setAudience(AUDIENCE)
      .setSubject('reporting-job')
      .setExpirationTime('5m')
      .sign(new TextEncoder().encode(JWT_TEST_SECRET));
    expect((await graphqlAs(token, '{ organization { viewerRole } }')).body.data?.organization).toEqual({ viewerRole: 'reader' });
  });
});
