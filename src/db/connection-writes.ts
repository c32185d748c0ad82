import {
  catalogProblems,
  type ApplicationCategoryLookup,
  type ConnectionPatch,
  type CreateConnectionInput,
} from '../domain/connection-input.js';
import { connectionMemberProblems, defaultSettings, mergePatch } from '../domain/connection-members.js';
import { assertAdminConnectionTransition } from '../domain/connection-status.js';
import { invalidInput, type FieldProblem } from '../domain/problems.js';
import { ACTIVE_SYNC_STATUSES, SYNC_FAILURES } from '../domain/sync-lifecycle.js';
import { ApiError } from '../errors.js';
import type { Connection, Sync } from '../generated/prisma/client.js';
import { newId } from '../prefixed-ids.js';
import { kindOfCategory } from '../domain/category-kinds.js';
import type { RawSql } from './client.js';
import { appendEvents, connectionEvent, syncEvent } from './events.js';
import { type ActivityOrigin, recordActivity } from './activity.js';
import { CONNECTION_ROW, failedSummarySql, inTransaction, SYNC_ROW, type TransactionRunner, type Tx } from './write-transactions.js';

// Writes of connections: create, change (JSON Merge Patch) and delete, one transaction each, scoped by tenant in
// every statement. Status changes an admin asks for follow src/domain/connection-status.ts; the ones runs
// cause are made in sync-runs.ts.

function notFound(id: string): ApiError {
  return new ApiError('NOT_FOUND', `connection ${id} not found`);
}

const SLUG_MAX = 60;

/** Lower-case ASCII words joined by dashes: "Stripe – EU account" → "stripe-eu-account". */
export function slugify(text: string): string {
  return text
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .slice(0, SLUG_MAX)
    .replace(/^-+|-+$/g, '');
}

/** The first of `base`, `base-2`, `base-3`… that no live connection of the tenant uses. */
async function freeSlug(tx: Tx, tenantId: string, base: string): Promise<string> {
  // Serializes slug choice within the tenant, so two concurrent creates do not pick the same one.
  await tx.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`connection-slug:${tenantId}`]);
  const rows = await tx.query<{ slug: string }>(
    `SELECT "c"."slug" FROM "public"."connections" AS "c"
     WHERE "c"."tenant_id" = $1 AND "c"."deleted_at" IS NULL AND ("c"."slug" = $2 OR "c"."slug" LIKE $3)`,
    [tenantId, base, `${base}-%`],
  );
  const taken = new Set(rows.map((row) => row.slug));
  let slug = base;
  for (let n = 2; taken.has(slug); n++) slug = `${base}-${n}`;
  return slug;
}

interface ApplicationRow {
  id: string;
  slug: string;
  name: string;
  description: string;
  categoryId: string;
}

function findApplication(sql: Pick<RawSql, 'query'>, id: string): Promise<ApplicationRow[]> {
  return sql.query<ApplicationRow>(
    `SELECT "a"."id", "a"."slug", "a"."name", "a"."description", "a"."category_id" AS "categoryId"
     FROM "public"."applications" AS "a" WHERE "a"."id" = $1`,
    [id],
  );
}

/** The catalog as the input checks read it (domain/connection-input.ts), through `sql`. */
export function applicationCategoryOf(sql: Pick<RawSql, 'query'>): ApplicationCategoryLookup {
  return async (applicationId) => (await findApplication(sql, applicationId))[0]?.categoryId ?? null;
}

/**
 * Connects a catalog application: `pending` until its first successful run. Name, slug and description
 * default from the application; settings members left out get their defaults (`null` leaves one out, e.g.
 * `sync_interval` for a connection that is only run when triggered). An unknown application and every
 * problem of metadata and settings are one INVALID_QUERY listing them all.
 */
export async function createConnection(
  sql: TransactionRunner,
  tenantId: string,
  input: CreateConnectionInput,
  createdBy: string | null = null,
  activity?: ActivityOrigin,
): Promise<Connection> {
  return inTransaction(sql, async (tx) => {
    const [application] = await findApplication(tx, input.applicationId);
    const problems = catalogProblems(application?.categoryId ?? null, input.applicationId, input);
    if (problems.length > 0 || !application) throw invalidInput(problems);
    const kind = kindOfCategory(application.categoryId);
    const metadata = input.metadata ?? {};
    const settings = mergePatch(defaultSettings(kind), input.settings ?? {});

    const name = input.name ?? application.name;
    const slug = await freeSlug(tx, tenantId, slugify(name) || application.slug);
    const [connection] = await tx.query<Connection>(
      `INSERT INTO "public"."connections" AS "c"
         ("id", "tenant_id", "application_id", "name", "slug", "description", "logo_url", "keywords", "via", "status",
          "metadata", "settings", "created_by")
       SELECT $1, $2, "a"."id", $3, $4, $5, "a"."logo_url", "a"."keywords", $6::connection_via, 'pending', $7::jsonb, $8::jsonb, $10
       FROM "public"."applications" AS "a" WHERE "a"."id" = $9
       RETURNING ${CONNECTION_ROW}`,
      [
        newId('con'),
        tenantId,
        name,
        slug,
        input.description ?? application.description,
        input.via ?? 'manual',
        JSON.stringify(metadata),
        JSON.stringify(settings),
        application.id,
        createdBy,
      ],
    );
    // Before the events: their statement commits the transaction (appendEvents).
    await recordActivity(tx, tenantId, activity, { action: 'connection.created', targetId: connection!.id, targetName: connection!.name });
    await appendEvents(tx, tenantId, [connectionEvent(connection!, 'connection.created')]);
    return connection!;
  });
}

type LockedConnection = Connection & { categoryId: string };

/** A JSON member after a merge patch: left alone (undefined), removed whole (null), or merged. */
function patched(current: unknown, patch: Record<string, unknown> | null | undefined): unknown {
  if (patch === undefined) return current;
  return patch === null ? {} : mergePatch(current, patch);
}

/**
 * Applies a JSON Merge Patch (RFC 7396) to a live connection: name, description (`null` empties it), status
 * (as the state machine allows an admin; the current status again is a no-op), metadata and settings (merged
 * member by member, `null` removes one, then validated whole against the application's kind). Input
 * problems are INVALID_QUERY, a refused status change CONFLICT; either way nothing changes.
 */
export async function updateConnection(
  sql: TransactionRunner,
  tenantId: string,
  id: string,
  patch: ConnectionPatch,
  activity?: ActivityOrigin,
): Promise<Connection> {
  return inTransaction(sql, async (tx) => {
    const [current] = await tx.query<LockedConnection>(
      `SELECT ${CONNECTION_ROW}, "a"."category_id" AS "categoryId"
       FROM "public"."connections" AS "c" JOIN "public"."applications" AS "a" ON "a"."id" = "c"."application_id"
       WHERE "c"."tenant_id" = $1 AND "c"."id" = $2 AND "c"."deleted_at" IS NULL
       FOR NO KEY UPDATE OF "c"`,
      [tenantId, id],
    );
    if (!current) throw notFound(id);

    const kind = kindOfCategory(current.categoryId);
    const metadata = patched(current.metadata, patch.metadata);
    const settings = patched(current.settings, patch.settings);
    if (patch.metadata !== undefined || patch.settings !== undefined) {
      // Stored members are only judged when the patch touches them: a rename must not fail over old data.
      const problems: FieldProblem[] = connectionMemberProblems(kind, { metadata, settings }).filter(
        (problem) => patch[problem.field.split('.')[0] as 'metadata' | 'settings'] !== undefined,
      );
      if (problems.length > 0) throw invalidInput(problems);
    }
    if (patch.status !== undefined) assertAdminConnectionTransition(id, current.status, patch.status);

    const [connection] = await tx.query<Connection>(
      `UPDATE "public"."connections" AS "c"
       SET "name" = $3, "description" = $4, "status" = $5::connection_status, "metadata" = $6::jsonb, "settings" = $7::jsonb,
           "updated_at" = now()
       WHERE "c"."tenant_id" = $1 AND "c"."id" = $2 AND "c"."deleted_at" IS NULL
       RETURNING ${CONNECTION_ROW}`,
      [
        tenantId,
        id,
        patch.name ?? current.name,
        patch.description === undefined ? current.description : (patch.description ?? ''),
        patch.status ?? current.status,
        JSON.stringify(metadata),
        JSON.stringify(settings),
      ],
    );
    await recordActivity(tx, tenantId, activity, { action: 'connection.updated', targetId: id, targetName: connection!.name });
    await appendEvents(tx, tenantId, [connectionEvent(connection!, 'connection.updated')]);
    return connection!;
  });
}

interface DeletedConnection {
  connection: Connection;
  /** Its runs that were pending or in progress, now failed with "connection deleted". */
  failedRuns: Sync[];
}

/**
 * Deletes a live connection (soft: it is not found anywhere afterwards, its history stays readable) and, in
 * the same transaction, fails its pending and in-progress runs with "connection deleted"; a later report on
 * one of them is a CONFLICT. NOT_FOUND when there is no such live connection.
 */
export async function deleteConnection(
  sql: TransactionRunner,
  tenantId: string,
  id: string,
  activity?: ActivityOrigin,
): Promise<DeletedConnection> {
  return inTransaction(sql, async (tx) => {
    const [connection] = await tx.query<Connection>(
      `UPDATE "public"."connections" AS "c" SET "deleted_at" = now(), "updated_at" = now()
       WHERE "c"."tenant_id" = $1 AND "c"."id" = $2 AND "c"."deleted_at" IS NULL
       RETURNING ${CONNECTION_ROW}`,
      [tenantId, id],
    );
    if (!connection) throw notFound(id);
    const failedRuns = await tx.query<Sync>(
      `UPDATE "public"."syncs" AS "s"
       SET "status" = 'failed', "finished_at" = GREATEST(now(), "s"."started_at"), "error_message" = $3,
           "summary" = ${failedSummarySql('$3')}, "lease_expires_at" = NULL, "updated_at" = now()
       WHERE "s"."tenant_id" = $1 AND "s"."connection_id" = $2 AND "s"."status" = ANY($4::text[]::sync_status[])
       RETURNING ${SYNC_ROW}`,
      [tenantId, id, SYNC_FAILURES.connectionDeleted, ACTIVE_SYNC_STATUSES],
    );
    await recordActivity(tx, tenantId, activity, { action: 'connection.deleted', targetId: id, targetName: connection.name });
    await appendEvents(tx, tenantId, [connectionEvent(connection, 'connection.deleted'), ...failedRuns.map((run) => syncEvent(run))]);
    return { connection, failedRuns };
  });
}
