// The member API on both databases and both surfaces' credentials: the CLI invitation and password reset, GraphQL
// list / invite / resend an invitation / create a password reset / change role / remove (admin only, the last-admin rule, never the engine role, another tenant's members out of
// sight, its emails invited on their own), and the audit columns: who created a service user, a token, a webhook endpoint and a connection.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { acceptInvitation, signInOfPassword } from '../src/auth/members.js';
import { createSession, DEFAULT_SESSION_POLICY } from '../src/auth/sessions.js';
import { runCliOn } from './fixtures/cli.js';
import { databaseKinds } from './fixtures/databases.js';
import { createTestGateway, graphql, type TestGateway } from './fixtures/gateway.js';

const STRONG = 'a long enough passphrase';

describe.each(databaseKinds)('members on %s', (kind) => {
  let t: TestGateway;
  beforeAll(async () => {
    t = await createTestGateway(kind);
  });
  afterAll(() => t?.dispose());

  const admin = () => ({ token: t.tenants.demo.adminToken });

  it('invites from the CLI: the URL alone on stdout, from PUBLIC_ORIGIN or HOST:PORT', async () => {
    const run = await runCliOn(t.db, 'member', 'invite', '--tenant', 'demo', '--email', 'Cli@Example.com', '--role', 'admin');
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^http:\/\/127\.0\.0\.1:4000\/console\/invite\/[A-Za-z0-9_-]{43}\n$/);
    const code = run.stdout.trim().split('/').at(-1)!;
    expect(await acceptInvitation(t.db, code, STRONG)).toMatchObject({ email: 'cli@example.com', role: 'admin', tenant: 'demo' });
    const member = await t.db.prisma.member.findUniqueOrThrow({
      where: { tenantId_email: { tenantId: t.tenants.demo.id, email: 'cli@example.com' } },
    });
    expect(member.createdBy).toBe('cli');

    const engine = await runCliOn(t.db, 'member', 'invite', '--tenant', 'demo', '--email', 'x@example.com', '--role', 'engine');
    expect(engine.code).toBe(2);
    expect(engine.stderr).toMatch(/--role must be one of admin, reader/);
    const unknownTenant = await runCliOn(t.db, 'member', 'invite', '--tenant', 'nope', '--email', 'x@example.com', '--role', 'reader');
    expect(unknownTenant.code).toBe(1);

    // A forgotten password: a reset URL for the member, which sets a new password; the old one works until then.
    const reset = await runCliOn(t.db, 'member', 'reset-password', '--tenant', 'demo', '--email', 'CLI@example.com');
    expect(reset.code, reset.stderr).toBe(0);
    expect(reset.stdout).toMatch(/^http:\/\/127\.0\.0\.1:4000\/console\/reset\/[A-Za-z0-9_-]{43}\n$/);
    expect(await signInOfPassword(t.db, { email: 'cli@example.com', password: STRONG })).not.toBeNull();
    const resetCode = reset.stdout.trim().split('/').at(-1)!;
    await acceptInvitation(t.db, resetCode, 'a brand new passphrase');
    expect(await signInOfPassword(t.db, { email: 'cli@example.com', password: STRONG })).toBeNull();
    expect(await signInOfPassword(t.db, { email: 'cli@example.com', password: 'a brand new passphrase' })).not.toBeNull();
    const activity = await t.db.prisma.activityEntry.findFirstOrThrow({
      where: { tenantId: t.tenants.demo.id, action: 'member.password_reset_created' },
    });
    expect(activity).toMatchObject({ actorKind: 'cli', targetName: 'cli@example.com' });
    const stranger = await runCliOn(t.db, 'member', 'reset-password', '--tenant', 'demo', '--email', 'nobody@example.com');
    expect(stranger.code).toBe(1);
    expect(stranger.stderr).toMatch(/nobody@example.com is no member of demo/);
    // A pending member has no password to reset: its link is a new invitation.
    await runCliOn(t.db, 'member', 'invite', '--tenant', 'demo', '--email', 'pending@example.com', '--role', 'reader');
    const pending = await runCliOn(t.db, 'member', 'reset-password', '--tenant', 'demo', '--email', 'pending@example.com');
    expect(pending.code, pending.stderr).toBe(0);
    expect(pending.stdout).toMatch(/\/console\/invite\/[A-Za-z0-9_-]{43}\n$/);
  });

  it('resends a pending invitation and creates password resets over GraphQL: a new code, the old one void, recorded', async () => {
    const invited = await graphql(t.gateway, 'mutation { inviteMember(email: "rita@example.com", role: reader) { code member { id } } }', {
      ...admin(),
      expectOk: true,
    });
    const { code: firstCode, member } = invited.body.data!.inviteMember;
    const resend = 'mutation($id: ID!) { resendInvitation(id: $id) { code path expiresAt member { id email pending } } }';
    const resent = await graphql(t.gateway, resend, { ...admin(), variables: { id: member.id }, expectOk: true });
    const invitation = resent.body.data!.resendInvitation;
    expect(invitation.path).toBe(`/console/invite/${invitation.code}`);
    expect(invitation.member).toEqual({ id: member.id, email: 'rita@example.com', pending: true });
    expect(invitation.code).not.toBe(firstCode);
    await expect(acceptInvitation(t.db, firstCode, STRONG)).rejects.toMatchObject({ code: 'NOT_FOUND' });

    // A pending member's reset is a new invitation; no resend once the password is chosen.
    const createReset = 'mutation($id: ID!) { createPasswordReset(id: $id) { code path expiresAt member { id pending } } }';
    const early = await graphql(t.gateway, createReset, { ...admin(), variables: { id: member.id }, expectOk: true });
    const renewed = early.body.data!.createPasswordReset;
    expect(renewed.path).toBe(`/console/invite/${renewed.code}`);
    await expect(acceptInvitation(t.db, invitation.code, STRONG)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await acceptInvitation(t.db, renewed.code, STRONG);
    const late = await graphql(t.gateway, resend, { ...admin(), variables: { id: member.id } });
    expect(late.body.errors?.[0]).toMatchObject({ extensions: { code: 'CONFLICT' }, message: expect.stringMatching(/password reset/) });

    const session = await createSession(t.db, { tenantId: t.tenants.demo.id, id: member.id }, DEFAULT_SESSION_POLICY);
    const created = await graphql(t.gateway, createReset, { ...admin(), variables: { id: member.id }, expectOk: true });
    const reset = created.body.data!.createPasswordReset;
    expect(reset.path).toBe(`/console/reset/${reset.code}`);
    expect(reset.member).toEqual({ id: member.id, pending: false });
    // The password and the session hold until the new password is chosen; then only the new one signs in.
    expect(await signInOfPassword(t.db, { email: 'rita@example.com', password: STRONG })).not.toBeNull();
    expect(await t.db.prisma.memberSession.count({ where: { memberId: member.id } })).toBe(1);
    expect(await acceptInvitation(t.db, reset.code, 'rita resets her passphrase')).toMatchObject({ id: member.id, tenant: 'demo' });
    expect(await t.db.prisma.memberSession.count({ where: { memberId: member.id } })).toBe(0);
    expect(session.value).toMatch(/^igw_ses_/);
    expect(await signInOfPassword(t.db, { email: 'rita@example.com', password: STRONG })).toBeNull();
    await expect(acceptInvitation(t.db, reset.code, 'and once more a passphrase')).rejects.toMatchObject({ code: 'NOT_FOUND' });

    // Admin only, within the tenant.
    const byReader = await graphql(t.gateway, createReset, { token: t.tenants.demo.readerToken, variables: { id: member.id } });
    expect(byReader.status).toBe(403);
    const byOther = await graphql(t.gateway, createReset, { token: t.tenants.other.adminToken, variables: { id: member.id } });
    expect(byOther.body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    const unknown = await graphql(t.gateway, resend, { ...admin(), variables: { id: 'mbr_unknown' } });
    expect(unknown.body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');

    const recorded = await t.db.prisma.activityEntry.findMany({
      where: { tenantId: t.tenants.demo.id, targetId: member.id },
      orderBy: { createdAt: 'asc' },
      select: { action: true, actorKind: true, targetName: true },
    });
    expect(recorded.map((entry) => entry.action).sort()).toEqual([
      'member.invitation_resent',
      'member.invited',
      'member.password_reset_created',
      'member.password_reset_created',
    ]);
    expect(recorded.every((entry) => entry.actorKind === 'token' && entry.targetName === 'rita@example.com')).toBe(true);
  });

  it('manages members over GraphQL: invite, list, change role, remove, with the last-admin rule', async () => {
    const invited = await graphql(
      t.gateway,
      'mutation { inviteMember(email: "dana@example.com", role: reader) { code path expiresAt member { id email role pending createdBy } } }',
      { ...admin(), expectOk: true },
    );
    const invitation = invited.body.data!.inviteMember;
    expect(invitation.path).toBe(`/console/invite/${invitation.code}`);
    expect(invitation.member).toMatchObject({
      email: 'dana@example.com',
      role: 'reader',
      pending: true,
      createdBy: expect.stringMatching(/^token:tok_/),
    });
    expect(new Date(invitation.expiresAt).getTime() - Date.now()).toBeGreaterThan(6.9 * 86_400_000);

    const engine = await graphql(t.gateway, 'mutation { inviteMember(email: "e@example.com", role: engine) { code } }', admin());
    expect(engine.body.errors?.[0]?.message).toMatch(/engine/);
    const badEmail = await graphql(t.gateway, 'mutation { inviteMember(email: "not an email", role: reader) { code } }', admin());
    expect(badEmail.body.errors?.[0]?.extensions?.code).toBe('INVALID_QUERY');

    const listed = await graphql(t.gateway, '{ members { email role pending lastSeenAt } }', { ...admin(), expectOk: true });
    expect(listed.body.data!.members.map((m: { email: string }) => m.email)).toEqual(
      expect.arrayContaining(['cli@example.com', 'dana@example.com']),
    );

    // The only admin member who can sign in is neither demoted nor removed.
    const cli = await t.db.prisma.member.findUniqueOrThrow({
      where: { tenantId_email: { tenantId: t.tenants.demo.id, email: 'cli@example.com' } },
    });
    const demote = await graphql(t.gateway, 'mutation($id: ID!) { changeMemberRole(id: $id, role: reader) { id } }', {
      ...admin(),
      variables: { id: cli.id },
    });
    expect(demote.body.errors?.[0]?.extensions?.code).toBe('CONFLICT');
    const removeLast = await graphql(t.gateway, 'mutation($id: ID!) { removeMember(id: $id) { id } }', {
      ...admin(),
      variables: { id: cli.id },
    });
    expect(removeLast.body.errors?.[0]?.extensions?.code).toBe('CONFLICT');

    const dana = invitation.member.id as string;
    await acceptInvitation(t.db, invitation.code, STRONG);
    const promoted = await graphql(t.gateway, 'mutation($id: ID!) { changeMemberRole(id: $id, role: admin) { role pending } }', {
      ...admin(),
      variables: { id: dana },
      expectOk: true,
    });
    expect(promoted.body.data!.changeMemberRole).toEqual({ role: 'admin', pending: false });
    // Two admins now: one may go.
    await graphql(t.gateway, 'mutation($id: ID!) { changeMemberRole(id: $id, role: reader) { role } }', {
      ...admin(),
      variables: { id: cli.id },
      expectOk: true,
    });
    const removed = await graphql(t.gateway, 'mutation($id: ID!) { removeMember(id: $id) { id } }', {
      ...admin(),
      variables: { id: cli.id },
      expectOk: true,
    });
    expect(removed.body.data!.removeMember.id).toBe(cli.id);
    expect(await t.db.prisma.member.count({ where: { id: cli.id } })).toBe(0);
  });

  it('is admin only, and a session acts with its member role; currentMember names the signed-in member', async () => {
    const reader = await graphql(t.gateway, '{ members { email } }', { token: t.tenants.demo.readerToken });
    expect(reader.status).toBe(403);
    expect(reader.body.errors?.[0]?.extensions?.code).toBe('UNAUTHORIZED');

    const dana = await t.db.prisma.member.findUniqueOrThrow({
      where: { tenantId_email: { tenantId: t.tenants.demo.id, email: 'dana@example.com' } },
    });
    const session = `Session ${(await createSession(t.db, dana, DEFAULT_SESSION_POLICY)).value}`;
    const me = await graphql(t.gateway, '{ currentMember { email role } members { email } }', { authorization: session, expectOk: true });
    expect(me.body.data!.currentMember).toEqual({ email: 'dana@example.com', role: 'admin' });
    const warnings: unknown[][] = [];
    const warn = vi.spyOn(console, 'warn').mockImplementation((...args: unknown[]) => void warnings.push(args));
    try {
      const viaToken = await graphql(t.gateway, '{ currentMember { email } }', { ...admin(), expectOk: true });
      expect(viaToken.body.data!.currentMember).toBeNull();
    } finally {
      warn.mockRestore();
    }
    // Null for a token is the answer, not a Prisma query left unused.
    expect(warnings.map((args) => String(args[0]))).not.toContainEqual(expect.stringMatching(/query was unused/));

    // What a member creates records the member.
    const user = await graphql(t.gateway, 'mutation { createServiceUser(name: "made-by-dana", role: reader) { id createdBy } }', {
      authorization: session,
      expectOk: true,
    });
    expect(user.body.data!.createServiceUser.createdBy).toBe(`member:${dana.id}`);
    const token = await graphql(
      t.gateway,
      'mutation($id: ID!, $at: DateTime!) { createToken(serviceUserId: $id, expiresAt: $at) { id } }',
      {
        authorization: session,
        variables: { id: user.body.data!.createServiceUser.id, at: new Date(Date.now() + 86_400_000).toISOString() },
        expectOk: true,
      },
    );
    const tokens = await graphql(t.gateway, '{ serviceUsers { name tokens { id createdBy } } }', { ...admin(), expectOk: true });
    const made = tokens.body.data!.serviceUsers.find((u: { name: string }) => u.name === 'made-by-dana');
    expect(made.tokens).toEqual([{ id: token.body.data!.createToken.id, createdBy: `member:${dana.id}` }]);

    const application = await t.db.prisma.application.findFirstOrThrow();
    const connection = await graphql(
      t.gateway,
      'mutation($a: ID!) { createConnection(input: { applicationId: $a, name: "by dana" }) { id createdBy } }',
      {
        authorization: session,
        variables: { a: application.id },
        headers: { 'idempotency-key': `members-${kind}-${Date.now()}` },
        expectOk: true,
      },
    );
    expect(connection.body.data!.createConnection.createdBy).toBe(`member:${dana.id}`);
    const read = await graphql(t.gateway, 'query($id: ID!) { connection(id: $id) { createdBy } }', {
      ...admin(),
      variables: { id: connection.body.data!.createConnection.id },
      expectOk: true,
    });
    expect(read.body.data!.connection.createdBy).toBe(`member:${dana.id}`);

    const endpoint = await graphql(
      t.gateway,
      'mutation { createWebhookEndpoint(input: { url: "https://93.184.216.34/dana" }) { id createdBy } }',
      { ...admin(), expectOk: true },
    );
    expect(endpoint.body.data!.createWebhookEndpoint.createdBy).toMatch(/^token:tok_/);
  });

  it('manages members over REST with the same rules', async () => {
    const headers = { authorization: `Token ${t.tenants.demo.adminToken}`, 'content-type': 'application/json' };
    const base = 'http://gateway.test/api/v1/integrations/members';
    const invited = await t.gateway.fetch(base, {
      method: 'POST',
      headers,
      body: JSON.stringify({ email: 'Erin@Example.com', role: 'reader' }),
    });
    const invitation = await invited.json();
    expect(invited.status, JSON.stringify(invitation)).toBe(200);
    expect(invitation.data).toMatchObject({
      code: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      path: `/console/invite/${invitation.data.code}`,
      member: { email: 'erin@example.com', role: 'reader', pending: true },
    });
    const engine = await t.gateway.fetch(base, {
      method: 'POST',
      headers,
      body: JSON.stringify({ email: 'f@example.com', role: 'engine' }),
    });
    expect(engine.status).toBe(400);
    expect((await engine.json()).msg).toMatch(/engine is a service user role/);

    const listed = await t.gateway.fetch(`${base}?select=email,role&order=email.asc`, { headers });
    const list = await listed.json();
    expect(listed.status).toBe(200);
    expect(list.data).toContainEqual({ email: 'erin@example.com', role: 'reader' });
    expect(Object.keys(list.data[0]).sort()).toEqual(['email', 'role']);

    const id = invitation.data.member.id as string;
    const patched = await t.gateway.fetch(`${base}/${id}`, { method: 'PATCH', headers, body: JSON.stringify({ role: 'admin' }) });
    expect((await patched.json()).data).toMatchObject({ id, role: 'admin' });
    const reader = await t.gateway.fetch(`${base}/${id}`, {
      method: 'DELETE',
      headers: { authorization: `Token ${t.tenants.demo.readerToken}` },
    });
    expect(reader.status).toBe(403);
    const other = await t.gateway.fetch(`${base}/${id}`, {
      method: 'DELETE',
      headers: { authorization: `Token ${t.tenants.other.adminToken}` },
    });
    expect(other.status).toBe(404);
    // A new invitation code for the pending member, then (once a password is chosen) a reset code; no body either.
    const resent = await t.gateway.fetch(`${base}/${id}/invitation`, { method: 'POST', headers: { authorization: headers.authorization } });
    const resentBody = await resent.json();
    expect(resent.status, JSON.stringify(resentBody)).toBe(200);
    expect(resentBody).toMatchObject({
      msg: 'invitation issued',
      data: { path: `/console/invite/${resentBody.data.code}`, member: { id, pending: true } },
    });
    const withBody = await t.gateway.fetch(`${base}/${id}/invitation`, { method: 'POST', headers, body: JSON.stringify({ email: 'x' }) });
    expect(withBody.status).toBe(400);
    await acceptInvitation(t.db, resentBody.data.code, STRONG);
    const again = await t.gateway.fetch(`${base}/${id}/invitation`, { method: 'POST', headers: { authorization: headers.authorization } });
    expect(again.status).toBe(409);
    expect((await again.json()).error.code).toBe('CONFLICT');
    const reset = await t.gateway.fetch(`${base}/${id}/password-reset`, { method: 'POST', headers, body: '{}' });
    const resetBody = await reset.json();
    expect(reset.status, JSON.stringify(resetBody)).toBe(200);
    expect(resetBody).toMatchObject({
      msg: 'password reset created',
      data: { path: `/console/reset/${resetBody.data.code}`, member: { id, pending: false } },
    });
    const byReader = await t.gateway.fetch(`${base}/${id}/password-reset`, {
      method: 'POST',
      headers: { authorization: `Token ${t.tenants.demo.readerToken}` },
    });
    expect(byReader.status).toBe(403);
    const missing = await t.gateway.fetch(`${base}/mbr_missing/invitation`, {
      method: 'POST',
      headers: { authorization: headers.authorization },
    });
    expect(missing.status).toBe(404);

    const removed = await t.gateway.fetch(`${base}/${id}`, { method: 'DELETE', headers });
    expect(removed.status).toBe(200);
    expect((await removed.json()).data).toEqual({ id });
  });

  it("keeps tenants apart: another tenant's members are invisible, and its emails are invited as any other", async () => {
    const other = { token: t.tenants.other.adminToken };
    const listed = await graphql(t.gateway, '{ members { email } }', { ...other, expectOk: true });
    expect(listed.body.data!.members).toEqual([]);
    const dana = await t.db.prisma.member.findUniqueOrThrow({
      where: { tenantId_email: { tenantId: t.tenants.demo.id, email: 'dana@example.com' } },
    });
    for (const mutation of [
      'mutation($id: ID!) { removeMember(id: $id) { id } }',
      'mutation($id: ID!) { changeMemberRole(id: $id, role: reader) { id } }',
    ]) {
      const refused = await graphql(t.gateway, mutation, { ...other, variables: { id: dana.id } });
      expect(refused.body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    }
    // A membership of its own: dana's in demo is neither named nor changed.
    const invited = await graphql(
      t.gateway,
      'mutation { inviteMember(email: "dana@example.com", role: admin) { code member { id role } } }',
      {
        ...other,
        expectOk: true,
      },
    );
    expect(invited.body.data!.inviteMember.member).toMatchObject({ role: 'admin' });
    expect(invited.body.data!.inviteMember.member.id).not.toBe(dana.id);
    expect(await t.db.prisma.member.findUniqueOrThrow({ where: { id: dana.id } })).toMatchObject({
      tenantId: t.tenants.demo.id,
      role: dana.role,
    });
  });
});
