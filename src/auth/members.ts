import { createHash, randomBytes } from 'node:crypto';
import type { Database } from '../db/client.js';
import type { Config } from '../env.js';
import { INVITATION_PAGE_PATH, PASSWORD_RESET_PAGE_PATH } from '../paths.js';
import { type ActivityOrigin, prismaStatements, recordActivity } from '../db/activity.js';
import { inTransaction, type TransactionRunner, type Tx } from '../db/write-transactions.js';
import { ApiError } from '../errors.js';
import type { Prisma } from '../generated/prisma/client.js';
import type { Role } from '../generated/prisma/enums.js';
import { EMAIL_PATTERN, MAX_EMAIL_LENGTH } from '../domain/member-input.js';
import { MAX_ID_LENGTH, newId } from '../prefixed-ids.js';
import { AT_ONCE, hashPassword, passwordMatchesOf, passwordWeakness, type HashTurn } from './passwords.js';

// Members: the people of a tenant (its organization), who sign in with an email and a password. An admin invites
// an email; the invitation's code, shown once as a URL, lets its holder choose the password. An admin may issue a
// pending member a fresh invitation code, and a member with a password a reset code: the same kind of code, on the
// same path, which sets a new password and signs in (the way back in while there is no mail; inviting the email
// again also works, and clears the password at once). Only the SHA-256 of a code is
// stored. The last-admin rule of service users holds here too: the last admin who can sign in is neither removed
// nor demoted. A membership belongs to its organization alone: the same email may be a member of several, each
// invited, given a role and a password on its own, and nothing an organization does tells it about the others
// (docs/explanation/memberships.md).

export type MemberRole = Exclude<Role, 'engine'>;
export const MEMBER_ROLES: readonly MemberRole[] = ['admin', 'reader'];
export const INVITATION_LIFETIME_MS = 7 * 86_400_000;
const CODE_BYTES = 32;
const CODE_PATTERN = /^[A-Za-z0-9_-]{43}$/;

export interface MemberInfo {
  id: string;
  tenantId: string;
  email: string;
  role: MemberRole;
  createdAt: Date;
  lastSeenAt: Date | null;
}

/**
 * Where browsers reach this server: PUBLIC_ORIGIN, else HOST and PORT (a wildcard HOST, which no browser can
 * open, as localhost).
 */
export function publicOriginOf(config: Pick<Config, 'PUBLIC_ORIGIN' | 'HOST' | 'PORT'>): string {
  if (config.PUBLIC_ORIGIN) return config.PUBLIC_ORIGIN;
  const host =
    config.HOST === '0.0.0.0' || config.HOST === '::' ? 'localhost' : config.HOST.includes(':') ? `[${config.HOST}]` : config.HOST;
  return `http://${host}:${config.PORT}`;
}

/**
 * What a code is for: `invitation` while the member has no password (a first or a new invitation), `password_reset`
 * for a member who has one. The same code either way; the console words its page by it.
 */
export type CodePurpose = 'invitation' | 'password_reset';

/** The console path a code opens: `/console/invite/<code>` or `/console/reset/<code>`. */
export function codePath(purpose: CodePurpose, code: string): string {
  return `${purpose === 'invitation' ? INVITATION_PAGE_PATH : PASSWORD_RESET_PAGE_PATH}/${code}`;
}

/** The console page an invitation's code opens. */
export function invitationUrl(origin: string, code: string, purpose: CodePurpose = 'invitation'): string {
  return `${origin}${codePath(purpose, code)}`;
}

/** The lower-cased email, or a 400 saying what is wrong with it. */
export function normalizeEmail(email: unknown): string {
  const value = typeof email === 'string' ? email.trim().toLowerCase() : '';
  if (value.length === 0 || value.length > MAX_EMAIL_LENGTH || !EMAIL_PATTERN.test(value)) {
    throw new ApiError('INVALID_QUERY', `email must be an email address (name@domain, at most ${MAX_EMAIL_LENGTH} characters)`);
  }
  return value;
}

/** For input from outside the type system: admin or reader; engine is a service user's role only. */
export function parseMemberRole(value: unknown): MemberRole {
  if (value === 'admin' || value === 'reader') return value;
  if (value === 'engine') throw new ApiError('INVALID_QUERY', 'the engine role belongs to service users: a member is admin or reader');
  throw new ApiError('INVALID_QUERY', 'role must be one of admin, reader');
}

/** The stored form of an invitation code: SHA-256 of its bytes; null for a string that is no code. */
export function codeHashOf(code: string): Uint8Array<ArrayBuffer> | null {
  if (!CODE_PATTERN.test(code)) return null;
  const bytes = Buffer.from(code, 'base64url');
  return bytes.toString('base64url') === code ? new Uint8Array(createHash('sha256').update(bytes).digest()) : null;
}

function notFound(): ApiError {
  return new ApiError('NOT_FOUND', 'no such member');
}

const memberSelect = { id: true, tenantId: true, email: true, role: true, createdAt: true, lastSeenAt: true } as const;
/** `memberSelect` as the columns of a statement (table alias "m"). */
const MEMBER_ROW = `"m"."id", "m"."tenant_id" AS "tenantId", "m"."email", "m"."role"::text AS "role", "m"."created_at" AS "createdAt",
  "m"."last_seen_at" AS "lastSeenAt"`;
/** The SQLSTATE of an unknown tenant in `inviteMember`. */
const FOREIGN_KEY_VIOLATION = '23503';

function asMember<T extends { role: Role }>(row: T): T & { role: MemberRole } {
  return row as T & { role: MemberRole };
}

/**
 * Invites an email into a tenant with a role: a new member, or a member of this tenant invited again (the role
 * set anew, the password cleared, every session ended, earlier codes void). Returns the member and the code,
 * which is never stored and never shown again. Whether the email is a member of another tenant changes nothing.
 */
export async function inviteMember(
  sql: TransactionRunner,
  input: { tenantId: string; email: string; role: string; createdBy: string; activity?: ActivityOrigin },
  now: Date = new Date(),
): Promise<{ member: MemberInfo; code: string; expiresAt: Date }> {
  const email = normalizeEmail(input.email);
  const role = parseMemberRole(input.role);
  try {
    // Raw statements in a transaction runner, so that an Idempotency-Key's reservation can join it.
    return await inTransaction(sql, async (tx) => {
      await tx.query('SELECT 1 FROM "public"."tenants" WHERE "id" = $1 FOR NO KEY UPDATE', [input.tenantId]);
      const [existing] = await tx.query<MemberInfo & { passwordHash: string | null; providerSubject: string | null }>(
        `SELECT ${MEMBER_ROW}, "m"."password_hash" AS "passwordHash", "m"."provider_subject" AS "providerSubject" FROM "public"."members" AS "m"
         WHERE "m"."tenant_id" = $1 AND "m"."email" = $2`,
        [input.tenantId, email],
      );
      let member: MemberInfo;
      if (existing) {
        if (role !== 'admin') {
          await refuseLastAdmin(existing, 'demoted', async () => {
            const [row] = await tx.query<{ admins: number }>(
              `SELECT count(*)::int AS "admins" FROM "public"."members" AS "m"
               WHERE "m"."tenant_id" = $1 AND "m"."role" = 'admin' AND ("m"."password_hash" IS NOT NULL OR "m"."provider_subject" IS NOT NULL)`,
              [input.tenantId],
            );
            return row!.admins;
          });
        }
        // Columns qualified as Prisma writes them: the isolation test reads every statement for its tenant scope.
        await tx.query(
          'DELETE FROM "public"."member_sessions" WHERE "public"."member_sessions"."tenant_id" = $1 AND "public"."member_sessions"."member_id" = $2',
          [input.tenantId, existing.id],
        );
        [member] = (await tx.query<MemberInfo>(
          `UPDATE "public"."members" AS "m" SET "role" = $3::"public"."role", "password_hash" = NULL, "updated_at" = now()
           WHERE "m"."tenant_id" = $1 AND "m"."id" = $2 RETURNING ${MEMBER_ROW}`,
          [input.tenantId, existing.id, role],
        )) as [MemberInfo];
      } else {
        [member] = (await tx.query<MemberInfo>(
          `INSERT INTO "public"."members" AS "m" ("id", "tenant_id", "email", "role", "created_by")
           VALUES ($1, $2, $3, $4::"public"."role", $5) RETURNING ${MEMBER_ROW}`,
          [newId('mbr'), input.tenantId, email, role, input.createdBy],
        )) as [MemberInfo];
      }
      const issued = await issueCode(tx, input.tenantId, member.id, now);
      await recordActivity(tx, input.tenantId, input.activity, { action: 'member.invited', targetId: member.id, targetName: email });
      return { member, ...issued };
    });
  } catch (error) {
    const violated = (error as { code?: string } | null)?.code;
    if (violated === FOREIGN_KEY_VIOLATION) throw new ApiError('NOT_FOUND', 'no such tenant');
    throw error;
  }
}

/** A member's one usable code: earlier ones are deleted (they stop working), a new one valid 7 days is stored hashed. */
async function issueCode(tx: Tx, tenantId: string, memberId: string, now: Date): Promise<{ code: string; expiresAt: Date }> {
  const code = randomBytes(CODE_BYTES).toString('base64url');
  const expiresAt = new Date(now.getTime() + INVITATION_LIFETIME_MS);
  // Columns qualified as Prisma writes them: the isolation test reads every statement for its tenant scope.
  await tx.query(
    'DELETE FROM "public"."member_invitations" WHERE "public"."member_invitations"."tenant_id" = $1 AND "public"."member_invitations"."member_id" = $2',
    [tenantId, memberId],
  );
  await tx.query(
    `INSERT INTO "public"."member_invitations" ("id", "tenant_id", "member_id", "code_hash", "expires_at", "created_at")
     VALUES ($1, $2, $3, $4, $5, $6)`,
    [newId('inv'), tenantId, memberId, codeHashOf(code)!, expiresAt, now],
  );
  return { code, expiresAt };
}

/**
 * Gives a member a new code, every earlier one void: `invitation` resends a pending member's invitation (a 409 for
 * a member with a password, who needs a reset); `password_reset` lets a member with a password choose a new one
 * (the password works until then), and for a pending member is a new invitation. What the code is for follows
 * from the member (`purpose` of the answer). Recorded in the activity log as what was asked.
 */
export async function issueMemberCode(
  sql: TransactionRunner,
  input: { tenantId: string; memberId: string; purpose: CodePurpose; activity?: ActivityOrigin },
  now: Date = new Date(),
): Promise<{ member: MemberInfo; purpose: CodePurpose; code: string; expiresAt: Date }> {
  if (input.memberId.length > MAX_ID_LENGTH) throw notFound();
  return inTransaction(sql, async (tx) => {
    await tx.query('SELECT 1 FROM "public"."tenants" WHERE "id" = $1 FOR NO KEY UPDATE', [input.tenantId]);
    const [member] = await tx.query<MemberInfo & { pending: boolean }>(
      `SELECT ${MEMBER_ROW}, "m"."password_hash" IS NULL AS "pending" FROM "public"."members" AS "m"
       WHERE "m"."tenant_id" = $1 AND "m"."id" = $2`,
      [input.tenantId, input.memberId],
    );
    if (!member) throw notFound();
    if (input.purpose === 'invitation' && !member.pending) {
      throw new ApiError('CONFLICT', `${member.email} has accepted the invitation already: create a password reset link instead`);
    }
    const issued = await issueCode(tx, input.tenantId, member.id, now);
    await recordActivity(tx, input.tenantId, input.activity, {
      action: input.purpose === 'invitation' ? 'member.invitation_resent' : 'member.password_reset_created',
      targetId: member.id,
      targetName: member.email,
    });
    const { pending, ...info } = member;
    return { member: asMember(info), purpose: pending ? 'invitation' : 'password_reset', ...issued };
  });
}

/** What a usable code is for, shown on its page before a password is chosen. */
export interface CodeHolder {
  email: string;
  role: MemberRole;
  purpose: CodePurpose;
  organization: { slug: string; name: string };
  expiresAt: Date;
}

/** 404 for a code that is no code, unknown, used or expired: the same answer for each. */
function unusableCode(): ApiError {
  return new ApiError('NOT_FOUND', 'This link is unknown, already used or expired: ask an admin of the organization for a new one');
}

/**
 * The member and organization of a usable code (unused, not expired), or a 404. Found by its hash, as a token by
 * its prefix: the code names its tenant.
 */
export async function codeHolderOf(db: Database, code: string, now: Date = new Date()): Promise<CodeHolder> {
  const codeHash = codeHashOf(code);
  if (!codeHash) throw unusableCode();
  const [row] = await db.raw.query<{
    email: string;
    role: string;
    pending: boolean;
    slug: string;
    name: string;
    expires_at: Date | string;
  }>(
    `SELECT m.email, m.role, m.password_hash IS NULL AS pending, t.slug, t.name, i.expires_at
       FROM member_invitations i
       JOIN members m ON m.tenant_id = i.tenant_id AND m.id = i.member_id
       JOIN tenants t ON t.id = i.tenant_id
      WHERE i.code_hash = $1 AND i.used_at IS NULL AND i.expires_at > $2`,
    [codeHash, now],
  );
  if (!row) throw unusableCode();
  return {
    email: row.email,
    role: asMember({ role: row.role as Role }).role,
    purpose: row.pending ? 'invitation' : 'password_reset',
    organization: { slug: row.slug, name: row.name },
    expiresAt: new Date(row.expires_at),
  };
}

/**
 * Sets the password of a code's member (an invitation or a password reset): the code works once, within its 7
 * days. A weak password is a 400 that says why and leaves the code usable. Every earlier session of the member
 * ends. The code is looked up before the password is hashed, so an unknown one costs no hash; the hash takes its
 * `turn`. Returns the membership, to sign in to.
 */
export async function acceptInvitation(
  db: Database,
  code: string,
  password: unknown,
  now: Date = new Date(),
  turn: HashTurn = AT_ONCE,
): Promise<SignedInMember> {
  const codeHash = codeHashOf(code);
  if (!codeHash) throw unusableCode();
  const usable = { codeHash, usedAt: null, expiresAt: { gt: now } };
  const found = await db.prisma.memberInvitation.findFirst({ where: usable, select: { member: { select: { email: true } } } });
  if (!found) throw unusableCode();
  const weakness = await passwordWeakness(password);
  if (weakness) throw new ApiError('INVALID_QUERY', weakness);
  // The salt of the email's other memberships, so that one hash checks a password against all of them.
  const saltSource = (await membershipsOf(db, found.member.email)).find((row) => row.password_hash !== null)?.password_hash;
  const passwordHash = await hashPassword(password as string, turn, saltSource);
  return db.prisma.$transaction(async (tx) => {
    // Used once, even by two requests that both found it usable.
    const used = await tx.memberInvitation.updateMany({ where: usable, data: { usedAt: now } });
    if (used.count !== 1) throw unusableCode();
    const invitation = await tx.memberInvitation.findUniqueOrThrow({ where: { codeHash }, select: { tenantId: true, memberId: true } });
    await tx.memberSession.deleteMany({ where: { tenantId: invitation.tenantId, memberId: invitation.memberId } });
    const member = await tx.member.update({
      where: { tenantId_id: { tenantId: invitation.tenantId, id: invitation.memberId } },
      data: { passwordHash },
      select: { id: true, tenantId: true, email: true, role: true, tenant: { select: { slug: true, name: true } } },
    });
    return {
      id: member.id,
      tenantId: member.tenantId,
      email: member.email,
      role: asMember(member).role,
      tenant: member.tenant.slug,
      tenantName: member.tenant.name,
    };
  });
}

/** A membership a password signed in to. */
export interface SignedInMember {
  id: string;
  tenantId: string;
  email: string;
  role: MemberRole;
  tenant: string;
  tenantName: string;
}

/**
 * What an email and a password sign in to: the membership, or, when the password is that of several memberships
 * of the email and no `organization` (a tenant's slug) names one, the organizations to choose from. Null for an
 * unknown email, a wrong password, or an organization the email is no member of: the same answer, after the same
 * one hash (passwordMatchesOf), so neither its content nor its time tells them apart. The hash takes its `turn`.
 */
export async function signInOfPassword(
  db: Database,
  credentials: { email: unknown; password: unknown; organization?: string | undefined },
  turn: HashTurn = AT_ONCE,
): Promise<{ member: SignedInMember } | { organizations: string[] } | null> {
  const email = typeof credentials.email === 'string' ? credentials.email.trim().toLowerCase() : '';
  const rows = email.length > 0 && email.length <= MAX_EMAIL_LENGTH ? await membershipsOf(db, email, credentials.organization) : [];
  const password = typeof credentials.password === 'string' ? credentials.password : '';
  const matches = await passwordMatchesOf(
    rows.map((row) => row.password_hash),
    password,
    turn,
  );
  // A password signs in to no organization that requires its identity provider: the same answer as a wrong one.
  const matched = rows.filter((row, i) => matches[i] && !row.sso_required && (row.role === 'admin' || row.role === 'reader'));
  if (matched.length === 0) return null;
  if (matched.length > 1) return { organizations: matched.map((row) => row.slug).sort() };
  const row = matched[0]!;
  return {
    member: { id: row.id, tenantId: row.tenant_id, email: row.email, role: row.role as MemberRole, tenant: row.slug, tenantName: row.name },
  };
}

/**
 * The memberships of a lower-cased email, of one organization when its slug is given, oldest first: the oldest
 * password hash gives the salt of the email's next ones (acceptInvitation) and the one a sign-in hashes with.
 */
async function membershipsOf(
  db: Database,
  email: string,
  organization?: string,
): Promise<
  {
    id: string;
    tenant_id: string;
    email: string;
    role: string;
    password_hash: string | null;
    slug: string;
    name: string;
    sso_required: boolean;
  }[]
> {
  return db.raw.query(
    `SELECT m.id, m.tenant_id, m.email, m.role, m.password_hash, t.slug, t.name,
            EXISTS (SELECT 1 FROM identity_providers p WHERE p.tenant_id = m.tenant_id AND p.required) AS sso_required
       FROM members m JOIN tenants t ON t.id = m.tenant_id
      WHERE m.email = $1 AND ($2::text IS NULL OR t.slug = $2::text)
      ORDER BY m.created_at, m.id`,
    [email, organization ?? null],
  );
}

/** Changes a member's role; a change ends the member's sessions (and so its open streams). */
export async function changeMemberRole(
  db: Database,
  input: { tenantId: string; memberId: string; role: string; activity?: ActivityOrigin },
): Promise<MemberInfo> {
  const role = parseMemberRole(input.role);
  return withMember(db, input, async (tx, member) => {
    if (member.role === role) return member;
    if (role !== 'admin') await refuseLastAdmin(member, 'demoted', adminsOf(tx, input.tenantId));
    await tx.memberSession.deleteMany({ where: { tenantId: input.tenantId, memberId: member.id } });
    await recordActivity(prismaStatements(tx), input.tenantId, input.activity, {
      action: 'member.role_changed',
      targetId: member.id,
      targetName: member.email,
    });
    return asMember(
      await tx.member.update({ where: { tenantId_id: { tenantId: input.tenantId, id: member.id } }, data: { role }, select: memberSelect }),
    );
  });
}

/** Removes a member with its sessions and invitations. */
export async function removeMember(
  db: Database,
  input: { tenantId: string; memberId: string; activity?: ActivityOrigin },
): Promise<{ id: string }> {
  return withMember(db, input, async (tx, member) => {
    await refuseLastAdmin(member, 'removed', adminsOf(tx, input.tenantId));
    // Before the delete: a member removing itself is still there to be named as the actor.
    await recordActivity(prismaStatements(tx), input.tenantId, input.activity, {
      action: 'member.removed',
      targetId: member.id,
      targetName: member.email,
    });
    await tx.member.delete({ where: { tenantId_id: { tenantId: input.tenantId, id: member.id } } });
    // The applications it approved: their grants, codes and tokens (already refused: each names a member).
    await tx.$executeRaw`DELETE FROM oauth_records WHERE account_id = ${member.id}`;
    return { id: member.id };
  });
}

type Transaction = Prisma.TransactionClient;

/** The tenant's row lock makes counting the admins and changing one a single step (as for service users). */
async function lockTenant(tx: Transaction, tenantId: string): Promise<void> {
  await tx.$queryRaw`SELECT 1 FROM tenants WHERE id = ${tenantId} FOR NO KEY UPDATE`;
}

/** Counts the tenant's admins who can sign in (for `refuseLastAdmin`). */
function adminsOf(tx: Transaction, tenantId: string): () => Promise<number> {
  return () =>
    tx.member.count({ where: { tenantId, role: 'admin', OR: [{ passwordHash: { not: null } }, { providerSubject: { not: null } }] } });
}

async function withMember<T>(
  db: Database,
  input: { tenantId: string; memberId: string },
  change: (tx: Transaction, member: MemberInfo & { passwordHash: string | null; providerSubject: string | null }) => Promise<T>,
): Promise<T> {
  if (input.memberId.length > MAX_ID_LENGTH) throw notFound();
  return db.prisma.$transaction(async (tx) => {
    await lockTenant(tx, input.tenantId);
    const member = await tx.member.findUnique({
      where: { tenantId_id: { tenantId: input.tenantId, id: input.memberId } },
      select: { ...memberSelect, passwordHash: true, providerSubject: true },
    });
    if (!member) throw notFound();
    return change(tx, asMember(member));
  });
}

/** 409 when `member` is the tenant's last admin who can sign in (with a password or the identity provider); `admins` counts those. */
async function refuseLastAdmin(
  member: { email: string; role: Role; passwordHash: string | null; providerSubject: string | null },
  what: 'demoted' | 'removed',
  admins: () => Promise<number>,
): Promise<void> {
  if (member.role !== 'admin' || (member.passwordHash === null && member.providerSubject === null)) return;
  if ((await admins()) <= 1) {
    throw new ApiError(
      'CONFLICT',
      `${member.email} is the last admin member of this organization and cannot be ${what}; make another member admin first`,
    );
  }
}
