// Partners' applications on the gateway's authorization server (src/oauth/consent.ts, docs/how-to/partner-application-with-pkce.md),
// driven by `openid-client` as a partner's backend drives it, over real HTTP on every database. The browser's part
// (the redirects, the consent page's two requests) is played here by fetch with a cookie jar; the console's page
// itself is clicked in Chromium by test/console-oauth.test.ts. Covered: the code flow with PKCE (S256), the
// token on REST, GraphQL over HTTP and SSE and graphql-ws, rotating refresh tokens and a reuse that revokes the
// chain, and each refusal: a redirect URI not registered or one character off, a replayed code, a missing or wrong
// PKCE verifier, state echoed, a consent for one organization used for another, scopes above the member's
// role, a removed member, a deleted application, a revoked approval, a refusal.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as oauth from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inviteMember, removeMember, changeMemberRole } from '../src/auth/members.js';
import { createOAuthApplication } from '../src/auth/oauth-applications.js';
import { oauthRecordKey } from '../src/auth/oauth-clients.js';
import { createSession, DEFAULT_SESSION_POLICY } from '../src/auth/sessions.js';
import { attachGraphqlWebSocket } from '../src/http/graphql-ws.js';
import { createHttpServer } from '../src/http/http-server.js';
import type { Gateway } from '../src/http/yoga.js';
import { createLogger } from '../src/logger.js';
import { deleteExpiredOAuthRecords } from '../src/oauth/store.js';
import { databaseKinds } from './fixtures/databases.js';
import { createTestGateway, gatewayOver, type TestGateway } from './fixtures/gateway.js';
import { graphqlWsResult } from './fixtures/graphql-ws.js';

const BASE = '/api/v1/integrations';
const QUERY = 'query { connections(limit: 1) { totalCount } }';
const REDIRECT = 'https://partner.example/callback';

/** A browser's cookies, by name (paths are not modelled: every cookie goes with every request, as the test needs). */
class CookieJar {
  readonly cookies = new Map<string, string>();
  take(response: Response): void {
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';', 1);
      const at = pair!.indexOf('=');
      const name = pair!.slice(0, at).trim();
      const value = pair!.slice(at + 1).trim();
      if (value === '' || /expires=Thu, 01 Jan 1970/i.test(line) || /max-age=0\b/i.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }
  header(): string {
    return [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
  }
}

describe.each(databaseKinds)('partner applications (authorization code with PKCE) on %s', (kind) => {
  let t: TestGateway;
  let server: Server;
  let gateway: Gateway;
  let closeWebSockets: () => Promise<void>;
  let origin: string;
  let people = 0;

  beforeAll(async () => {
    t = await createTestGateway(kind);
    gateway = gatewayOver(t.db, { config: { OAUTH_ACCESS_TOKEN_SECONDS: 60 } });
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

  /** A member of the tenant with a console session (the cookie's value). */
  async function memberOf(role: 'admin' | 'reader', tenantId = t.tenants.demo.id) {
    const { member } = await inviteMember(t.db.raw, { tenantId, email: `oauth-${kind}-${++people}@example.test`, role, createdBy: 'cli' });
    const session = await createSession(t.db, member, DEFAULT_SESSION_POLICY);
    return { member, session: session.value };
  }

  async function applicationOf(scope = 'read write', tenantId = t.tenants.demo.id) {
    return createOAuthApplication(t.db.raw, { tenantId, name: `Partner ${++people}`, redirectUris: [REDIRECT], scope });
  }

  function configOf(application: { id: string; clientSecret: string }): Promise<oauth.Configuration> {
    return oauth.discovery(new URL(origin), application.id, application.clientSecret, undefined, {
      algorithm: 'oauth2',
      execute: [oauth.allowInsecureRequests],
    });
  }

  interface Flow {
    config: oauth.Configuration;
    verifier: string;
    state: string;
    jar: CookieJar;
    /** The consent page's request id. */
    uid: string;
  }

  /** The browser opens the authorization URL and lands on the consent page: the flow up to the member's answer. */
  async function start(
    application: { id: string; clientSecret: string },
    params: Record<string, string> = {},
  ): Promise<Flow & { response: Response }> {
    const config = await configOf(application);
    const verifier = oauth.randomPKCECodeVerifier();
    const state = oauth.randomState();
    const url = oauth.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT,
      scope: 'read',
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      ...params,
    });
    const jar = new CookieJar();
    const response = await fetch(url, { redirect: 'manual' });
    jar.take(response);
    const location = response.headers.get('location') ?? '';
    const uid = /\/oauth\/interaction\/([^/?]+)$/.exec(new URL(location || '/', origin).pathname)?.[1] ?? '';
    return { config, verifier, state, jar, uid, response };
  }

  function interaction(flow: Flow, step: 'details' | 'approve' | 'refuse', session: string) {
    const cookie = [flow.jar.header(), `igw_session=${session}`].filter(Boolean).join('; ');
    return fetch(`${origin}/oauth/interaction/${flow.uid}/${step}`, {
      method: step === 'details' ? 'GET' : 'POST',
      headers: { cookie, 'x-requested-with': 'test', origin },
    });
  }

  /** The member answers; the browser goes on to the provider, which sends it to the redirect URI. */
  async function answer(flow: Flow, session: string, step: 'approve' | 'refuse' = 'approve'): Promise<URL> {
    const answered = await interaction(flow, step, session);
    expect(answered.status, await answered.clone().text()).toBe(200);
    const { location } = ((await answered.json()) as { data: { location: string } }).data;
    const resumed = await fetch(new URL(location, origin), { redirect: 'manual', headers: { cookie: flow.jar.header() } });
    flow.jar.take(resumed);
    expect(resumed.status, await resumed.clone().text()).toBe(303);
    return new URL(resumed.headers.get('location')!, origin);
  }

  /** A member's approval of an application, through to the tokens. */
  async function approved(
    application: { id: string; clientSecret: string },
    session: string,
    scope = 'read',
  ): Promise<Flow & { tokens: oauth.TokenEndpointResponse }> {
    const flow = await start(application, { scope });
    const callback = await answer(flow, session);
    const tokens = await oauth.authorizationCodeGrant(flow.config, callback, {
      pkceCodeVerifier: flow.verifier,
      expectedState: flow.state,
    });
    return { ...flow, tokens };
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

  it('lists the code flow, refresh tokens and S256 in the metadata', async () => {
    const metadata = (await (await fetch(`${origin}/.well-known/oauth-authorization-server`)).json()) as Record<string, unknown>;
    expect(metadata.grant_types_supported).toEqual(expect.arrayContaining(['authorization_code', 'refresh_token', 'client_credentials']));
    expect(metadata.code_challenge_methods_supported).toEqual(['S256']);
    expect(metadata.authorization_endpoint).toBe(`${origin}/oauth/authorize`);
    const openapi = (await (await fetch(`${origin}/api/v1/openapi.json`)).json()) as {
      components: { securitySchemes: { oauth2: { flows: Record<string, Record<string, unknown>> } } };
    };
    expect(openapi.components.securitySchemes.oauth2.flows.authorizationCode).toMatchObject({
      authorizationUrl: '/oauth/authorize',
      tokenUrl: '/oauth/token',
      refreshUrl: '/oauth/token',
    });
    expect(Object.keys(openapi.components.securitySchemes.oauth2.flows).sort()).toEqual(['authorizationCode', 'clientCredentials']);
  });

  it('sends the browser to the console consent page, which names the application, the organization and the scopes', async () => {
    const application = await applicationOf();
    const { session } = await memberOf('admin');
    const flow = await start(application, { scope: 'read write' });
    expect(flow.response.status).toBe(303);
    const toConsole = await fetch(`${origin}/oauth/interaction/${flow.uid}`, {
      redirect: 'manual',
      headers: { cookie: flow.jar.header() },
    });
    expect(toConsole.status).toBe(303);
    expect(toConsole.headers.get('location')).toBe(`/console/consent/${flow.uid}`);
    const details = await interaction(flow, 'details', session);
    expect(details.status).toBe(200);
    expect(((await details.json()) as { data: unknown }).data).toEqual({
      application: { id: application.id, name: application.name },
      organization: { name: expect.any(String), slug: t.tenants.demo.slug },
      requested: ['read', 'write'],
      grantable: ['read', 'write'],
      sameOrganization: true,
    });
    // Without a console session the page is asked to sign in first.
    const anonymous = await fetch(`${origin}/oauth/interaction/${flow.uid}/details`, { headers: { cookie: flow.jar.header() } });
    expect(anonymous.status).toBe(401);
  });

  it('issues tokens for the member that work on REST, GraphQL over HTTP and SSE, and graphql-ws', async () => {
    const application = await applicationOf();
    const { session } = await memberOf('admin');
    const { tokens } = await approved(application, session, 'read write');
    expect(tokens.token_type.toLowerCase()).toBe('bearer');
    expect(tokens.scope?.split(' ').sort()).toEqual(['read', 'write']);
    expect(tokens.refresh_token).toBeTruthy();
    expect((await rest(tokens.access_token)).status).toBe(200);
    const created = await rest(tokens.access_token, '/connected', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ application_id: 'app_does_not_exist' }),
    });
    expect(created.status).not.toBe(401);
    expect(created.status).not.toBe(403);
    const overHttp = await graphql(tokens.access_token);
    expect(overHttp.status).toBe(200);
    expect(overHttp.body.errors).toBeUndefined();
    const sse = await fetch(`${origin}/graphql?query=${encodeURIComponent(QUERY)}`, {
      headers: { authorization: `Bearer ${tokens.access_token}`, accept: 'text/event-stream' },
    });
    expect(sse.status).toBe(200);
    expect(await sse.text()).toContain('totalCount');
    const ws = await graphqlWsResult(origin, `Bearer ${tokens.access_token}`, QUERY);
    expect(JSON.stringify(ws)).toContain('totalCount');
  });

  it('echoes state to the redirect URI, with the code and on a refusal', async () => {
    const application = await applicationOf();
    const { session } = await memberOf('reader');
    const flow = await start(application);
    const callback = await answer(flow, session);
    expect(callback.origin + callback.pathname).toBe(REDIRECT);
    expect(callback.searchParams.get('state')).toBe(flow.state);
    expect(callback.searchParams.get('code')).toBeTruthy();
    // A client that checks state refuses an answer carrying another one.
    await expect(
      oauth.authorizationCodeGrant(flow.config, callback, { pkceCodeVerifier: flow.verifier, expectedState: 'another' }),
    ).rejects.toThrow();

    const refused = await start(application);
    const denied = await answer(refused, session, 'refuse');
    expect(denied.searchParams.get('error')).toBe('access_denied');
    expect(denied.searchParams.get('state')).toBe(refused.state);
    expect(denied.searchParams.get('code')).toBeNull();
  });

  it('refuses a redirect URI that is not registered, or differs by one character, without redirecting to it', async () => {
    const application = await applicationOf();
    for (const redirect of ['https://evil.example/callback', 'https://partner.example/callbacK', `${REDIRECT}/`, `${REDIRECT}?x=1`]) {
      const { response } = await start(application, { redirect_uri: redirect });
      expect(response.status, redirect).toBe(400);
      expect(response.headers.get('location')).toBeNull();
      expect(((await response.json()) as { error: string }).error).toBe('invalid_redirect_uri');
    }
  });

  it('requires PKCE with S256 at the authorization endpoint', async () => {
    const application = await applicationOf();
    const config = await configOf(application);
    const withoutChallenge = oauth.buildAuthorizationUrl(config, { redirect_uri: REDIRECT, scope: 'read', state: 'x' });
    const first = await fetch(withoutChallenge, { redirect: 'manual' });
    expect(new URL(first.headers.get('location')!).searchParams.get('error')).toBe('invalid_request');
    const plain = oauth.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT,
      scope: 'read',
      state: 'x',
      code_challenge: oauth.randomPKCECodeVerifier(),
      code_challenge_method: 'plain',
    });
    const second = await fetch(plain, { redirect: 'manual' });
    expect(new URL(second.headers.get('location')!).searchParams.get('error')).toBe('invalid_request');
  });

  it('refuses a missing or wrong PKCE verifier, and a replayed code', async () => {
    const application = await applicationOf();
    const { session } = await memberOf('reader');
    const token = (code: string, verifier?: string) =>
      fetch(`${origin}/oauth/token`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from(`${application.id}:${application.clientSecret}`).toString('base64')}`,
        },
        body: new URLSearchParams({
          grant_type: 'authorization_code',
          code,
          redirect_uri: REDIRECT,
          ...(verifier === undefined ? {} : { code_verifier: verifier }),
        }),
      });
    for (const verifier of [undefined, oauth.randomPKCECodeVerifier()]) {
      const flow = await start(application);
      const code = (await answer(flow, session)).searchParams.get('code')!;
      const refused = await token(code, verifier);
      expect(refused.status).toBe(400);
      expect(((await refused.json()) as { error: string }).error).toMatch(/invalid_grant|invalid_request/);
    }
    const flow = await start(application);
    const code = (await answer(flow, session)).searchParams.get('code')!;
    const first = await token(code, flow.verifier);
    expect(first.status).toBe(200);
    const { access_token: accessToken } = (await first.json()) as { access_token: string };
    expect((await rest(accessToken)).status).toBe(200);
    const replay = await token(code, flow.verifier);
    expect(replay.status).toBe(400);
    expect(((await replay.json()) as { error: string }).error).toBe('invalid_grant');
    // A replayed code revokes what the code gave.
    expect((await rest(accessToken)).status).toBe(401);
  });

  it('never grants more than the member role: a reader asked for read and write gets read', async () => {
    const application = await applicationOf('read write engine');
    const { session } = await memberOf('reader');
    const flow = await start(application, { scope: 'read write engine' });
    const details = (await (await interaction(flow, 'details', session)).json()) as { data: { requested: string[]; grantable: string[] } };
    expect(details.data).toMatchObject({ requested: ['read', 'write', 'engine'], grantable: ['read'] });
    const callback = await answer(flow, session);
    const tokens = await oauth.authorizationCodeGrant(flow.config, callback, {
      pkceCodeVerifier: flow.verifier,
      expectedState: flow.state,
    });
    expect(tokens.scope).toBe('read');
    expect((await rest(tokens.access_token)).status).toBe(200);
    const write = await rest(tokens.access_token, '/connected', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ application_id: 'app_x' }),
    });
    expect(write.status).toBe(403);
  });

  it('never gives the engine scope to a member, not even an admin', async () => {
    const application = await applicationOf('engine');
    const { session } = await memberOf('admin');
    const flow = await start(application, { scope: 'engine' });
    const denied = await answer(flow, session);
    expect(denied.searchParams.get('error')).toBe('access_denied');
  });

  it('refuses an application asking for a scope it was not registered with', async () => {
    const application = await applicationOf('read');
    const { response } = await start(application, { scope: 'read write' });
    expect(new URL(response.headers.get('location')!).searchParams.get('error')).toBe('invalid_scope');
  });

  it("refuses a consent for one organization used for another's application", async () => {
    const application = await applicationOf('read', t.tenants.demo.id);
    const { session: otherSession } = await memberOf('admin', t.tenants.other.id);
    const flow = await start(application);
    const details = (await (await interaction(flow, 'details', otherSession)).json()) as { data: { sameOrganization: boolean } };
    expect(details.data.sameOrganization).toBe(false);
    expect((await interaction(flow, 'approve', otherSession)).status).toBe(403);
    // The approval of a member of the application's organization acts on that organization only.
    const { session } = await memberOf('reader', t.tenants.demo.id);
    const { tokens } = await approved(application, session);
    const connections = (await (await rest(tokens.access_token)).json()) as { data: { id: string }[] };
    const otherAdmin = await fetch(`${origin}${BASE}/connected`, { headers: { authorization: `Token ${t.tenants.other.adminToken}` } });
    const otherIds = ((await otherAdmin.json()) as { data: { id: string }[] }).data.map((row) => row.id);
    for (const row of connections.data) expect(otherIds).not.toContain(row.id);
  });

  it('ties the consent page to the browser that started the request', async () => {
    const application = await applicationOf();
    const { session } = await memberOf('reader');
    const flow = await start(application);
    const stranger = { ...flow, jar: new CookieJar() };
    expect((await interaction(stranger, 'approve', session)).status).toBe(404);
  });

  it('rotates refresh tokens, and a reuse of an old one revokes the whole chain', async () => {
    const application = await applicationOf();
    const { session } = await memberOf('reader');
    const { config, tokens } = await approved(application, session);
    const second = await oauth.refreshTokenGrant(config, tokens.refresh_token!);
    expect(second.refresh_token).toBeTruthy();
    expect(second.refresh_token).not.toBe(tokens.refresh_token);
    expect((await rest(second.access_token)).status).toBe(200);
    const third = await oauth.refreshTokenGrant(config, second.refresh_token!);
    expect((await rest(third.access_token)).status).toBe(200);
    // The first refresh token again: refused, and every token of the grant with it.
    await expect(oauth.refreshTokenGrant(config, tokens.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
    expect((await rest(third.access_token)).status).toBe(401);
    expect((await rest(second.access_token)).status).toBe(401);
    await expect(oauth.refreshTokenGrant(config, third.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
  });

  it("stops a removed member's tokens at once, and their refresh token", async () => {
    const application = await applicationOf();
    const { member, session } = await memberOf('reader');
    const { config, tokens } = await approved(application, session);
    expect((await rest(tokens.access_token)).status).toBe(200);
    await removeMember(t.db, { tenantId: t.tenants.demo.id, memberId: member.id });
    expect((await rest(tokens.access_token)).status).toBe(401);
    expect((await graphql(tokens.access_token)).status).toBe(401);
    await expect(oauth.refreshTokenGrant(config, tokens.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
  });

  it("narrows a demoted member's tokens at their next request", async () => {
    const application = await applicationOf();
    const { member, session } = await memberOf('admin');
    await memberOf('admin');
    const { tokens } = await approved(application, session, 'write');
    expect(tokens.scope).toBe('write');
    await changeMemberRole(t.db, { tenantId: t.tenants.demo.id, memberId: member.id, role: 'reader' });
    expect((await rest(tokens.access_token)).status).toBe(401);
  });

  it("stops a deleted application's tokens at once, and refuses it at the token endpoint", async () => {
    const application = await applicationOf();
    const { session } = await memberOf('reader');
    const { config, tokens } = await approved(application, session);
    const deleted = await graphql(t.tenants.demo.adminToken, `mutation { deleteOAuthApplication(id: "${application.id}") { id } }`);
    // The admin token is a personal access token: sent as Bearer it is accepted too.
    expect(deleted.body.errors).toBeUndefined();
    expect((await rest(tokens.access_token)).status).toBe(401);
    await expect(oauth.refreshTokenGrant(config, tokens.refresh_token!)).rejects.toMatchObject({ error: 'invalid_client' });
  });

  it('lets a member list and revoke their approvals, and an admin those of the organization', async () => {
    const application = await applicationOf();
    const { session } = await memberOf('reader');
    const { tokens, config } = await approved(application, session);
    const asMember = (query: string) =>
      fetch(`${origin}/graphql`, {
        method: 'POST',
        headers: { cookie: `igw_session=${session}`, 'content-type': 'application/json', 'x-requested-with': 'test' },
        body: JSON.stringify({ query }),
      }).then(
        (response) =>
          response.json() as Promise<{ data?: Record<string, { nodes: { id: string; applicationId: string; scope: string }[] }> }>,
      );
    const listed = '{ oauthApprovalList { nodes { id applicationId applicationName scope } } }';
    const mine = (await asMember(listed)).data!.oauthApprovalList!.nodes;
    expect(mine).toEqual([{ id: expect.any(String), applicationId: application.id, applicationName: application.name, scope: 'read' }]);
    const all = await graphql(t.tenants.demo.adminToken, '{ oauthApprovalList(limit: 100) { nodes { id memberEmail } } }');
    expect(JSON.stringify(all.body)).toContain(mine[0]!.id);
    await asMember(`mutation { revokeOAuthApproval(id: "${mine[0]!.id}") { id } }`);
    expect((await rest(tokens.access_token)).status).toBe(401);
    await expect(oauth.refreshTokenGrant(config, tokens.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
    expect((await asMember(listed)).data!.oauthApprovalList!.nodes).toEqual([]);
  });

  it('counts authorization requests and consent steps per address (429), before any row is stored', async () => {
    const tight = gatewayOver(t.db, {
      config: { RATE_LIMIT_PER_MINUTE: 2 },
      rateLimit: { keyPrefix: `igw:oauth-code:${kind}:${Date.now()}`, tenantMultiplier: 1000 },
    });
    const tightServer = createHttpServer(tight, { logger: createLogger('silent') });
    await new Promise<void>((resolve) => tightServer.listen(0, '127.0.0.1', resolve));
    try {
      const application = await applicationOf();
      const tightOrigin = `http://127.0.0.1:${(tightServer.address() as AddressInfo).port}`;
      const url = (await start(application)).response.url.replace(origin, tightOrigin);
      const interactions = async () =>
        Number((await t.db.raw.query<{ n: string }>("SELECT count(*) AS n FROM oauth_records WHERE model = 'Interaction'"))[0]!.n);
      const statuses: number[] = [];
      for (let i = 0; i < 3; i++) statuses.push((await fetch(url, { redirect: 'manual' })).status);
      const before = await interactions();
      const refused = await fetch(url, { redirect: 'manual' });
      expect(statuses.slice(0, 2)).toEqual([303, 303]);
      expect(refused.status).toBe(429);
      expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('RATE_LIMITED');
      expect(refused.headers.get('retry-after')).toBeTruthy();
      expect(await interactions()).toBe(before);
      const step = await fetch(`${tightOrigin}/oauth/interaction/anything/details`);
      expect(step.status).toBe(429);
    } finally {
      tightServer.closeAllConnections();
      await new Promise<void>((resolve) => tightServer.close(() => resolve()));
      await tight.dispose();
    }
  });

  it('gives every stored step an end, and the housekeeping deletes what has passed it', async () => {
    const application = await applicationOf();
    const { session } = await memberOf('reader');
    const flow = await start(application);
    const now = Date.now();
    const [interaction] = await t.db.raw.query<{ expires_at: Date }>(
      "SELECT expires_at FROM oauth_records WHERE model = 'Interaction' AND id = $1",
      [oauthRecordKey(flow.uid)],
    );
    // A consent not answered within 10 minutes is gone.
    expect(new Date(interaction!.expires_at).getTime() - now).toBeLessThanOrEqual(10 * 60_000 + 5000);
    await answer(flow, session);
    const rows = await t.db.raw.query<{ model: string; expires_at: Date | null }>(
      'SELECT model, expires_at FROM oauth_records WHERE client_id = $1',
      [application.id],
    );
    expect(rows.length).toBeGreaterThan(0);
    for (const row of rows) expect(row.expires_at, `${row.model} has an end`).not.toBeNull();
    const grant = rows.find((row) => row.model === 'Grant')!;
    expect(new Date(grant.expires_at!).getTime() - now).toBeLessThanOrEqual(30 * 86_400_000 + 5000);
    const code = rows.find((row) => row.model === 'AuthorizationCode')!;
    expect(new Date(code.expires_at!).getTime() - now).toBeLessThanOrEqual(60_000 + 5000);
    // Past their end, the scheduler's housekeeping deletes them.
    await t.db.raw.query("UPDATE oauth_records SET expires_at = now() - interval '1 second' WHERE client_id = $1", [application.id]);
    await deleteExpiredOAuthRecords(t.db.raw, 100_000);
    expect(await t.db.raw.query('SELECT 1 FROM oauth_records WHERE client_id = $1', [application.id])).toEqual([]);
  });

  it('registers, lists and deletes applications over REST, the secret shown once', async () => {
    const admin = { authorization: `Token ${t.tenants.demo.adminToken}`, 'content-type': 'application/json' };
    const body = JSON.stringify({ name: 'REST partner', redirect_uris: [REDIRECT], scope: 'read' });
    const created = await fetch(`${origin}${BASE}/oauth-applications`, {
      method: 'POST',
      headers: { ...admin, 'idempotency-key': `k-${kind}` },
      body,
    });
    expect(created.status).toBe(200);
    const { data } = (await created.json()) as { data: { client_id: string; client_secret: string | null; scope: string } };
    expect(data).toMatchObject({
      client_id: expect.stringMatching(/^oaa_/),
      client_secret: expect.stringMatching(/^igw_cs_/),
      scope: 'read',
    });
    const replay = await fetch(`${origin}${BASE}/oauth-applications`, {
      method: 'POST',
      headers: { ...admin, 'idempotency-key': `k-${kind}` },
      body,
    });
    expect(((await replay.json()) as { data: { client_id: string; client_secret: string | null } }).data).toMatchObject({
      client_id: data.client_id,
      client_secret: null,
    });
    const list = (await (await fetch(`${origin}${BASE}/oauth-applications?name=eq.REST%20partner`, { headers: admin })).json()) as {
      data: { id: string; redirect_uris: string[] }[];
    };
    expect(list.data).toEqual([expect.objectContaining({ id: data.client_id, redirect_uris: [REDIRECT] })]);
    expect(JSON.stringify(list)).not.toContain('igw_cs_');
    const invalid = await fetch(`${origin}${BASE}/oauth-applications`, {
      method: 'POST',
      headers: admin,
      body: JSON.stringify({ name: 'x', redirect_uris: ['http://partner.example/cb'] }),
    });
    expect(invalid.status).toBe(400);
    const reader = await fetch(`${origin}${BASE}/oauth-applications`, {
      headers: { authorization: `Token ${t.tenants.demo.readerToken}` },
    });
    expect(reader.status).toBe(403);
    const deleted = await fetch(`${origin}${BASE}/oauth-applications/${data.client_id}`, { method: 'DELETE', headers: admin });
    expect(deleted.status).toBe(200);
    const again = await fetch(`${origin}${BASE}/oauth-applications/${data.client_id}`, { method: 'DELETE', headers: admin });
    expect(again.status).toBe(404);
  });

  it('lists and revokes approvals over REST: a member their own, an admin any of the organization, in pages', async () => {
    const application = await applicationOf();
    const other = await applicationOf();
    const first = await memberOf('reader');
    const second = await memberOf('reader');
    const a = await approved(application, first.session);
    const b = await approved(other, first.session);
    const c = await approved(application, second.session);
    const asMember = (session: string, path: string, init: RequestInit = {}) =>
      fetch(`${origin}${BASE}${path}`, {
        ...init,
        headers: { cookie: `igw_session=${session}`, 'x-requested-with': 'test', ...init.headers },
      });
    const admin = { authorization: `Token ${t.tenants.demo.adminToken}` };
    type Listed = {
      data: { id: string; application_id: string; member_id: string; member_email: string; scope: string }[];
      meta: { pagination: { total?: number } };
    };

    // A member sees their own approvals only (newest first; these three share a second).
    const mine = (await (await asMember(first.session, '/oauth-approvals')).json()) as Listed;
    expect(mine.data.map((entry) => entry.application_id).sort()).toEqual([other.id, application.id].sort());
    expect(mine.data.every((entry) => entry.member_id === first.member.id && entry.scope === 'read')).toBe(true);
    const theirs = (await (await asMember(second.session, '/oauth-approvals')).json()) as Listed;
    expect(theirs.data).toEqual([expect.objectContaining({ application_id: application.id, member_id: second.member.id })]);
    // A token that is no member (a service user's) sees none.
    const byToken = (await (
      await fetch(`${origin}${BASE}/oauth-approvals`, { headers: { authorization: `Token ${t.tenants.demo.readerToken}` } })
    ).json()) as Listed;
    expect(byToken.data).toEqual([]);

    // An admin sees the organization's, filters them by member, and pages through them.
    const byMember = (await (
      await fetch(`${origin}${BASE}/oauth-approvals?member_id=eq.${first.member.id}`, { headers: admin })
    ).json()) as Listed;
    expect(byMember.data.map((entry) => entry.application_id).sort()).toEqual([other.id, application.id].sort());
    const ours = `application_id=in.(${application.id},${other.id})`;
    const pageOne = await fetch(`${origin}${BASE}/oauth-approvals?${ours}&limit=2`, { headers: admin });
    const one = (await pageOne.json()) as Listed;
    expect(one.data).toHaveLength(2);
    expect(one.meta.pagination.total).toBe(3);
    const next = /<([^>]+)>; rel="next"/.exec(pageOne.headers.get('link') ?? '')?.[1];
    expect(next).toBeTruthy();
    const two = (await (await fetch(new URL(next!, origin), { headers: admin })).json()) as Listed;
    expect(two.data).toHaveLength(1);
    const ids = [...one.data, ...two.data].map((entry) => entry.id);
    expect(new Set(ids).size).toBe(3);
    const secondsApproval = theirs.data[0]!.id;
    expect(ids).toContain(secondsApproval);

    // A member cannot revoke another's approval (it is not found to them), and its tokens keep working.
    const refused = await asMember(first.session, `/oauth-approvals/${encodeURIComponent(secondsApproval)}`, { method: 'DELETE' });
    expect(refused.status).toBe(404);
    expect((await rest(c.tokens.access_token)).status).toBe(200);
    // Nor can a reader's token; a member revokes their own, and its tokens stop at once.
    const readerToken = await fetch(`${origin}${BASE}/oauth-approvals/${encodeURIComponent(secondsApproval)}`, {
      method: 'DELETE',
      headers: { authorization: `Token ${t.tenants.demo.readerToken}` },
    });
    expect(readerToken.status).toBe(404);
    const own = mine.data.find((entry) => entry.application_id === other.id)!.id;
    expect((await rest(b.tokens.access_token)).status).toBe(200);
    const revoked = await asMember(first.session, `/oauth-approvals/${encodeURIComponent(own)}`, { method: 'DELETE' });
    expect(revoked.status).toBe(200);
    expect(((await revoked.json()) as { data: { id: string } }).data.id).toBe(own);
    expect((await rest(b.tokens.access_token)).status).toBe(401);
    expect((await rest(a.tokens.access_token)).status).toBe(200);

    // An admin revokes any approval of the organization: the other member's tokens stop at once.
    const byAdmin = await fetch(`${origin}${BASE}/oauth-approvals/${encodeURIComponent(secondsApproval)}`, {
      method: 'DELETE',
      headers: admin,
    });
    expect(byAdmin.status).toBe(200);
    expect((await rest(c.tokens.access_token)).status).toBe(401);
    await expect(oauth.refreshTokenGrant(c.config, c.tokens.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
    const again = await fetch(`${origin}${BASE}/oauth-approvals/${encodeURIComponent(secondsApproval)}`, {
      method: 'DELETE',
      headers: admin,
    });
    expect(again.status).toBe(404);
    const left = (await (await fetch(`${origin}${BASE}/oauth-approvals?${ours}`, { headers: admin })).json()) as Listed;
    expect(left.data.map((entry) => entry.member_id)).toEqual([first.member.id]);
  });

  it('refuses an application at the client credentials grant: it acts for members only', async () => {
    const application = await applicationOf();
    const config = await configOf(application);
    await expect(oauth.clientCredentialsGrant(config, { scope: 'read' })).rejects.toMatchObject({
      error: 'invalid_request',
      error_description: 'requested grant type is not allowed for this client',
    });
  });
});
