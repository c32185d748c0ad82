import type { Prisma } from '../generated/prisma/client.js';
import { newId } from '../prefixed-ids.js';
import type { RawSql } from './client.js';
import { type BatchOptions, deleteInBatches } from './events.js';

// The activity log: who changed a tenant's people, credentials or setup, what, when and from where. Every write
// that changes them records its entry here inside its own transaction, so an entry exists exactly when the
// change committed: a refused write (400, 404, 409) records nothing. Names are copied as they are at that
// moment, so the log still reads after a member, a token or a connection is gone.

/** What can be recorded, as `<target type>.<verb>`. */
export const ACTIVITY_ACTIONS = [
  'member.invited',
  'member.invitation_resent',
  'member.password_reset_created',
  'member.role_changed',
  'member.removed',
  'member.joined',
  'member.provider_linked',
  'service_user.created',
  'service_user.role_changed',
  'service_user.deleted',
  'token.created',
  'token.revoked',
  'oauth_client.created',
  'oauth_client.deleted',
  'oauth_application.created',
  'oauth_application.deleted',
  'oauth_application.approval_revoked',
  'connection.created',
  'connection.updated',
  'connection.deleted',
  'webhook_endpoint.created',
  'webhook_endpoint.updated',
  'webhook_endpoint.deleted',
  'webhook_endpoint.secret_rotated',
  'identity_provider.configured',
  'identity_provider.removed',
] as const;
export type ActivityAction = (typeof ACTIVITY_ACTIONS)[number];

export const ACTIVITY_TARGET_TYPES = [
  'member',
  'service_user',
  'token',
  'oauth_client',
  'oauth_application',
  'connection',
  'webhook_endpoint',
  'identity_provider',
] as const;
export type ActivityTargetType = (typeof ACTIVITY_TARGET_TYPES)[number];

/** member: a signed-in person (session); token: a service user's token; jwt: a JWT's subject; cli: an operator. */
export const ACTOR_KINDS = ['member', 'token', 'jwt', 'cli'] as const;
export type ActorKind = (typeof ACTOR_KINDS)[number];

/** Who acts: the member's id, the token's id or the JWT's subject; none for the CLI. */
export interface ActivityActor {
  kind: ActorKind;
  id: string | null;
}

/** Who made a change and from where: the request's client address and id (none for the CLI). */
export interface ActivityOrigin {
  actor: ActivityActor;
  address: string | null;
  requestId: string | null;
}

/** An operator at the command line: no address, no request. */
export const CLI_ORIGIN: ActivityOrigin = { actor: { kind: 'cli', id: null }, address: null, requestId: null };

/** One change: what was done, to what (its name as it is now, in the transaction). */
export interface ActivityChange {
  action: ActivityAction;
  targetId: string;
  targetName: string | null;
}

/** Statements inside the change's transaction: a raw `Tx`, or Prisma's through `prismaStatements`. */
export type ActivityStatements = Pick<RawSql, 'query'>;

/** Prisma's interactive transaction as a statement runner, so its writes record in their own transaction. */
export function prismaStatements(tx: Prisma.TransactionClient): ActivityStatements {
  return { query: <Row>(sql: string, params: unknown[] = []) => tx.$queryRawUnsafe<Row[]>(sql, ...params) };
}

// The actor's name is read in the same statement, from the row as the transaction sees it: a member's email, a
// token's service user's name; a JWT names itself by its subject.
const INSERT_ENTRY = `
INSERT INTO "public"."activity" AS "a"
  ("id", "tenant_id", "actor_kind", "actor_id", "actor_name", "action", "target_type", "target_id", "target_name", "address", "request_id")
VALUES ($1::text, $2::text, $3::text, $4::text,
  CASE $3::text
    WHEN 'member' THEN (SELECT "m"."email" FROM "public"."members" AS "m" WHERE "m"."tenant_id" = $2::text AND "m"."id" = $4::text)
    WHEN 'token' THEN (SELECT "u"."name" FROM "public"."tokens" AS "t"
                         JOIN "public"."service_users" AS "u" ON "u"."tenant_id" = "t"."tenant_id" AND "u"."id" = "t"."service_user_id"
                        WHERE "t"."tenant_id" = $2::text AND "t"."id" = $4::text)
    WHEN 'jwt' THEN $4::text
  END,
  $5::text, $6::text, $7::text, $8::text, $9::text, $10::text)`;

/**
 * Records one change of `tenantId`, inside the transaction that makes it. A write without an origin (seeding,
 * test fixtures) is not logged.
 */
export async function recordActivity(
  sql: ActivityStatements,
  tenantId: string,
  origin: ActivityOrigin | undefined,
  change: ActivityChange,
): Promise<void> {
  if (!origin) return;
  const targetType = change.action.slice(0, change.action.indexOf('.'));
  await sql.query(INSERT_ENTRY, [
    newId('act'),
    tenantId,
    origin.actor.kind,
    origin.actor.id,
    change.action,
    targetType,
    change.targetId,
    change.targetName,
    origin.address,
    origin.requestId,
  ]);
}

/** ACTIVITY_RETENTION_DAYS's default: a year of who did what. */
export const DEFAULT_ACTIVITY_RETENTION_DAYS = 365;

/** Retention: deletes entries older than `retentionDays`, in batches (as events are). Returns how many. */
export async function deleteOldActivity(sql: Pick<RawSql, 'query'>, retentionDays: number, options: BatchOptions = {}): Promise<number> {
  return deleteInBatches(
    sql,
    `WITH "old" AS (
       SELECT "a"."id" FROM "public"."activity" AS "a"
       WHERE "a"."created_at" < now() - make_interval(secs => $1::double precision)
       LIMIT $2
     )
     DELETE FROM "public"."activity" AS "a" USING "old" WHERE "a"."id" = "old"."id"
     RETURNING 1 AS "n"`,
    retentionDays * 24,
    options,
  );
}
