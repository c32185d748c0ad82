import { createHash, randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { getNamedType, isInputObjectType, isObjectType, type GraphQLNamedType } from 'graphql';
import { SignJWT } from 'jose';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServiceUser } from '../src/auth/service-users.js';
import { createToken, listTokens } from '../src/auth/tokens.js';
import { schema } from '../src/graphql/schema.js';
import { newId } from '../src/prefixed-ids.js';
import { createGateway } from '../src/http/yoga.js';
import { databaseKinds } from './fixtures/databases.js';
import { createTestGateway, graphql, JWT_TEST_SECRET, type TestGateway } from './fixtures/gateway.js';
import { BASE, rest } from './fixtures/rest.js';
import { tableReferences, tenantScopeProblems as scopeProblems } from './fixtures/tenant-scope.js';

// Tenant isolation is enforced in the SQL, not by filtering rows after the fetch: every statement that reads
// or writes a tenant-owned table carries the tenant condition. Around that: no filter can widen the scope,
// counts are the caller's, another tenant's ids look exactly like missing ones, the catalog is global and
// read-only, and a token value is never stored, logged or listed.

const DAY = 86_400_000;
const TENANT_TABLES = [
  'connections',
  'syncs',
  'sync_counts',
  'service_users',
  'tokens',
  'oauth_clients',
  'oauth_applications',
  'webhook_endpoints',
  'webhook_deliveries',
  'webhook_attempts',
  'members',
  'member_invitations',
  'member_sessions',
  'activity',
] as const;
const CATALOG_TABLES = ['categories', 'applications'] as const;

const tenantScopeProblems = (sql: string) => scopeProblems(sql, TENANT_TABLES);
const touchesTenantTable = (sql: string) => tableReferences(sql, TENANT_TABLES).length > 0;

async function adminJwt(tenantId: string): Promise<string> {
  const jwt = await new SignJWT({ tenant_id: tenantId, role: 'admin' })
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject('isolation-test')
    .setExpirationTime('30m')
    .sign(new TextEncoder().encode(JWT_TEST_SECRET));
  return `Bearer ${jwt}`;
}

interface TenantRows {
  connections: string[];
  liveConnections: string[];
  syncs: string[];
  serviceUsers: string[];
  tokens: string[];
  syncsPerConnection: Map<string, number>;
}

async function rowsOf(t: TestGateway, tenantId: string): Promise<TenantRows> {
  const prisma = t.db.prisma;
  const connections = await prisma.connection.findMany({ where: { tenantId }, select: { id: true, deletedAt: true } });
  const syncs = await prisma.sync.findMany({ where: { tenantId }, select: { id: true, connectionId: true } });
  const syncsPerConnection = new Map<string, number>();
  for (const sync of syncs) syncsPerConnection.set(sync.connectionId, (syncsPerConnection.get(sync.connectionId) ?? 0) + 1);
  return {
    connections: connections.map((c) => c.id),
    liveConnections: connections.filter((c) => c.deletedAt === null).map((c) => c.id),
    syncs: syncs.map((s) => s.id),
    serviceUsers: (await prisma.serviceUser.findMany({ where: { tenantId }, select: { id: true } })).map((u) => u.id),
    tokens: (await prisma.token.findMany({ where: { tenantId }, select: { id: true } })).map((k) => k.id),
    syncsPerConnection,
  };
}

/** A body with the id the caller sent and the request id replaced, to compare two 404s. */
function normalized(body: unknown, id: string): string {
  return JSON.stringify(body)
    .split(id)
    .join('<id>')
    .replace(/req_\d+/g, 'req_<n>');
}

describe.each(databaseKinds)('tenant isolation on %s', (kind) => {
  let t: TestGateway;
  let demoAdmin: string;
  let otherAdmin: string;
  let demo: TenantRows;
  let other: TenantRows;
  let counter = 0;

  const freshConnection = async (tenantId: string) => {
    const template = await t.db.prisma.connection.findFirstOrThrow({ where: { tenantId, deletedAt: null } });
    const id = newId('con');
    await t.db.prisma.connection.create({
      data: { id, tenantId, applicationId: template.applicationId, name: `iso ${id}`, slug: `iso-${id}`, via: 'manual', status: 'active' },
    });
    return id;
  };
  const freshServiceUser = async (tenantId: string) =>
    (await createServiceUser(t.db, { tenantId, name: `iso-user-${++counter}`, role: 'reader' })).id;
  const freshToken = async (tenantId: string, serviceUserId?: string) =>
    createToken(t.db, {
      tenantId,
      serviceUserId: serviceUserId ?? (await freshServiceUser(tenantId)),
      expiresAt: new Date(Date.now() + DAY),
    });

  /** An endpoint with one failed delivery and its attempt, written directly (no worker runs here). */
  const freshWebhook = async (tenantId: string) => {
    const endpoint = newId('whk');
    const delivery = `msg_${randomUUID().replaceAll('-', '')}`;
    await t.db.raw.query(
      `INSERT INTO webhook_endpoints (id, tenant_id, url, secret) VALUES ($1, $2, 'https://93.184.216.34/hook', 'whsec_MTIzNDU2Nzg5MDEyMzQ1Njc4OTAxMjM0')`,
      [endpoint, tenantId],
    );
    await t.db.raw.query(
      `INSERT INTO webhook_deliveries (id, tenant_id, endpoint_id, event_id, event_type, payload, status, attempts, next_attempt_at)
       VALUES ($1, $2, $3, 1, 'webhook.endpoint_disabled', $4::jsonb, 'failed', 1, NULL)`,
      [
        delivery,
        tenantId,
        endpoint,
        // A message as the document describes it: the payload of a delivery is one of the webhook messages.
        JSON.stringify({
          type: 'webhook.endpoint_disabled',
          timestamp: '2026-11-29T00:00:00.000+00:00',
          event_id: 1,
          data: { id: endpoint, url: 'https://93.184.216.34/hook', reason: 'a test delivery' },
        }),
      ],
    );
    await t.db.raw.query(
      `INSERT INTO webhook_attempts (tenant_id, delivery_id, attempt, started_at, status_code, latency_ms) VALUES ($1, $2, 1, now(), 500, 12)`,
      [tenantId, delivery],
    );
    return { endpoint, delivery };
  };

  beforeAll(async () => {
    t = await createTestGateway(kind);
    demoAdmin = await adminJwt(t.tenants.demo.id);
    otherAdmin = await adminJwt(t.tenants.other.id);
    demo = await rowsOf(t, t.tenants.demo.id);
    other = await rowsOf(t, t.tenants.other.id);
    // Both tenants have rows of every kind, so a missing tenant condition would show.
    for (const rows of [demo, other]) {
      expect(rows.liveConnections.length).toBeGreaterThan(1);
      expect(rows.syncs.length).toBeGreaterThan(1);
      expect(rows.serviceUsers.length).toBeGreaterThan(0);
      expect(rows.tokens.length).toBeGreaterThan(0);
    }
  });
  afterAll(() => t?.dispose());

  describe('the tenant condition is in the SQL', () => {
    type Capture = { name: string; run: () => Promise<{ status: number; body: any }> };
    const covered = new Set<string>();
    const writes: string[] = [];

    /** Runs one request as demo's admin (a JWT: no token lookup in the way) and checks every statement. */
    async function captured(name: string, run: () => Promise<{ status: number; body: any }>): Promise<string[]> {
      const statements: string[] = [];
      const stop = t.db.onQuery((event) => statements.push(event.query));
      let response;
      try {
        response = await run();
      } finally {
        stop();
      }
      expect(response.status, `${name}: ${JSON.stringify(response.body).slice(0, 500)}`).toBe(200);
      expect(response.body.errors, JSON.stringify(response.body.errors)).toBeUndefined();
      const tenantStatements = statements.filter(touchesTenantTable);
      expect(tenantStatements.length, `${name} issued no statement on a tenant-owned table`).toBeGreaterThan(0);
      for (const sql of tenantStatements) {
        expect(tenantScopeProblems(sql), `${name}:\n${sql}`).toEqual([]);
        for (const reference of tableReferences(sql, TENANT_TABLES)) covered.add(reference.table);
      }
      writes.push(...statements.filter((sql) => /^\s*(INSERT|UPDATE|DELETE)\b/i.test(sql)));
      return statements;
    }

    const gql =
      (query: string, variables: Record<string, unknown> = {}) =>
      () =>
        graphql(t.gateway, query, { authorization: demoAdmin, variables });
    const get = (path: string) => () => rest(t.gateway, `${BASE}${path}`, { authorization: demoAdmin });

    const reads = (): Capture[] => {
      const connectionId = demo.liveConnections[0] as string;
      const syncId = demo.syncs[0] as string;
      return [
        { name: 'connections (list)', run: gql('{ connections { nodes { id name } } }') },
        { name: 'connections (count)', run: gql('{ connections { totalCount } }') },
        {
          name: 'connections filtered (list + count)',
          run: gql('{ connections(filter: { status: { neq: error } }, search: "a") { totalCount nodes { id } } }'),
        },
        { name: 'connection (single)', run: gql('query($id: ID!) { connection(id: $id) { id name } }', { id: connectionId }) },
        {
          name: 'connection with syncs and syncCount (nested + count)',
          run: gql('query($id: ID!) { connection(id: $id) { id syncCount syncs(limit: 5) { id connection { id } } } }', {
            id: connectionId,
          }),
        },
        {
          name: 'connections with syncs (nested)',
          run: gql(
            '{ connections { nodes { id syncCount(filter: { status: { eq: failed } }) syncs(limit: 2) { id } application { id } category { id } } } }',
          ),
        },
        { name: 'syncs (list)', run: gql('{ syncs(limit: 20) { nodes { id status } } }') },
        { name: 'syncs (count)', run: gql('{ syncs { totalCount } }') },
        {
          name: 'syncs of a connection',
          run: gql('query($c: ID!) { syncs(connectionId: $c) { totalCount nodes { id } } }', { c: connectionId }),
        },
        { name: 'syncs with connection (nested)', run: gql('{ syncs(limit: 5) { nodes { id connection { id name syncCount } } } }') },
        {
          name: 'sync (single, nested)',
          run: gql('query($id: ID!) { sync(id: $id) { id connection { id syncs(limit: 2) { id } } } }', { id: syncId }),
        },
        { name: 'serviceUsers with tokens (nested)', run: gql('{ serviceUsers { id tokens { id prefix serviceUser { id } } } }') },
        { name: 'REST GET /connected', run: get('/connected') },
        { name: 'REST GET /connected?limit=1', run: get('/connected?limit=1&name=ilike.*a*') },
        { name: 'REST GET /connected/{id}', run: get(`/connected/${connectionId}`) },
        { name: 'REST GET /syncs', run: get('/syncs?status=eq.failed') },
        { name: 'REST GET /syncs?connection_id=', run: get(`/syncs?connection_id=${connectionId}`) },
        { name: 'REST GET /syncs/{id}', run: get(`/syncs/${syncId}`) },
      ];
    };

    it('scopes every read: lists, single items, counts and nested relations', async () => {
      for (const { name, run } of reads()) await captured(name, run);
    });

    it('scopes every write: deleteConnection, DELETE, access management', async () => {
      const tenantId = t.tenants.demo.id;
      const connection = await freshConnection(tenantId);
      await captured('deleteConnection', gql('mutation($id: ID!) { deleteConnection(id: $id) { id } }', { id: connection }));
      const restConnection = await freshConnection(tenantId);
      await captured('REST DELETE /connected/{id}', () =>
        rest(t.gateway, `${BASE}/connected/${restConnection}`, { method: 'DELETE', authorization: demoAdmin }),
      );
      await captured('createServiceUser', gql('mutation { createServiceUser(name: "iso-created", role: reader) { id tokens { id } } }'));
      const user = await freshServiceUser(tenantId);
      await captured(
        'changeServiceUserRole',
        gql('mutation($id: ID!) { changeServiceUserRole(id: $id, role: admin) { id role tokens { id } } }', { id: user }),
      );
      await captured(
        'createToken',
        gql('mutation($id: ID!, $at: DateTime!) { createToken(serviceUserId: $id, expiresAt: $at) { id } }', {
          id: user,
          at: new Date(Date.now() + DAY).toISOString(),
        }),
      );
      const token = await freshToken(tenantId, user);
      await captured(
        'revokeToken',
        gql('mutation($id: ID!) { revokeToken(id: $id) { id revokedAt serviceUser { id } } }', { id: token.id }),
      );
      const created = await captured(
        'createOAuthClient',
        gql('mutation($id: ID!) { createOAuthClient(serviceUserId: $id, scope: "read") { clientId clientSecret } }', { id: user }),
      );
      expect(created.length).toBeGreaterThan(0);
      await captured('oauthClients', gql('{ oauthClients { id name scope serviceUser { id name } } }'));
      const [client] = await t.db.prisma.oAuthClient.findMany({ where: { tenantId, serviceUserId: user }, select: { id: true } });
      await captured('deleteOAuthClient', gql('mutation($id: ID!) { deleteOAuthClient(id: $id) { id } }', { id: client!.id }));
      await captured('deleteServiceUser', gql('mutation($id: ID!) { deleteServiceUser(id: $id) { id deletedTokens } }', { id: user }));
      const application = await captured(
        'createOAuthApplication',
        gql('mutation { createOAuthApplication(name: "iso", redirectUris: ["https://partner.example/cb"]) { clientId clientSecret } }'),
      );
      expect(application.length).toBeGreaterThan(0);
      await captured('oauthApplications', gql('{ oauthApplications { id name redirectUris scope } }'));
      const [registered] = await t.db.prisma.oAuthApplication.findMany({ where: { tenantId }, select: { id: true } });
      await captured(
        'deleteOAuthApplication',
        gql('mutation($id: ID!) { deleteOAuthApplication(id: $id) { id } }', { id: registered!.id }),
      );
    });

    it('scopes every webhook read and write: endpoints, deliveries, attempts, on GraphQL and REST', async () => {
      await freshWebhook(t.tenants.other.id);
      const { endpoint, delivery } = await freshWebhook(t.tenants.demo.id);
      const ids = { e: endpoint, d: delivery };
      await captured('webhookEndpoints', gql('{ webhookEndpoints(search: "hook") { totalCount nodes { id url } } }'));
      await captured('webhookEndpoint', gql('query($e: ID!) { webhookEndpoint(id: $e) { id } }', ids));
      await captured(
        'webhookDeliveries + webhookDelivery with attempts',
        gql(
          'query($e: ID!, $d: ID!) { webhookDeliveries(endpointId: $e) { totalCount nodes { id } } webhookDelivery(endpointId: $e, id: $d) { id attemptLog { attempt statusCode } } }',
          ids,
        ),
      );
      await captured('REST GET /webhooks', get('/webhooks'));
      await captured('REST GET /webhooks/{id}/deliveries', get(`/webhooks/${endpoint}/deliveries?status=eq.failed`));
      await captured('REST GET /webhooks/{id}/deliveries/{delivery_id}', get(`/webhooks/${endpoint}/deliveries/${delivery}`));
      const created = await captured(
        'createWebhookEndpoint',
        gql('mutation { createWebhookEndpoint(input: { url: "https://93.184.216.34/other" }) { id secret } }'),
      );
      expect(created.length).toBeGreaterThan(0);
      await captured(
        'updateWebhookEndpoint',
        gql('mutation($e: ID!) { updateWebhookEndpoint(id: $e, input: { description: "x" }) { id } }', ids),
      );
      await captured('rotateWebhookSecret', gql('mutation($e: ID!) { rotateWebhookSecret(id: $e) { id secret } }', ids));
      await captured('redeliverWebhook', gql('mutation($e: ID!, $d: ID!) { redeliverWebhook(endpointId: $e, id: $d) { id status } }', ids));
      await captured(
        'updateWebhookEndpoint (disable: fails pending deliveries)',
        gql('mutation($e: ID!) { updateWebhookEndpoint(id: $e, input: { enabled: false }) { id } }', ids),
      );
      await captured('deleteWebhookEndpoint', gql('mutation($e: ID!) { deleteWebhookEndpoint(id: $e) { id } }', ids));
    });

    it('scopes every member read and write: list, invite, invite again, resend, reset, change role, remove', async () => {
      await t.db.prisma.member.create({
        data: { id: newId('mbr'), tenantId: t.tenants.other.id, email: 'iso-other@example.com', role: 'admin' },
      });
      const invite = gql(
        'mutation { inviteMember(email: "iso-member@example.com", role: reader) { code member { id email role pending createdBy } } }',
      );
      const invited = await invite();
      const id = invited.body.data!.inviteMember.member.id as string;
      await captured('members', gql('{ members { id email role pending createdAt lastSeenAt } }'));
      const listed = await graphql(t.gateway, '{ members { email } }', { authorization: demoAdmin });
      expect(listed.body.data!.members.map((m: { email: string }) => m.email)).not.toContain('iso-other@example.com');
      await captured('inviteMember (again: resets the password, ends the sessions)', invite);
      await captured('resendInvitation', gql('mutation($id: ID!) { resendInvitation(id: $id) { code member { id } } }', { id }));
      await t.db.prisma.member.update({ where: { id }, data: { passwordHash: 'a password hash' } });
      await captured('createPasswordReset', gql('mutation($id: ID!) { createPasswordReset(id: $id) { code member { id } } }', { id }));
      await t.db.prisma.member.update({ where: { id }, data: { passwordHash: null } });
      await captured('changeMemberRole', gql('mutation($id: ID!) { changeMemberRole(id: $id, role: admin) { id role } }', { id }));
      await captured('removeMember', gql('mutation($id: ID!) { removeMember(id: $id) { id } }', { id }));
    });

    it('covered every tenant-owned table, and no statement wrote the catalog', () => {
      expect([...covered].sort()).toEqual([...TENANT_TABLES].sort());
      expect(writes.length).toBeGreaterThan(0);
      const catalogWrite = new RegExp(`^\\s*(INSERT INTO|UPDATE|DELETE FROM)\\s+"public"\\."(${CATALOG_TABLES.join('|')})"`, 'i');
      expect(writes.filter((sql) => catalogWrite.test(sql))).toEqual([]);
    });

    it('the checker itself rejects unscoped statements', () => {
      expect(tenantScopeProblems('SELECT "t0"."id" FROM "public"."syncs" AS "t0" WHERE "t0"."id" = $1')).not.toEqual([]);
      expect(tenantScopeProblems('UPDATE "public"."connections" SET "deleted_at" = $1 WHERE "public"."connections"."id" = $2')).not.toEqual(
        [],
      );
      expect(tenantScopeProblems('INSERT INTO "public"."tokens" ("id","prefix") VALUES ($1,$2)')).not.toEqual([]);
      expect(
        tenantScopeProblems(
          'SELECT "t0"."id" FROM "public"."connections" AS "t0" LEFT JOIN LATERAL (SELECT 1 FROM "public"."syncs" AS "t1" WHERE "t0"."id" = "t1"."connection_id") AS "x" ON true WHERE "t0"."tenant_id" = $1',
        ),
      ).not.toEqual([]);
    });
  });

  describe('filtering on tenant_id never widens the scope', () => {
    it('REST rejects tenant_id as a filter, whatever the value', async () => {
      for (const path of [
        `/syncs?tenant_id=eq.${t.tenants.other.id}`,
        `/syncs?tenant_id=${t.tenants.other.id}`,
        `/syncs?tenant_id=in.(${t.tenants.demo.id},${t.tenants.other.id})`,
        `/syncs?tenant_id=eq.${t.tenants.demo.id}`,
        `/syncs?tenant_id=neq.${t.tenants.demo.id}`,
        `/connected?tenant_id=eq.${t.tenants.other.id}`,
      ]) {
        const response = await rest(t.gateway, `${BASE}${path}`, { authorization: demoAdmin });
        expect(response.status, path).toBe(400);
        expect(response.body.error.code).toBe('INVALID_QUERY');
        expect(JSON.stringify(response.body)).not.toContain(other.syncs[0]);
      }
    });

    it("REST filters naming another tenant's ids find nothing", async () => {
      const otherConnection = other.liveConnections[0] as string;
      for (const path of [
        `/syncs?connection_id=${otherConnection}`,
        `/syncs?connection_id=eq.${otherConnection}`,
        `/syncs?id=in.(${other.syncs.slice(0, 5).join(',')})`,
        `/connected?id=in.(${other.liveConnections.slice(0, 5).join(',')})`,
      ]) {
        const response = await rest(t.gateway, `${BASE}${path}`, { authorization: demoAdmin, expectStatus: 200 });
        expect(response.body.data, path).toEqual([]);
        const pagination = response.body.meta.pagination;
        if ('total_items' in pagination) expect(pagination.total_items).toBe(0);
      }
      // A negated filter keeps to the caller's rows too.
      const negated = await rest(t.gateway, `${BASE}/syncs?id=not.in.(${other.syncs.slice(0, 5).join(',')})&limit=1`, {
        authorization: demoAdmin,
        expectStatus: 200,
      });
      expect(negated.body.meta.pagination.total_items).toBe(demo.syncs.length);
    });

    it('GraphQL has no tenant argument or filter member anywhere', async () => {
      const offending: string[] = [];
      for (const type of Object.values(schema.getTypeMap()) as GraphQLNamedType[]) {
        if (type.name.startsWith('__')) continue;
        if (isInputObjectType(type)) {
          for (const field of Object.values(type.getFields())) if (/tenant/i.test(field.name)) offending.push(`${type.name}.${field.name}`);
        }
        if (isObjectType(type)) {
          for (const field of Object.values(type.getFields())) {
            for (const arg of field.args) if (/tenant/i.test(arg.name)) offending.push(`${type.name}.${field.name}(${arg.name})`);
          }
        }
      }
      expect(offending).toEqual([]);
      const response = await graphql(t.gateway, `{ syncs(filter: { tenantId: { eq: "${t.tenants.other.id}" } }) { totalCount } }`, {
        authorization: demoAdmin,
      });
      // Refused by validation before anything runs (the error code of validation failures is not pinned here).
      expect(response.status).toBe(400);
      expect(response.body.errors?.[0]?.message).toMatch(/"tenantId" is not defined by type "SyncFilter"/);
      expect(response.body.data ?? null).toBeNull();
    });

    it("GraphQL or/not filters naming another tenant's ids stay within the caller's rows", async () => {
      const ids = other.syncs.slice(0, 5);
      const widened = await graphql(
        t.gateway,
        'query($ids: [String!]!) { syncs(filter: { or: [{ id: { in: $ids } }, { not: { id: { in: $ids } } }] }, limit: 100) { totalCount nodes { tenantId } } }',
        { authorization: demoAdmin, variables: { ids }, expectOk: true },
      );
      expect(widened.body.data?.syncs.totalCount).toBe(demo.syncs.length);
      expect(widened.body.data?.syncs.nodes).toHaveLength(Math.min(100, demo.syncs.length));
      for (const node of widened.body.data!.syncs.nodes) expect(node.tenantId).toBe(t.tenants.demo.id);
      const named = await graphql(
        t.gateway,
        'query($ids: [String!]!, $c: ID!) { syncs(connectionId: $c, filter: { id: { in: $ids } }) { totalCount nodes { id } } connections(filter: { id: { in: $ids } }) { totalCount } }',
        { authorization: demoAdmin, variables: { ids: [...ids, ...other.liveConnections], c: other.liveConnections[0] }, expectOk: true },
      );
      expect(named.body.data).toEqual({ syncs: { totalCount: 0, nodes: [] }, connections: { totalCount: 0 } });
    });
  });

  describe("counts count only the caller's rows", () => {
    it.each(['demo', 'other'] as const)('for %s', async (slug) => {
      const tenant = t.tenants[slug];
      const rows = await rowsOf(t, tenant.id);
      const authorization = `Token ${tenant.adminToken}`;
      const response = await graphql(t.gateway, '{ connections { totalCount nodes { id syncCount } } syncs { totalCount } }', {
        authorization,
        expectOk: true,
      });
      const data = response.body.data as {
        connections: { totalCount: number; nodes: { id: string; syncCount: number }[] };
        syncs: { totalCount: number };
      };
      expect(data.connections.totalCount).toBe(rows.liveConnections.length);
      expect(data.syncs.totalCount).toBe(rows.syncs.length);
      expect(data.connections.nodes.map((n) => n.id).sort()).toEqual([...rows.liveConnections].sort());
      for (const node of data.connections.nodes) expect(node.syncCount).toBe(rows.syncsPerConnection.get(node.id) ?? 0);

      const connectionId = rows.liveConnections[0] as string;
      const one = await graphql(
        t.gateway,
        'query($id: ID!) { connection(id: $id) { syncCount } syncs(connectionId: $id) { totalCount } }',
        { authorization, variables: { id: connectionId }, expectOk: true },
      );
      const perConnection = rows.syncsPerConnection.get(connectionId) ?? 0;
      expect(one.body.data).toEqual({ connection: { syncCount: perConnection }, syncs: { totalCount: perConnection } });

      const syncs = await rest(t.gateway, `${BASE}/syncs?limit=7`, { authorization, expectStatus: 200 });
      expect(syncs.body.meta.pagination).toMatchObject({ total_items: rows.syncs.length, total_pages: Math.ceil(rows.syncs.length / 7) });
      const ofConnection = await rest(t.gateway, `${BASE}/syncs?connection_id=${connectionId}`, { authorization, expectStatus: 200 });
      expect(ofConnection.body.meta.pagination.total_items).toBe(perConnection);
      const connected = await rest(t.gateway, `${BASE}/connected?limit=1`, { authorization, expectStatus: 200 });
      expect(connected.body.meta.pagination).toMatchObject({ total: rows.liveConnections.length, pages: rows.liveConnections.length });
    });
  });

  describe("another tenant's ids are indistinguishable from missing ones", () => {
    it('REST: the same 404 for GET and DELETE', async () => {
      const cases = [
        { method: 'GET', path: (id: string) => `/connected/${id}`, foreign: other.liveConnections[0] as string, missing: newId('con') },
        { method: 'DELETE', path: (id: string) => `/connected/${id}`, foreign: other.liveConnections[1] as string, missing: newId('con') },
        { method: 'GET', path: (id: string) => `/syncs/${id}`, foreign: other.syncs[0] as string, missing: newId('syn') },
      ];
      for (const { method, path, foreign, missing } of cases) {
        const a = await rest(t.gateway, `${BASE}${path(foreign)}`, { method, authorization: demoAdmin });
        const b = await rest(t.gateway, `${BASE}${path(missing)}`, { method, authorization: demoAdmin });
        expect(a.status, a.request).toBe(404);
        expect(b.status, b.request).toBe(404);
        expect(a.body.error.code).toBe('NOT_FOUND');
        expect(normalized(a.body, foreign)).toBe(normalized(b.body, missing));
        expect(a.headers.get('content-type')).toBe(b.headers.get('content-type'));
      }
      const still = await t.db.prisma.connection.findUniqueOrThrow({ where: { id: other.liveConnections[1] as string } });
      expect(still.deletedAt).toBeNull();
    });

    it('GraphQL: null for single fields, the same NOT_FOUND for mutations, nothing changed', async () => {
      const otherTenant = t.tenants.other.id;
      for (const [field, foreign, missing] of [
        ['connection', other.liveConnections[0] as string, newId('con')],
        ['sync', other.syncs[0] as string, newId('syn')],
      ] as const) {
        const query = `query($id: ID!) { ${field}(id: $id) { id } }`;
        const a = await graphql(t.gateway, query, { authorization: demoAdmin, variables: { id: foreign } });
        const b = await graphql(t.gateway, query, { authorization: demoAdmin, variables: { id: missing } });
        expect([a.status, a.body]).toEqual([200, { data: { [field]: null } }]);
        expect([b.status, b.body]).toEqual([200, { data: { [field]: null } }]);
      }

      const connection = await freshConnection(otherTenant);
      const user = await freshServiceUser(otherTenant);
      const token = await freshToken(otherTenant);
      const webhook = await freshWebhook(otherTenant);
      const mutations = [
        { query: 'mutation($id: ID!) { deleteConnection(id: $id) { id } }', foreign: connection, missing: newId('con') },
        { query: 'mutation($id: ID!) { changeServiceUserRole(id: $id, role: admin) { id } }', foreign: user, missing: newId('usr') },
        { query: 'mutation($id: ID!) { deleteServiceUser(id: $id) { id } }', foreign: user, missing: newId('usr') },
        {
          query: `mutation($id: ID!) { createToken(serviceUserId: $id, expiresAt: "${new Date(Date.now() + DAY).toISOString()}") { id token } }`,
          foreign: user,
          missing: newId('usr'),
        },
        { query: 'mutation($id: ID!) { revokeToken(id: $id) { id } }', foreign: token.id, missing: newId('tok') },
        {
          query: 'mutation($id: ID!) { updateWebhookEndpoint(id: $id, input: { enabled: false }) { id } }',
          foreign: webhook.endpoint,
          missing: newId('whk'),
        },
        { query: 'mutation($id: ID!) { rotateWebhookSecret(id: $id) { id secret } }', foreign: webhook.endpoint, missing: newId('whk') },
        { query: 'mutation($id: ID!) { deleteWebhookEndpoint(id: $id) { id } }', foreign: webhook.endpoint, missing: newId('whk') },
        {
          query: `mutation($id: ID!) { redeliverWebhook(endpointId: "${webhook.endpoint}", id: $id) { id } }`,
          foreign: webhook.delivery,
          missing: `msg_${randomUUID().replaceAll('-', '')}`,
        },
      ];
      for (const { query, foreign, missing } of mutations) {
        const a = await graphql(t.gateway, query, { authorization: demoAdmin, variables: { id: foreign } });
        const b = await graphql(t.gateway, query, { authorization: demoAdmin, variables: { id: missing } });
        expect(a.status, query).toBe(404);
        expect(b.status, query).toBe(404);
        expect(a.body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
        expect(normalized(a.body, foreign)).toBe(normalized(b.body, missing));
      }
      const prisma = t.db.prisma;
      expect((await prisma.connection.findUniqueOrThrow({ where: { id: connection } })).deletedAt).toBeNull();
      expect((await prisma.serviceUser.findUniqueOrThrow({ where: { id: user } })).role).toBe('reader');
      expect(await prisma.token.count({ where: { serviceUserId: user } })).toBe(0);
      expect((await prisma.token.findUniqueOrThrow({ where: { id: token.id } })).revokedAt).toBeNull();
      expect(await prisma.webhookEndpoint.findUniqueOrThrow({ where: { id: webhook.endpoint } })).toMatchObject({
        enabled: true,
        secret: 'whsec_MTIzNDU2Nzg5MDEyMzQ1Njc4OTAxMjM0',
      });
      expect((await prisma.webhookDelivery.findUniqueOrThrow({ where: { id: webhook.delivery } })).status).toBe('failed');
    });
  });

  describe('the catalog is global and read-only', () => {
    it('no mutation can write categories or applications', () => {
      const mutation = schema.getMutationType();
      expect(mutation).toBeDefined();
      const fields = Object.values(mutation?.getFields() ?? {});
      // A new mutation makes this list fail: decide then whether it touches the catalog.
      expect(fields.map((f) => f.name).sort()).toEqual(
        [
          'changeMemberRole',
          'changeServiceUserRole',
          'claimSync',
          'configureIdentityProvider',
          'createConnection',
          'createOAuthApplication',
          'createOAuthClient',
          'createPasswordReset',
          'createServiceUser',
          'createToken',
          'createWebhookEndpoint',
          'deleteConnection',
          'deleteOAuthApplication',
          'deleteOAuthClient',
          'deleteServiceUser',
          'deleteWebhookEndpoint',
          'inviteMember',
          'redeliverWebhook',
          'removeIdentityProvider',
          'removeMember',
          'resendInvitation',
          'rotateWebhookSecret',
          'updateWebhookEndpoint',
          'finishSync',
          'reportSync',
          'reportSyncProgress',
          'revokeOAuthApproval',
          'revokeToken',
          'triggerSync',
          'updateConnection',
        ].sort(),
      );
      const catalogTypes = new Set(['Category', 'Application', 'CategoryList', 'ApplicationList']);
      for (const field of fields) {
        expect(catalogTypes.has(getNamedType(field.type).name), field.name).toBe(false);
        // A partner's OAuth application is no catalog application.
        expect(/categor|application/i.test(field.name.replace('OAuthApplication', '')), field.name).toBe(false);
      }
    });

    it('every tenant sees the same catalog', async () => {
      for (const path of ['/categories', '/available', `/available/${(await t.db.prisma.application.findFirstOrThrow()).id}`]) {
        const a = await rest(t.gateway, `${BASE}${path}`, { token: t.tenants.demo.readerToken, expectStatus: 200 });
        const b = await rest(t.gateway, `${BASE}${path}`, { token: t.tenants.other.readerToken, expectStatus: 200 });
        expect(a.body).toEqual(b.body);
      }
      const query = '{ categories { totalCount nodes { id applications { id } } } applications { totalCount nodes { id } } }';
      const a = await graphql(t.gateway, query, { authorization: demoAdmin, expectOk: true });
      const b = await graphql(t.gateway, query, { authorization: otherAdmin, expectOk: true });
      expect(a.body).toEqual(b.body);
    });
  });

  describe('a token value is never stored, logged or listed', () => {
    it('appears in no database column, no log line and no listing', async () => {
      const lines: string[] = [];
      const stream = new Writable({
        write(chunk: Buffer, _encoding, callback) {
          lines.push(chunk.toString());
          callback();
        },
      });
      // Everything yoga and the plugins log, down to trace, and without redaction: the token must never
      // reach the logger at all (the production logger's redact paths are only a second line of defence).
      const logged = createGateway({
        db: t.db,
        config: {
          JWT_SECRET: JWT_TEST_SECRET,
          JWT_PUBLIC_KEY: undefined,
          JWT_JWKS_URL: undefined,
          JWT_ISSUER: undefined,
          JWT_AUDIENCE: undefined,
          ROW_WRITER_FALLBACK: 'refuse',
        },
        logger: pino({ level: 'trace' }, stream),
      });
      const demoTenant = t.tenants.demo;
      const admin = `Token ${demoTenant.adminToken}`;

      // A token created through the API: the value is in that one response, nowhere else.
      const user = await graphql(logged, 'mutation { createServiceUser(name: "iso-logged", role: reader) { id } }', {
        authorization: admin,
        expectOk: true,
      });
      const userId = (user.body.data as { createServiceUser: { id: string } }).createServiceUser.id;
      const created = await graphql(
        logged,
        'mutation($id: ID!, $at: DateTime!) { createToken(serviceUserId: $id, expiresAt: $at) { id token prefix } }',
        { authorization: admin, variables: { id: userId, at: new Date(Date.now() + DAY).toISOString() }, expectOk: true },
      );
      const { id: newTokenId, token: newToken } = (created.body.data as { createToken: { id: string; token: string } }).createToken;
      const unknownToken = `igw_pat_${'0'.repeat(12)}_${Buffer.alloc(32, 7).toString('base64url')}`;

      const requests: Array<[string, { method?: string; authorization: string; status: number }]> = [
        ['/connected', { authorization: `Token ${newToken}`, status: 200 }],
        ['/syncs?limit=3', { authorization: `Bearer ${newToken}`, status: 200 }],
        [`/connected/${newId('con')}`, { authorization: `Token ${newToken}`, status: 404 }],
        [`/connected/${demo.liveConnections[0]}`, { method: 'DELETE', authorization: `Token ${newToken}`, status: 403 }],
        ['/syncs?status=bogus.1', { authorization: `Token ${newToken}`, status: 400 }],
        ['/connected', { authorization: `Token ${newToken} trailing`, status: 401 }],
        ['/connected', { authorization: `Token ${unknownToken}`, status: 401 }],
        ['/connected', { authorization: admin, status: 200 }],
        ['/syncs', { authorization: `Token ${demoTenant.readerToken}`, status: 200 }],
      ];
      for (const [path, { method, authorization, status }] of requests) {
        await rest(logged, `${BASE}${path}`, { method, authorization, expectStatus: status });
      }
      await graphql(logged, '{ connections { totalCount } }', { authorization: `Token ${newToken}`, expectOk: true });
      const invalid = await graphql(logged, '{ connections { nope } }', { authorization: `Token ${newToken}` });
      expect(invalid.status).toBe(400);
      await graphql(logged, 'mutation($id: ID!) { revokeToken(id: $id) { id } }', {
        authorization: admin,
        variables: { id: newTokenId },
        expectOk: true,
      });
      await rest(logged, `${BASE}/connected`, { authorization: `Token ${newToken}`, expectStatus: 401 });

      const tokens = [
        newToken,
        unknownToken,
        demoTenant.adminToken,
        demoTenant.readerToken,
        t.tenants.other.adminToken,
        t.tenants.other.readerToken,
      ];
      const secrets = tokens.map((token) => token.slice(-43));
      const needles = [...tokens, ...secrets, ...secrets.map((secret) => Buffer.from(secret, 'base64url').toString('hex'))];

      // Logs: request lines were written (the stream works), none holds a value or secret.
      const log = lines.join('');
      expect(lines.filter((line) => line.includes('"msg":"request"')).length).toBeGreaterThanOrEqual(requests.length + 4);
      for (const needle of needles) expect(log.includes(needle), `log contains ${needle.slice(0, 12)}…`).toBe(false);

      // Database: every column of every table, as text (bytea shows as hex, so raw secret bytes would show).
      const tables = await t.db.raw.query<{ table_name: string }>(
        `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'`,
      );
      expect(tables.map((row) => row.table_name)).toEqual(expect.arrayContaining([...TENANT_TABLES, ...CATALOG_TABLES, 'tenants']));
      const rowsContaining = async (values: string[]) => {
        const found: string[] = [];
        for (const { table_name: table } of tables) {
          const rows = await t.db.raw.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM "${table}" AS r WHERE EXISTS (SELECT 1 FROM unnest($1::text[]) AS needle WHERE strpos(r::text, needle) > 0)`,
            [values],
          );
          if ((rows[0]?.n ?? 0) > 0) found.push(table);
        }
        return found;
      };
      expect(await rowsContaining(needles)).toEqual([]);
      // The scan does see what is stored: the public prefix and the secret's SHA-256 (bytea, as hex).
      const sha256 = createHash('sha256')
        .update(Buffer.from(newToken.slice(-43), 'base64url'))
        .digest('hex');
      // (The activity log names a token it records by that public prefix.)
      expect((await rowsContaining([newToken.slice(8, 20)])).sort()).toEqual(['activity', 'tokens']);
      expect(await rowsContaining([sha256])).toEqual(['tokens']);

      // Listings: the library's, and GraphQL's with every Token field selected.
      for (const tenantId of [demoTenant.id, t.tenants.other.id]) {
        const listed = JSON.stringify(await listTokens(t.db, tenantId));
        expect(listed.length).toBeGreaterThan(2);
        for (const needle of needles) expect(listed.includes(needle)).toBe(false);
      }
      const tokenType = schema.getType('Token');
      expect(isObjectType(tokenType)).toBe(true);
      const tokenFields = isObjectType(tokenType) ? Object.keys(tokenType.getFields()).sort() : [];
      expect(tokenFields).toEqual([
        'createdAt',
        'createdBy',
        'expiresAt',
        'id',
        'lastUsedAt',
        'name',
        'prefix',
        'revokedAt',
        'serviceUser',
      ]);
      const listing = await graphql(
        logged,
        '{ serviceUsers { id name tokens { id prefix expiresAt createdAt lastUsedAt revokedAt serviceUser { id name } } } }',
        { authorization: admin, expectOk: true },
      );
      const listingText = JSON.stringify(listing.body);
      expect(listingText).toContain(newTokenId);
      for (const needle of needles) expect(listingText.includes(needle)).toBe(false);
    });
  });
});
