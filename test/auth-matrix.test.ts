import { credentialsChanged } from '../src/auth/credential-cache.js';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServiceUser } from '../src/auth/service-users.js';
import { createToken } from '../src/auth/tokens.js';
import { inviteMember } from '../src/auth/members.js';
import { createSession, DEFAULT_SESSION_POLICY, endSession } from '../src/auth/sessions.js';
import { claimSync, triggerSync } from '../src/db/sync-runs.js';
import { newId } from '../src/prefixed-ids.js';
import { createTestGateway, graphql, JWT_TEST_SECRET, type TestGateway } from './fixtures/gateway.js';
import { databaseKinds } from './fixtures/databases.js';
import { BASE, rest } from './fixtures/rest.js';

// The auth matrix: every credential kind (reader, engine, admin, another tenant, and the refused ones) × every
// REST endpoint and every GraphQL root field, the write side included. Each cell
// checks the status, the error code, the error body shape (REST) and that the response carries no object
// of a tenant other than the caller's. Mutations only ever touch objects created for that one cell, and a
// cell that must fail checks afterwards that its object is unchanged (so the failure really was auth).

const DAY = 86_400_000;

/** Who the credential acts as when it is accepted; `none` for every credential that must be refused. */
type Acting = 'none' | 'demo-reader' | 'demo-engine' | 'demo-admin' | 'other-admin';

type DemoRole = 'reader' | 'engine' | 'admin';
/** The roles that hold catalog:read: an engine reads connections and runs, not the catalog. */
const CATALOG_READERS: readonly DemoRole[] = ['reader', 'admin'];

interface Credential {
  name: string;
  acting: Acting;
  /** The Authorization header; undefined sends none. Built in beforeAll (tokens need the database). */
  header: () => string | undefined;
}

type Outcome = 'ok' | 'unauthenticated' | 'forbidden' | 'not-found' | 'null' | 'conflict';

type Request =
  | { surface: 'rest'; method: 'GET' | 'DELETE' | 'POST' | 'PATCH'; path: string; body?: unknown; okStatus?: number }
  | { surface: 'graphql'; field: string; query: string; variables?: Record<string, unknown> };

interface Cell {
  request: Request;
  /** Ids the caller itself sent: an error message may echo them, which reveals nothing. */
  sent: string[];
  /** Checks the data of an accepted request against the database. */
  ok?: (data: any, tenantId: string) => Promise<void> | void;
  /** After any outcome: the write happened exactly when the cell succeeded. */
  after?: (succeeded: boolean, tenantId: string | null) => Promise<void>;
}

interface Operation {
  name: string;
  /** Needs connections:delete or access:manage: a reader gets 403. */
  adminOnly: boolean;
  /** The roles allowed (default: admin when adminOnly, else every role); the others get 403. */
  roles?: readonly DemoRole[];
  /** What an allowed caller gets: `conflict` for a report on a run another worker claimed. */
  whenAllowed?: 'ok' | 'conflict';
  /** A mutation whose "no such object" answer is null, not 404 (claimSync: nothing to claim). */
  missingIsNull?: boolean;
  /** A nullable root field: its errors come in a 200 with data (GraphQL over HTTP). */
  nullableField?: boolean;
  /** Names one of demo's objects: another tenant's admin gets 404 (REST, mutations) or null (GraphQL reads). */
  demoObject: boolean;
  cell: (env: Env) => Promise<Cell>;
}

interface Env {
  t: TestGateway;
  cell: number;
  categoryId: string;
  applicationId: string;
  demoConnectionId: string;
  demoSyncId: string;
  freshConnection: () => Promise<string>;
  /** A pending run of a fresh connection (runs: `claimed` is in progress under another worker's claim). */
  freshRun: (claimed: boolean) => Promise<{ connectionId: string; syncId: string }>;
  freshServiceUser: () => Promise<string>;
  freshToken: () => Promise<{ id: string; prefix: string }>;
}

const REQ_ID = /^req_\d+$/;
const TENANT_OWNED_ID = /\b(?:ten|con|syn|usr|tok)_[0-9a-z]+\b/g;

function rolesOf(op: Operation): readonly DemoRole[] {
  return op.roles ?? (op.adminOnly ? ['admin'] : ['reader', 'engine', 'admin']);
}

function expectedOutcome(acting: Acting, op: Operation, request: Request): Outcome {
  if (acting === 'none') return 'unauthenticated';
  const role: DemoRole = acting === 'other-admin' ? 'admin' : (acting.slice('demo-'.length) as DemoRole);
  if (!rolesOf(op).includes(role)) return 'forbidden';
  if (acting === 'other-admin' && op.demoObject) {
    const readField = request.surface === 'graphql' && !request.query.trimStart().startsWith('mutation');
    return readField || op.missingIsNull ? 'null' : 'not-found';
  }
  return op.whenAllowed ?? 'ok';
}

/** Every id (and token prefix) of a tenant's own rows, read from the database after the cell ran. */
async function idsOfTenant(t: TestGateway, tenantId: string): Promise<Set<string>> {
  const rows = await t.db.raw.query<{ id: string }>(
    `SELECT id FROM connections WHERE tenant_id = $1
     UNION ALL SELECT id FROM syncs WHERE tenant_id = $1
     UNION ALL SELECT id FROM service_users WHERE tenant_id = $1
     UNION ALL SELECT id FROM tokens WHERE tenant_id = $1
     UNION ALL SELECT prefix FROM tokens WHERE tenant_id = $1
     UNION ALL SELECT id FROM tenants WHERE id = $1`,
    [tenantId],
  );
  return new Set(rows.map((row) => row.id));
}

const operations: Operation[] = [
  // REST
  {
    name: 'GET /categories',
    adminOnly: false,
    roles: CATALOG_READERS,
    demoObject: false,
    cell: async () => ({
      request: { surface: 'rest', method: 'GET', path: `${BASE}/categories` },
      sent: [],
      ok: (body) => expect(body.data.length).toBeGreaterThan(0),
    }),
  },
  {
    name: 'GET /available',
    adminOnly: false,
    roles: CATALOG_READERS,
    demoObject: false,
    cell: async () => ({
      request: { surface: 'rest', method: 'GET', path: `${BASE}/available` },
      sent: [],
      ok: (body) => expect(body.data.length).toBeGreaterThan(0),
    }),
  },
  {
    name: 'GET /available/{id}',
    adminOnly: false,
    roles: CATALOG_READERS,
    demoObject: false,
    cell: async (env) => ({
      request: { surface: 'rest', method: 'GET', path: `${BASE}/available/${env.applicationId}` },
      sent: [env.applicationId],
      ok: (body) => expect(body.data[0].id).toBe(env.applicationId),
    }),
  },
  {
    name: 'GET /connected',
    adminOnly: false,
    demoObject: false,
    cell: async (env) => ({
      request: { surface: 'rest', method: 'GET', path: `${BASE}/connected` },
      sent: [],
      ok: async (body, tenantId) => {
        const own = await idsOfTenant(env.t, tenantId);
        expect(body.data.length).toBeGreaterThan(0);
        for (const item of body.data) expect(own.has(item.id)).toBe(true);
      },
    }),
  },
  {
    name: 'GET /connected/{id}',
    adminOnly: false,
    demoObject: true,
    cell: async (env) => ({
      request: { surface: 'rest', method: 'GET', path: `${BASE}/connected/${env.demoConnectionId}` },
      sent: [env.demoConnectionId],
      ok: (body) => expect(body.data.id).toBe(env.demoConnectionId),
    }),
  },
  {
    name: 'DELETE /connected/{id}',
    adminOnly: true,
    demoObject: true,
    cell: async (env) => {
      const id = await env.freshConnection();
      return {
        request: { surface: 'rest', method: 'DELETE', path: `${BASE}/connected/${id}` },
        sent: [id],
        ok: (body) => expect(body.data).toEqual({ id }),
        after: async (succeeded) => {
          const row = await env.t.db.prisma.connection.findUniqueOrThrow({ where: { id }, select: { deletedAt: true } });
          expect(row.deletedAt !== null).toBe(succeeded);
        },
      };
    },
  },
  {
    name: 'GET /syncs',
    adminOnly: false,
    demoObject: false,
    cell: async () => ({
      request: { surface: 'rest', method: 'GET', path: `${BASE}/syncs?limit=50` },
      sent: [],
      ok: (body, tenantId) => {
        expect(body.data.length).toBeGreaterThan(0);
        for (const item of body.data) expect(item.tenant_id).toBe(tenantId);
      },
    }),
  },
  {
    name: 'GET /syncs/{id}',
    adminOnly: false,
    demoObject: true,
    cell: async (env) => ({
      request: { surface: 'rest', method: 'GET', path: `${BASE}/syncs/${env.demoSyncId}` },
      sent: [env.demoSyncId],
      ok: (body, tenantId) => {
        expect(body.data.id).toBe(env.demoSyncId);
        expect(body.data.tenant_id).toBe(tenantId);
      },
    }),
  },

  // GraphQL queries
  {
    name: 'Query.categories',
    adminOnly: false,
    roles: CATALOG_READERS,
    demoObject: false,
    cell: async () => ({
      request: { surface: 'graphql', field: 'categories', query: '{ categories { totalCount nodes { id applications { id } } } }' },
      sent: [],
      ok: (data) => expect(data.nodes.length).toBeGreaterThan(0),
    }),
  },
  {
    name: 'Query.category',
    adminOnly: false,
    roles: CATALOG_READERS,
    nullableField: true,
    demoObject: false,
    cell: async (env) => ({
      request: {
        surface: 'graphql',
        field: 'category',
        query: 'query($id: ID!) { category(id: $id) { id name applications { id } } }',
        variables: { id: env.categoryId },
      },
      sent: [env.categoryId],
      ok: (data) => expect(data.id).toBe(env.categoryId),
    }),
  },
  {
    name: 'Query.applications',
    adminOnly: false,
    roles: CATALOG_READERS,
    demoObject: false,
    cell: async () => ({
      request: { surface: 'graphql', field: 'applications', query: '{ applications { totalCount nodes { id category { id } } } }' },
      sent: [],
      ok: (data) => expect(data.nodes.length).toBeGreaterThan(0),
    }),
  },
  {
    name: 'Query.application',
    adminOnly: false,
    roles: CATALOG_READERS,
    nullableField: true,
    demoObject: false,
    cell: async (env) => ({
      request: {
        surface: 'graphql',
        field: 'application',
        query: 'query($id: ID!) { application(id: $id) { id name category { id } } }',
        variables: { id: env.applicationId },
      },
      sent: [env.applicationId],
      ok: (data) => expect(data.id).toBe(env.applicationId),
    }),
  },
  {
    name: 'Query.connections',
    adminOnly: false,
    demoObject: false,
    cell: async (env) => ({
      request: {
        surface: 'graphql',
        field: 'connections',
        query: '{ connections { totalCount nodes { id name syncCount syncs(limit: 3) { id tenantId connectionId } } } }',
      },
      sent: [],
      ok: async (data, tenantId) => {
        const own = await idsOfTenant(env.t, tenantId);
        expect(data.nodes.length).toBeGreaterThan(0);
        for (const node of data.nodes) {
          expect(own.has(node.id)).toBe(true);
          for (const sync of node.syncs) expect(sync.tenantId).toBe(tenantId);
        }
      },
    }),
  },
  {
    name: 'Query.connection',
    adminOnly: false,
    demoObject: true,
    cell: async (env) => ({
      request: {
        surface: 'graphql',
        field: 'connection',
        query: 'query($id: ID!) { connection(id: $id) { id name syncCount syncs(limit: 3) { id tenantId } } }',
        variables: { id: env.demoConnectionId },
      },
      sent: [env.demoConnectionId],
      ok: (data) => expect(data.id).toBe(env.demoConnectionId),
    }),
  },
  {
    name: 'Query.syncs',
    adminOnly: false,
    demoObject: false,
    cell: async () => ({
      request: {
        surface: 'graphql',
        field: 'syncs',
        query: '{ syncs(limit: 50) { totalCount nodes { id tenantId connectionId connection { id } } } }',
      },
      sent: [],
      ok: (data, tenantId) => {
        expect(data.nodes.length).toBeGreaterThan(0);
        for (const node of data.nodes) expect(node.tenantId).toBe(tenantId);
      },
    }),
  },
  {
    name: 'Query.sync',
    adminOnly: false,
    demoObject: true,
    cell: async (env) => ({
      request: {
        surface: 'graphql',
        field: 'sync',
        query: 'query($id: ID!) { sync(id: $id) { id tenantId connectionId connection { id } } }',
        variables: { id: env.demoSyncId },
      },
      sent: [env.demoSyncId],
      ok: (data, tenantId) => {
        expect(data.id).toBe(env.demoSyncId);
        expect(data.tenantId).toBe(tenantId);
      },
    }),
  },
  {
    name: 'Query.serviceUsers',
    adminOnly: true,
    demoObject: false,
    cell: async (env) => ({
      request: { surface: 'graphql', field: 'serviceUsers', query: '{ serviceUsers { id name role tokens { id prefix } } }' },
      sent: [],
      ok: async (data, tenantId) => {
        const own = await idsOfTenant(env.t, tenantId);
        expect(data.length).toBeGreaterThan(0);
        for (const user of data) {
          expect(own.has(user.id)).toBe(true);
          for (const token of user.tokens) expect(own.has(token.id)).toBe(true);
        }
      },
    }),
  },

  // GraphQL mutations
  {
    name: 'Mutation.deleteConnection',
    adminOnly: true,
    demoObject: true,
    cell: async (env) => {
      const id = await env.freshConnection();
      return {
        request: {
          surface: 'graphql',
          field: 'deleteConnection',
          query: 'mutation($id: ID!) { deleteConnection(id: $id) { id } }',
          variables: { id },
        },
        sent: [id],
        ok: (data) => expect(data).toEqual({ id }),
        after: async (succeeded) => {
          const row = await env.t.db.prisma.connection.findUniqueOrThrow({ where: { id }, select: { deletedAt: true } });
          expect(row.deletedAt !== null).toBe(succeeded);
        },
      };
    },
  },
  {
    name: 'Mutation.createServiceUser',
    adminOnly: true,
    demoObject: false,
    cell: async (env) => {
      const name = `matrix-user-${env.cell}`;
      return {
        request: {
          surface: 'graphql',
          field: 'createServiceUser',
          query: 'mutation($name: String!) { createServiceUser(name: $name, role: reader) { id name role } }',
          variables: { name },
        },
        sent: [],
        ok: (data) => expect(data).toMatchObject({ name, role: 'reader' }),
        after: async (succeeded, tenantId) => {
          const rows = await env.t.db.prisma.serviceUser.findMany({ where: { name }, select: { tenantId: true } });
          expect(rows).toEqual(succeeded ? [{ tenantId }] : []);
        },
      };
    },
  },
  {
    name: 'Mutation.changeServiceUserRole',
    adminOnly: true,
    demoObject: true,
    cell: async (env) => {
      const id = await env.freshServiceUser();
      return {
        request: {
          surface: 'graphql',
          field: 'changeServiceUserRole',
          query: 'mutation($id: ID!) { changeServiceUserRole(id: $id, role: admin) { id role } }',
          variables: { id },
        },
        sent: [id],
        ok: (data) => expect(data).toEqual({ id, role: 'admin' }),
        after: async (succeeded) => {
          const row = await env.t.db.prisma.serviceUser.findUniqueOrThrow({ where: { id }, select: { role: true } });
          expect(row.role).toBe(succeeded ? 'admin' : 'reader');
        },
      };
    },
  },
  {
    name: 'Mutation.deleteServiceUser',
    adminOnly: true,
    demoObject: true,
    cell: async (env) => {
      const id = await env.freshServiceUser();
      return {
        request: {
          surface: 'graphql',
          field: 'deleteServiceUser',
          query: 'mutation($id: ID!) { deleteServiceUser(id: $id) { id deletedTokens } }',
          variables: { id },
        },
        sent: [id],
        ok: (data) => expect(data).toEqual({ id, deletedTokens: 0 }),
        after: async (succeeded) => {
          const row = await env.t.db.prisma.serviceUser.findUnique({ where: { id }, select: { id: true } });
          expect(row === null).toBe(succeeded);
        },
      };
    },
  },
  {
    name: 'Mutation.createToken',
    adminOnly: true,
    demoObject: true,
    cell: async (env) => {
      const serviceUserId = await env.freshServiceUser();
      return {
        request: {
          surface: 'graphql',
          field: 'createToken',
          query: 'mutation($id: ID!, $expiresAt: DateTime!) { createToken(serviceUserId: $id, expiresAt: $expiresAt) { id token prefix } }',
          variables: { id: serviceUserId, expiresAt: new Date(Date.now() + 7 * DAY).toISOString() },
        },
        sent: [serviceUserId],
        ok: (data) => expect(data.token).toMatch(/^igw_pat_/),
        after: async (succeeded) => {
          const count = await env.t.db.prisma.token.count({ where: { serviceUserId } });
          expect(count).toBe(succeeded ? 1 : 0);
        },
      };
    },
  },
  {
    name: 'Mutation.revokeToken',
    adminOnly: true,
    demoObject: true,
    cell: async (env) => {
      const token = await env.freshToken();
      return {
        request: {
          surface: 'graphql',
          field: 'revokeToken',
          query: 'mutation($id: ID!) { revokeToken(id: $id) { id prefix revokedAt } }',
          variables: { id: token.id },
        },
        sent: [token.id, token.prefix],
        ok: (data) => {
          expect(data.id).toBe(token.id);
          expect(data.revokedAt).not.toBeNull();
        },
        after: async (succeeded) => {
          const row = await env.t.db.prisma.token.findUniqueOrThrow({ where: { id: token.id }, select: { revokedAt: true } });
          expect(row.revokedAt !== null).toBe(succeeded);
        },
      };
    },
  },
  // The write side: connections (admin) and runs (trigger: admin; claim and reports: engine and admin).
  {
    name: 'Mutation.createConnection',
    adminOnly: true,
    demoObject: false,
    cell: async (env) => {
      const name = `matrix created ${env.cell}`;
      return {
        request: {
          surface: 'graphql',
          field: 'createConnection',
          query: 'mutation($input: CreateConnectionInput!) { createConnection(input: $input) { id name status } }',
          variables: { input: { applicationId: env.applicationId, name } },
        },
        sent: [],
        ok: (data) => expect(data).toMatchObject({ name, status: 'pending' }),
        after: async (succeeded, tenantId) => {
          const rows = await env.t.db.prisma.connection.findMany({ where: { name }, select: { tenantId: true } });
          expect(rows).toEqual(succeeded ? [{ tenantId }] : []);
        },
      };
    },
  },
  {
    name: 'Mutation.updateConnection',
    adminOnly: true,
    demoObject: true,
    cell: async (env) => {
      const id = await env.freshConnection();
      const name = `matrix renamed ${env.cell}`;
      return {
        request: {
          surface: 'graphql',
          field: 'updateConnection',
          query: 'mutation($id: ID!, $input: UpdateConnectionInput!) { updateConnection(id: $id, input: $input) { id name } }',
          variables: { id, input: { name, status: 'paused' } },
        },
        sent: [id],
        ok: (data) => expect(data).toEqual({ id, name }),
        after: async (succeeded) => {
          const row = await env.t.db.prisma.connection.findUniqueOrThrow({ where: { id }, select: { name: true, status: true } });
          expect(row).toEqual(succeeded ? { name, status: 'paused' } : { name: `matrix ${id}`, status: 'active' });
        },
      };
    },
  },
  {
    name: 'Mutation.triggerSync',
    adminOnly: true,
    demoObject: true,
    cell: async (env) => {
      const connectionId = await env.freshConnection();
      return {
        request: {
          surface: 'graphql',
          field: 'triggerSync',
          query: 'mutation($c: ID!) { triggerSync(connectionId: $c) { id status connectionId } }',
          variables: { c: connectionId },
        },
        sent: [connectionId],
        ok: (data) => expect(data).toMatchObject({ status: 'pending', connectionId }),
        after: async (succeeded) => {
          expect(await env.t.db.prisma.sync.count({ where: { connectionId } })).toBe(succeeded ? 1 : 0);
        },
      };
    },
  },
  {
    name: 'Mutation.claimSync',
    adminOnly: false,
    roles: ['engine', 'admin'],
    demoObject: true,
    missingIsNull: true,
    nullableField: true,
    cell: async (env) => {
      const { connectionId, syncId } = await env.freshRun(false);
      return {
        request: {
          surface: 'graphql',
          field: 'claimSync',
          query: 'mutation($c: ID!) { claimSync(connectionId: $c, leaseSeconds: 30) { id status } }',
          variables: { c: connectionId },
        },
        sent: [connectionId],
        ok: (data) => expect(data).toEqual({ id: syncId, status: 'in_progress' }),
        after: async (succeeded) => {
          const row = await env.t.db.prisma.sync.findUniqueOrThrow({ where: { id: syncId }, select: { status: true } });
          expect(row.status).toBe(succeeded ? 'in_progress' : 'pending');
        },
      };
    },
  },
  {
    name: 'Mutation.reportSyncProgress',
    adminOnly: false,
    roles: ['engine', 'admin'],
    demoObject: true,
    // Allowed callers pass authorization and meet the lifecycle: the run is another worker's claim.
    whenAllowed: 'conflict',
    cell: async (env) => {
      const { syncId } = await env.freshRun(true);
      return {
        request: {
          surface: 'graphql',
          field: 'reportSyncProgress',
          query: 'mutation($id: ID!) { reportSyncProgress(id: $id, summary: {processed: 5}) { id } }',
          variables: { id: syncId },
        },
        sent: [syncId],
        after: async () => {
          const row = await env.t.db.prisma.sync.findUniqueOrThrow({ where: { id: syncId }, select: { status: true, summary: true } });
          expect(row).toEqual({ status: 'in_progress', summary: { in_progress: true, processed: 0 } });
        },
      };
    },
  },
  {
    name: 'Mutation.finishSync',
    adminOnly: false,
    roles: ['engine', 'admin'],
    demoObject: true,
    whenAllowed: 'conflict',
    cell: async (env) => {
      const { syncId } = await env.freshRun(true);
      return {
        request: {
          surface: 'graphql',
          field: 'finishSync',
          query: 'mutation($id: ID!) { finishSync(id: $id, input: {status: success, summary: {processed: 1}}) { id } }',
          variables: { id: syncId },
        },
        sent: [syncId],
        after: async () => {
          const row = await env.t.db.prisma.sync.findUniqueOrThrow({ where: { id: syncId }, select: { status: true, finishedAt: true } });
          expect(row).toEqual({ status: 'in_progress', finishedAt: null });
        },
      };
    },
  },
  {
    name: 'POST /connected',
    adminOnly: true,
    demoObject: false,
    cell: async (env) => {
      const name = `matrix rest created ${env.cell}`;
      return {
        request: {
          surface: 'rest',
          method: 'POST',
          path: `${BASE}/connected`,
          body: { application_id: env.applicationId, name },
          okStatus: 201,
        },
        sent: [],
        ok: (body) => expect(body.data).toMatchObject({ name, status: 'pending' }),
        after: async (succeeded, tenantId) => {
          const rows = await env.t.db.prisma.connection.findMany({ where: { name }, select: { tenantId: true } });
          expect(rows).toEqual(succeeded ? [{ tenantId }] : []);
        },
      };
    },
  },
  {
    name: 'PATCH /connected/{id}',
    adminOnly: true,
    demoObject: true,
    cell: async (env) => {
      const id = await env.freshConnection();
      const name = `matrix rest renamed ${env.cell}`;
      return {
        request: { surface: 'rest', method: 'PATCH', path: `${BASE}/connected/${id}`, body: { name } },
        sent: [id],
        ok: (body) => expect(body.data).toMatchObject({ id, name }),
        after: async (succeeded) => {
          const row = await env.t.db.prisma.connection.findUniqueOrThrow({ where: { id }, select: { name: true } });
          expect(row.name).toBe(succeeded ? name : `matrix ${id}`);
        },
      };
    },
  },
  {
    name: 'POST /syncs',
    adminOnly: true,
    demoObject: true,
    cell: async (env) => {
      const connectionId = await env.freshConnection();
      return {
        request: { surface: 'rest', method: 'POST', path: `${BASE}/syncs`, body: { connection_id: connectionId }, okStatus: 201 },
        sent: [connectionId],
        ok: (body) => expect(body.data).toMatchObject({ status: 'pending', connection_id: connectionId }),
        after: async (succeeded) => {
          expect(await env.t.db.prisma.sync.count({ where: { connectionId } })).toBe(succeeded ? 1 : 0);
        },
      };
    },
  },
  {
    name: 'POST /syncs/claim',
    adminOnly: false,
    roles: ['engine', 'admin'],
    demoObject: true,
    missingIsNull: true,
    cell: async (env) => {
      const { connectionId, syncId } = await env.freshRun(false);
      return {
        request: { surface: 'rest', method: 'POST', path: `${BASE}/syncs/claim`, body: { connection_id: connectionId } },
        sent: [connectionId],
        ok: (body) => expect(body.data).toMatchObject({ id: syncId, status: 'in_progress' }),
        after: async (succeeded) => {
          const row = await env.t.db.prisma.sync.findUniqueOrThrow({ where: { id: syncId }, select: { status: true } });
          expect(row.status).toBe(succeeded ? 'in_progress' : 'pending');
        },
      };
    },
  },
  {
    name: 'PATCH /syncs/{id}',
    adminOnly: false,
    roles: ['engine', 'admin'],
    demoObject: true,
    whenAllowed: 'conflict',
    cell: async (env) => {
      const { syncId } = await env.freshRun(true);
      return {
        request: { surface: 'rest', method: 'PATCH', path: `${BASE}/syncs/${syncId}`, body: { summary: { processed: 3 } } },
        sent: [syncId],
        after: async () => {
          const row = await env.t.db.prisma.sync.findUniqueOrThrow({ where: { id: syncId }, select: { status: true, summary: true } });
          expect(row).toEqual({ status: 'in_progress', summary: { in_progress: true, processed: 0 } });
        },
      };
    },
  },
];

/** A REST call with a JSON body (the write routes). */
async function restWithBody(t: TestGateway, method: string, path: string, body: unknown, authorization: string | undefined) {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (authorization !== undefined) headers.authorization = authorization;
  const response = await t.gateway.fetch(`http://gateway.test${path}`, { method, headers, body: JSON.stringify(body) });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text ? (JSON.parse(text) as unknown) : null };
}

function base64url(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

async function signJwt(claims: Record<string, unknown>, options: { secret?: string; expiresAt?: number } = {}): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT(claims)
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject('matrix-jwt-user')
    .setIssuedAt(typeof claims.iat === 'number' ? claims.iat : now - 120)
    .setExpirationTime(options.expiresAt ?? now + 600)
    .sign(new TextEncoder().encode(options.secret ?? JWT_TEST_SECRET));
}

describe.each(databaseKinds)('auth matrix on %s', (kind) => {
  let t: TestGateway;
  let env: Env;
  const headers = new Map<string, string | undefined>();
  let cellCounter = 0;

  const credentials: Credential[] = [
    { name: 'no credential', acting: 'none', header: () => undefined },
    { name: 'garbage', acting: 'none', header: () => 'garbage' },
    { name: 'wrong scheme (Basic)', acting: 'none', header: () => 'Basic abc' },
    { name: 'expired token', acting: 'none', header: () => headers.get('expired') },
    { name: 'revoked token', acting: 'none', header: () => headers.get('revoked') },
    { name: 'reader token', acting: 'demo-reader', header: () => `Token ${t.tenants.demo.readerToken}` },
    { name: 'admin token', acting: 'demo-admin', header: () => `Token ${t.tenants.demo.adminToken}` },
    { name: 'engine token', acting: 'demo-engine', header: () => headers.get('engine') },
    { name: 'JWT engine', acting: 'demo-engine', header: () => headers.get('jwt-engine') },
    { name: "other tenant's admin token", acting: 'other-admin', header: () => `Token ${t.tenants.other.adminToken}` },
    { name: 'JWT reader', acting: 'demo-reader', header: () => headers.get('jwt-reader') },
    { name: 'JWT admin', acting: 'demo-admin', header: () => headers.get('jwt-admin') },
    { name: 'JWT expired', acting: 'none', header: () => headers.get('jwt-expired') },
    { name: 'JWT wrong key', acting: 'none', header: () => headers.get('jwt-wrong-key') },
    { name: 'JWT alg none', acting: 'none', header: () => headers.get('jwt-none') },
    { name: 'JWT without tenant_id', acting: 'none', header: () => headers.get('jwt-no-tenant') },
    { name: 'JWT of a tenant that does not exist', acting: 'none', header: () => headers.get('jwt-unknown-tenant') },
    { name: 'JWT issued an hour ahead', acting: 'none', header: () => headers.get('jwt-future-iat') },
    { name: 'JWT valid for 100 years', acting: 'none', header: () => headers.get('jwt-century') },
    // A member's session, as the session cookie becomes inside the server (the cookie itself: test/sessions.test.ts).
    { name: 'admin member session', acting: 'demo-admin', header: () => headers.get('member-admin') },
    { name: 'reader member session', acting: 'demo-reader', header: () => headers.get('member-reader') },
    { name: "other tenant's admin member session", acting: 'other-admin', header: () => headers.get('member-other-admin') },
    { name: 'signed-out member session', acting: 'none', header: () => headers.get('member-signed-out') },
  ];

  beforeAll(async () => {
    t = await createTestGateway(kind);
    const demo = t.tenants.demo;
    const prisma = t.db.prisma;

    // A PAT that worked, then expired: the CHECK (expires_at > created_at) needs created_at moved back too.
    const adminUser = await prisma.serviceUser.findUniqueOrThrow({ where: { tenantId_name: { tenantId: demo.id, name: 'admin-bot' } } });
    const expiring = await createToken(t.db, { tenantId: demo.id, serviceUserId: adminUser.id, expiresAt: new Date(Date.now() + DAY) });
    await rest(t.gateway, `${BASE}/connected`, { token: expiring.token, expectStatus: 200 });
    await t.db.raw.query(`UPDATE tokens SET created_at = now() - interval '2 days', expires_at = now() - interval '1 day' WHERE id = $1`, [
      expiring.id,
    ]);
    // Changed behind the API's back: the gateway's token cache would take it for TOKEN_CACHE_TTL_MS; evict it now.
    await credentialsChanged(t.db, { tokenIds: [expiring.id] });
    headers.set('expired', `Token ${expiring.token}`);

    // A PAT that worked, then was revoked through the API.
    const revoking = await createToken(t.db, { tenantId: demo.id, serviceUserId: adminUser.id, expiresAt: new Date(Date.now() + DAY) });
    await rest(t.gateway, `${BASE}/connected`, { token: revoking.token, expectStatus: 200 });
    await graphql(t.gateway, 'mutation($id: ID!) { revokeToken(id: $id) { id } }', {
      token: demo.adminToken,
      variables: { id: revoking.id },
      expectOk: true,
    });
    headers.set('revoked', `Token ${revoking.token}`);

    const now = Math.floor(Date.now() / 1000);
    headers.set('jwt-reader', `Bearer ${await signJwt({ tenant_id: demo.id, role: 'reader' })}`);
    headers.set('jwt-admin', `Bearer ${await signJwt({ tenant_id: demo.id, role: 'admin' })}`);
    headers.set('jwt-engine', `Bearer ${await signJwt({ tenant_id: demo.id, role: 'engine' })}`);
    const engineUser = await createServiceUser(t.db, { tenantId: demo.id, name: 'matrix-engine', role: 'engine' });
    const engineToken = await createToken(t.db, { tenantId: demo.id, serviceUserId: engineUser.id, expiresAt: new Date(Date.now() + DAY) });
    headers.set('engine', `Token ${engineToken.token}`);
    headers.set('jwt-expired', `Bearer ${await signJwt({ tenant_id: demo.id, role: 'admin' }, { expiresAt: now - 60 })}`);
    headers.set(
      'jwt-wrong-key',
      `Bearer ${await signJwt({ tenant_id: demo.id, role: 'admin' }, { secret: 'a-different-secret-that-is-also-32-chars-or-more' })}`,
    );
    headers.set(
      'jwt-none',
      `Bearer ${base64url({ alg: 'none', typ: 'JWT' })}.${base64url({ tenant_id: demo.id, role: 'admin', sub: 'matrix-jwt-user', exp: now + 600 })}.`,
    );
    headers.set('jwt-no-tenant', `Bearer ${await signJwt({ role: 'admin' })}`);
    headers.set('jwt-unknown-tenant', `Bearer ${await signJwt({ tenant_id: 'ten_doesnotexist', role: 'admin' })}`);
    headers.set(
      'jwt-future-iat',
      `Bearer ${await signJwt({ tenant_id: demo.id, role: 'admin', iat: now + 3600 }, { expiresAt: now + 4200 })}`,
    );
    headers.set('jwt-century', `Bearer ${await signJwt({ tenant_id: demo.id, role: 'admin' }, { expiresAt: now + 100 * 365 * 86_400 })}`);
    const memberSession = async (tenantId: string, email: string, role: 'admin' | 'reader') => {
      const { member } = await inviteMember(t.db.raw, { tenantId, email, role, createdBy: 'cli' });
      return `Session ${(await createSession(t.db, member, DEFAULT_SESSION_POLICY)).value}`;
    };
    headers.set('member-admin', await memberSession(demo.id, 'matrix-admin@example.com', 'admin'));
    headers.set('member-reader', await memberSession(demo.id, 'matrix-reader@example.com', 'reader'));
    headers.set('member-other-admin', await memberSession(t.tenants.other.id, 'matrix-other@example.com', 'admin'));
    const signedOut = await memberSession(demo.id, 'matrix-gone@example.com', 'reader');
    await endSession(t.db, signedOut.slice('Session '.length));
    headers.set('member-signed-out', signedOut);

    const connection = await prisma.connection.findFirstOrThrow({ where: { tenantId: demo.id, deletedAt: null }, orderBy: { id: 'asc' } });
    const sync = await prisma.sync.findFirstOrThrow({ where: { tenantId: demo.id }, orderBy: { id: 'asc' } });
    const application = await prisma.application.findFirstOrThrow({ orderBy: { id: 'asc' } });
    env = {
      t,
      cell: 0,
      categoryId: application.categoryId,
      applicationId: application.id,
      demoConnectionId: connection.id,
      demoSyncId: sync.id,
      async freshConnection() {
        const id = newId('con');
        await prisma.connection.create({
          data: {
            id,
            tenantId: demo.id,
            applicationId: connection.applicationId,
            name: `matrix ${id}`,
            slug: `matrix-${id}`,
            via: connection.via,
            status: 'active',
          },
        });
        return id;
      },
      async freshRun(claimed) {
        const connectionId = await this.freshConnection();
        const run = await triggerSync(t.db.raw, demo.id, { connectionId });
        if (claimed) await claimSync(t.db.raw, demo.id, { connectionId, workerId: 'matrix-fixture-worker', leaseSeconds: 600 });
        return { connectionId, syncId: run.id };
      },
      async freshServiceUser() {
        return (await createServiceUser(t.db, { tenantId: demo.id, name: `matrix-fixture-${++cellCounter}`, role: 'reader' })).id;
      },
      async freshToken() {
        const userId = await this.freshServiceUser();
        const created = await createToken(t.db, { tenantId: demo.id, serviceUserId: userId, expiresAt: new Date(Date.now() + DAY) });
        return { id: created.id, prefix: created.prefix };
      },
    };
  });
  afterAll(() => t?.dispose());

  it('builds the whole matrix', () => {
    expect(credentials).toHaveLength(23);
    expect(operations).toHaveLength(34);
  });

  describe.each(credentials)('$name', (credential) => {
    it.each(operations)('$name', async (op) => {
      env.cell = ++cellCounter;
      const cell = await op.cell(env);
      const expected = expectedOutcome(credential.acting, op, cell.request);
      const authorization = credential.header();
      if (credential.acting !== 'none' || credential.name !== 'no credential') expect(authorization).toBeTruthy();
      const viewerTenant =
        credential.acting === 'none' ? null : credential.acting === 'other-admin' ? t.tenants.other.id : t.tenants.demo.id;

      let status: number;
      let body: any;
      let data: unknown;
      const request = cell.request;
      if (request.surface === 'rest') {
        const response =
          request.body === undefined
            ? await rest(t.gateway, request.path, { method: request.method, authorization })
            : await restWithBody(t, request.method, request.path, request.body, authorization);
        status = response.status;
        body = response.body;
        if (expected === 'null' && op.missingIsNull) {
          // A claim that finds nothing of the caller's: 204, no body.
          expect(status, JSON.stringify(body)).toBe(204);
          await cell.after?.(false, viewerTenant);
          return;
        }
        expect(response.headers.get('content-type')).toMatch(/^application\/json/);
        if (expected === 'ok') {
          expect(status, JSON.stringify(body)).toBe(request.okStatus ?? 200);
          expect(typeof body.msg).toBe('string');
          data = body;
        } else {
          const [code, httpStatus] = {
            unauthenticated: ['UNAUTHORIZED', 401],
            forbidden: ['UNAUTHORIZED', 403],
            'not-found': ['NOT_FOUND', 404],
            null: ['NOT_FOUND', 404],
            conflict: ['CONFLICT', 409],
          }[expected] as [string, number];
          expect(status, JSON.stringify(body)).toBe(httpStatus);
          // The spec's error body, and nothing else.
          expect(Object.keys(body).sort()).toEqual(['error', 'msg']);
          expect(Object.keys(body.error).sort()).toEqual(['code', 'docs', 'req_id']);
          expect(typeof body.msg).toBe('string');
          expect(body.msg.length).toBeGreaterThan(0);
          expect(body.error.code).toBe(code);
          expect(body.error.docs).toBe(`http://gateway.test/docs/errors/${code}`);
          expect(body.error.req_id).toMatch(REQ_ID);
          expect(response.headers.get('x-request-id')).toBe(body.error.req_id);
        }
        if (status === 401) expect(response.headers.get('www-authenticate')).toBeTruthy();
      } else {
        const response = await graphql(t.gateway, request.query, { authorization, variables: request.variables ?? {} });
        status = response.status;
        body = response.body;
        const value = (body.data ?? null)?.[request.field] ?? null;
        if (expected === 'ok' || expected === 'null') {
          expect(status, JSON.stringify(body)).toBe(200);
          expect(body.errors, JSON.stringify(body)).toBeUndefined();
          if (expected === 'null') expect(value).toBeNull();
          else expect(value).not.toBeNull();
          data = value;
        } else {
          const [code, httpStatus] = {
            unauthenticated: ['UNAUTHORIZED', 401],
            forbidden: ['UNAUTHORIZED', 403],
            'not-found': ['NOT_FOUND', 404],
            conflict: ['CONFLICT', 409],
          }[expected] as [string, number];
          // A request refused before execution (no credential) has no data; a nullable field's error keeps data, so 200.
          expect(status, JSON.stringify(body)).toBe(op.nullableField && expected !== 'unauthenticated' ? 200 : httpStatus);
          expect(body.errors?.length, JSON.stringify(body)).toBeGreaterThan(0);
          for (const error of body.errors) expect(error.extensions?.code).toBe(code);
          expect(value).toBeNull();
        }
        if (status === 401) expect(response.headers.get('www-authenticate')).toBeTruthy();
      }

      if (expected === 'ok' && cell.ok) await cell.ok(data, viewerTenant as string);
      await cell.after?.(expected === 'ok', viewerTenant);

      // No other tenant's data: none of its ids (or token prefixes) anywhere in the response, and every
      // tenant-owned id in it is the caller's own (or one the caller sent).
      const text = JSON.stringify(body);
      const sent = new Set(cell.sent);
      const own = viewerTenant ? await idsOfTenant(t, viewerTenant) : new Set<string>();
      const foreignTenants = [t.tenants.demo.id, t.tenants.other.id].filter((id) => id !== viewerTenant);
      for (const tenantId of foreignTenants) {
        for (const id of await idsOfTenant(t, tenantId)) {
          if (!sent.has(id) && text.includes(id)) {
            throw new Error(`${credential.name} × ${op.name}: response shows ${id} of tenant ${tenantId}\n${text.slice(0, 2000)}`);
          }
        }
      }
      for (const id of text.match(TENANT_OWNED_ID) ?? []) {
        if (!sent.has(id)) expect(own.has(id), `${id} in ${text.slice(0, 500)}`).toBe(true);
      }
    });
  });
});
