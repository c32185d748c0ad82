import { createHash, randomBytes } from 'node:crypto';
import type { Database, RawSql } from '../db/client.js';
import type { Config } from '../env.js';
import { newId } from '../prefixed-ids.js';
import { isRole, permissionsOf } from './permissions.js';
import type { Viewer } from './viewer.js';

// A signed-in member's session. The cookie carries `igw_ses_<secret>` (32 random bytes); the database keeps only
// the SHA-256 of the secret, so a copy of the table signs no one in. Every replica reads the same rows: a session
// made by one is valid on all, and ended on all at once. A session ends at its absolute lifetime, after an idle
// period without requests, at sign-out, and when its member is removed, changes role or is invited again.

const SESSION_MARKER = 'igw_ses_';
const SECRET_BYTES = 32;
const SESSION_PATTERN = /^igw_ses_([A-Za-z0-9_-]{43})$/;
/**
 * How often a session's last_seen_at is written at most: once a minute, so a read stays a read, but never more
 * than a tenth of the idle timeout, or a session in use would look idle between two writes and end.
 */
function touchIntervalOf(policy: Pick<SessionPolicy, 'idleMs'>): number {
  return Math.min(60_000, policy.idleMs / 10);
}

export interface SessionPolicy {
  /** A session unused this long ends. */
  idleMs: number;
  /** A session ends this long after sign-in, used or not. */
  lifetimeMs: number;
}

export const DEFAULT_SESSION_POLICY: SessionPolicy = { idleMs: 30 * 60_000, lifetimeMs: 12 * 3_600_000 };

/** Sign-in settings from the configuration (each one left out keeps its documented default). */
export function signInSettingsOf(
  config: Partial<Pick<Config, 'SESSION_IDLE_MINUTES' | 'SESSION_LIFETIME_HOURS' | 'PUBLIC_ORIGIN' | 'TRUST_PROXY'>>,
): SessionPolicy & { publicOrigin: string | undefined; trustProxy: boolean } {
  return {
    idleMs: config.SESSION_IDLE_MINUTES === undefined ? DEFAULT_SESSION_POLICY.idleMs : config.SESSION_IDLE_MINUTES * 60_000,
    lifetimeMs: config.SESSION_LIFETIME_HOURS === undefined ? DEFAULT_SESSION_POLICY.lifetimeMs : config.SESSION_LIFETIME_HOURS * 3_600_000,
    publicOrigin: config.PUBLIC_ORIGIN,
    trustProxy: config.TRUST_PROXY === '1',
  };
}

function hashOf(value: string): Buffer | null {
  const secret = SESSION_PATTERN.exec(value)?.[1];
  if (secret === undefined) return null;
  const bytes = Buffer.from(secret, 'base64url');
  if (bytes.toString('base64url') !== secret) return null;
  return createHash('sha256').update(bytes).digest();
}

/** Whether a value has the shape of a session value (not whether it is valid). */
export function looksLikeSession(value: string): boolean {
  return SESSION_PATTERN.test(value);
}

/** Opens a session for a member; the value is returned once, for the cookie, and never stored. */
export async function createSession(
  db: Database,
  member: { tenantId: string; id: string },
  policy: SessionPolicy,
  now: Date = new Date(),
): Promise<{ value: string; expiresAt: Date }> {
  const secret = randomBytes(SECRET_BYTES);
  const value = `${SESSION_MARKER}${secret.toString('base64url')}`;
  const expiresAt = new Date(now.getTime() + policy.lifetimeMs);
  await db.raw.query(
    `INSERT INTO member_sessions (id, tenant_id, member_id, secret_hash, created_at, last_seen_at, expires_at)
     VALUES ($1, $2, $3, $4, $5::timestamptz, $5::timestamptz, $6::timestamptz)`,
    [newId('ses'), member.tenantId, member.id, createHash('sha256').update(secret).digest(), now.toISOString(), expiresAt.toISOString()],
  );
  return { value, expiresAt };
}

interface SessionRow {
  id: string;
  tenant_id: string;
  member_id: string;
  role: string;
  last_seen_at: Date | string;
  expires_at: Date | string;
}

/**
 * The viewer of a session value: the member's tenant and current role; null when the value is unknown, or the
 * session has passed its lifetime or its idle timeout (it is then deleted).
 */
export async function verifySession(db: Database, value: string, policy: SessionPolicy, now: Date = new Date()): Promise<Viewer | null> {
  const secretHash = hashOf(value);
  if (!secretHash) return null;
  const [row] = await db.raw.query<SessionRow>(
    `SELECT s.id, s.tenant_id, s.member_id, m.role, s.last_seen_at, s.expires_at
       FROM member_sessions s JOIN members m ON m.tenant_id = s.tenant_id AND m.id = s.member_id
      WHERE s.secret_hash = $1`,
    [secretHash],
  );
  if (!row || !isRole(row.role) || row.role === 'engine') return null;
  const lastSeen = new Date(row.last_seen_at).getTime();
  if (new Date(row.expires_at).getTime() <= now.getTime() || lastSeen + policy.idleMs <= now.getTime()) {
    await db.raw.query('DELETE FROM member_sessions WHERE id = $1', [row.id]).catch(() => {});
    return null;
  }
  const touchIntervalMs = touchIntervalOf(policy);
  if (lastSeen < now.getTime() - touchIntervalMs) touch(db, row, now, touchIntervalMs);
  return { tenantId: row.tenant_id, role: row.role, permissions: permissionsOf(row.role), subject: row.member_id, credential: 'session' };
}

/** Fire-and-forget, as a token's last_used_at: a bookkeeping write never fails or delays a request. */
function touch(db: Database, row: SessionRow, now: Date, touchIntervalMs: number): void {
  const at = now.toISOString();
  const before = new Date(now.getTime() - touchIntervalMs).toISOString();
  db.raw
    .query(
      `WITH s AS (UPDATE member_sessions SET last_seen_at = $2::timestamptz WHERE id = $1 AND last_seen_at < $3::timestamptz RETURNING tenant_id, member_id)
       UPDATE members m SET last_seen_at = $2::timestamptz FROM s WHERE m.tenant_id = s.tenant_id AND m.id = s.member_id`,
      [row.id, at, before],
    )
    .catch(() => {});
}

/** Signs out: the session of this value ends everywhere. */
export async function endSession(db: Database, value: string): Promise<void> {
  const secretHash = hashOf(value);
  if (secretHash) await db.raw.query('DELETE FROM member_sessions WHERE secret_hash = $1', [secretHash]);
}

/** Deletes sessions past their lifetime or idle timeout (the scheduler's housekeeping). */
export async function deleteEndedSessions(sql: Pick<RawSql, 'query'>, policy: SessionPolicy, now: Date = new Date()): Promise<number> {
  const rows = await sql.query<{ id: string }>(
    'DELETE FROM member_sessions WHERE expires_at <= $1::timestamptz OR last_seen_at <= $2::timestamptz RETURNING id',
    [now.toISOString(), new Date(now.getTime() - policy.idleMs).toISOString()],
  );
  return rows.length;
}
