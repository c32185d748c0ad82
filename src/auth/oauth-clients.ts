import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { type ActivityOrigin, prismaStatements, recordActivity } from '../db/activity.js';
import type { Database } from '../db/client.js';
import { inTransaction, type TransactionRunner } from '../db/write-transactions.js';
import { ApiError } from '../errors.js';
import type { Role } from '../generated/prisma/enums.js';
import { formatId, MAX_ID_LENGTH } from '../prefixed-ids.js';
import { permissionsOf, type Permission } from './permissions.js';
import { printableName } from './printable-names.js';
import type { Viewer } from './viewer.js';

// OAuth 2.0 clients of the gateway's own authorization server (src/oauth/): each belongs to a service user and
// acts with that service user's tenant and, at most, its role. This module owns their rows and the check of an
// access token the server issued; src/oauth/ runs the protocol itself (oidc-provider).

/** The scopes a token may carry, each the permissions of one role. */
export const OAUTH_SCOPES = ['read', 'write', 'engine'] as const;
export type OAuthScope = (typeof OAUTH_SCOPES)[number];

const SCOPE_ROLES: Record<OAuthScope, Role> = { read: 'reader', write: 'admin', engine: 'engine' };

/** What each scope allows, for the reference and the discovery document. */
export const OAUTH_SCOPE_DESCRIPTIONS: Record<OAuthScope, string> = {
  read: 'read what the reader role reads: the catalog, connections and sync history',
  write: 'everything the admin role may do within the tenant',
  engine: 'what a sync engine does: read connections and runs, claim runs and report on them',
};

export const CLIENT_AUTH_METHODS = ['client_secret_basic', 'private_key_jwt'] as const;
export type ClientAuthMethod = (typeof CLIENT_AUTH_METHODS)[number];

const MAX_CLIENT_NAME_LENGTH = 100;
/** Client secrets: 32 random bytes, base64url; only their SHA-256 is stored (256 bits: nothing to brute-force). */
const CLIENT_SECRET_BYTES = 32;
const CLIENT_SECRET_MARKER = 'igw_cs_';

function isScope(value: string): value is OAuthScope {
  return (OAUTH_SCOPES as readonly string[]).includes(value);
}

/** Whether every permission of `scope`'s role is one `role` holds. */
function scopeWithinRole(scope: OAuthScope, role: Role): boolean {
  const held = permissionsOf(role);
  return [...permissionsOf(SCOPE_ROLES[scope])].every((permission) => held.has(permission));
}

/** The scopes a service user of `role` may give its clients: those whose permissions it holds. */
export function scopesWithinRole(role: Role): OAuthScope[] {
  return OAUTH_SCOPES.filter((scope) => scopeWithinRole(scope, role));
}

/** A space-separated scope list as input: known scopes, each once (400 otherwise). */
export function parseScopeList(scope: string): OAuthScope[] {
  const scopes = [...new Set(scope.trim().split(/\s+/))];
  const unknown = scopes.filter((value) => !isScope(value));
  if (unknown.length > 0) throw new ApiError('INVALID_QUERY', `unknown scope ${unknown.join(', ')}: scopes are ${OAUTH_SCOPES.join(', ')}`);
  return scopes as OAuthScope[];
}

/** A space-separated scope list as input: known scopes, each within `role` (400 otherwise). */
function parseClientScope(scope: string | null | undefined, role: Role): OAuthScope[] {
  if (scope === null || scope === undefined || scope.trim() === '') return scopesWithinRole(role);
  const scopes = parseScopeList(scope);
  const above = scopes.filter((value) => !scopeWithinRole(value, role));
  if (above.length > 0) {
    throw new ApiError('INVALID_QUERY', `the service user's role (${role}) does not hold scope ${above.join(', ')}`);
  }
  return scopes as OAuthScope[];
}

/** A new client secret: shown once, only its hash is stored. */
export function newClientSecret(): string {
  return `${CLIENT_SECRET_MARKER}${randomBytes(CLIENT_SECRET_BYTES).toString('base64url')}`;
}

/** SHA-256 of a client secret, as stored. */
export function hashClientSecret(secret: string): Buffer {
  return createHash('sha256').update(secret).digest();
}

/** Whether `secret` is the one whose hash was stored (constant time). */
export function clientSecretMatches(secret: unknown, storedHash: string): boolean {
  if (typeof secret !== 'string' || secret.length > 200) return false;
  const stored = Buffer.from(storedHash, 'base64url');
  const actual = hashClientSecret(secret);
  return stored.length === actual.length && timingSafeEqual(stored, actual);
}

/**
 * The key a record of the authorization server's store is kept under: SHA-256 (base64url) of oidc-provider's id.
 * For an access token that id is its value, so the table holds no usable token.
 */
export function oauthRecordKey(id: string): string {
  return createHash('sha256').update(id).digest('base64url');
}

/** A public JWK Set as `private_key_jwt` needs it: keys without private members. */
function parsePublicJwks(jwks: unknown): { keys: Record<string, unknown>[] } {
  const keys = (jwks as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(keys) || keys.length === 0 || keys.length > 10) {
    throw new ApiError('INVALID_QUERY', 'jwks must be a JWK Set ({"keys": [...]}) of 1 to 10 public keys');
  }
  for (const key of keys) {
    if (typeof key !== 'object' || key === null || typeof (key as { kty?: unknown }).kty !== 'string') {
      throw new ApiError('INVALID_QUERY', 'each key of jwks must be a JWK with a kty');
    }
    if (['d', 'p', 'q', 'dp', 'dq', 'qi', 'k'].some((member) => member in key)) {
      throw new ApiError('INVALID_QUERY', 'jwks must hold public keys only: a private or symmetric key was given');
    }
  }
  return { keys: keys as Record<string, unknown>[] };
}

export interface OAuthClientInfo {
  id: string;
  name: string | null;
  serviceUserId: string;
  authMethod: string;
  scope: string;
  createdAt: Date;
  createdBy: string | null;
}

export interface CreatedOAuthClient extends OAuthClientInfo {
  /** The client secret (client_secret_basic): shown once, never stored; null for private_key_jwt. */
  clientSecret: string | null;
}

const clientSelect = {
  id: true,
  name: true,
  serviceUserId: true,
  authMethod: true,
  scope: true,
  createdAt: true,
  createdBy: true,
} as const;

/**
 * Creates a client of a service user of the tenant. Without `jwks` it authenticates with a secret (returned
 * here once); with `jwks`, by `private_key_jwt` assertions signed with one of those keys. Its scopes default
 * to all its service user's role holds, and may not exceed them.
 */
export async function createOAuthClient(
  sql: TransactionRunner,
  input: {
    tenantId: string;
    serviceUserId: string;
    name?: string | null | undefined;
    scope?: string | null | undefined;
    jwks?: unknown;
    createdBy?: string;
    activity?: ActivityOrigin;
  },
): Promise<CreatedOAuthClient> {
  if (input.serviceUserId.length > MAX_ID_LENGTH) throw new ApiError('NOT_FOUND', 'no such service user');
  const name =
    input.name === null || input.name === undefined || input.name.trim() === ''
      ? null
      : printableName(input.name, 'a client name', MAX_CLIENT_NAME_LENGTH);
  const jwks = input.jwks === null || input.jwks === undefined ? null : parsePublicJwks(input.jwks);
  const clientSecret = jwks ? null : newClientSecret();
  // Raw statements in a transaction runner, so that an Idempotency-Key's reservation can join it.
  return inTransaction(sql, async (tx) => {
    const [user] = await tx.query<{ role: Role }>('SELECT role FROM service_users WHERE tenant_id = $1 AND id = $2', [
      input.tenantId,
      input.serviceUserId,
    ]);
    if (!user) throw new ApiError('NOT_FOUND', 'no such service user');
    const scope = parseClientScope(input.scope, user.role).join(' ');
    const [row] = await tx.query<ClientRow>(
      `INSERT INTO oauth_clients (id, tenant_id, service_user_id, name, auth_method, secret_hash, jwks, scope, created_by)
       VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8, $9)
       RETURNING ${CLIENT_COLUMNS}`,
      [
        formatId('oac', randomBytes(16)),
        input.tenantId,
        input.serviceUserId,
        name,
        jwks ? 'private_key_jwt' : 'client_secret_basic',
        clientSecret ? hashClientSecret(clientSecret) : null,
        jwks ? JSON.stringify(jwks) : null,
        scope,
        input.createdBy ?? null,
      ],
    );
    const client = clientOfRow(row!);
    await recordActivity(tx, input.tenantId, input.activity, {
      action: 'oauth_client.created',
      targetId: client.id,
      targetName: name ?? client.id,
    });
    return { ...client, clientSecret };
  });
}

const CLIENT_COLUMNS = 'id, name, service_user_id, auth_method, scope, created_at, created_by';

interface ClientRow {
  id: string;
  name: string | null;
  service_user_id: string;
  auth_method: string;
  scope: string;
  created_at: Date | string;
  created_by: string | null;
}

function clientOfRow(row: ClientRow): OAuthClientInfo {
  return {
    id: row.id,
    name: row.name,
    serviceUserId: row.service_user_id,
    authMethod: row.auth_method,
    scope: row.scope,
    createdAt: new Date(row.created_at),
    createdBy: row.created_by,
  };
}

/** One client of the tenant, or null. */
export async function findOAuthClient(db: Database, tenantId: string, id: string): Promise<OAuthClientInfo | null> {
  if (id.length > MAX_ID_LENGTH) return null;
  const [row] = await db.raw.query<ClientRow>(`SELECT ${CLIENT_COLUMNS} FROM oauth_clients WHERE tenant_id = $1 AND id = $2`, [
    tenantId,
    id,
  ]);
  return row ? clientOfRow(row) : null;
}

/** A tenant's OAuth clients, newest first. */
export function listOAuthClients(db: Database, tenantId: string): Promise<OAuthClientInfo[]> {
  return db.prisma.oAuthClient.findMany({
    where: { tenantId },
    orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
    select: clientSelect,
  });
}

/**
 * Deletes a client of the tenant and what the authorization server keeps for it: its access tokens stop
 * working at once (each is checked against its client on every request as well).
 */
export async function deleteOAuthClient(
  db: Database,
  input: { tenantId: string; clientId: string; activity?: ActivityOrigin },
): Promise<{ id: string }> {
  if (input.clientId.length > MAX_ID_LENGTH) throw new ApiError('NOT_FOUND', 'no such OAuth client');
  return db.prisma.$transaction(async (tx) => {
    const client = await tx.oAuthClient.findFirst({
      where: { id: input.clientId, tenantId: input.tenantId },
      select: { id: true, name: true },
    });
    if (!client) throw new ApiError('NOT_FOUND', 'no such OAuth client');
    await recordActivity(prismaStatements(tx), input.tenantId, input.activity, {
      action: 'oauth_client.deleted',
      targetId: client.id,
      targetName: client.name ?? client.id,
    });
    await tx.$executeRaw`DELETE FROM oauth_records WHERE payload->>'clientId' = ${client.id}`;
    await tx.oAuthClient.deleteMany({ where: { id: client.id, tenantId: input.tenantId } });
    return { id: client.id };
  });
}

/** A client as oidc-provider reads it (its `Client` model), or undefined when there is none. */
export async function oauthClientMetadata(db: Database, clientId: string): Promise<Record<string, unknown> | undefined> {
  if (typeof clientId !== 'string' || clientId.length > MAX_ID_LENGTH) return undefined;
  const [row] = await db.raw.query<{ auth_method: string; secret_hash: Buffer | null; jwks: unknown; scope: string }>(
    'SELECT auth_method, secret_hash, jwks, scope FROM oauth_clients WHERE id = $1',
    [clientId],
  );
  if (!row) return undefined;
  return {
    client_id: clientId,
    grant_types: ['client_credentials'],
    response_types: [],
    redirect_uris: [],
    scope: row.scope,
    token_endpoint_auth_method: row.auth_method,
    // The stored hash stands for the secret: src/oauth/provider.ts compares a presented secret's hash with it.
    ...(row.secret_hash ? { client_secret: Buffer.from(row.secret_hash).toString('base64url') } : {}),
    ...(row.jwks ? { jwks: row.jwks } : {}),
  };
}

/** oidc-provider's opaque access tokens: 43 characters of base64url (256 bits). */
const ACCESS_TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/;

/** Shape of an access token of this server; says nothing about validity. */
export function looksLikeOAuthAccessToken(value: string): boolean {
  return ACCESS_TOKEN_PATTERN.test(value);
}

/**
 * The viewer of an access token this server issued, or null: unknown, expired, revoked, for another audience,
 * or whose client or service user is gone. Its role is the widest its scopes give within its client's scopes
 * and its service user's role as they are now (a demoted service user's tokens shrink at their next request).
 */
export async function verifyOAuthAccessToken(db: Database, value: string, audience: string, now = new Date()): Promise<Viewer | null> {
  if (!looksLikeOAuthAccessToken(value)) return null;
  const [row] = await db.raw.query<{
    payload: Record<string, unknown>;
    tenant_id: string;
    scope: string;
    service_user_id: string;
    role: Role;
  }>(
    `SELECT r.payload, c.tenant_id, c.scope, c.service_user_id, su.role
       FROM oauth_records r
       JOIN oauth_clients c ON c.id = r.payload->>'clientId'
       JOIN service_users su ON su.tenant_id = c.tenant_id AND su.id = c.service_user_id
      WHERE r.model IN ('ClientCredentials', 'AccessToken') AND r.id = $1 AND r.expires_at > $2::timestamptz`,
    [oauthRecordKey(value), now.toISOString()],
  );
  if (!row) return null;
  const clientScopes = new Set(row.scope.split(' '));
  return viewerOfScopes(row.payload, audience, now, {
    allowed: (scope) => clientScopes.has(scope) && scopeWithinRole(scope, row.role),
    tenantId: row.tenant_id,
    subject: row.service_user_id,
    ceiling: row.role,
  });
}

/**
 * The viewer of a stored access token's payload: unexpired, for `audience`, with the permissions of its scopes
 * that are still `allowed`; null when none is.
 */
export function viewerOfScopes(
  payload: Record<string, unknown>,
  audience: string,
  now: Date,
  holder: { allowed: (scope: OAuthScope) => boolean; tenantId: string; subject: string; ceiling: Role },
): Viewer | null {
  if (typeof payload.exp !== 'number' || payload.exp * 1000 <= now.getTime()) return null;
  const aud = payload.aud;
  if (!(aud === audience || (Array.isArray(aud) && aud.length === 1 && aud[0] === audience))) return null;
  const granted = (typeof payload.scope === 'string' ? payload.scope.split(' ') : []).filter(isScope).filter(holder.allowed);
  if (granted.length === 0) return null;
  const permissions = new Set<Permission>(granted.flatMap((scope) => [...permissionsOf(SCOPE_ROLES[scope])]));
  return {
    tenantId: holder.tenantId,
    role: roleOfPermissions(permissions, holder.ceiling),
    permissions,
    subject: holder.subject,
    credential: 'oauth',
    tokenId: String(payload.clientId),
  };
}

/** The narrowest role holding every permission (for messages; the permissions themselves decide). */
function roleOfPermissions(permissions: ReadonlySet<Permission>, ceiling: Role): Role {
  const roles: Role[] = ['reader', 'engine', 'admin'];
  return roles.find((role) => [...permissions].every((permission) => permissionsOf(role).has(permission))) ?? ceiling;
}
