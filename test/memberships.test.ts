// Memberships are per organization, end to end over HTTP on both databases: inviting an email answers the same
// whether or not it is a member elsewhere; two organizations invite the same email, both invitations are
// accepted, and the person signs in to each; a password of several memberships without `organization` is a 409
// that lists only those, after the password is checked, with one hash per attempt; one organization's sign-in is
// unchanged.
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signInOfPassword } from '../src/auth/members.js';
import { hashPassword } from '../src/auth/passwords.js';
import { MIGRATIONS_DIR, migrate, readMigrations } from '../src/db/migrate.js';
import { createHttpServer } from '../src/http/http-server.js';
import type { Gateway } from '../src/http/yoga.js';
import { createTestDatabase, databaseKinds } from './fixtures/databases.js';
import { capturingLogger, createTestGateway, gatewayOver, type LogLine, type TestGateway } from './fixtures/gateway.js';

const PASSWORD = 'correct horse battery staple';
const OTHER_PASSWORD = 'another long passphrase here';
const SIGNED_OUT = { msg: 'The email or the password is wrong', code: 'UNAUTHORIZED' };

describe.each(databaseKinds)('memberships per organization on %s', (kind) => {
  let t: TestGateway;
  let gateway: Gateway;
  let origin: string;
  let server: Server;
  const logs: LogLine[] = [];

  beforeAll(async () => {
    t = await createTestGateway(kind);
    gateway = gatewayOver(t.db, {
      logger: capturingLogger(logs, 'warn'),
      config: { LOGIN_FAILURES_PER_ACCOUNT: 1000, LOGIN_FAILURES_PER_ADDRESS: 1000, RATE_LIMIT_PER_MINUTE: 100_000 },
      rateLimit: { keyPrefix: `test:memberships:${kind}:${process.pid}:${Date.now()}` },
    });
    server = createHttpServer(gateway, { logger: capturingLogger(logs, 'warn') });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    expect(logs.filter((line) => line.level >= 50)).toEqual([]);
    await new Promise<void>((resolve) => server?.close(() => resolve()));
    await gateway?.dispose();
    await t?.dispose();
  });

  function post(path: string, body: unknown, headers: Record<string, string> = {}) {
    return fetch(`${origin}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
  }

  async function invite(tenant: 'demo' | 'other', email: string, role = 'reader'): Promise<{ status: number; body: any }> {
    const response = await post(
      '/api/v1/integrations/members',
      { email, role },
      { authorization: `Token ${t.tenants[tenant].adminToken}` },
    );
    return { status: response.status, body: await response.json() };
  }

  async function accept(code: string, password: string): Promise<{ status: number; body: any }> {
    const response = await post(`/api/v1/auth/invitations/${code}`, { password });
    return { status: response.status, body: await response.json() };
  }

  async function signIn(body: Record<string, unknown>) {
    const response = await post('/api/v1/auth/login', body);
    return { status: response.status, body: await response.json(), cookie: response.headers.get('set-cookie') };
  }

  /** The organization a session cookie signs in to, read back through the API. */
  async function tenantOfCookie(setCookie: string | null): Promise<string> {
    const cookie = /igw_session=[^;]+/.exec(setCookie ?? '')![0];
    const response = await fetch(`${origin}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-requested-with': 'test', cookie },
      body: JSON.stringify({ query: '{ currentMember { id } }' }),
    });
    const id = (await response.json()).data.currentMember.id as string;
    const [row] = await t.db.raw.query<{ slug: string }>(
      'SELECT t.slug FROM members m JOIN tenants t ON t.id = m.tenant_id WHERE m.id = $1',
      [id],
    );
    return row!.slug;
  }

  /** Password hashes and verifications the gateway has run (each is one lease of the governor's `password-hash`). */
  function hashesRun(): number {
    return Object.values(gateway.live.governor.stats('password-hash').ended).reduce((sum, n) => sum + n, 0);
  }

  it('answers an invitation the same whether or not the email is a member of another organization', async () => {
    const elsewhere = await invite('demo', 'elsewhere@example.com');
    expect(elsewhere.status).toBe(200);
    expect((await accept(elsewhere.body.data.code, PASSWORD)).status).toBe(200);

    const taken = await invite('other', 'Elsewhere@Example.com');
    const fresh = await invite('other', 'nowhere@example.com');
    expect(taken.status).toBe(fresh.status);
    expect(taken.status).toBe(200);
    const shape = (answer: { body: any }) => {
      const { member, ...invitation } = answer.body.data;
      return {
        msg: answer.body.msg,
        invitation: Object.keys(invitation).sort(),
        member: { ...member, id: typeof member.id, email: '…', created_at: typeof member.created_at },
      };
    };
    expect(shape(taken)).toEqual(shape(fresh));
    expect(JSON.stringify(taken.body)).not.toMatch(/another organization|demo/);
  });

  it('lets two organizations invite the same email: both invitations are accepted, and it signs in to each', async () => {
    // demo invites first, and its admin even chooses the password: other is not kept from inviting the email.
    const first = await invite('demo', 'squatted@example.com', 'admin');
    expect((await accept(first.body.data.code, OTHER_PASSWORD)).body.data).toEqual({
      email: 'squatted@example.com',
      role: 'admin',
      tenant: 'demo',
      tenant_name: 'demo',
    });
    const second = await invite('other', 'squatted@example.com', 'reader');
    expect(second.status).toBe(200);
    expect(second.body.data.member).toMatchObject({ email: 'squatted@example.com', role: 'reader', pending: true });
    expect((await accept(second.body.data.code, PASSWORD)).body.data).toEqual({
      email: 'squatted@example.com',
      role: 'reader',
      tenant: 'other',
      tenant_name: 'other',
    });

    // Without organization, the password picks the membership it is the password of.
    const toOther = await signIn({ email: 'squatted@example.com', password: PASSWORD });
    expect(toOther.status).toBe(200);
    expect(toOther.body.data).toEqual({ email: 'squatted@example.com', role: 'reader', tenant: 'other', tenant_name: 'other' });
    expect(await tenantOfCookie(toOther.cookie)).toBe('other');
    const toDemo = await signIn({ email: 'squatted@example.com', password: OTHER_PASSWORD });
    expect(toDemo.body.data).toMatchObject({ role: 'admin', tenant: 'demo' });
    expect(await tenantOfCookie(toDemo.cookie)).toBe('demo');
    // Naming the organization: the other one's password does not sign in to it.
    expect((await signIn({ email: 'squatted@example.com', password: PASSWORD, organization: 'other' })).body.data.tenant).toBe('other');
    const crossed = await signIn({ email: 'squatted@example.com', password: PASSWORD, organization: 'demo' });
    expect(crossed.status).toBe(401);
    expect({ msg: crossed.body.msg, code: crossed.body.error.code }).toEqual(SIGNED_OUT);

    // Each organization manages its own membership: other removing it leaves demo's.
    const members = await fetch(`${origin}/api/v1/integrations/members?email=eq.squatted@example.com`, {
      headers: { authorization: `Token ${t.tenants.other.adminToken}` },
    });
    const [otherMembership] = (await members.json()).data;
    const removed = await fetch(`${origin}/api/v1/integrations/members/${otherMembership.id}`, {
      method: 'DELETE',
      headers: { authorization: `Token ${t.tenants.other.adminToken}` },
    });
    expect(removed.status).toBe(200);
    expect((await signIn({ email: 'squatted@example.com', password: OTHER_PASSWORD })).body.data.tenant).toBe('demo');
    expect((await signIn({ email: 'squatted@example.com', password: PASSWORD })).status).toBe(401);
  });

  it('asks to choose, after the password is checked, when the password is that of several memberships', async () => {
    for (const tenant of ['demo', 'other'] as const) {
      const invited = await invite(tenant, 'both@example.com');
      expect((await accept(invited.body.data.code, PASSWORD)).status).toBe(200);
    }
    const before = hashesRun();
    const ambiguous = await signIn({ email: 'both@example.com', password: PASSWORD });
    expect(hashesRun() - before).toBe(1);
    expect(ambiguous.status).toBe(409);
    expect(ambiguous.cookie).toBeNull();
    expect(ambiguous.body.error.code).toBe('CONFLICT');
    expect(ambiguous.body.error.details).toEqual([
      { parameter: 'organization', message: 'demo' },
      { parameter: 'organization', message: 'other' },
    ]);
    expect(ambiguous.body.msg).toMatch(/send organization, one of demo, other/);

    for (const organization of ['demo', 'other']) {
      const chosen = await signIn({ email: 'both@example.com', password: PASSWORD, organization });
      expect(chosen.status).toBe(200);
      expect(chosen.body.data.tenant).toBe(organization);
      expect(await tenantOfCookie(chosen.cookie)).toBe(organization);
    }

    // Without the password nothing tells this email from an unknown one, nor an organization it is no member of.
    const answers = await Promise.all([
      signIn({ email: 'both@example.com', password: 'not the password at all' }),
      signIn({ email: 'nobody-at-all@example.com', password: PASSWORD }),
      signIn({ email: 'both@example.com', password: 'not the password at all', organization: 'demo' }),
      signIn({ email: 'both@example.com', password: PASSWORD, organization: 'no-such-organization' }),
      signIn({ email: 'nobody-at-all@example.com', password: PASSWORD, organization: 'demo' }),
    ]);
    for (const answer of answers) {
      expect(answer.status).toBe(401);
      expect(answer.cookie).toBeNull();
      expect({ msg: answer.body.msg, code: answer.body.error.code }).toEqual(SIGNED_OUT);
    }
    const wrongBefore = hashesRun();
    await signIn({ email: 'both@example.com', password: 'not the password at all' });
    await signIn({ email: 'nobody-at-all@example.com', password: PASSWORD });
    expect(hashesRun() - wrongBefore).toBe(2);
  });

  it("keeps one organization's sign-in as it was, and refuses an organization that is not a non-empty string", async () => {
    const invited = await invite('demo', 'single@example.com', 'admin');
    expect((await accept(invited.body.data.code, PASSWORD)).status).toBe(200);
    const before = hashesRun();
    const signedIn = await signIn({ email: 'Single@Example.com', password: PASSWORD });
    expect(hashesRun() - before).toBe(1);
    expect(signedIn.status).toBe(200);
    expect(signedIn.body).toEqual({
      msg: 'Signed in',
      data: { email: 'single@example.com', role: 'admin', tenant: 'demo', tenant_name: 'demo' },
    });
    expect(signedIn.cookie).toMatch(/^igw_session=igw_ses_/);

    for (const organization of ['', '  ', 42, null]) {
      const refused = await signIn({ email: 'single@example.com', password: PASSWORD, organization });
      expect(refused.status).toBe(400);
      expect(refused.body.error.details).toEqual([{ parameter: 'organization', message: 'organization must be a non-empty string' }]);
    }
  });
});

describe.each(databaseKinds)('the membership migration on %s', (kind) => {
  it('keeps the members there, and then lets another organization have the same email', { timeout: 240_000 }, async () => {
    const membershipMigration = readMigrations().find((m) => m.name.endsWith('_membership_per_organization'))!.name;
    const before = mkdtempSync(join(tmpdir(), 'migrations-'));
    for (const migration of readMigrations()) {
      if (migration.name >= membershipMigration) break;
      cpSync(join(MIGRATIONS_DIR, migration.name), join(before, migration.name), { recursive: true });
    }
    const db = await createTestDatabase(kind, { migrationsDir: before });
    try {
      for (const [id, slug] of [
        ['ten_a', 'org-a'],
        ['ten_b', 'org-b'],
      ]) {
        await db.raw.query('INSERT INTO tenants (id, slug, name) VALUES ($1, $2, $2)', [id, slug]);
      }
      const hash = await hashPassword(PASSWORD);
      await db.raw.query(
        `INSERT INTO members (id, tenant_id, email, role, password_hash) VALUES ('mbr_a', 'ten_a', 'kept@example.com', 'admin', $1)`,
        [hash],
      );
      expect(await migrate(db)).toEqual(readMigrations().flatMap((m) => (m.name >= membershipMigration ? [m.name] : [])));
      expect(await db.raw.query('SELECT id, tenant_id, email, role, password_hash FROM members')).toEqual([
        { id: 'mbr_a', tenant_id: 'ten_a', email: 'kept@example.com', role: 'admin', password_hash: hash },
      ]);
      const signedIn = await signInOfPassword(db, { email: 'kept@example.com', password: PASSWORD });
      expect(signedIn).toMatchObject({ member: { id: 'mbr_a', tenant: 'org-a' } });
      await db.raw.query(`INSERT INTO members (id, tenant_id, email, role) VALUES ('mbr_b', 'ten_b', 'kept@example.com', 'reader')`);
      await expect(
        db.raw.query(`INSERT INTO members (id, tenant_id, email, role) VALUES ('mbr_c', 'ten_b', 'kept@example.com', 'reader')`),
      ).rejects.toThrow(/unique/);
    } finally {
      await db.dispose();
      rmSync(before, { recursive: true, force: true });
    }
  });
});
