// Members sign in, end to end over HTTP on both databases: an invitation from the CLI's own function, reading what
// it is for, accepting it (weak passwords refused, a code used once, signed in at once), a password reset, signing in, the session cookie as a credential on REST, GraphQL
// over HTTP, SSE and graphql-ws, cross-site requests refused, signing out, throttled guessing, and a role change
// or removal ending the member's sessions and open streams. No password, code or session value is logged.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createClient } from 'graphql-ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { changeMemberRole, inviteMember, issueMemberCode, removeMember } from '../src/auth/members.js';
import { createSession, deleteEndedSessions, verifySession } from '../src/auth/sessions.js';
import { createHttpServer } from '../src/http/http-server.js';
import { attachGraphqlWebSocket } from '../src/http/graphql-ws.js';
import { databaseKinds } from './fixtures/databases.js';
import { capturingLogger, createTestGateway, gatewayOver, type LogLine, type TestGateway } from './fixtures/gateway.js';
import { readSse } from './fixtures/sse.js';
import type { Gateway } from '../src/http/yoga.js';

const STRONG = 'correct horse battery staple';

describe.each(databaseKinds)('members sign in on %s', (kind) => {
  let t: TestGateway;
  let gateway: Gateway;
  let origin: string;
  let server: Server;
  let closeSockets: () => Promise<void>;
  const logs: LogLine[] = [];
  const secrets: string[] = [STRONG];

  beforeAll(async () => {
    t = await createTestGateway(kind);
    // Every log line at the lowest level, to look for secrets in them.
    gateway = gatewayOver(t.db, {
      logger: capturingLogger(logs, 'trace'),
      config: { LOGIN_FAILURES_PER_ACCOUNT: 3, LOGIN_FAILURES_PER_ADDRESS: 1000, RATE_LIMIT_PER_MINUTE: 100_000 },
      rateLimit: { keyPrefix: `test:sessions:${kind}:${process.pid}:${Date.now()}` },
      live: { credentialCheckMs: 100, heartbeatMs: 200 },
    });
    server = createHttpServer(gateway, { logger: capturingLogger(logs, 'trace') });
    closeSockets = attachGraphqlWebSocket(server, gateway, capturingLogger(logs, 'trace'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    await closeSockets?.();
    await new Promise<void>((resolve) => server?.close(() => resolve()));
    await gateway?.dispose();
    await t?.dispose();
  });

  async function invite(email: string, role: 'admin' | 'reader', tenantId = t.tenants.demo.id): Promise<string> {
    const { code } = await inviteMember(t.db.raw, { tenantId, email, role, createdBy: 'cli' });
    secrets.push(code);
    return code;
  }

  function post(path: string, body: unknown, headers: Record<string, string> = {}) {
    return fetch(`${origin}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
  }

  async function signIn(email: string, password = STRONG): Promise<string> {
    const response = await post('/api/v1/auth/login', { email, password });
    expect(response.status).toBe(200);
    const cookie = response.headers.get('set-cookie')!;
    const value = /igw_session=([^;]+)/.exec(cookie)![1]!;
    secrets.push(value);
    return `igw_session=${value}`;
  }

  async function accept(code: string, password = STRONG) {
    return post(`/api/v1/auth/invitations/${code}`, { password });
  }

  it('invites, refuses weak passwords, accepts a code once, signs in with an HttpOnly SameSite=Lax cookie', async () => {
    const code = await invite('Alice@Example.com', 'admin');
    const short = await accept(code, 'short');
    expect(short.status).toBe(400);
    expect((await short.json()).msg).toMatch(/at least 12 characters/);
    const common = await accept(code, 'qwerty123456');
    expect(common.status).toBe(400);
    expect((await common.json()).msg).toMatch(/commonly used/);

    const accepted = await accept(code);
    expect(accepted.status).toBe(200);
    expect((await accepted.json()).data).toEqual({
      email: 'alice@example.com',
      role: 'admin',
      tenant: 'demo',
      tenant_name: expect.any(String),
    });
    secrets.push(/igw_session=([^;]+)/.exec(accepted.headers.get('set-cookie') ?? '')![1]!);
    const twice = await accept(code, 'another long passphrase');
    expect(twice.status).toBe(404);
    expect((await twice.json()).error.code).toBe('NOT_FOUND');

    const login = await post('/api/v1/auth/login', { email: 'alice@example.com', password: STRONG });
    expect(login.status).toBe(200);
    expect(await login.json()).toMatchObject({
      msg: expect.any(String),
      data: { email: 'alice@example.com', role: 'admin', tenant: 'demo' },
    });
    const cookie = login.headers.get('set-cookie')!;
    expect(cookie).toMatch(/^igw_session=igw_ses_[A-Za-z0-9_-]{43};/);
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Lax/);
    expect(cookie).toMatch(/Path=\//);
    expect(cookie).not.toMatch(/Secure/);
    secrets.push(/igw_session=([^;]+)/.exec(cookie)![1]!);

    // Stored hashed: neither the password, nor the code, nor the session value is in the database.
    const dump = JSON.stringify(
      await t.db.raw.query(
        'SELECT m.password_hash, i.code_hash::text, s.secret_hash::text FROM members m JOIN member_invitations i ON i.member_id = m.id LEFT JOIN member_sessions s ON s.member_id = m.id',
      ),
    );
    for (const secret of secrets) expect(dump).not.toContain(secret);
    expect(dump).toContain('$argon2id$');
  });

  /** The organization and member a session cookie signs in as, read back through the API. */
  async function whoIs(cookie: string): Promise<{ slug: string; email: string } | number> {
    const response = await fetch(`${origin}/graphql`, {
      method: 'POST',
      headers: { cookie, 'content-type': 'application/json', 'x-requested-with': 'test' },
      body: JSON.stringify({ query: '{ organization { slug } currentMember { email } }' }),
    });
    if (response.status !== 200) return response.status;
    const { data } = await response.json();
    return { slug: data.organization.slug, email: data.currentMember.email };
  }

  const cookieOf = (response: Response) => `igw_session=${/igw_session=([^;]+)/.exec(response.headers.get('set-cookie') ?? '')![1]!}`;

  it('reads what a code is for, and signs its holder in to its organization on accepting it', async () => {
    const code = await invite('Nora@Example.com', 'reader', t.tenants.other.id);
    const read = await fetch(`${origin}/api/v1/auth/invitations/${code}`);
    expect(read.status).toBe(200);
    expect(read.headers.get('cache-control')).toBe('no-store');
    const { data } = await read.json();
    const organization = await t.db.prisma.tenant.findUniqueOrThrow({ where: { id: t.tenants.other.id } });
    expect(data).toEqual({
      email: 'nora@example.com',
      role: 'reader',
      purpose: 'invitation',
      tenant: 'other',
      tenant_name: organization.name,
      expires_at: expect.stringMatching(/Z$/),
    });
    expect(new Date(data.expires_at).getTime() - Date.now()).toBeGreaterThan(6.9 * 86_400_000);

    const accepted = await accept(code);
    expect(accepted.status).toBe(200);
    expect(accepted.headers.get('set-cookie')).toMatch(/^igw_session=igw_ses_[A-Za-z0-9_-]{43};.*HttpOnly/);
    const cookie = cookieOf(accepted);
    secrets.push(cookie.slice('igw_session='.length));
    expect(await whoIs(cookie)).toEqual({ slug: 'other', email: 'nora@example.com' });

    // A used, an unknown and a malformed code: the same 404 in the spec's error body.
    for (const unusable of [code, 'A'.repeat(43), 'not-a-code']) {
      const refused = await fetch(`${origin}/api/v1/auth/invitations/${unusable}`);
      expect(refused.status).toBe(404);
      const body = await refused.json();
      expect(body).toEqual({
        msg: expect.stringMatching(/unknown, already used or expired: ask an admin/),
        error: { code: 'NOT_FOUND', docs: expect.stringMatching(/\/docs\/errors\/NOT_FOUND$/), req_id: expect.stringMatching(/^req_\d+$/) },
      });
    }
    const put = await fetch(`${origin}/api/v1/auth/invitations/${code}`, { method: 'PUT' });
    expect(put.status).toBe(405);
    expect(put.headers.get('allow')).toBe('GET, HEAD, POST');
  });

  it('resets a forgotten password with an admin-issued code: signed in, the other sessions ended', async () => {
    const code = await invite('Reto@Example.com', 'reader');
    expect((await accept(code)).status).toBe(200);
    const before = await signIn('reto@example.com');
    const member = await t.db.prisma.member.findUniqueOrThrow({
      where: { tenantId_email: { tenantId: t.tenants.demo.id, email: 'reto@example.com' } },
    });
    const reset = await issueMemberCode(t.db.raw, { tenantId: t.tenants.demo.id, memberId: member.id, purpose: 'password_reset' });
    secrets.push(reset.code);
    const read = await fetch(`${origin}/api/v1/auth/invitations/${reset.code}`);
    expect((await read.json()).data).toMatchObject({ email: 'reto@example.com', purpose: 'password_reset', tenant: 'demo' });
    // The old password works until a new one is chosen, which follows the same rules.
    expect(await whoIs(await signIn('reto@example.com'))).toMatchObject({ email: 'reto@example.com' });
    expect((await accept(reset.code, 'qwerty123456')).status).toBe(400);
    const renewed = 'a renewed passphrase for reto';
    secrets.push(renewed);
    const accepted = await accept(reset.code, renewed);
    expect(accepted.status).toBe(200);
    const cookie = cookieOf(accepted);
    secrets.push(cookie.slice('igw_session='.length));
    expect(await whoIs(cookie)).toEqual({ slug: 'demo', email: 'reto@example.com' });
    expect(await whoIs(before)).toBe(401);
    expect((await post('/api/v1/auth/login', { email: 'reto@example.com', password: STRONG })).status).toBe(401);
    expect((await post('/api/v1/auth/login', { email: 'reto@example.com', password: renewed })).status).toBe(200);
    expect((await accept(reset.code, 'yet another passphrase here')).status).toBe(404);
  });

  it('sets Secure behind a trusted proxy that says HTTPS, and only then', async () => {
    const proxied = gatewayOver(t.db, { config: { TRUST_PROXY: '1' } });
    const untrusted = gatewayOver(t.db, { config: { TRUST_PROXY: '0' } });
    try {
      const request = {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-forwarded-proto': 'https' },
        body: JSON.stringify({ email: 'alice@example.com', password: STRONG }),
      };
      const secure = await proxied.fetch('http://gateway.test/api/v1/auth/login', request);
      expect(secure.status).toBe(200);
      expect(secure.headers.get('set-cookie')).toMatch(/Secure/);
      const plain = await untrusted.fetch('http://gateway.test/api/v1/auth/login', request);
      expect(plain.headers.get('set-cookie')).not.toMatch(/Secure/);
    } finally {
      await proxied.dispose();
      await untrusted.dispose();
    }
  });

  it('answers an unknown email and a wrong password alike, each after the same one hash', async () => {
    const answer = async (body: unknown) => {
      const response = await post('/api/v1/auth/login', body);
      return { status: response.status, body: await response.json() };
    };
    /** Password hashes the governor has leased and released so far: one per hash or verification. */
    const hashes = async () => {
      const text = await (await fetch(`${origin}/metrics`)).text();
      const line = text
        .split('\n')
        .find((l) => l.startsWith('governor_lease_ends_total{') && l.includes('resource="password-hash"') && l.includes('reason="done"'));
      return Number(line?.split(' ').at(-1) ?? 0);
    };
    // Interleaved samples. An account of its own, as many wrong passwords as it may send before the throttle
    // answers instead.
    expect((await accept(await invite('timing@example.com', 'reader'))).status).toBe(200);
    const samples: Array<{ wrong: Awaited<ReturnType<typeof answer>>; unknown: Awaited<ReturnType<typeof answer>> }> = [];
    for (let i = 0; i < 3; i++) {
      const before = await hashes();
      const wrong = await answer({ email: 'timing@example.com', password: 'not the right password' });
      const between = await hashes();
      const unknown = await answer({ email: `nobody-${i}@example.com`, password: 'not the right password' });
      // Each verifies one argon2id hash with the same parameters: the same work, so the same time. (Timed, as
      // this test once was, a loaded machine made either answer take several times the other.)
      expect([between - before, (await hashes()) - between]).toEqual([1, 1]);
      samples.push({ wrong, unknown });
    }
    const { wrong, unknown } = samples[0]!;
    expect(wrong.status).toBe(401);
    expect(unknown.status).toBe(401);
    expect(unknown.body.msg).toBe(wrong.body.msg);
    expect(unknown.body.error.code).toBe('UNAUTHORIZED');
  });

  it('is a credential on REST, GraphQL over HTTP, SSE and graphql-ws, with the member role', async () => {
    const cookie = await signIn('alice@example.com');
    const rest = await fetch(`${origin}/api/v1/integrations/connected?limit=1`, { headers: { cookie } });
    expect(rest.status).toBe(200);
    expect((await rest.json()).data).toHaveLength(1);

    const query = await fetch(`${origin}/graphql`, {
      method: 'POST',
      headers: { cookie, 'content-type': 'application/json', 'x-requested-with': 'console' },
      body: JSON.stringify({ query: '{ connections(limit: 1) { totalCount } }' }),
    });
    expect(query.status).toBe(200);
    expect((await query.json()).data.connections.totalCount).toBeGreaterThan(0);

    const sse = await fetch(`${origin}/graphql?query=${encodeURIComponent('subscription { connectionChanged { id } }')}`, {
      headers: { cookie, accept: 'text/event-stream' },
    });
    expect(sse.status).toBe(200);
    expect(sse.headers.get('content-type')).toMatch(/text\/event-stream/);
    await sse.body!.cancel();

    // A REST event stream too.
    const sync = await t.db.prisma.sync.findFirstOrThrow({ where: { tenantId: t.tenants.demo.id } });
    const restStream = await fetch(`${origin}/api/v1/integrations/syncs/${sync.id}`, { headers: { cookie, accept: 'text/event-stream' } });
    expect(restStream.status).toBe(200);
    expect(restStream.headers.get('content-type')).toMatch(/text\/event-stream/);
    await restStream.body!.cancel();

    const ws = createClient({
      url: `${origin.replace('http', 'ws')}/graphql`,
      webSocketImpl: class extends WebSocket {
        constructor(address: string, protocols?: string | string[]) {
          super(address, protocols, { headers: { cookie, origin } });
        }
      },
      retryAttempts: 0,
      lazy: true,
    });
    try {
      const result = await new Promise<unknown>((resolve, reject) => {
        ws.subscribe({ query: '{ connections(limit: 1) { totalCount } }' }, { next: resolve, error: reject, complete: () => {} });
      });
      expect(JSON.stringify(result)).toMatch(/totalCount/);
    } finally {
      await ws.dispose();
    }
  });

  it('refuses cross-site use of the cookie and leaves token requests alone', async () => {
    const cookie = await signIn('alice@example.com');
    const mutation = JSON.stringify({ query: 'mutation { createServiceUser(name: "csrf-victim", role: admin) { id } }' });
    // A cross-site form post: text/plain, no X-Requested-With, a foreign Origin.
    const form = await fetch(`${origin}/graphql`, {
      method: 'POST',
      headers: { cookie, 'content-type': 'text/plain', origin: 'https://evil.example' },
      body: mutation,
    });
    expect([403, 415]).toContain(form.status);
    // Without the header, even from our own origin.
    const noHeader = await fetch(`${origin}/graphql`, {
      method: 'POST',
      headers: { cookie, 'content-type': 'application/json', origin },
      body: mutation,
    });
    expect(noHeader.status).toBe(403);
    const foreign = await fetch(`${origin}/graphql`, {
      method: 'POST',
      headers: { cookie, 'content-type': 'application/json', origin: 'https://evil.example', 'x-requested-with': 'x' },
      body: mutation,
    });
    expect(foreign.status).toBe(403);
    const restWrite = await fetch(`${origin}/api/v1/integrations/connected`, {
      method: 'POST',
      headers: { cookie, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(restWrite.status).toBe(403);
    const sse = await fetch(`${origin}/graphql?query=${encodeURIComponent('subscription { connectionChanged { id } }')}`, {
      headers: { cookie, accept: 'text/event-stream', origin: 'https://evil.example' },
    });
    expect(sse.status).toBe(403);
    await sse.body?.cancel();
    expect(await t.db.prisma.serviceUser.count({ where: { name: 'csrf-victim' } })).toBe(0);

    // Another site's page can neither sign someone in (login CSRF) nor out.
    const foreignLogin = await post(
      '/api/v1/auth/login',
      { email: 'alice@example.com', password: STRONG },
      { origin: 'https://evil.example' },
    );
    expect(foreignLogin.status).toBe(403);
    expect(foreignLogin.headers.get('set-cookie')).toBeNull();
    const foreignLogout = await fetch(`${origin}/api/v1/auth/logout`, {
      method: 'POST',
      headers: { cookie, origin: 'https://evil.example' },
    });
    expect(foreignLogout.status).toBe(403);
    expect((await fetch(`${origin}/api/v1/integrations/connected?limit=1`, { headers: { cookie } })).status).toBe(200);

    // A cross-site WebSocket carrying the cookie is closed before any operation.
    const closed = await new Promise<number>((resolve) => {
      const socket = new WebSocket(`${origin.replace('http', 'ws')}/graphql`, 'graphql-transport-ws', {
        headers: { cookie, origin: 'https://evil.example' },
      });
      socket.on('open', () => socket.send(JSON.stringify({ type: 'connection_init' })));
      socket.on('close', (code) => resolve(code));
    });
    expect(closed).toBe(4403);

    // The same mutation from our own page succeeds; a token needs neither header.
    const own = await fetch(`${origin}/graphql`, {
      method: 'POST',
      headers: { cookie, 'content-type': 'application/json', origin, 'x-requested-with': 'console' },
      body: JSON.stringify({ query: 'mutation { createServiceUser(name: "made-by-alice", role: reader) { id } }' }),
    });
    expect((await own.json()).data.createServiceUser.id).toMatch(/^usr_/);
    const token = await fetch(`${origin}/graphql`, {
      method: 'POST',
      headers: {
        authorization: `Token ${t.tenants.demo.adminToken}`,
        'content-type': 'application/json',
        origin: 'https://elsewhere.example',
      },
      body: JSON.stringify({ query: '{ connections(limit: 1) { totalCount } }' }),
    });
    expect(token.status).toBe(200);
  });

  it('signs out: the session ends on the server', async () => {
    const cookie = await signIn('alice@example.com');
    const out = await fetch(`${origin}/api/v1/auth/logout`, { method: 'POST', headers: { cookie } });
    expect(out.status).toBe(200);
    expect(out.headers.get('set-cookie')).toMatch(/igw_session=;.*Max-Age=0/);
    const after = await fetch(`${origin}/api/v1/integrations/connected?limit=1`, { headers: { cookie } });
    expect(after.status).toBe(401);
  });

  it('throttles guessing per account with 429 and Retry-After', async () => {
    const code = await invite('bob@example.com', 'reader');
    expect((await accept(code)).status).toBe(200);
    for (let i = 0; i < 3; i++)
      expect((await post('/api/v1/auth/login', { email: 'bob@example.com', password: `wrong guess ${i}` })).status).toBe(401);
    const throttled = await post('/api/v1/auth/login', { email: 'bob@example.com', password: STRONG });
    expect(throttled.status).toBe(429);
    expect(Number(throttled.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await throttled.json()).error.code).toBe('RATE_LIMITED');
    // Another account from the same address is not held up by Bob's.
    expect((await post('/api/v1/auth/login', { email: 'alice@example.com', password: STRONG })).status).toBe(200);
  });

  it('refuses a sign-in body with missing or mistyped fields with 400, counting nothing toward the lockout', async () => {
    const code = await invite('dora@example.com', 'reader');
    expect((await accept(code)).status).toBe(200);
    const malformed: unknown[] = [
      {},
      { email: 5, password: {} },
      { email: 'dora@example.com' },
      { email: 'dora@example.com', password: '' },
      { email: ' ', password: 'whatever it is' },
      { email: 'dora@example.com', password: ['x'] },
    ];
    // More malformed bodies than the account's lockout allows failures (3): none of them counts.
    for (const body of [...malformed, ...malformed]) {
      const response = await post('/api/v1/auth/login', body);
      expect(response.status).toBe(400);
      const error = (await response.json()) as { error: { code: string; details: Array<{ parameter: string }> } };
      expect(error.error.code).toBe('INVALID_QUERY');
      expect(error.error.details.length).toBeGreaterThan(0);
    }
    expect((await post('/api/v1/auth/login', { email: 5, password: {} })).status).toBe(400);
    expect((await post('/api/v1/auth/login', { email: 'dora@example.com', password: STRONG })).status).toBe(200);
  });

  it('ends the sessions and the open streams of a member whose role changes or who is removed', async () => {
    const code = await invite('carol@example.com', 'admin');
    expect((await accept(code)).status).toBe(200);
    const member = await t.db.prisma.member.findUniqueOrThrow({
      where: { tenantId_email: { tenantId: t.tenants.demo.id, email: 'carol@example.com' } },
    });

    const cookie = await signIn('carol@example.com');
    const stream = readSse(
      await fetch(`${origin}/graphql?query=${encodeURIComponent('subscription { connectionChanged { id } }')}`, {
        headers: { cookie, accept: 'text/event-stream' },
      }),
    );
    await changeMemberRole(t.db, { tenantId: t.tenants.demo.id, memberId: member.id, role: 'reader' });
    await Promise.race([stream.ended, new Promise((_, reject) => setTimeout(() => reject(new Error('stream still open')), 5000))]);
    expect((await fetch(`${origin}/api/v1/integrations/connected?limit=1`, { headers: { cookie } })).status).toBe(401);

    const again = await signIn('carol@example.com');
    const reader = await fetch(`${origin}/api/v1/integrations/connected?limit=1`, { headers: { cookie: again } });
    expect(reader.status).toBe(200);
    const refused = await fetch(`${origin}/api/v1/integrations/connected`, {
      method: 'POST',
      headers: { cookie: again, 'content-type': 'application/json', 'x-requested-with': 'x' },
      body: JSON.stringify({ application_id: 'x' }),
    });
    expect(refused.status).toBe(403);

    const second = readSse(
      await fetch(`${origin}/graphql?query=${encodeURIComponent('subscription { connectionChanged { id } }')}`, {
        headers: { cookie: again, accept: 'text/event-stream' },
      }),
    );
    await removeMember(t.db, { tenantId: t.tenants.demo.id, memberId: member.id });
    await Promise.race([second.ended, new Promise((_, reject) => setTimeout(() => reject(new Error('stream still open')), 5000))]);
    expect((await fetch(`${origin}/api/v1/integrations/connected?limit=1`, { headers: { cookie: again } })).status).toBe(401);
  });

  it('ends a session after its idle timeout and after its absolute lifetime', async () => {
    const member = await t.db.prisma.member.findUniqueOrThrow({
      where: { tenantId_email: { tenantId: t.tenants.demo.id, email: 'alice@example.com' } },
    });
    const policy = { idleMs: 60_000, lifetimeMs: 3_600_000 };
    const start = new Date();
    const idle = await createSession(t.db, member, policy, start);
    expect(await verifySession(t.db, idle.value, policy, new Date(start.getTime() + 30_000))).not.toBeNull();
    // Idle for a minute after that use (test/hardening.test.ts: a use keeps it open a minute longer).
    expect(await verifySession(t.db, idle.value, policy, new Date(start.getTime() + 91_000))).toBeNull();
    // Used a moment ago, it still ends with its lifetime.
    const busy = await createSession(t.db, member, policy, start);
    await t.db.raw.query('UPDATE member_sessions SET last_seen_at = $2::timestamptz WHERE secret_hash = sha256($1::bytea)', [
      Buffer.from(busy.value.slice('igw_ses_'.length), 'base64url'),
      new Date(start.getTime() + 3_599_000).toISOString(),
    ]);
    expect(await verifySession(t.db, busy.value, policy, new Date(start.getTime() + 3_599_500))).not.toBeNull();
    expect(await verifySession(t.db, busy.value, policy, new Date(start.getTime() + 3_600_001))).toBeNull();
    expect(await deleteEndedSessions(t.db.raw, policy, new Date(start.getTime() + 7_200_000))).toBeGreaterThan(0);
  });

  it('shares the sign-in throttle between replicas through Redis', async () => {
    const keyPrefix = `test:sessions-redis:${kind}:${process.pid}:${Date.now()}`;
    const config = { REDIS_URL: 'redis://127.0.0.1:6379', LOGIN_FAILURES_PER_ACCOUNT: 2 };
    const replicas = [gatewayOver(t.db, { config, rateLimit: { keyPrefix } }), gatewayOver(t.db, { config, rateLimit: { keyPrefix } })];
    try {
      const attempt = (replica: Gateway) =>
        replica.fetch('http://gateway.test/api/v1/auth/login', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ email: 'alice@example.com', password: 'a wrong password' }),
        });
      expect((await attempt(replicas[0]!)).status).toBe(401);
      expect((await attempt(replicas[1]!)).status).toBe(401);
      const third = await attempt(replicas[0]!);
      expect(third.status).toBe(429);
      expect(third.headers.get('retry-after')).toMatch(/^\d+$/);
    } finally {
      await Promise.all(replicas.map((replica) => replica.dispose()));
    }
  });

  it('logs no password, invitation code or session value at any level', () => {
    expect(logs.length).toBeGreaterThan(0);
    const text = logs.map((line) => JSON.stringify(line)).join('\n');
    for (const secret of secrets) expect(text).not.toContain(secret);
  });
});
