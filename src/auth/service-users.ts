import { credentialsChanged } from './credential-cache.js';
import type { Database } from '../db/client.js';
import { ApiError } from '../errors.js';
import { type ActivityOrigin, prismaStatements, recordActivity } from '../db/activity.js';
import { isConstraintViolation } from '../db/constraint-violations.js';
import type { Prisma } from '../generated/prisma/client.js';
import { Role } from '../generated/prisma/enums.js';
import { MAX_ID_LENGTH, newId } from '../prefixed-ids.js';
import { isRole } from './permissions.js';
import { printableName } from './printable-names.js';
import type { TokenInfo } from './tokens.js';

const MAX_SERVICE_USER_NAME_LENGTH = 100;

interface ServiceUserInfo {
  id: string;
  tenantId: string;
  name: string;
  role: Role;
  createdAt: Date;
  updatedAt: Date;
}

interface ServiceUserWithTokens extends ServiceUserInfo {
  tokens: Omit<TokenInfo, 'serviceUserId' | 'serviceUserName'>[];
}

const serviceUserSelect = {
  id: true,
  tenantId: true,
  name: true,
  role: true,
  createdAt: true,
  updatedAt: true,
} as const;

/** For input from outside the type system (CLI flags, GraphQL strings). */
function parseRole(value: unknown): Role {
  if (!isRole(value)) {
    throw new ApiError('INVALID_QUERY', `role must be one of ${Object.keys(Role).join(', ')}`);
  }
  return value;
}

/** Names are shown in listings and used by the CLI to pick a service user, so they must be printable. */
function normalizeServiceUserName(name: string): string {
  return printableName(name, 'a service user name', MAX_SERVICE_USER_NAME_LENGTH);
}

function notFound(): ApiError {
  return new ApiError('NOT_FOUND', 'no such service user');
}

export async function createServiceUser(
  db: Database,
  input: { tenantId: string; name: string; role: Role; createdBy?: string; activity?: ActivityOrigin },
): Promise<ServiceUserInfo> {
  const name = normalizeServiceUserName(input.name);
  const role = parseRole(input.role);
  try {
    return await db.prisma.$transaction(async (tx) => {
      const user = await tx.serviceUser.create({
        data: { id: newId('usr'), tenantId: input.tenantId, name, role, createdBy: input.createdBy ?? null },
        select: serviceUserSelect,
      });
      await recordActivity(prismaStatements(tx), input.tenantId, input.activity, {
        action: 'service_user.created',
        targetId: user.id,
        targetName: name,
      });
      return user;
    });
  } catch (error) {
    // The unique index decides, not a prior lookup: two concurrent creates cannot both succeed.
    if (isConstraintViolation(error, 'unique')) {
      throw new ApiError('INVALID_QUERY', `a service user named ${JSON.stringify(name)} already exists`);
    }
    if (isConstraintViolation(error, 'foreignKey')) throw new ApiError('NOT_FOUND', 'no such tenant');
    throw error;
  }
}

/** The new role applies to the user's existing tokens at their next request, on every process (credentialsChanged). */
export async function changeServiceUserRole(
  db: Database,
  input: { tenantId: string; serviceUserId: string; role: Role; activity?: ActivityOrigin },
): Promise<ServiceUserInfo> {
  const role = parseRole(input.role);
  const changed = await withAdminKept(db, input, role === 'admin' ? null : 'demote', async (tx, where, user) => {
    if (user.role !== role) {
      await recordActivity(prismaStatements(tx), input.tenantId, input.activity, {
        action: 'service_user.role_changed',
        targetId: input.serviceUserId,
        targetName: user.name,
      });
    }
    return tx.serviceUser.update({ where, data: { role }, select: serviceUserSelect });
  });
  await credentialsChanged(db, { serviceUserIds: [input.serviceUserId] });
  return changed;
}

/**
 * Deletes a service user and its tokens in one transaction. Token rows are deleted rather than kept as
 * revoked because they reference the user (ON DELETE RESTRICT); a deleted user's tokens can never be used
 * again either way, and nothing else references tokens.
 */
export async function deleteServiceUser(
  db: Database,
  input: { tenantId: string; serviceUserId: string; activity?: ActivityOrigin },
): Promise<{ id: string; deletedTokens: number }> {
  const deleted = await withAdminKept(db, input, 'delete', async (tx, where, user) => {
    // Before its tokens go: a service user deleting itself with its own token is still there to be named.
    await recordActivity(prismaStatements(tx), input.tenantId, input.activity, {
      action: 'service_user.deleted',
      targetId: input.serviceUserId,
      targetName: user.name,
    });
    const tokens = await tx.token.deleteMany({ where: { tenantId: input.tenantId, serviceUserId: input.serviceUserId } });
    const gone = await tx.serviceUser.delete({ where, select: { id: true } });
    return { id: gone.id, deletedTokens: tokens.count };
  });
  await credentialsChanged(db, { serviceUserIds: [input.serviceUserId] });
  return deleted;
}

type Transaction = Prisma.TransactionClient;

/**
 * Runs a change of one service user in a transaction that first takes the tenant's row lock, then refuses
 * (409 CONFLICT) to demote or delete the tenant's last admin. The lock makes the count and the change one step:
 * two concurrent demotions of the last two admins would each still count the other one as admin. FOR NO KEY
 * UPDATE serialises these changes only; inserts that reference the tenant (FOR KEY SHARE) are not held up.
 */
async function withAdminKept<T>(
  db: Database,
  input: { tenantId: string; serviceUserId: string },
  removal: 'demote' | 'delete' | null,
  change: (tx: Transaction, where: { tenantId_id: { tenantId: string; id: string } }, user: { name: string; role: Role }) => Promise<T>,
): Promise<T> {
  if (input.serviceUserId.length > MAX_ID_LENGTH) throw notFound();
  const where = { tenantId_id: { tenantId: input.tenantId, id: input.serviceUserId } };
  return db.prisma.$transaction(async (tx) => {
    await tx.$queryRaw`SELECT 1 FROM tenants WHERE id = ${input.tenantId} FOR NO KEY UPDATE`;
    const user = await tx.serviceUser.findUnique({ where, select: { name: true, role: true } });
    if (!user) throw notFound();
    if (removal && user.role === 'admin') {
      const admins = await tx.serviceUser.count({ where: { tenantId: input.tenantId, role: 'admin' } });
      if (admins <= 1) {
        throw new ApiError(
          'CONFLICT',
          `${JSON.stringify(user.name)} is the last admin of this tenant and cannot be ${removal === 'demote' ? 'demoted' : 'deleted'}; make another service user admin first`,
        );
      }
    }
    return change(tx, where, user);
  });
}

export async function findServiceUserByName(db: Database, tenantId: string, name: string): Promise<ServiceUserInfo | null> {
  return db.prisma.serviceUser.findUnique({
    where: { tenantId_name: { tenantId, name: name.trim() } },
    select: serviceUserSelect,
  });
}

/** A tenant's service users by name, each with its tokens' metadata (newest first). */
export function listServiceUsers(db: Database, tenantId: string): Promise<ServiceUserWithTokens[]> {
  return db.prisma.serviceUser.findMany({
    relationLoadStrategy: 'join',
    where: { tenantId },
    orderBy: [{ name: 'asc' }, { id: 'asc' }],
    select: {
      ...serviceUserSelect,
      tokens: {
        orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
        select: {
          id: true,
          name: true,
          prefix: true,
          expiresAt: true,
          createdAt: true,
          lastUsedAt: true,
          revokedAt: true,
        },
      },
    },
  });
}

/**
 * The admins of the tenant with this slug by name, each with whether it holds a usable token (neither revoked
 * nor expired at `now`); null when there is no such tenant. One statement in SQL, not Prisma: a server's restart
 * reads it (src/http/start-app.ts, the demo tenant's advice) and then loads no Prisma query compiler before it listens (its
 * Wasm and the first compiled queries are a large share of a PGlite restart's CPU).
 */
export async function adminsWithUsableToken(
  db: Database,
  tenantSlug: string,
  now: Date,
): Promise<{ name: string; usable: boolean }[] | null> {
  // A row per admin (name null: the tenant has none); no row: there is no such tenant.
  const rows = await db.raw.query<{ name: string | null; usable: boolean }>(
    `SELECT su.name,
            EXISTS (SELECT 1 FROM tokens t
                     WHERE t.tenant_id = su.tenant_id AND t.service_user_id = su.id
                       AND t.revoked_at IS NULL AND t.expires_at > $2::timestamptz) AS usable
       FROM tenants te
       LEFT JOIN service_users su ON su.tenant_id = te.id AND su.role = 'admin'
      WHERE te.slug = $1
      ORDER BY su.name, su.id`,
    [tenantSlug, now.toISOString()],
  );
  if (rows.length === 0) return null;
  return rows.filter((row): row is { name: string; usable: boolean } => row.name !== null);
}
