// The activity log on both databases, over a listening socket (the client address is the socket's, or behind
// TRUST_PROXY the hop the proxy appended, as the rate limiter counts it): each recorded change names its actor,
// address and request; a refused write records nothing; a reader is refused; a tenant sees only its own
// entries; cursor pages walk the log; REST and GraphQL answer the same entries; the CLI records as `cli`.
import type { Server } from 'node:http';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acceptInvitation } from '../src/auth/members.js';
import { createSession, DEFAULT_SESSION_POLICY } from '../src/auth/sessions.js';
import { deleteOldActivity } from '../src/db/activity.js';
import type { Gateway } from '../src/http/yoga.js';
import { runCliOn } from './fixtures/cli.js';
import { databaseKinds } from './fixtures/databases.js';
import { createTestGateway, gatewayOver, JWT_TEST_SECRET, listenOnLoopback, type TestGateway } from './fixtures/gateway.js';
import { BASE } from './fixtures/rest.js';

interface Entry {
  id: string;
  action: string;
  actorKind: string;
  actorId: string | null;
  actorName: string | null;
  targetType: string;
  targetId: string;
  targetName: string | null;
  address: string | null;
  requestId: string | null;
  createdAt: string;
}

const ENTRY_FIELDS = 'id action actorKind actorId actorName targetType targetId targetName address requestId createdAt';
const LIST = `query($filter: ActivityFilter, $after: String, $limit: Int) {
  activity(filter: $filter, after: $after, limit: $limit) { totalCount pageInfo { hasNextPage endCursor } nodes { ${ENTRY_FIELDS} } }
}`;

describe.each(databaseKinds)('activity log on %s', (kind) => {
  let t: TestGateway;
  let proxied: Gateway;
  const servers: Server[] = [];
  let origin: string;

  beforeAll(async () => {
    t = await createTestGateway(kind);
    // A gateway behind a trusted proxy: the address is the X-Forwarded-For hop, or the socket's without one.
    proxied = gatewayOver(t.db, { config: { TRUST_PROXY: '1' } });
    origin = await listenOnLoopback(proxied, servers);
  });
  afterAll(async () => {
    await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
    await proxied?.dispose();
    await t?.dispose();
  });

  const admin = () => `Token ${t.tenants.demo.adminToken}`;

  /** A GraphQL request over the socket; the request id and the body come back. */
  async function graphqlOverHttp(authorization: string, query: string, variables: Record<string, unknown> = {}, forwardedFor?: string) {
    const response = await fetch(`${origin}/graphql`, {
      method: 'POST',
      headers: {
        authorization,
        'content-type': 'application/json',
        ...(forwardedFor ? { 'x-forwarded-for': forwardedFor } : {}),
        ...(authorization.startsWith('Session') ? { 'x-requested-with': 'test' } : {}),
      },
      body: JSON.stringify({ query, variables }),
    });
    const body = (await response.json()) as { data?: any; errors?: { message: string; extensions?: { code?: string } }[] };
    return { status: response.status, requestId: response.headers.get('x-request-id'), body };
  }

  async function ok(authorization: string, query: string, variables: Record<string, unknown> = {}, forwardedFor?: string) {
    const answer = await graphqlOverHttp(authorization, query, variables, forwardedFor);
    expect(answer.body.errors, JSON.stringify(answer.body)).toBeUndefined();
    return answer;
  }

  async function entries(filter: Record<string, unknown> = {}, authorization = admin()): Promise<Entry[]> {
    return (await ok(authorization, LIST, { filter, limit: 100 })).body.data.activity.nodes as Entry[];
  }

  it('records each change with its actor, address and request, newest first', async () => {
    const forwardedFor = '198.51.100.23';
    const user = await ok(admin(), 'mutation { createServiceUser(name: "activity-bot", role: reader) { id } }', {}, forwardedFor);
    const userId = user.body.data.createServiceUser.id as string;
    const token = await ok(
      admin(),
      'mutation($id: ID!, $at: DateTime!) { createToken(serviceUserId: $id, expiresAt: $at) { id prefix } }',
      { id: userId, at: new Date(Date.now() + 86_400_000).toISOString() },
    );
    const created = token.body.data.createToken as { id: string; prefix: string };
    await ok(admin(), 'mutation($id: ID!) { revokeToken(id: $id) { id } }', { id: created.id });
    // Revoking again changes nothing, and records nothing.
    await ok(admin(), 'mutation($id: ID!) { revokeToken(id: $id) { id } }', { id: created.id });
    await ok(admin(), 'mutation($id: ID!) { changeServiceUserRole(id: $id, role: engine) { id } }', { id: userId });
    await ok(admin(), 'mutation($id: ID!) { deleteServiceUser(id: $id) { id } }', { id: userId });

    const application = await t.db.prisma.application.findFirstOrThrow({ orderBy: { id: 'asc' } });
    const connection = await ok(admin(), 'mutation($a: ID!) { createConnection(input: { applicationId: $a, name: "Logged" }) { id } }', {
      a: application.id,
    });
    const connectionId = connection.body.data.createConnection.id as string;
    await ok(admin(), 'mutation($id: ID!) { updateConnection(id: $id, input: { name: "Logged again" }) { id } }', { id: connectionId });
    await ok(admin(), 'mutation($id: ID!) { deleteConnection(id: $id) { id } }', { id: connectionId });

    const endpoint = await ok(admin(), 'mutation { createWebhookEndpoint(input: { url: "https://93.184.216.34/activity" }) { id } }');
    const endpointId = endpoint.body.data.createWebhookEndpoint.id as string;
    await ok(admin(), 'mutation($id: ID!) { updateWebhookEndpoint(id: $id, input: { description: "x" }) { id } }', { id: endpointId });
    await ok(admin(), 'mutation($id: ID!) { rotateWebhookSecret(id: $id) { id } }', { id: endpointId });
    await ok(admin(), 'mutation($id: ID!) { deleteWebhookEndpoint(id: $id) { id } }', { id: endpointId });

    const log = await entries();
    const adminTokenId = (
      await t.db.prisma.token.findFirstOrThrow({ where: { tenantId: t.tenants.demo.id, serviceUser: { name: 'admin-bot' } } })
    ).id;
    const ours = log.filter((entry) => [userId, created.id, connectionId, endpointId].includes(entry.targetId));
    expect(ours.map((entry) => entry.action).reverse()).toEqual([
      'service_user.created',
      'token.created',
      'token.revoked',
      'service_user.role_changed',
      'service_user.deleted',
      'connection.created',
      'connection.updated',
      'connection.deleted',
      'webhook_endpoint.created',
      'webhook_endpoint.updated',
      'webhook_endpoint.secret_rotated',
      'webhook_endpoint.deleted',
    ]);
    for (const entry of ours) {
      expect(entry).toMatchObject({ actorKind: 'token', actorId: adminTokenId, actorName: 'admin-bot' });
      expect(entry.requestId).toMatch(/\S/);
    }
    const [first] = ours.slice(-1);
    expect(first).toMatchObject({
      action: 'service_user.created',
      targetType: 'service_user',
      targetName: 'activity-bot',
      address: forwardedFor,
      requestId: user.requestId,
    });
    // Without X-Forwarded-For, the socket's address.
    expect(ours.find((entry) => entry.action === 'token.created')).toMatchObject({
      address: expect.stringMatching(/127\.0\.0\.1$/),
      targetType: 'token',
      targetName: `igw_pat_${created.prefix}`,
      requestId: token.requestId,
    });
    expect(ours.find((entry) => entry.action === 'connection.deleted')?.targetName).toBe('Logged again');
    expect(ours.find((entry) => entry.action === 'webhook_endpoint.deleted')?.targetName).toBe('https://93.184.216.34/activity');
    const times = log.map((entry) => Date.parse(entry.createdAt));
    expect(times).toEqual([...times].sort((a, b) => b - a));
  });

  it('names a member by its email, a JWT by its subject, the CLI as cli', async () => {
    const invited = await ok(admin(), 'mutation { inviteMember(email: "Activity@Example.com", role: admin) { code member { id } } }');
    const { code, member } = invited.body.data.inviteMember as { code: string; member: { id: string } };
    await acceptInvitation(t.db, code, 'a long enough passphrase');
    const row = await t.db.prisma.member.findUniqueOrThrow({ where: { id: member.id } });
    const session = `Session ${(await createSession(t.db, row, DEFAULT_SESSION_POLICY)).value}`;
    const reader = await ok(session, 'mutation { inviteMember(email: "watcher@example.com", role: reader) { member { id } } }');
    const readerId = reader.body.data.inviteMember.member.id as string;
    await ok(session, 'mutation($id: ID!) { changeMemberRole(id: $id, role: admin) { id } }', { id: readerId });
    // The same role again is no change.
    await ok(session, 'mutation($id: ID!) { changeMemberRole(id: $id, role: admin) { id } }', { id: readerId });
    await ok(session, 'mutation($id: ID!) { removeMember(id: $id) { id } }', { id: readerId });
    const byMember = await entries({ targetId: { eq: readerId } });
    expect(byMember.map((entry) => entry.action)).toEqual(['member.removed', 'member.role_changed', 'member.invited']);
    for (const entry of byMember) {
      expect(entry).toMatchObject({
        actorKind: 'member',
        actorId: member.id,
        actorName: 'activity@example.com',
        targetName: 'watcher@example.com',
      });
    }

    const jwt = await new SignJWT({ tenant_id: t.tenants.demo.id, role: 'admin' })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setSubject('sso|activity')
      .setIssuedAt(Math.floor(Date.now() / 1000) - 60)
      .setExpirationTime(Math.floor(Date.now() / 1000) + 600)
      .sign(new TextEncoder().encode(JWT_TEST_SECRET));
    const viaJwt = await ok(`Bearer ${jwt}`, 'mutation { createServiceUser(name: "jwt-made", role: reader) { id } }');
    const [jwtEntry] = await entries({ targetId: { eq: viaJwt.body.data.createServiceUser.id } });
    expect(jwtEntry).toMatchObject({ actorKind: 'jwt', actorId: 'sso|activity', actorName: 'sso|activity' });

    const cli = await runCliOn(t.db, 'service-user', 'create', '--tenant', 'demo', '--name', 'cli-made', '--role', 'reader');
    expect(cli.code, cli.stderr).toBe(0);
    const [cliEntry] = await entries({ targetId: { eq: cli.stdout.trim() } });
    expect(cliEntry).toMatchObject({ action: 'service_user.created', actorKind: 'cli', actorId: null, address: null, requestId: null });
  });

  it('records nothing for a refused write', async () => {
    const before = (await ok(admin(), LIST, { limit: 1 })).body.data.activity.totalCount as number;
    const duplicate = await graphqlOverHttp(admin(), 'mutation { createServiceUser(name: "admin-bot", role: reader) { id } }');
    expect(duplicate.body.errors?.[0]?.extensions?.code).toBe('INVALID_QUERY');
    const lastAdmin = await t.db.prisma.serviceUser.findFirstOrThrow({ where: { tenantId: t.tenants.other.id, role: 'admin' } });
    const demote = await graphqlOverHttp(
      `Token ${t.tenants.other.adminToken}`,
      'mutation($id: ID!) { changeServiceUserRole(id: $id, role: reader) { id } }',
      {
        id: lastAdmin.id,
      },
    );
    expect(demote.body.errors?.[0]?.extensions?.code).toBe('CONFLICT');
    const missing = await graphqlOverHttp(admin(), 'mutation { deleteConnection(id: "con_nothing") { id } }');
    expect(missing.body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    const badStatus = await graphqlOverHttp(admin(), 'mutation { updateConnection(id: "con_nothing", input: { name: "x" }) { id } }');
    expect(badStatus.body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    const forbidden = await graphqlOverHttp(
      `Token ${t.tenants.demo.readerToken}`,
      'mutation { createServiceUser(name: "nope", role: reader) { id } }',
    );
    expect(forbidden.status).toBe(403);
    expect((await ok(admin(), LIST, { limit: 1 })).body.data.activity.totalCount).toBe(before);
    expect(await t.db.prisma.activityEntry.count({ where: { tenantId: t.tenants.other.id } })).toBe(0);
  });

  it('is for admins only, and each tenant sees its own entries', async () => {
    const reader = await graphqlOverHttp(`Token ${t.tenants.demo.readerToken}`, LIST);
    expect(reader.status).toBe(403);
    expect(reader.body.errors?.[0]?.extensions?.code).toBe('UNAUTHORIZED');
    const restReader = await fetch(`${origin}${BASE}/activity`, { headers: { authorization: `Token ${t.tenants.demo.readerToken}` } });
    expect(restReader.status).toBe(403);

    const other = `Token ${t.tenants.other.adminToken}`;
    await ok(other, 'mutation { createServiceUser(name: "other-bot", role: reader) { id } }');
    const otherLog = await entries({}, other);
    expect(otherLog.map((entry) => entry.targetName)).toEqual(['other-bot']);
    const demoIds = new Set((await entries()).map((entry) => entry.id));
    expect(otherLog.some((entry) => demoIds.has(entry.id))).toBe(false);
  });

  it('pages with cursors, and REST answers what GraphQL does, with filters and select', async () => {
    const all = (await ok(admin(), LIST, { limit: 100 })).body.data.activity;
    expect(all.totalCount).toBeGreaterThan(5);
    const walked: Entry[] = [];
    let after: string | null = null;
    for (;;) {
      const page: { nodes: Entry[]; pageInfo: { hasNextPage: boolean; endCursor: string | null } } = (
        await ok(admin(), LIST, { limit: 2, after })
      ).body.data.activity;
      walked.push(...page.nodes);
      if (!page.pageInfo.hasNextPage) break;
      after = page.pageInfo.endCursor;
    }
    expect(walked.map((entry) => entry.id)).toEqual(all.nodes.map((entry: Entry) => entry.id));

    // In process, so the answer is checked against the OpenAPI document as well.
    const restPage = async (path: string) => {
      const response = await t.gateway.fetch(`http://gateway.test${path}`, { headers: { authorization: admin() } });
      expect(response.status).toBe(200);
      return {
        body: (await response.json()) as { data: Record<string, unknown>[]; meta: { pagination: { total?: number } } },
        link: response.headers.get('link'),
      };
    };
    const first = await restPage(`${BASE}/activity?limit=2`);
    expect(first.body.meta.pagination.total).toBe(all.totalCount);
    const firstTwo = all.nodes.slice(0, 2) as Entry[];
    expect(first.body.data).toEqual(
      firstTwo.map((entry) => ({
        id: entry.id,
        action: entry.action,
        actor_kind: entry.actorKind,
        actor_id: entry.actorId,
        actor_name: entry.actorName,
        target_type: entry.targetType,
        target_id: entry.targetId,
        target_name: entry.targetName,
        address: entry.address,
        request_id: entry.requestId,
        created_at: entry.createdAt,
      })),
    );
    const next = /<([^>]+)>; rel="next"/.exec(first.link ?? '')?.[1];
    expect(next).toBeDefined();
    const second = await restPage(new URL(next!).pathname + new URL(next!).search);
    expect(second.body.data.map((entry) => entry.id)).toEqual(all.nodes.slice(2, 4).map((entry: Entry) => entry.id));

    const since = new Date(Date.now() - 3_600_000).toISOString();
    const filtered = await restPage(
      `${BASE}/activity?action=eq.token.created&created_at=gte.${since}&select=action,actor_name,target_type`,
    );
    const graphqlFiltered = await entries({ action: { eq: 'token.created' }, createdAt: { gte: since } });
    expect(filtered.body.data).toEqual(
      graphqlFiltered.map((entry) => ({ action: entry.action, actor_name: entry.actorName, target_type: entry.targetType })),
    );
    expect(filtered.body.data.length).toBeGreaterThan(0);
    const byKind = await restPage(`${BASE}/activity?target_type=eq.member&actor_kind=eq.member`);
    expect(byKind.body.data.every((entry) => entry.target_type === 'member' && entry.actor_kind === 'member')).toBe(true);
    expect(byKind.body.data.length).toBe(3);
  });

  it('deletes entries past the retention window', async () => {
    await t.db.raw.query(`UPDATE "activity" SET "created_at" = now() - interval '400 days' WHERE "target_name" = 'other-bot'`);
    expect(await deleteOldActivity(t.db.raw, 365)).toBe(1);
    expect(await t.db.prisma.activityEntry.count({ where: { tenantId: t.tenants.other.id } })).toBe(0);
  });
});
