// Members sign in with their organization's identity provider, end to end on both databases: `oidc-provider` plays
// the provider (test/fixtures/oidc-provider.ts), the gateway serves on a port, and the test walks the browser's
// redirects itself. Covered: the settings over GraphQL and REST (the secret sealed, never shown, the changes in the
// activity log); a first sign-in let in as reader, with a role from a claim, refused unless invited, an invited
// person linked; the session on REST and GraphQL; and the refusals: state mismatch or replay, another browser, a
// nonce mismatch, a replayed code, an email domain not allowed, an unverified email, another issuer answering
// (mix-up), an ID token for another audience, and password sign-in off when the organization requires SSO.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IdentityProviders } from '../src/auth/identity-providers.js';
import { inviteMember } from '../src/auth/members.js';
import { runCli } from '../src/cli.js';
import { webhookSecretKeysOf } from '../src/webhooks/secret-keys.js';
import { createHttpServer } from '../src/http/http-server.js';
import type { Gateway } from '../src/http/yoga.js';
import { databaseKinds } from './fixtures/databases.js';
import {
  capturingLogger,
  createTestGateway,
  gatewayOver,
  graphql,
  type LogLine,
  type TestGateway,
  WEBHOOK_TEST_KEY,
} from './fixtures/gateway.js';
import { CookieJar, followUntil, getWithCookies, TestIdentityProvider } from './fixtures/oidc-provider.js';

const CLIENT_SECRET = 'the-client-secret-the-provider-gave-the-gateway-0123';
const CALLBACK = '/api/v1/auth/sso/callback';
const STRONG = 'correct horse battery staple';

const CONFIGURE = `mutation ($input: IdentityProviderInput!) {
  configureIdentityProvider(input: $input) { issuer clientId emailDomains firstSignIn roleClaim required }
}`;

describe.each(databaseKinds)('single sign-on on %s', (kind) => {
  let t: TestGateway;
  let gateway: Gateway;
  let server: Server;
  let origin: string;
  let idp: TestIdentityProvider;
  let rogue: TestIdentityProvider;
  const logs: LogLine[] = [];
  /** Values that must never reach a log line. */
  const secrets: string[] = [CLIENT_SECRET];

  beforeAll(async () => {
    t = await createTestGateway(kind);
    gateway = gatewayOver(t.db, {
      logger: capturingLogger(logs, 'trace'),
      config: { SSO_ALLOW_PRIVATE_ISSUERS: '1', RATE_LIMIT_PER_MINUTE: 100_000 },
      rateLimit: { keyPrefix: `test:sso:${kind}:${process.pid}:${Date.now()}` },
    });
    server = createHttpServer(gateway, { logger: capturingLogger(logs, 'trace') });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const clients = ['gateway-demo', 'gateway-other'].map((clientId) => ({
      clientId,
      clientSecret: CLIENT_SECRET,
      redirectUris: [`${origin}${CALLBACK}`],
    }));
    idp = await TestIdentityProvider.start(clients);
    rogue = await TestIdentityProvider.start(clients);
    const accounts = {
      'sub-ada': { email: 'Ada@acme.test', email_verified: true },
      'sub-grace': { email: 'grace@acme.test', email_verified: true, gateway_role: ['staff', 'admin'] },
      'sub-linus': { email: 'linus@acme.test', email_verified: true },
      'sub-bob': { email: 'bob@acme.test', email_verified: true },
      'sub-eve': { email: 'eve@elsewhere.test', email_verified: true },
      'sub-mallory': { email: 'mallory@acme.test', email_verified: false },
      'sub-carol': { email: 'carol@acme.test', email_verified: true },
    };
    for (const [sub, account] of Object.entries(accounts)) {
      idp.accounts.set(sub, account);
      rogue.accounts.set(sub, account);
    }
    await configure(t.tenants.demo.adminToken, {
      issuer: idp.issuer,
      clientId: 'gateway-demo',
      clientSecret: CLIENT_SECRET,
      emailDomains: ['ACME.test'],
      firstSignIn: 'reader',
    });
  });

  afterAll(async () => {
    await idp?.close();
    await rogue?.close();
    server?.closeAllConnections();
    await new Promise<void>((resolve) => server?.close(() => resolve()));
    await gateway?.dispose();
    await t?.dispose();
  });

  async function configure(token: string, input: Record<string, unknown>) {
    return (await graphql(gateway, CONFIGURE, { token, variables: { input }, expectOk: true })).body.data!.configureIdentityProvider;
  }

  /** The browser's walk from the sign-in page's link to the gateway's callback, through the provider; not yet opened. */
  async function toCallback(jar: CookieJar, query: Record<string, string>, via?: TestIdentityProvider): Promise<string> {
    const started = await getWithCookies(jar, `${origin}/api/v1/auth/sso/start?${new URLSearchParams(query)}`);
    expect(started.status).toBe(303);
    let location = started.headers.get('location')!;
    expect(location.startsWith(idp.issuer)).toBe(true);
    // A provider of another organization answering in its place: the same request, sent to it.
    if (via) location = location.replace(idp.issuer, via.issuer);
    const callback = await followUntil(jar, location, `${origin}${CALLBACK}`);
    const params = new URL(callback).searchParams;
    for (const name of ['code', 'state']) if (params.get(name)) secrets.push(params.get(name)!);
    return callback;
  }

  /** Opens the callback: where the browser is sent, and the session cookie if one was set. */
  async function finish(jar: CookieJar, callbackUrl: string): Promise<{ location: string; session: string | undefined }> {
    const response = await getWithCookies(jar, callbackUrl);
    expect(response.status).toBe(303);
    const session = jar.get(origin, 'igw_session');
    if (session) secrets.push(session);
    return { location: response.headers.get('location')!, session };
  }

  async function signInAs(account: string, query: Record<string, string> = { organization: 'demo' }) {
    idp.next = account;
    const jar = new CookieJar();
    return { jar, ...(await finish(jar, await toCallback(jar, query))) };
  }

  const asSession = (session: string) => ({ cookie: `igw_session=${session}` });

  async function currentMember(session: string) {
    const answer = await fetch(`${origin}/graphql`, {
      method: 'POST',
      headers: { ...asSession(session), 'content-type': 'application/json', 'x-requested-with': 'test' },
      body: JSON.stringify({ query: '{ currentMember { email role singleSignOn } }' }),
    });
    return ((await answer.json()) as { data: { currentMember: unknown } }).data.currentMember;
  }

  it('keeps the settings on GraphQL and REST, the secret sealed and never shown, changes in the activity log', async () => {
    const read = await fetch(`${origin}/api/v1/integrations/identity-provider`, {
      headers: { authorization: `Token ${t.tenants.demo.adminToken}` },
    });
    expect(read.status).toBe(200);
    const text = await read.text();
    expect(JSON.parse(text).data).toEqual({
      issuer: idp.issuer,
      client_id: 'gateway-demo',
      email_domains: ['acme.test'],
      first_sign_in: 'reader',
      role_claim: null,
      required: false,
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    expect(text).not.toContain(CLIENT_SECRET);
    const [row] = await t.db.raw.query<{ client_secret: string }>('SELECT client_secret FROM identity_providers WHERE tenant_id = $1', [
      t.tenants.demo.id,
    ]);
    expect(row!.client_secret).toMatch(/^v1\./);
    expect(row!.client_secret).not.toContain(CLIENT_SECRET);

    const asReader = await fetch(`${origin}/api/v1/integrations/identity-provider`, {
      headers: { authorization: `Token ${t.tenants.demo.readerToken}` },
    });
    expect(asReader.status).toBe(403);
    const none = await fetch(`${origin}/api/v1/integrations/identity-provider`, {
      headers: { authorization: `Token ${t.tenants.other.adminToken}` },
    });
    expect(none.status).toBe(404);

    // REST: a JSON Merge Patch creates the other organization's provider; an issuer that is no provider is a 400.
    const patch = (body: unknown) =>
      fetch(`${origin}/api/v1/integrations/identity-provider`, {
        method: 'PATCH',
        headers: { authorization: `Token ${t.tenants.other.adminToken}`, 'content-type': 'application/merge-patch+json' },
        body: JSON.stringify(body),
      });
    const notAProvider = await patch({ issuer: `${origin}/nothing`, client_id: 'x', client_secret: 'y', email_domains: ['other.test'] });
    expect(notAProvider.status).toBe(400);
    expect((await notAProvider.json()).msg).toMatch(/discovery document/);
    const badDomain = await patch({ email_domains: ['not a domain'] });
    expect(badDomain.status).toBe(400);
    const created = await patch({
      issuer: idp.issuer,
      client_id: 'gateway-other',
      client_secret: CLIENT_SECRET,
      email_domains: ['other.test'],
    });
    expect(created.status).toBe(200);
    expect((await created.json()).data).toMatchObject({ client_id: 'gateway-other', first_sign_in: 'invitation', required: false });
    // Turning passwords off needs an admin who has signed in with the provider.
    const required = await patch({ required: true });
    expect(required.status).toBe(409);
    const removed = await fetch(`${origin}/api/v1/integrations/identity-provider`, {
      method: 'DELETE',
      headers: { authorization: `Token ${t.tenants.other.adminToken}` },
    });
    expect((await removed.json()).data).toEqual({ removed: true });

    const activity = await graphql(
      gateway,
      '{ activity(filter: { targetType: { eq: identity_provider } }) { nodes { action targetName } } }',
      {
        token: t.tenants.other.adminToken,
        expectOk: true,
      },
    );
    expect(activity.body.data!.activity.nodes).toEqual([
      { action: 'identity_provider.removed', targetName: idp.issuer },
      { action: 'identity_provider.configured', targetName: idp.issuer },
    ]);
  });

  it('lets a new person in as reader at the first sign-in; the session works on REST and GraphQL', async () => {
    const first = await signInAs('sub-ada', { email: 'ada@ACME.test' });
    expect(first.location).toBe('/console/?sso=signed_in');
    expect(first.session).toMatch(/^igw_ses_/);
    expect(await currentMember(first.session!)).toEqual({ email: 'ada@acme.test', role: 'reader', singleSignOn: true });
    const rest = await fetch(`${origin}/api/v1/integrations/connected?limit=1`, { headers: asSession(first.session!) });
    expect(rest.status).toBe(200);
    // A reader: writes are refused.
    const write = await fetch(`${origin}/api/v1/integrations/members`, {
      method: 'POST',
      headers: { ...asSession(first.session!), 'content-type': 'application/json', 'x-requested-with': 'test' },
      body: JSON.stringify({ email: 'x@acme.test', role: 'reader' }),
    });
    expect(write.status).toBe(403);

    // The second sign-in finds the same member by the provider's subject.
    const second = await signInAs('sub-ada');
    expect(await currentMember(second.session!)).toEqual({ email: 'ada@acme.test', role: 'reader', singleSignOn: true });
    const members = await t.db.raw.query('SELECT id FROM members WHERE tenant_id = $1 AND email = $2', [
      t.tenants.demo.id,
      'ada@acme.test',
    ]);
    expect(members).toHaveLength(1);
    const [joined] = await t.db.raw.query<{ actor_name: string }>(
      "SELECT actor_name FROM activity WHERE tenant_id = $1 AND action = 'member.joined' AND target_name = 'ada@acme.test'",
      [t.tenants.demo.id],
    );
    expect(joined!.actor_name).toBe('ada@acme.test');
  });

  it('gives the role a claim names, and refuses a person the claim names no role for', async () => {
    await configure(t.tenants.demo.adminToken, { firstSignIn: 'claim', roleClaim: 'gateway_role' });
    const grace = await signInAs('sub-grace');
    expect(await currentMember(grace.session!)).toEqual({ email: 'grace@acme.test', role: 'admin', singleSignOn: true });
    const linus = await signInAs('sub-linus');
    expect(linus.location).toBe('/console/?sso_error=no_role');
    expect(linus.session).toBeUndefined();
  });

  it('refuses a person who is not invited, and links an invited one at the first sign-in', async () => {
    await configure(t.tenants.demo.adminToken, { firstSignIn: 'invitation', roleClaim: null });
    const refused = await signInAs('sub-bob');
    expect(refused.location).toBe('/console/?sso_error=not_invited');
    expect(refused.session).toBeUndefined();

    const { code } = await inviteMember(t.db.raw, { tenantId: t.tenants.demo.id, email: 'bob@acme.test', role: 'admin', createdBy: 'cli' });
    secrets.push(code);
    const linked = await signInAs('sub-bob');
    expect(linked.location).toBe('/console/?sso=signed_in');
    expect(await currentMember(linked.session!)).toEqual({ email: 'bob@acme.test', role: 'admin', singleSignOn: true });
    // The invitation did its work: its code sets no password now.
    expect((await fetch(`${origin}/api/v1/auth/invitations/${code}`)).status).toBe(404);
    const [entry] = await t.db.raw.query<{ action: string }>(
      "SELECT action FROM activity WHERE tenant_id = $1 AND target_name = 'bob@acme.test' ORDER BY created_at DESC LIMIT 1",
      [t.tenants.demo.id],
    );
    expect(entry!.action).toBe('member.provider_linked');
  });

  it('refuses a changed state, a callback in another browser, and a replayed callback', async () => {
    idp.next = 'sub-ada';
    const jar = new CookieJar();
    const callback = await toCallback(jar, { organization: 'demo' });
    const changed = new URL(callback);
    changed.searchParams.set('state', `${changed.searchParams.get('state')}x`);
    expect(await finish(jar, changed.href)).toEqual({ location: '/console/?sso_error=state', session: undefined });

    // Another browser (no binding cookie, or another one) with the right state.
    const jar2 = new CookieJar();
    const callback2 = await toCallback(jar2, { organization: 'demo' });
    const elsewhere = new CookieJar();
    elsewhere.set(origin, 'igw_sso', 'another-browsers-binding-value');
    expect(await finish(elsewhere, callback2)).toEqual({ location: '/console/?sso_error=state', session: undefined });
    // The state was taken by that attempt: its own browser cannot use it after.
    expect(await finish(jar2, callback2)).toEqual({ location: '/console/?sso_error=state', session: undefined });

    const jar3 = new CookieJar();
    const callback3 = await toCallback(jar3, { organization: 'demo' });
    const binding = jar3.get(origin, 'igw_sso')!;
    const done = await finish(jar3, callback3);
    expect(done.session).toMatch(/^igw_ses_/);
    // The same callback again, with the same binding cookie: the state was used.
    const replay = new CookieJar();
    replay.set(origin, 'igw_sso', binding);
    expect(await finish(replay, callback3)).toEqual({ location: '/console/?sso_error=state', session: undefined });
  });

  it('refuses a replayed code under a new state, and a nonce that is not the one sent', async () => {
    const used = await signInAs('sub-ada');
    expect(used.session).toMatch(/^igw_ses_/);
    // (The code of that sign-in, from the provider's redirect.)
    idp.next = 'sub-ada';
    const jar = new CookieJar();
    const first = await toCallback(jar, { organization: 'demo' });
    const usedCode = new URL(first).searchParams.get('code')!;
    expect((await finish(jar, first)).session).toMatch(/^igw_ses_/);
    const jar2 = new CookieJar();
    const second = new URL(await toCallback(jar2, { organization: 'demo' }));
    second.searchParams.set('code', usedCode);
    expect(await finish(jar2, second.href)).toEqual({ location: '/console/?sso_error=token', session: undefined });

    // The ID token carries the nonce of the request; one kept for another request is refused.
    const jar3 = new CookieJar();
    const third = await toCallback(jar3, { organization: 'demo' });
    await t.db.raw.query("UPDATE sso_states SET nonce = 'a-nonce-of-another-request' WHERE tenant_id = $1", [t.tenants.demo.id]);
    expect(await finish(jar3, third)).toEqual({ location: '/console/?sso_error=token', session: undefined });
    expect(logs.some((line) => line.msg === 'single sign-on refused' && /nonce/.test(String(line.detail)))).toBe(true);
  });

  it('refuses an email domain not allowed, an unverified email, and an unknown organization', async () => {
    await configure(t.tenants.demo.adminToken, { firstSignIn: 'reader' });
    expect((await signInAs('sub-eve')).location).toBe('/console/?sso_error=email_domain');
    expect((await signInAs('sub-mallory')).location).toBe('/console/?sso_error=email_unverified');
    const jar = new CookieJar();
    const unknown = await getWithCookies(jar, `${origin}/api/v1/auth/sso/start?email=someone@nowhere.test`);
    expect(unknown.status).toBe(303);
    expect(unknown.headers.get('location')).toBe('/console/?sso_error=unknown_organization');
    const members = await t.db.raw.query('SELECT id FROM members WHERE email IN ($1, $2)', ['eve@elsewhere.test', 'mallory@acme.test']);
    expect(members).toEqual([]);
  });

  it('refuses an answer from another issuer (mix-up) and an ID token for another audience', async () => {
    rogue.next = 'sub-carol';
    idp.next = 'sub-carol';
    const jar = new CookieJar();
    const mixedUp = await toCallback(jar, { organization: 'demo' }, rogue);
    const refused = await finish(jar, mixedUp);
    expect(refused.session).toBeUndefined();
    expect(refused.location).toMatch(/^\/console\/\?sso_error=(token|provider)$/);

    idp.tamper = 'audience';
    try {
      const audience = await signInAs('sub-carol');
      expect(audience).toMatchObject({ location: '/console/?sso_error=token', session: undefined });
    } finally {
      idp.tamper = null;
    }
    expect(logs.some((line) => line.msg === 'single sign-on refused' && /aud/.test(String(line.detail)))).toBe(true);
    const carol = await t.db.raw.query('SELECT id FROM members WHERE email = $1', ['carol@acme.test']);
    expect(carol).toEqual([]);
  });

  it('turns password sign-in off for the members of an organization that requires SSO', async () => {
    const { code } = await inviteMember(t.db.raw, {
      tenantId: t.tenants.demo.id,
      email: 'pat@acme.test',
      role: 'reader',
      createdBy: 'cli',
    });
    secrets.push(code);
    const post = (path: string, body: unknown) =>
      fetch(`${origin}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    expect((await post(`/api/v1/auth/invitations/${code}`, { password: STRONG })).status).toBe(200);
    expect((await post('/api/v1/auth/login', { email: 'pat@acme.test', password: STRONG })).status).toBe(200);

    expect(await configure(t.tenants.demo.adminToken, { required: true })).toMatchObject({ required: true });
    const refused = await post('/api/v1/auth/login', { email: 'pat@acme.test', password: STRONG });
    expect(refused.status).toBe(401);
    expect((await refused.json()).error.code).toBe('UNAUTHORIZED');
    // The provider still signs the organization's people in.
    expect((await signInAs('sub-ada')).session).toMatch(/^igw_ses_/);

    await configure(t.tenants.demo.adminToken, { required: false });
    expect((await post('/api/v1/auth/login', { email: 'pat@acme.test', password: STRONG })).status).toBe(200);
  });

  it('seals the client secrets with a new key at a key rotation (cli webhooks reseal)', async () => {
    const newKey = Buffer.alloc(32, 11).toString('base64');
    let output = '';
    const reseal = (env: Record<string, string>) =>
      runCli(['webhooks', 'reseal'], {
        env: { SEED: 'none', ...env },
        stdout: () => {},
        stderr: (text: string) => {
          output += text;
        },
        openDatabase: async () => ({ ...t.db, close: async () => {} }),
      });
    expect(await reseal({ WEBHOOK_SECRET_KEY: newKey, WEBHOOK_SECRET_PREVIOUS_KEYS: WEBHOOK_TEST_KEY })).toBe(0);
    const newKeys = webhookSecretKeysOf({ WEBHOOK_SECRET_KEY: newKey }, t.db);
    expect(output).toContain(`sealed 1 identity provider client secrets with key ${newKeys.currentKeyId}`);
    // The new key alone opens it, and the provider is used with the same secret; the old key alone no longer does.
    const withNewKey = new IdentityProviders({ db: t.db, secretKeys: newKeys, allowPrivateIssuers: true });
    const provider = await withNewKey.configurationOf(t.tenants.demo.id);
    expect(provider!.configuration.clientMetadata().client_secret).toBe(CLIENT_SECRET);
    const oldKeys = webhookSecretKeysOf({ WEBHOOK_SECRET_KEY: WEBHOOK_TEST_KEY }, t.db);
    await expect(
      new IdentityProviders({ db: t.db, secretKeys: oldKeys, allowPrivateIssuers: true }).configurationOf(t.tenants.demo.id),
    ).rejects.toThrow(/does not open|not configured/);
    // And back, for the gateway of this file.
    expect(await reseal({ WEBHOOK_SECRET_KEY: WEBHOOK_TEST_KEY, WEBHOOK_SECRET_PREVIOUS_KEYS: newKey })).toBe(0);
    expect(output).not.toContain(CLIENT_SECRET);
  });

  it('counts sign-in starts per address (429) before any state is stored, and gives every state an end', async () => {
    const states = async () => Number((await t.db.raw.query<{ n: string }>('SELECT count(*) AS n FROM sso_states'))[0]!.n);
    const tight = gatewayOver(t.db, {
      config: { SSO_ALLOW_PRIVATE_ISSUERS: '1', RATE_LIMIT_PER_MINUTE: 2 },
      rateLimit: { keyPrefix: `test:sso-tight:${kind}:${process.pid}:${Date.now()}`, tenantMultiplier: 1000 },
    });
    const tightServer = createHttpServer(tight, { logger: capturingLogger(logs, 'trace') });
    await new Promise<void>((resolve) => tightServer.listen(0, '127.0.0.1', resolve));
    try {
      const start = `http://127.0.0.1:${(tightServer.address() as AddressInfo).port}/api/v1/auth/sso/start?organization=demo`;
      const statuses: number[] = [];
      for (let i = 0; i < 3; i++) statuses.push((await fetch(start, { redirect: 'manual' })).status);
      expect(statuses.slice(0, 2)).toEqual([303, 303]);
      const before = await states();
      const refused = await fetch(start, { redirect: 'manual' });
      expect(refused.status).toBe(429);
      expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('RATE_LIMITED');
      expect(refused.headers.get('retry-after')).toBeTruthy();
      expect(await states()).toBe(before);
    } finally {
      tightServer.closeAllConnections();
      await new Promise<void>((resolve) => tightServer.close(() => resolve()));
      await tight.dispose();
    }
    // A sign-in never finished keeps its row ten minutes at most, and the next start deletes the rows past their end.
    const now = Date.now();
    const ends = await t.db.raw.query<{ expires_at: Date }>('SELECT expires_at FROM sso_states');
    expect(ends.length).toBeGreaterThan(0);
    for (const { expires_at } of ends) expect(new Date(expires_at).getTime() - now).toBeLessThanOrEqual(10 * 60_000 + 5000);
    await t.db.raw.query("UPDATE sso_states SET expires_at = now() - interval '1 second'");
    const unfinished = await states();
    expect((await fetch(`${origin}/api/v1/auth/sso/start?organization=demo`, { redirect: 'manual' })).status).toBe(303);
    expect(await states()).toBe(1);
    expect(unfinished).toBeGreaterThan(1);
  });

  it('writes no client secret, code, state or session value in any log line', () => {
    const text = logs.map((line) => JSON.stringify(line)).join('\n');
    expect(logs.length).toBeGreaterThan(0);
    for (const secret of secrets) expect(text).not.toContain(secret);
  });
});
