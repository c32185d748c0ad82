// The gateway as an OAuth 2.0 authorization server (src/oauth/, docs/reference/oauth.md), driven by
// `openid-client` as a backend would drive it, over real HTTP on every database: discovery (RFC 8414), the client
// credentials grant, the access token on REST, GraphQL over HTTP, GraphQL over SSE and graphql-ws, introspection
// (RFC 7662), revocation (RFC 7009), private_key_jwt, and the refusals: wrong secret and unknown client
// (invalid_client), another audience, expired, forged tokens (alg none, HS256 signed with the public key), a
// deleted client, a removed or demoted service user, scopes above the role, guessing throttled per address.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, exportSPKI, generateKeyPair, importJWK, SignJWT, type JWK } from 'jose';
import * as oauth from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOAuthClient, deleteOAuthClient, oauthRecordKey } from '../src/auth/oauth-clients.js';
import { changeServiceUserRole, createServiceUser, deleteServiceUser } from '../src/auth/service-users.js';
import { createHttpServer } from '../src/http/http-server.js';
import { attachGraphqlWebSocket } from '../src/http/graphql-ws.js';
import { createLogger } from '../src/logger.js';
import type { Gateway } from '../src/http/yoga.js';
import { AuthorizationServer } from '../src/oauth/authorization-server.js';
import { rotateSigningKey } from '../src/oauth/signing-keys.js';
import { databaseKinds } from './fixtures/databases.js';
import { createTestGateway, gatewayOver, type TestGateway } from './fixtures/gateway.js';
import { graphqlWsResult } from './fixtures/graphql-ws.js';

const BASE = '/api/v1/integrations';
const QUERY = 'query { connections(limit: 1) { totalCount } }';

describe.each(databaseKinds)('the authorization server on %s', (kind) => {
  let t: TestGateway;
  let server: Server;
  let gateway: Gateway;
  let closeWebSockets: () => Promise<void>;
  let origin: string;
  let users = 0;

  beforeAll(async () => {
    t = await createTestGateway(kind);
    // Failed client authentications allowed per address: the throttle's test spends them.
    gateway = gatewayOver(t.db, { config: { LOGIN_FAILURES_PER_ADDRESS: 12, OAUTH_ACCESS_TOKEN_SECONDS: 60 } });
    server = createHttpServer(gateway, { logger: createLogger('silent') });
    closeWebSockets = attachGraphqlWebSocket(server, gateway, createLogger('silent'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }, 60_000);

  afterAll(async () => {
    await closeWebSockets?.();
    await new Promise<void>((resolve) => server?.close(() => resolve()));
    await gateway?.dispose();
    await t?.dispose();
  });

  /** A service user of the demo tenant with a client of its own (a secret, unless `jwks`). */
  async function clientOf(role: 'admin' | 'reader' | 'engine', options: { scope?: string; jwks?: unknown } = {}) {
    const user = await createServiceUser(t.db, { tenantId: t.tenants.demo.id, name: `oauth-${kind}-${++users}`, role });
    const client = await createOAuthClient(t.db.raw, { tenantId: t.tenants.demo.id, serviceUserId: user.id, ...options });
    return { user, client };
  }

  /** openid-client's view of the server for one client, found through RFC 8414 metadata. */
  function configOf(clientId: string, secret: string | undefined, auth?: oauth.ClientAuth): Promise<oauth.Configuration> {
    return oauth.discovery(new URL(origin), clientId, secret, auth, { algorithm: 'oauth2', execute: [oauth.allowInsecureRequests] });
  }

  async function tokenOf(role: 'admin' | 'reader' | 'engine' = 'reader', scope?: string) {
    const { user, client } = await clientOf(role);
    const config = await configOf(client.id, client.clientSecret!);
    const grant = await oauth.clientCredentialsGrant(config, scope ? { scope } : {});
    return { user, client, config, token: grant.access_token, grant };
  }

  const rest = (token: string, path = '/connected', init: RequestInit = {}) =>
    fetch(`${origin}${BASE}${path}`, { ...init, headers: { authorization: `Bearer ${token}`, ...init.headers } });

  async function graphql(token: string, query = QUERY) {
    const response = await fetch(`${origin}/graphql`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query }),
    });
    return { status: response.status, body: (await response.json()) as { data?: unknown; errors?: { extensions?: { code?: string } }[] } };
  }

  it('publishes its metadata (RFC 8414 and OpenID Connect discovery) and its keys', async () => {
    const metadata = (await (await fetch(`${origin}/.well-known/oauth-authorization-server`)).json()) as Record<string, unknown>;
    const discovery = (await (await fetch(`${origin}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
    expect(metadata).toEqual(discovery);
    expect(metadata).toMatchObject({
      issuer: origin,
      token_endpoint: `${origin}/oauth/token`,
      authorization_endpoint: `${origin}/oauth/authorize`,
      jwks_uri: `${origin}/oauth/jwks`,
      introspection_endpoint: `${origin}/oauth/introspect`,
      revocation_endpoint: `${origin}/oauth/revoke`,
      code_challenge_methods_supported: ['S256'],
    });
    expect(metadata.grant_types_supported).toEqual(expect.arrayContaining(['client_credentials']));
    expect(metadata.grant_types_supported).not.toContain('implicit');
    expect(metadata.response_types_supported).toEqual(['code']);
    expect(metadata).not.toHaveProperty('pushed_authorization_request_endpoint');
    expect(metadata).not.toHaveProperty('dpop_signing_alg_values_supported');
    expect(metadata.scopes_supported).toEqual(expect.arrayContaining(['read', 'write', 'engine']));
    const jwks = (await (await fetch(`${origin}/oauth/jwks`)).json()) as { keys: JWK[] };
    expect(jwks.keys.length).toBeGreaterThanOrEqual(1);
    for (const key of jwks.keys) expect(key).not.toHaveProperty('d');
  });

  it('lists the current and the previous key after a rotation, and drops the one before', async () => {
    const before = (await rotateSigningKey(t.db)).current;
    const { current, previous } = await rotateSigningKey(t.db);
    expect(previous).toBe(before);
    // A fresh gateway reads the keys at its first request; a running one within its key check interval.
    const freshGateway = gatewayOver(t.db);
    const fresh = createHttpServer(freshGateway, { logger: createLogger('silent') });
    await new Promise<void>((resolve) => fresh.listen(0, '127.0.0.1', resolve));
    try {
      const jwks = (await (await fetch(`http://127.0.0.1:${(fresh.address() as AddressInfo).port}/oauth/jwks`)).json()) as { keys: JWK[] };
      expect(jwks.keys.map((key) => key.kid)).toEqual([current, previous]);
    } finally {
      await new Promise<void>((resolve) => fresh.close(() => resolve()));
      await freshGateway.dispose();
    }
  });

  it('a running server follows a rotation made elsewhere (here at once; by default within 30 s)', async () => {
    const authorization = new AuthorizationServer(
      t.db,
      { issuer: 'https://issuer.example', audience: 'urn:test', accessTokenSeconds: 60, refreshTokenSeconds: 3600, trustProxy: false },
      createLogger('silent'),
      0,
    );
    const jwks = createServer((req, res) => void authorization.handler('http://unused').then((handle) => handle(req, res)));
    await new Promise<void>((resolve) => jwks.listen(0, '127.0.0.1', resolve));
    const kids = async () => {
      const url = `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/oauth/jwks`;
      return ((await (await fetch(url)).json()) as { keys: JWK[] }).keys.map((key) => key.kid);
    };
    try {
      const before = await kids();
      const { current } = await rotateSigningKey(t.db);
      expect(await kids()).toEqual([current, before[0]]);
    } finally {
      await new Promise<void>((resolve) => jwks.close(() => resolve()));
    }
  });

  it('grants client credentials; the token works on REST, GraphQL over HTTP, SSE and graphql-ws', async () => {
    const { token, grant } = await tokenOf('reader');
    expect(grant.token_type.toLowerCase()).toBe('bearer');
    expect(grant.expires_in).toBeLessThanOrEqual(60);
    expect(grant.scope).toBe('read');

    const listed = await rest(token);
    expect(listed.status).toBe(200);
    expect(((await listed.json()) as { data: unknown[] }).data.length).toBeGreaterThan(0);

    const http = await graphql(token);
    expect(http.status).toBe(200);
    expect(http.body.data).toMatchObject({ connections: { totalCount: expect.any(Number) } });

    const sse = await fetch(`${origin}/graphql`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ query: QUERY }),
    });
    expect(sse.status).toBe(200);
    expect(await sse.text()).toMatch(/event: next\ndata: \{"data":\{"connections":\{"totalCount":\d+/);

    expect(await graphqlWsResult(origin, `Bearer ${token}`, QUERY)).toMatchObject({
      data: { connections: { totalCount: expect.any(Number) } },
    });
  });

  it("counts a client's tokens against one budget: rate limits hold per client", async () => {
    const tightGateway = gatewayOver(t.db, {
      config: { RATE_LIMIT_PER_MINUTE: 2 },
      rateLimit: { keyPrefix: `igw:oauth:${kind}:${Date.now()}`, tenantMultiplier: 1000 },
    });
    const tight = createHttpServer(tightGateway, { logger: createLogger('silent') });
    await new Promise<void>((resolve) => tight.listen(0, '127.0.0.1', resolve));
    const list = (token: string) =>
      fetch(`http://127.0.0.1:${(tight.address() as AddressInfo).port}${BASE}/connected`, {
        headers: { authorization: `Bearer ${token}` },
      });
    try {
      const { config, token: first } = await tokenOf('reader');
      const second = (await oauth.clientCredentialsGrant(config, {})).access_token;
      expect((await list(first)).status).toBe(200);
      expect((await list(second)).status).toBe(200);
      // A new token of the same client starts no new budget; another client's does.
      expect((await list((await oauth.clientCredentialsGrant(config, {})).access_token)).status).toBe(429);
      expect((await list((await tokenOf('reader')).token)).status).toBe(200);
    } finally {
      await new Promise<void>((resolve) => tight.close(() => resolve()));
      await tightGateway.dispose();
    }
  });

  it('acts with the scope granted, within the role: a read token cannot write; write can', async () => {
    // A run of a connection that does not exist: 403 without the permission, 404 with it.
    const trigger = (token: string) =>
      rest(token, '/syncs', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"connection_id":"con_none"}' });
    expect((await trigger((await tokenOf('admin', 'read')).token)).status).toBe(403);
    expect((await trigger((await tokenOf('admin', 'write')).token)).status).toBe(404);
  });

  it('refuses scopes above the client or its service user', async () => {
    const { client } = await clientOf('reader');
    expect(client.scope).toBe('read');
    const config = await configOf(client.id, client.clientSecret!);
    await expect(oauth.clientCredentialsGrant(config, { scope: 'write' })).rejects.toMatchObject({ error: 'invalid_scope' });
    const engineUser = await createServiceUser(t.db, { tenantId: t.tenants.demo.id, name: `oauth-${kind}-${++users}`, role: 'engine' });
    await expect(createOAuthClient(t.db.raw, { tenantId: t.tenants.demo.id, serviceUserId: engineUser.id, scope: 'read' })).rejects.toThrow(
      /does not hold scope read/,
    );
  });

  it('introspects its own tokens (RFC 7662) and revokes them (RFC 7009)', async () => {
    const { token, config, client } = await tokenOf('reader');
    const active = await oauth.tokenIntrospection(config, token);
    expect(active).toMatchObject({ active: true, client_id: client.id, scope: 'read', aud: 'urn:integrations-gateway:api' });
    // Another client learns nothing of it.
    const { config: other } = await tokenOf('reader');
    expect(await oauth.tokenIntrospection(other, token)).toEqual({ active: false });

    await oauth.tokenRevocation(config, token);
    expect(await oauth.tokenIntrospection(config, token)).toEqual({ active: false });
    expect((await rest(token)).status).toBe(401);
  });

  it('answers invalid_client for a wrong secret and for an unknown client', async () => {
    const { client } = await clientOf('reader');
    const wrong = await configOf(client.id, `${client.clientSecret!.slice(0, -1)}x`);
    await expect(oauth.clientCredentialsGrant(wrong, {})).rejects.toMatchObject({ error: 'invalid_client' });
    const unknown = await configOf('oac_unknown', 'igw_cs_whatever');
    await expect(oauth.clientCredentialsGrant(unknown, {})).rejects.toMatchObject({ error: 'invalid_client' });
  });

  it('authenticates a private_key_jwt client by its signed assertion', async () => {
    const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
    const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
    const { client } = await clientOf('engine', { jwks: { keys: [jwk] } });
    expect(client.clientSecret).toBeNull();
    const config = await configOf(client.id, undefined, oauth.PrivateKeyJwt({ key: privateKey, kid: 'k1' }));
    const grant = await oauth.clientCredentialsGrant(config, {});
    expect(grant.scope).toBe('engine');
    expect((await rest(grant.access_token, '/syncs?limit=1')).status).toBe(200);
    // Another key, not the client's: refused.
    const stranger = (await generateKeyPair('ES256', { extractable: true })).privateKey;
    const forged = await configOf(client.id, undefined, oauth.PrivateKeyJwt({ key: stranger, kid: 'k1' }));
    await expect(oauth.clientCredentialsGrant(forged, {})).rejects.toMatchObject({ error: 'invalid_client' });
  });

  it('refuses a token bound to another audience, and an expired one', async () => {
    // The server issues tokens for this API only: another resource is invalid_target.
    const { config } = await tokenOf('reader');
    await expect(oauth.clientCredentialsGrant(config, { resource: 'https://other.example/' })).rejects.toMatchObject({
      error: 'invalid_target',
    });
    // A stored token bound to another audience (as a token for another resource would be) is refused.
    const { token } = await tokenOf('reader');
    const key = oauthRecordKey(token);
    await t.db.raw.query(`UPDATE oauth_records SET payload = jsonb_set(payload, '{aud}', '"https://other.example/"') WHERE id = $1`, [key]);
    expect((await rest(token)).status).toBe(401);
    const { token: second } = await tokenOf('reader');
    await t.db.raw.query(
      `UPDATE oauth_records SET payload = jsonb_set(payload, '{exp}', to_jsonb(extract(epoch FROM now())::int - 1)) WHERE id = $1`,
      [oauthRecordKey(second)],
    );
    expect((await rest(second)).status).toBe(401);
    const { token: third } = await tokenOf('reader');
    await t.db.raw.query(`UPDATE oauth_records SET expires_at = now() - interval '1 second' WHERE id = $1`, [oauthRecordKey(third)]);
    expect((await rest(third)).status).toBe(401);
  });

  it('refuses forged JWTs in its name: alg none, and HS256 signed with its public key', async () => {
    const jwks = (await (await fetch(`${origin}/oauth/jwks`)).json()) as { keys: JWK[] };
    const claims = {
      iss: origin,
      aud: 'urn:integrations-gateway:api',
      sub: 'usr_x',
      tenant_id: t.tenants.demo.id,
      role: 'admin',
      scope: 'write',
    };
    const now = Math.floor(Date.now() / 1000);
    const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const none = `${b64({ alg: 'none', typ: 'at+jwt' })}.${b64({ ...claims, iat: now, exp: now + 60 })}.`;
    expect((await rest(none)).status).toBe(401);
    // The published key as an HMAC secret, in both forms an attacker would try: its JWK and its PEM.
    const pem = await exportSPKI((await importJWK(jwks.keys[0]!, 'ES256')) as CryptoKey);
    for (const secret of [JSON.stringify(jwks.keys[0]), pem]) {
      const hs256 = await new SignJWT({ ...claims })
        .setProtectedHeader({ alg: 'HS256', typ: 'at+jwt', kid: jwks.keys[0]!.kid })
        .setIssuedAt()
        .setExpirationTime('1m')
        .sign(new TextEncoder().encode(secret));
      expect((await rest(hs256)).status).toBe(401);
      expect((await graphql(hs256)).status).toBe(401);
    }
  });

  it("stops a deleted client's tokens, a deleted service user's, and shrinks a demoted one's", async () => {
    const { token, client } = await tokenOf('reader');
    expect((await rest(token)).status).toBe(200);
    await deleteOAuthClient(t.db, { tenantId: t.tenants.demo.id, clientId: client.id });
    expect((await rest(token)).status).toBe(401);
    const config = await configOf(client.id, client.clientSecret!);
    await expect(oauth.clientCredentialsGrant(config, {})).rejects.toMatchObject({ error: 'invalid_client' });

    const gone = await tokenOf('reader');
    await deleteServiceUser(t.db, { tenantId: t.tenants.demo.id, serviceUserId: gone.user.id });
    expect((await rest(gone.token)).status).toBe(401);

    const demoted = await tokenOf('admin', 'write');
    await changeServiceUserRole(t.db, { tenantId: t.tenants.demo.id, serviceUserId: demoted.user.id, role: 'reader' });
    // Its write scope is above the reader role now: nothing is left of it.
    expect((await rest(demoted.token)).status).toBe(401);
  });

  it("ends an open stream of a deleted client's token within 5 s", async () => {
    const { token, client } = await tokenOf('reader');
    const response = await fetch(`${origin}${BASE}/syncs`, { headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' } });
    expect(response.status).toBe(200);
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    const deletedAt = performance.now();
    await deleteOAuthClient(t.db, { tenantId: t.tenants.demo.id, clientId: client.id });
    let text = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
    expect(performance.now() - deletedAt).toBeLessThan(5000);
    expect(text).toMatch(/event: error\ndata: \{[^\n]*"code":"UNAUTHORIZED"/);
  });

  it('creates, lists and deletes clients through GraphQL, the secret shown once', async () => {
    const user = await createServiceUser(t.db, { tenantId: t.tenants.demo.id, name: `oauth-${kind}-${++users}`, role: 'reader' });
    const admin = t.tenants.demo.adminToken;
    const call = async (query: string, variables: Record<string, unknown> = {}) => {
      const response = await fetch(`${origin}/graphql`, {
        method: 'POST',
        headers: { authorization: `Token ${admin}`, 'content-type': 'application/json' },
        body: JSON.stringify({ query, variables }),
      });
      return (await response.json()) as { data: Record<string, any> };
    };
    const created = await call(
      'mutation ($id: ID!) { createOAuthClient(serviceUserId: $id, name: "backend") { clientId clientSecret scope authMethod } }',
      { id: user.id },
    );
    const { clientId, clientSecret } = created.data.createOAuthClient;
    expect(created.data.createOAuthClient).toMatchObject({ scope: 'read', authMethod: 'client_secret_basic' });
    const grant = await oauth.clientCredentialsGrant(await configOf(clientId, clientSecret), {});
    expect((await rest(grant.access_token)).status).toBe(200);
    const listed = await call('{ oauthClients { id name scope serviceUser { id } } }');
    expect(listed.data.oauthClients).toContainEqual({ id: clientId, name: 'backend', scope: 'read', serviceUser: { id: user.id } });
    expect(JSON.stringify(listed)).not.toContain(clientSecret);
    await call('mutation ($id: ID!) { deleteOAuthClient(id: $id) { id } }', { id: clientId });
    expect((await rest(grant.access_token)).status).toBe(401);
    // A reader may not manage clients.
    const { token } = await tokenOf('reader');
    expect((await graphql(token, '{ oauthClients { id } }')).body.errors?.[0]?.extensions?.code).toBe('UNAUTHORIZED');
  });

  it('throttles failed client authentications per address (429), whatever the client', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 14; i++) {
      const response = await fetch(`${origin}/oauth/token`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from(`oac_guess${i}:wrong`).toString('base64')}`,
        },
        body: 'grant_type=client_credentials',
      });
      statuses.push(response.status);
    }
    expect(statuses.filter((status) => status === 401).length).toBeLessThanOrEqual(12);
    expect(statuses.at(-1)).toBe(429);
  });
});
