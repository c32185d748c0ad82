import type { Connection, Sync } from '../generated/prisma/client.js';
import type { RawSql } from './client.js';
import type { Tx } from './write-transactions.js';

// The durable event log (issue #13 item 1). Every state change of a connection or a run appends one event in
// the transaction that makes the change, so an event exists exactly when its change committed.
//
// Ids: per tenant 1, 2, 3… with no gap, taken by an UPDATE of the tenant's `event_sequences` row as the LAST
// statement of the writing transaction. The row lock lasts until that transaction ends, so the next writer
// of the tenant gets its ids only after the previous one committed (or rolled back, giving its ids back): a
// reader that has seen id n and finds n+1 knows there is no earlier id still to come. Being last, the lock
// is never held while waiting for another lock, so it cannot deadlock with the connection/run lock order.
//
// NOTIFY carries ids only ("<tenant_id>:<last id>"), delivered by PostgreSQL (and PGlite) at commit.

export const EVENTS_CHANNEL = 'ig_events';

export const EVENT_TYPES = [
  'connection.created',
  'connection.updated',
  'connection.deleted',
  'sync.pending',
  'sync.in_progress',
  'sync.progress',
  'sync.success',
  'sync.failed',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export interface NewEvent {
  type: EventType;
  subjectId: string;
  payload: Record<string, unknown>;
}

export interface StoredEvent extends NewEvent {
  tenantId: string;
  id: number;
  createdAt: Date;
}

/** The event of a run's state: `sync.<status>`, or `sync.progress` for a progress report. */
export function syncEvent(run: Sync, progress = false): NewEvent {
  return {
    type: progress ? 'sync.progress' : (`sync.${run.status}` as EventType),
    subjectId: run.id,
    payload: { connection_id: run.connectionId, status: run.status, attempt: run.attempt },
  };
}

export function connectionEvent(connection: Connection, type: 'connection.created' | 'connection.updated' | 'connection.deleted'): NewEvent {
  return { type, subjectId: connection.id, payload: { status: connection.status } };
}

/**
 * Appends the events of one transaction, in order, and notifies listeners at commit. Must be the last
 * statement of the transaction (see above). Returns the ids given.
 */
export async function appendEvents(tx: Tx, tenantId: string, events: readonly NewEvent[]): Promise<number[]> {
  if (events.length === 0) return [];
  const [sequence] = await tx.query<{ lastId: string | number }>(
    `INSERT INTO "public"."event_sequences" AS "q" ("tenant_id", "last_id") VALUES ($1, $2)
     ON CONFLICT ("tenant_id") DO UPDATE SET "last_id" = "q"."last_id" + $2
     RETURNING "q"."last_id"::text AS "lastId"`,
    [tenantId, events.length],
  );
  const last = Number(sequence!.lastId);
  const first = last - events.length + 1;
  await tx.query(
    `INSERT INTO "public"."events" ("tenant_id", "id", "type", "subject_id", "payload")
     SELECT $1, "e"."id", "e"."type", "e"."subject_id", "e"."payload"
     FROM unnest($2::bigint[], $3::text[], $4::text[], $5::jsonb[]) AS "e"("id", "type", "subject_id", "payload")`,
    [
      tenantId,
      events.map((_, i) => String(first + i)),
      events.map((e) => e.type),
      events.map((e) => e.subjectId),
      events.map((e) => JSON.stringify(e.payload)),
    ],
  );
  await tx.query('SELECT pg_notify($1, $2)', [EVENTS_CHANNEL, `${tenantId}:${last}`]);
  return events.map((_, i) => first + i);
}

interface EventRow {
  tenantId: string;
  id: string;
  type: EventType;
  subjectId: string;
  payload: Record<string, unknown>;
  createdAt: Date;
}

/** The tenant's events after `afterId`, oldest first. */
export async function readEvents(
  sql: Pick<RawSql, 'query'>,
  tenantId: string,
  afterId: number,
  limit = 1000,
): Promise<StoredEvent[]> {
  const rows = await sql.query<EventRow>(
    `SELECT "e"."tenant_id" AS "tenantId", "e"."id"::text AS "id", "e"."type", "e"."subject_id" AS "subjectId",
            "e"."payload", "e"."created_at" AS "createdAt"
     FROM "public"."events" AS "e"
     WHERE "e"."tenant_id" = $1 AND "e"."id" > $2::bigint
     ORDER BY "e"."id"
     LIMIT $3`,
    [tenantId, String(afterId), limit],
  );
  return rows.map((row) => ({ ...row, id: Number(row.id) }));
}

/** The tenant's last event id (0 before its first event). */
export async function lastEventId(sql: Pick<RawSql, 'query'>, tenantId: string): Promise<number> {
  const [row] = await sql.query<{ lastId: string }>(
    `SELECT "q"."last_id"::text AS "lastId" FROM "public"."event_sequences" AS "q" WHERE "q"."tenant_id" = $1`,
    [tenantId],
  );
  return row ? Number(row.lastId) : 0;
}

/**
 * Retention: deletes events older than `retentionHours`, at most `batch` rows per statement, until none is
 * left or `maxBatches` ran. The sequence rows stay, so ids are never reused. Returns how many were deleted.
 */
export async function deleteOldEvents(
  sql: Pick<RawSql, 'query'>,
  retentionHours: number,
  { batch = 5000, maxBatches = 20 }: { batch?: number; maxBatches?: number } = {},
): Promise<number> {
  let deleted = 0;
  for (let i = 0; i < maxBatches; i++) {
    const rows = await sql.query<{ n: number }>(
      `WITH "old" AS (
         SELECT "e"."tenant_id", "e"."id" FROM "public"."events" AS "e"
         WHERE "e"."created_at" < now() - make_interval(secs => $1::double precision)
         LIMIT $2
       )
       DELETE FROM "public"."events" AS "e" USING "old"
       WHERE "e"."tenant_id" = "old"."tenant_id" AND "e"."id" = "old"."id"
       RETURNING 1 AS "n"`,
      [retentionHours * 3600, batch],
    );
    deleted += rows.length;
    if (rows.length < batch) break;
  }
  return deleted;
}
