import { type CredentialCache, credentialsChanged } from './credential-cache.js';
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Viewer } from './viewer.js';
import { type ActivityOrigin, recordActivity } from '../db/activity.js';
import type { Database } from '../db/client.js';
import { ApiError } from '../errors.js';
import { ID_ALPHABET, MAX_ID_LENGTH, newId } from '../prefixed-ids.js';
import { isRole, permissionsOf } from './permissions.js';
import { printableName } from './printable-names.js';
import { DEFAULT_TOKEN_CAPS, type TokenCaps } from '../domain/token-caps.js';

/**
 * Personal access tokens look like `igw_pat_<prefix>_<secret>`:
 * - the fixed `igw_pat_` marker lets secret scanners (and people) recognize a leaked token;
 * - `prefix` (12 chars of the id alphabet, 60 random bits) is public: stored as is, unique, used for lookup
 *   and shown in listings so a token can be identified without revealing it;
 * - `secret` is 32 random bytes, base64url without padding (43 chars). Only SHA-256 of those bytes is stored:
 *   a plain hash is enough because the secret has 256 bits of entropy (nothing to brute-force, no need for a
 *   slow KDF that would cost CPU on every request).
 */
const TOKEN_MARKER = 'igw_pat_';
const TOKEN_PREFIX_LENGTH = 12;
const SECRET_BYTES = 32;
const SECRET_LENGTH = 43;
const TOKEN_LENGTH = TOKEN_MARKER.length + TOKEN_PREFIX_LENGTH + 1 + SECRET_LENGTH;
const TOKEN_PATTERN = new RegExp(`^${TOKEN_MARKER}([${ID_ALPHABET}]{${TOKEN_PREFIX_LENGTH}})_([A-Za-z0-9_-]{${SECRET_LENGTH}})$`);

export const MAX_TOKEN_LIFETIME_DAYS = 366;
/** last_used_at is informational; writing it on every request would turn each read into a write. */
export const LAST_USED_THROTTLE_MS = 60_000;

const DAY_MS = 86_400_000;

/** A token's name says what it is for ("CI deploys"); the migration bounds it the same way. */
export const MAX_TOKEN_NAME_LENGTH = 100;

/** A token's optional name: absent or blank is no name; otherwise printable, 1 to MAX_TOKEN_NAME_LENGTH characters. */
export function normalizeTokenName(name: string | null | undefined): string | null {
  if (name === null || name === undefined || (typeof name === 'string' && name.trim() === '')) return null;
  return printableName(name, 'a token name', MAX_TOKEN_NAME_LENGTH);
}

/** How the activity log names a token: its name (when it has one) and the public part of its value. */
function tokenTargetName(prefix: string, name: string | null): string {
  return name === null ? `${TOKEN_MARKER}${prefix}` : `${name} (${TOKEN_MARKER}${prefix})`;
}

interface CreatedToken {
  id: string;
  /** The full token value. Returned once, never stored. */
  token: string;
  prefix: string;
  name: string | null;
  expiresAt: Date;
}

export interface TokenInfo {
  id: string;
  name: string | null;
  prefix: string;
  serviceUserId: string;
  serviceUserName: string;
  expiresAt: Date;
  createdAt: Date;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
}

function newPrefix(): string {
  // 256 is a multiple of 32, so `byte % 32` is unbiased.
  let out = '';
  for (const byte of randomBytes(TOKEN_PREFIX_LENGTH)) out += ID_ALPHABET[byte % 32];
  return out;
}

function hashSecret(secret: Buffer): Buffer {
  return createHash('sha256').update(secret).digest();
}

/** Strict format check; anything that is not exactly a token we could have issued is null. */
export function parsePersonalAccessToken(value: string): { prefix: string; secret: string } | null {
  if (typeof value !== 'string' || value.length !== TOKEN_LENGTH) return null;
  const match = TOKEN_PATTERN.exec(value);
  if (!match) return null;
  const [, prefix, secret] = match;
  if (prefix === undefined || secret === undefined) return null;
  // 43 base64url chars carry 258 bits; only the canonical encoding of 32 bytes (last 2 bits zero) is ours.
  if (Buffer.from(secret, 'base64url').toString('base64url') !== secret) return null;
  return { prefix, secret };
}

/** Checks an expiry chosen by a user: in the future and at most MAX_TOKEN_LIFETIME_DAYS ahead. */
export function validateTokenExpiry(expiresAt: Date, now: Date = new Date()): void {
  if (!(expiresAt instanceof Date) || Number.isNaN(expiresAt.getTime())) {
    throw new ApiError('INVALID_QUERY', 'the token expiry is not a valid date');
  }
  if (expiresAt.getTime() <= now.getTime()) {
    throw new ApiError('INVALID_QUERY', 'the token expiry must be in the future');
  }
  if (expiresAt.getTime() > now.getTime() + MAX_TOKEN_LIFETIME_DAYS * DAY_MS) {
    throw new ApiError('INVALID_QUERY', `the token expiry must be at most ${MAX_TOKEN_LIFETIME_DAYS} days ahead`);
  }
}

/** PostgreSQL's SQLSTATEs for a broken foreign key and a duplicate key. */
const FOREIGN_KEY_VIOLATION = '23503';
const UNIQUE_VIOLATION = '23505';

/**
 * Creates a token, unless the service user or the tenant already holds as many active tokens (neither revoked
 * nor expired) as `caps` allow: CONFLICT then, saying which cap and how to make room. The count and the insert
 * are one step per tenant (an advisory lock), so tokens created at once cannot pass a cap together.
 */
export async function createToken(
  db: Database,
  input: {
    tenantId: string;
    serviceUserId: string;
    expiresAt: Date;
    name?: string | null | undefined;
    createdBy?: string;
    activity?: ActivityOrigin;
  },
  now: Date = new Date(),
  caps: TokenCaps = DEFAULT_TOKEN_CAPS,
): Promise<CreatedToken> {
  validateTokenExpiry(input.expiresAt, now);
  const name = normalizeTokenName(input.name);
  const secretBytes = randomBytes(SECRET_BYTES);
  const secretHash = hashSecret(secretBytes);
  const secret = secretBytes.toString('base64url');
  // A prefix collision (60 random bits) is astronomically unlikely, but it must not fail a user's request.
  for (let attempt = 0; ; attempt++) {
    const prefix = newPrefix();
    try {
      const row = await db.raw.transaction(async (tx) => {
        await tx.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`tokens:${input.tenantId}`]);
        const [active] = await tx.query<{ user: number; tenant: number }>(
          `SELECT count(*) FILTER (WHERE "t"."service_user_id" = $2)::int AS "user", count(*)::int AS "tenant"
           FROM "public"."tokens" AS "t"
           WHERE "t"."tenant_id" = $1 AND "t"."revoked_at" IS NULL AND "t"."expires_at" > $3::timestamptz`,
          [input.tenantId, input.serviceUserId, now.toISOString()],
        );
        if ((active?.user ?? 0) >= caps.perServiceUser) {
          throw new ApiError(
            'CONFLICT',
            `the service user has ${active!.user} active tokens, the most one may hold (TOKENS_PER_SERVICE_USER is ${caps.perServiceUser}): revoke one first`,
          );
        }
        if ((active?.tenant ?? 0) >= caps.perTenant) {
          throw new ApiError(
            'CONFLICT',
            `the tenant has ${active!.tenant} active tokens, the most it may hold (TOKENS_PER_TENANT is ${caps.perTenant}): revoke one first`,
          );
        }
        // The composite foreign key (tenant_id, service_user_id) guarantees the service user is in the tenant.
        const [created] = await tx.query<{ id: string; prefix: string; expiresAt: Date }>(
          `INSERT INTO "public"."tokens" ("id", "tenant_id", "service_user_id", "name", "prefix", "secret_hash", "expires_at", "created_by")
           VALUES ($1, $2, $3, $4, $5, $6, $7::timestamptz, $8)
           RETURNING "id", "prefix", "expires_at" AS "expiresAt"`,
          [
            newId('tok'),
            input.tenantId,
            input.serviceUserId,
            name,
            prefix,
            secretHash,
            input.expiresAt.toISOString(),
            input.createdBy ?? null,
          ],
        );
        await recordActivity(tx, input.tenantId, input.activity, {
          action: 'token.created',
          targetId: created!.id,
          targetName: tokenTargetName(prefix, name),
        });
        return created!;
      });
      return { id: row.id, token: `${TOKEN_MARKER}${prefix}_${secret}`, prefix: row.prefix, name, expiresAt: new Date(row.expiresAt) };
    } catch (error) {
      const code = (error as { code?: unknown } | null)?.code;
      if (code === FOREIGN_KEY_VIOLATION) throw new ApiError('NOT_FOUND', 'no such service user');
      if (code === UNIQUE_VIOLATION && attempt < 3) continue;
      throw error;
    }
  }
}

/** The token joined with its service user's role; the composite key keeps the user in the token's tenant. */
const TOKEN_LOOKUP_SQL = `SELECT t.id, t.tenant_id, t.service_user_id, t.secret_hash, t.expires_at, t.revoked_at, t.last_used_at, u.role::text AS role
FROM tokens t JOIN service_users u ON u.tenant_id = t.tenant_id AND u.id = t.service_user_id
WHERE t.prefix = $1`;

interface TokenRow {
  id: string;
  tenant_id: string;
  service_user_id: string;
  /** bytea: a Buffer from pg, a Uint8Array from PGlite. */
  secret_hash: Uint8Array;
  /** timestamptz: a Date from both drivers (converted again in case a driver hands back text). */
  expires_at: Date | string;
  revoked_at: Date | string | null;
  last_used_at: Date | string | null;
  role: string;
}

/** Where verified tokens are kept for a few seconds (see credential-cache.ts), and what to do on the first store. */
export interface TokenCacheUse {
  cache: CredentialCache;
  onStore?: () => void;
}

/**
 * Resolves a token value to its viewer, or null when it is malformed, unknown, wrong, expired or revoked.
 * One query (token joined with its service user's role), unless `tokenCache` verified the same value within its
 * TTL; revocations, role changes and deletions evict it (credentialsChanged).
 */
export async function verifyPersonalAccessToken(
  db: Database,
  value: string,
  now: Date = new Date(),
  tokenCache?: TokenCacheUse,
): Promise<Viewer | null> {
  const parsed = parsePersonalAccessToken(value);
  if (!parsed) return null;
  const key = tokenCache?.cache.keyOf(parsed.prefix, parsed.secret);
  if (key !== undefined) {
    const cached = tokenCache!.cache.get(key, now.getTime());
    if (cached) return cached;
  }
  // Hand-written rather than through Prisma: this runs on every token-authenticated request, and one
  // parameterized statement through the driver costs a fraction of Prisma's query planning and mapping.
  const [row] = await db.raw.query<TokenRow>(TOKEN_LOOKUP_SQL, [parsed.prefix]);
  if (!row) return null;
  const presented = hashSecret(Buffer.from(parsed.secret, 'base64url'));
  const stored = Buffer.from(row.secret_hash);
  if (stored.length !== presented.length || !timingSafeEqual(stored, presented)) return null;
  if (row.revoked_at !== null) return null;
  if (new Date(row.expires_at).getTime() <= now.getTime()) return null;

  if (row.last_used_at === null || new Date(row.last_used_at).getTime() < now.getTime() - LAST_USED_THROTTLE_MS) {
    touchLastUsed(db, row.id, now);
  }
  if (!isRole(row.role)) return null;
  const role = row.role;
  const viewer: Viewer = {
    tenantId: row.tenant_id,
    role,
    permissions: permissionsOf(role),
    subject: row.service_user_id,
    credential: 'token',
    tokenId: row.id,
  };
  if (key !== undefined) {
    tokenCache!.cache.set(
      key,
      { viewer, tokenId: row.id, serviceUserId: row.service_user_id, expiresAt: new Date(row.expires_at).getTime() },
      now.getTime(),
    );
    tokenCache!.onStore?.();
  }
  return viewer;
}

/**
 * Fire-and-forget: authentication must not wait for, or fail because of, a bookkeeping write. The condition
 * is repeated in SQL so that of many concurrent requests only the first one in a window actually writes.
 */
function touchLastUsed(db: Database, tokenId: string, now: Date): void {
  // SQL, not Prisma, like the lookup: a server's first requests then load no Prisma query compiler.
  db.raw
    .query('UPDATE tokens SET last_used_at = $2::timestamptz WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < $3::timestamptz)', [
      tokenId,
      now.toISOString(),
      new Date(now.getTime() - LAST_USED_THROTTLE_MS).toISOString(),
    ])
    .catch(() => {});
}

type RevokeResult = 'revoked' | 'already_revoked' | 'not_found';

/**
 * Revokes a token (idempotent: revoking twice keeps the first revocation time). With `tenantId` the token
 * must belong to that tenant; without it (operator CLI) any token can be revoked. Only a revocation that
 * happens is recorded in the activity log, in its transaction.
 */
export async function revokeToken(
  db: Database,
  tokenId: string,
  tenantId?: string,
  now: Date = new Date(),
  activity?: ActivityOrigin,
): Promise<RevokeResult> {
  if (tokenId.length === 0 || tokenId.length > MAX_ID_LENGTH) return 'not_found';
  const revoked = await db.raw.transaction(async (tx) => {
    const [row] = await tx.query<{ tenantId: string; prefix: string; name: string | null }>(
      `UPDATE "public"."tokens" AS "t" SET "revoked_at" = $3::timestamptz
       WHERE "t"."id" = $1 AND ($2::text IS NULL OR "t"."tenant_id" = $2::text) AND "t"."revoked_at" IS NULL
       RETURNING "t"."tenant_id" AS "tenantId", "t"."prefix", "t"."name"`,
      [tokenId, tenantId ?? null, now.toISOString()],
    );
    if (row)
      await recordActivity(tx, row.tenantId, activity, {
        action: 'token.revoked',
        targetId: tokenId,
        targetName: tokenTargetName(row.prefix, row.name),
      });
    return row !== undefined;
  });
  if (revoked) {
    await credentialsChanged(db, { tokenIds: [tokenId] });
    return 'revoked';
  }
  const scope = tenantId === undefined ? { id: tokenId } : { id: tokenId, tenantId };
  const existing = await db.prisma.token.findFirst({ where: scope, select: { id: true } });
  return existing ? 'already_revoked' : 'not_found';
}

/** Token metadata of a tenant, newest first. Never the hash, never the value. */
export async function listTokens(db: Database, tenantId: string, options: { serviceUserId?: string } = {}): Promise<TokenInfo[]> {
  const rows = await db.prisma.token.findMany({
    relationLoadStrategy: 'join',
    where: { tenantId, ...(options.serviceUserId === undefined ? {} : { serviceUserId: options.serviceUserId }) },
    orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
    select: {
      id: true,
      name: true,
      prefix: true,
      serviceUserId: true,
      expiresAt: true,
      createdAt: true,
      lastUsedAt: true,
      revokedAt: true,
      serviceUser: { select: { name: true } },
    },
  });
  return rows.map(({ serviceUser, ...row }) => ({ ...row, serviceUserName: serviceUser.name }));
}
