import { randomBytes } from 'node:crypto';
import { type ActivityOrigin, prismaStatements, recordActivity } from '../db/activity.js';
import type { Database } from '../db/client.js';
import { inTransaction, type TransactionRunner } from '../db/write-transactions.js';
import { countRows, pageSql } from '../db/list-reads.js';
import { ApiError } from '../errors.js';
import type { Role } from '../generated/prisma/enums.js';
import { formatId, MAX_ID_LENGTH } from '../prefixed-ids.js';
import type { Columns, SqlColumn } from '../query/columns.js';
import { type OrderKey, orderKeys } from '../query/filter.js';
import { allOf, keysetOrder, keyValuesOf, keyValuesSql, raw, type Sql, sql } from '../query/sql.js';
import {
  hashClientSecret,
  newClientSecret,
  OAUTH_SCOPES,
  type OAuthScope,
  oauthRecordKey,
  parseScopeList,
  viewerOfScopes,
} from './oauth-clients.js';
import { printableName } from './printable-names.js';
import type { Viewer } from './viewer.js';

// Partners' applications of the gateway's authorization server (src/oauth/): the authorization code flow with
// PKCE, acting for a member of the application's tenant who approved it on the console's consent page. An
// approval is oidc-provider's Grant (kept in oauth_records with its codes and tokens under one grant id), so
// revoking an approval, deleting an application or removing a member deletes every token it led to; each
// request checks the token against its application, its member and that member's role as they are then.

/** What a member's role lets an application act with: a reader reads; an admin reads and writes; never engine. */
const MEMBER_SCOPES: Record<Role, readonly OAuthScope[]> = { reader: ['read'], admin: ['read', 'write'], engine: [] };

/** The scopes a member of `role` may give an application. */
export function scopesOfMember(role: Role): readonly OAuthScope[] {
  return MEMBER_SCOPES[role];
}

const MAX_APPLICATION_NAME_LENGTH = 100;
const MAX_REDIRECT_URIS = 10;
const MAX_REDIRECT_URI_LENGTH = 2000;
const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);

/** Redirect URIs as registered: absolute https (or http on a loopback address), no fragment; compared exactly. */
function parseRedirectUris(uris: readonly string[]): string[] {
  if (uris.length === 0 || uris.length > MAX_REDIRECT_URIS) {
    throw new ApiError('INVALID_QUERY', `redirect_uris must list 1 to ${MAX_REDIRECT_URIS} URIs`);
  }
  for (const uri of uris) {
    let url: URL;
    try {
      url = new URL(uri);
    } catch {
      throw new ApiError('INVALID_QUERY', `redirect URI ${JSON.stringify(uri.slice(0, 100))} is not an absolute URL`);
    }
    const loopbackHttp = url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname);
    if (uri.length > MAX_REDIRECT_URI_LENGTH || (url.protocol !== 'https:' && !loopbackHttp) || url.hash !== '' || uri.includes('#')) {
      throw new ApiError(
        'INVALID_QUERY',
        `redirect URI ${JSON.stringify(uri.slice(0, 100))} must be https (http only on 127.0.0.1, [::1] or localhost), without a fragment, at most ${MAX_REDIRECT_URI_LENGTH} characters`,
      );
    }
  }
  return [...new Set(uris)];
}

export interface OAuthApplicationInfo {
  id: string;
  name: string;
  redirectUris: string[];
  scope: string;
  createdAt: Date;
  createdBy: string | null;
}

const applicationSelect = { id: true, name: true, redirectUris: true, scope: true, createdAt: true, createdBy: true } as const;

/** Registers a partner's application in the tenant; its client secret is returned here once. */
export async function createOAuthApplication(
  sql: TransactionRunner,
  input: {
    tenantId: string;
    name: string;
    redirectUris: readonly string[];
    scope?: string | null | undefined;
    createdBy?: string;
    activity?: ActivityOrigin;
  },
): Promise<OAuthApplicationInfo & { clientSecret: string }> {
  const name = printableName(input.name, 'an application name', MAX_APPLICATION_NAME_LENGTH);
  const redirectUris = parseRedirectUris(input.redirectUris);
  const scope = (
    input.scope === null || input.scope === undefined || input.scope.trim() === '' ? [...OAUTH_SCOPES] : parseScopeList(input.scope)
  ).join(' ');
  const clientSecret = newClientSecret();
  // Raw statements in a transaction runner, so that an Idempotency-Key's reservation can join it.
  return inTransaction(sql, async (tx) => {
    const [row] = await tx.query<ApplicationRow>(
      `INSERT INTO oauth_applications (id, tenant_id, name, redirect_uris, scope, secret_hash, created_by)
       VALUES ($1, $2, $3, $4::text[], $5, $6, $7)
       RETURNING ${APPLICATION_COLUMNS}`,
      [
        formatId('oaa', randomBytes(16)),
        input.tenantId,
        name,
        redirectUris,
        scope,
        hashClientSecret(clientSecret),
        input.createdBy ?? null,
      ],
    );
    const application = applicationOfRow(row!);
    await recordActivity(tx, input.tenantId, input.activity, {
      action: 'oauth_application.created',
      targetId: application.id,
      targetName: name,
    });
    return { ...application, clientSecret };
  });
}

const APPLICATION_COLUMNS = 'id, name, redirect_uris, scope, created_at, created_by';

interface ApplicationRow {
  id: string;
  name: string;
  redirect_uris: string[];
  scope: string;
  created_at: Date | string;
  created_by: string | null;
}

function applicationOfRow(row: ApplicationRow): OAuthApplicationInfo {
  return {
    id: row.id,
    name: row.name,
    redirectUris: row.redirect_uris,
    scope: row.scope,
    createdAt: new Date(row.created_at),
    createdBy: row.created_by,
  };
}

/** One application of the tenant, or null. */
export async function findOAuthApplication(db: Database, tenantId: string, id: string): Promise<OAuthApplicationInfo | null> {
  if (id.length > MAX_ID_LENGTH) return null;
  const [row] = await db.raw.query<ApplicationRow>(
    `SELECT ${APPLICATION_COLUMNS} FROM oauth_applications WHERE tenant_id = $1 AND id = $2`,
    [tenantId, id],
  );
  return row ? applicationOfRow(row) : null;
}

/** A tenant's applications, newest first. */
export function listOAuthApplications(db: Database, tenantId: string): Promise<OAuthApplicationInfo[]> {
  return db.prisma.oAuthApplication.findMany({
    where: { tenantId },
    orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
    select: applicationSelect,
  });
}

/** Deletes an application of the tenant with every approval, code and token of it: they stop at once. */
export async function deleteOAuthApplication(
  db: Database,
  input: { tenantId: string; applicationId: string; activity?: ActivityOrigin },
): Promise<{ id: string }> {
  if (input.applicationId.length > MAX_ID_LENGTH) throw new ApiError('NOT_FOUND', 'no such OAuth application');
  return db.prisma.$transaction(async (tx) => {
    const application = await tx.oAuthApplication.findFirst({
      where: { id: input.applicationId, tenantId: input.tenantId },
      select: { id: true, name: true },
    });
    if (!application) throw new ApiError('NOT_FOUND', 'no such OAuth application');
    await recordActivity(prismaStatements(tx), input.tenantId, input.activity, {
      action: 'oauth_application.deleted',
      targetId: application.id,
      targetName: application.name,
    });
    await tx.$executeRaw`DELETE FROM oauth_records WHERE client_id = ${application.id}`;
    await tx.oAuthApplication.deleteMany({ where: { id: application.id, tenantId: input.tenantId } });
    return { id: application.id };
  });
}

/** The application as the consent page and the provider read it, or undefined. */
export async function oauthApplicationOf(
  db: Database,
  clientId: string,
): Promise<(OAuthApplicationInfo & { tenantId: string; tenantName: string; tenantSlug: string; secretHash: Buffer }) | undefined> {
  if (typeof clientId !== 'string' || clientId.length > MAX_ID_LENGTH || !clientId.startsWith('oaa_')) return undefined;
  const [row] = await db.raw.query<{
    id: string;
    tenant_id: string;
    tenant_name: string;
    tenant_slug: string;
    name: string;
    redirect_uris: string[];
    scope: string;
    secret_hash: Buffer;
    created_at: Date;
    created_by: string | null;
  }>(
    `SELECT a.id, a.tenant_id, t.name AS tenant_name, t.slug AS tenant_slug, a.name, a.redirect_uris, a.scope, a.secret_hash,
            a.created_at, a.created_by
       FROM oauth_applications a JOIN tenants t ON t.id = a.tenant_id WHERE a.id = $1`,
    [clientId],
  );
  if (!row) return undefined;
  return {
    id: row.id,
    tenantId: row.tenant_id,
    tenantName: row.tenant_name,
    tenantSlug: row.tenant_slug,
    name: row.name,
    redirectUris: row.redirect_uris,
    scope: row.scope,
    secretHash: Buffer.from(row.secret_hash),
    createdAt: new Date(row.created_at),
    createdBy: row.created_by,
  };
}

/** An application as oidc-provider reads it (its `Client` model): the code flow and refresh tokens only. */
export async function oauthApplicationMetadata(db: Database, clientId: string): Promise<Record<string, unknown> | undefined> {
  const application = await oauthApplicationOf(db, clientId);
  if (!application) return undefined;
  return {
    client_id: application.id,
    client_name: application.name,
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    redirect_uris: application.redirectUris,
    scope: application.scope,
    token_endpoint_auth_method: 'client_secret_basic',
    // The stored hash stands for the secret (see src/oauth/provider.ts).
    client_secret: application.secretHash.toString('base64url'),
  };
}

/** Whether the member is (still) one of the tenant. */
export async function memberOfTenant(db: Database, tenantId: string, memberId: string): Promise<boolean> {
  if (memberId.length > MAX_ID_LENGTH) return false;
  const rows = await db.raw.query('SELECT 1 FROM members WHERE tenant_id = $1 AND id = $2', [tenantId, memberId]);
  return rows.length > 0;
}

/** The id of the member's unexpired approval of the application (its grant), if there is one. */
export async function approvalIdOf(db: Database, memberId: string, applicationId: string): Promise<string | undefined> {
  const [row] = await db.raw.query<{ grant_id: string }>(
    `SELECT grant_id FROM oauth_records
      WHERE model = 'Grant' AND account_id = $1 AND client_id = $2 AND (expires_at IS NULL OR expires_at > now())
      ORDER BY expires_at DESC NULLS FIRST LIMIT 1`,
    [memberId, applicationId],
  );
  return row?.grant_id;
}

export interface OAuthApproval {
  /** The grant's id. */
  id: string;
  applicationId: string;
  applicationName: string;
  memberId: string;
  memberEmail: string;
  scope: string;
  approvedAt: Date;
  expiresAt: Date | null;
}

const APPROVALS_FROM = raw(
  'FROM oauth_records "r" JOIN oauth_applications "a" ON "a"."id" = "r"."client_id" JOIN members "m" ON "m"."tenant_id" = "a"."tenant_id" AND "m"."id" = "r"."account_id"',
);

/** The filterable and sortable columns of an approval, by field name. */
export const APPROVAL_COLUMNS = {
  id: { sql: '"r"."grant_id"', kind: 'string', nullable: false },
  applicationId: { sql: '"a"."id"', kind: 'string', nullable: false },
  applicationName: { sql: '"a"."name"', kind: 'string', nullable: false },
  memberId: { sql: '"m"."id"', kind: 'string', nullable: false },
  memberEmail: { sql: '"m"."email"', kind: 'string', nullable: false },
  approvedAt: { sql: `to_timestamp(("r"."payload"->>'iat')::double precision)`, kind: 'dateTime', nullable: false },
  expiresAt: { sql: '"r"."expires_at"', kind: 'dateTime', nullable: true },
} as const satisfies Columns<SqlColumn>;

/** Newest first. */
export const APPROVAL_DEFAULT_ORDER = [
  { field: 'approvedAt', direction: 'DESC' },
  { field: 'id', direction: 'DESC' },
] as const;

/** A page read of the approvals: the tenant's, of one member when `memberId` is given; only unexpired ones. */
export interface ApprovalListQuery {
  tenantId: string;
  memberId: string | null;
  where: Sql;
  keys: readonly OrderKey<SqlColumn>[];
  orderBy: Sql;
  start: Sql;
  take: number;
  skip: number;
}

function approvalScope(query: Pick<ApprovalListQuery, 'tenantId' | 'memberId' | 'where'>): Sql {
  return allOf([
    sql`"r"."model" = 'Grant' AND "a"."tenant_id" = ${query.tenantId} AND "m"."tenant_id" = ${query.tenantId}`,
    query.memberId === null ? allOf([]) : sql`"m"."id" = ${query.memberId}`,
    sql`("r"."expires_at" IS NULL OR "r"."expires_at" > now())`,
    query.where,
  ]);
}

/** An approval with its sort keys' values (for the next page's cursor). */
export type ApprovalRow = OAuthApproval & { keyValues: (string | null)[] };

/** A page of approvals (the list's where, order and window). */
export async function readOAuthApprovalPage(db: Database, query: ApprovalListQuery): Promise<ApprovalRow[]> {
  const keys = query.keys.length > 0 ? sql`, ${keyValuesSql(query.keys)}` : sql``;
  const statement = sql`SELECT "r"."grant_id", "a"."id" AS "application_id", "a"."name" AS "application_name", "m"."id" AS "member_id", "m"."email", "r"."payload", "r"."expires_at"${keys} ${APPROVALS_FROM} WHERE ${allOf([approvalScope(query), query.start])} ORDER BY ${query.orderBy} ${pageSql(query.take, query.skip)}`;
  const rows = await db.raw.query<ApprovalSqlRow & Record<string, unknown>>(statement.text, statement.values);
  return rows.map((row) => ({ ...approvalOfRow(row), keyValues: keyValuesOf(row, query.keys.length) }));
}

/** How many approvals the page read's scope and where match. */
export function countOAuthApprovals(db: Database, query: Pick<ApprovalListQuery, 'tenantId' | 'memberId' | 'where'>): Promise<number> {
  return countRows(db.raw, APPROVALS_FROM, approvalScope(query));
}

interface ApprovalSqlRow {
  grant_id: string;
  application_id: string;
  application_name: string;
  member_id: string;
  email: string;
  payload: Record<string, unknown> | string;
  expires_at: Date | string | null;
}

function approvalOfRow(row: ApprovalSqlRow): OAuthApproval {
  const payload = typeof row.payload === 'string' ? (JSON.parse(row.payload) as Record<string, unknown>) : row.payload;
  const resources = (payload.resources ?? {}) as Record<string, string>;
  const scope = [...new Set(Object.values(resources).flatMap((value) => value.split(' ')))].filter(Boolean).join(' ');
  return {
    id: row.grant_id,
    applicationId: row.application_id,
    applicationName: row.application_name,
    memberId: row.member_id,
    memberEmail: row.email,
    scope,
    approvedAt: new Date(Number(payload.iat) * 1000),
    expiresAt: row.expires_at ? new Date(row.expires_at) : null,
  };
}

/**
 * Revokes an approval of the tenant (of the member when `memberId` is given): the grant with its codes, refresh
 * and access tokens, which stop at once.
 */
export async function revokeOAuthApproval(
  db: Database,
  input: { tenantId: string; approvalId: string; memberId?: string | undefined; activity?: ActivityOrigin },
): Promise<{ id: string }> {
  if (input.approvalId.length > MAX_ID_LENGTH) throw new ApiError('NOT_FOUND', 'no such approval');
  const keys = orderKeys([...APPROVAL_DEFAULT_ORDER], APPROVAL_COLUMNS, []);
  const [approval] = await readOAuthApprovalPage(db, {
    tenantId: input.tenantId,
    memberId: input.memberId ?? null,
    where: sql`"r"."grant_id" = ${input.approvalId}`,
    ...keysetOrder(keys, null),
    take: 1,
    skip: 0,
  });
  if (!approval) throw new ApiError('NOT_FOUND', 'no such approval');
  await db.prisma.$transaction(async (tx) => {
    await recordActivity(prismaStatements(tx), input.tenantId, input.activity, {
      action: 'oauth_application.approval_revoked',
      targetId: approval.applicationId,
      targetName: `${approval.applicationName} (${approval.memberEmail})`,
    });
    await tx.$executeRaw`DELETE FROM oauth_records WHERE grant_id = ${approval.id}`;
  });
  return { id: approval.id };
}

/**
 * The viewer of an access token an application got for a member, or null: unknown, expired, revoked, for
 * another audience, of a deleted application or a removed member, or with no scope left within both the
 * application's scopes and the member's role as they are now.
 */
export async function verifyApplicationAccessToken(
  db: Database,
  value: string,
  audience: string,
  now = new Date(),
): Promise<Viewer | null> {
  const [row] = await db.raw.query<{
    payload: Record<string, unknown> | string;
    tenant_id: string;
    scope: string;
    member_id: string;
    role: Role;
  }>(
    `SELECT r.payload, a.tenant_id, a.scope, m.id AS member_id, m.role
       FROM oauth_records r
       JOIN oauth_applications a ON a.id = r.client_id
       JOIN members m ON m.tenant_id = a.tenant_id AND m.id = r.account_id
      WHERE r.model = 'AccessToken' AND r.id = $1 AND r.expires_at > $2::timestamptz`,
    [oauthRecordKey(value), now.toISOString()],
  );
  if (!row) return null;
  const payload = typeof row.payload === 'string' ? (JSON.parse(row.payload) as Record<string, unknown>) : row.payload;
  const member = new Set<string>(scopesOfMember(row.role));
  return viewerOfScopes(payload, audience, now, {
    allowed: (scope) => row.scope.split(' ').includes(scope) && member.has(scope),
    tenantId: row.tenant_id,
    subject: row.member_id,
    ceiling: row.role,
  });
}
