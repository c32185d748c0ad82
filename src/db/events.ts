import type { Connection, Sync } from '../generated/prisma/client.js';
import type { RawSql } from './client.js';
import { connectionMessageData, syncMessageData, type WebhookData } from '../domain/webhook-messages.js';
import { timestampTextSql } from '../timestamps.js';
import { SYNC_TIMESTAMPS } from '../domain/sync-record.js';
import type { EventType } from '../domain/event-types.js';
import { MAX_DELIVERIES_PER_EVENT } from '../domain/webhook-caps.js';
import type { Tx } from './write-transactions.js';

// The durable event log. Every state change of a connection or a run appends one event in
// the transaction that makes the change, so an event exists exactly when its change committed.
//
// Ids: per tenant 1, 2, 3… with no gap, taken by an UPDATE of the tenant's `event_sequences` row as the LAST
// statement of the writing transaction. The row lock lasts until that transaction ends, so the next writer
// of the tenant gets its ids only after the previous one committed (or rolled back, giving its ids back): a
// reader that has seen id n and finds n+1 knows there is no earlier id still to come. Being last, the lock
// is never held while waiting for another lock, so it cannot deadlock with the connection/run lock order.
//
// NOTIFY carries ids only ("<tenant_id>:<last id>"), delivered by PostgreSQL (and PGlite) at commit.
//
// The webhook outbox is written by the same statement: one delivery per event and enabled endpoint of the
// tenant that takes its type, for events of connections whose settings.webhook_enabled is true (see
// src/webhooks/), at most MAX_DELIVERIES_PER_EVENT of them (the oldest) per event. Sequence, log, outbox and notifications are one statement, sent with the transaction's COMMIT,
// so the tenant's row lock is held while PostgreSQL runs those two, not across a round trip to this process.

export const WEBHOOKS_CHANNEL = 'ig_webhooks';

export const EVENTS_CHANNEL = 'ig_events';

interface NewEvent {
  type: EventType;
  subjectId: string;
  payload: Record<string, unknown>;
  /** The `data` of its webhook message; the event is sent to no endpoint without one. */
  webhookData?: WebhookData;
  /** The connection it is about: its webhooks are sent only while that connection's settings.webhook_enabled is true. */
  connectionId?: string;
}

export interface StoredEvent extends Omit<NewEvent, 'webhookData' | 'connectionId'> {
  tenantId: string;
  id: number;
  createdAt: Date;
  /** The payload's size as JSON text, as read from the log: what holding the event costs a stream. */
  bytes?: number;
}

/**
 * The event of a run's state: `sync.<status>`, or `sync.progress` for a progress report. The payload holds the
 * whole row as it was written (`run`), so a subscriber is shown the run at that change, not as it is by the
 * time it reads, and a resumed stream replays the history exactly.
 */
export function syncEvent(run: Sync, progress = false): NewEvent {
  return {
    type: progress ? 'sync.progress' : (`sync.${run.status}` as EventType),
    subjectId: run.id,
    payload: { connection_id: run.connectionId, status: run.status, attempt: run.attempt, run },
    webhookData: syncMessageData(run),
    connectionId: run.connectionId,
  };
}

export function connectionEvent(
  connection: Connection,
  type: 'connection.created' | 'connection.updated' | 'connection.deleted',
): NewEvent {
  return {
    type,
    subjectId: connection.id,
    payload: { status: connection.status },
    webhookData: connectionMessageData(connection),
    connectionId: connection.id,
  };
}

/** The connection an event is about: a connection's own events, and its runs' (undefined for other events). */
export function connectionOfEvent(event: Pick<StoredEvent, 'type' | 'subjectId' | 'payload'>): string | undefined {
  if (event.type.startsWith('connection.')) return event.subjectId;
  if (event.type.startsWith('sync.')) {
    const connectionId = event.payload.connection_id;
    return typeof connectionId === 'string' ? connectionId : undefined;
  }
  return undefined;
}

/** The run a `sync.*` event recorded (its `run` payload member, dates revived); null for older events without one. */
export function syncOfEvent(event: Pick<StoredEvent, 'payload'>): Sync | null {
  const run = event.payload.run;
  if (typeof run !== 'object' || run === null) return null;
  const revived: Record<string, unknown> = { ...(run as Record<string, unknown>) };
  for (const member of SYNC_TIMESTAMPS) {
    const value = revived[member];
    if (typeof value === 'string') revived[member] = new Date(value);
  }
  return revived as unknown as Sync;
}

/**
 * Appends the events of one transaction, in order, queues their webhook deliveries and notifies listeners at
 * commit, in one statement. It is the last statement of the transaction (see above), and is sent with its COMMIT
 * (`queryThenCommit`): the tenant's sequence row is locked only while PostgreSQL runs the two. Returns the ids
 * given.
 */
export async function appendEvents(tx: Tx, tenantId: string, events: readonly NewEvent[]): Promise<number[]> {
  if (events.length === 0) return [];
  const payloads = events.map((e) => JSON.stringify(e.payload));
  const [row] = await tx.queryThenCommit<{ lastId: string }>(
    `WITH "seq" AS (
       INSERT INTO "public"."event_sequences" AS "q" ("tenant_id", "last_id") VALUES ($1, $2)
       ON CONFLICT ("tenant_id") DO UPDATE SET "last_id" = "q"."last_id" + $2
       RETURNING "q"."last_id"
     ), "new" AS (
       SELECT "seq"."last_id" - $2 + "e"."n" AS "id", "e"."type", "e"."subject_id", "e"."payload", "e"."message", "e"."connection_id",
              "e"."payload_bytes"
       FROM "seq", unnest($3::text[], $4::text[], $5::jsonb[], $6::jsonb[], $7::text[], $11::int[])
         WITH ORDINALITY AS "e"("type", "subject_id", "payload", "message", "connection_id", "payload_bytes", "n")
     ), "logged" AS (
       INSERT INTO "public"."events" ("tenant_id", "id", "type", "subject_id", "payload", "payload_bytes")
       SELECT $1, "new"."id", "new"."type", "new"."subject_id", "new"."payload", "new"."payload_bytes" FROM "new"
     ), "outbox" AS (
       INSERT INTO "public"."webhook_deliveries" ("id", "tenant_id", "endpoint_id", "event_id", "event_type", "payload")
       SELECT 'msg_' || replace(gen_random_uuid()::text, '-', ''), $1, "w"."id", "new"."id", "new"."type",
              jsonb_build_object(
                'type', "new"."type",
                'timestamp', ${timestampTextSql('now()')},
                'event_id', "new"."id",
                'data', "new"."message")
       FROM "new"
       CROSS JOIN LATERAL (
         SELECT "e"."id" FROM "public"."webhook_endpoints" AS "e"
         WHERE "e"."tenant_id" = $1 AND "e"."enabled"
           AND (coalesce(cardinality("e"."event_types"), 0) = 0 OR "new"."type" = ANY ("e"."event_types"))
         ORDER BY "e"."created_at", "e"."id"
         LIMIT $10
       ) AS "w"
       LEFT JOIN "public"."connections" AS "c" ON "c"."tenant_id" = $1 AND "c"."id" = "new"."connection_id"
       WHERE "new"."message" IS NOT NULL
         AND ("new"."connection_id" IS NULL OR "c"."settings" -> 'webhook_enabled' = 'true'::jsonb)
       RETURNING 1
     )
     SELECT "seq"."last_id"::text AS "lastId",
            pg_notify($8, $1 || ':' || "seq"."last_id"::text),
            CASE WHEN EXISTS (SELECT 1 FROM "outbox") THEN pg_notify($9, $1) END
     FROM "seq"`,
    [
      tenantId,
      events.length,
      events.map((e) => e.type),
      events.map((e) => e.subjectId),
      payloads,
      events.map((e) => (e.webhookData ? JSON.stringify(e.webhookData) : null)),
      events.map((e) => e.connectionId ?? null),
      EVENTS_CHANNEL,
      WEBHOOKS_CHANNEL,
      MAX_DELIVERIES_PER_EVENT,
      payloads.map((text) => Buffer.byteLength(text)),
    ],
  );
  const last = Number(row!.lastId);
  const first = last - events.length + 1;
  return events.map((_, i) => first + i);
}

interface EventRow {
  tenantId: string;
  id: string;
  type: EventType;
  subjectId: string;
  payload: Record<string, unknown>;
  createdAt: Date;
  bytes: number;
  rowsRead: string;
}

/** Events of one read of the log, and whether more may follow them. */
export interface EventPage {
  events: StoredEvent[];
  more: boolean;
}

/**
 * The tenant's events after `afterId`, oldest first: at most `rows`, and no more than `bytes` of payload (the
 * first event always, whatever its size), so a page of the log costs a bounded amount of memory even when each
 * event is large. The bound is applied by PostgreSQL, on each event's stored size (payload_bytes), to the rows of
 * the page only.
 */
export async function readEventPage(
  sql: Pick<RawSql, 'query'>,
  tenantId: string,
  afterId: number,
  { rows, bytes }: { rows: number; bytes: number },
): Promise<EventPage> {
  const read = await sql.query<EventRow>(
    `WITH "page" AS (
       SELECT "e"."tenant_id", "e"."id", "e"."type", "e"."subject_id", "e"."payload", "e"."created_at", "e"."payload_bytes" AS "bytes"
       FROM "public"."events" AS "e"
       WHERE "e"."tenant_id" = $1 AND "e"."id" > $2::bigint
       ORDER BY "e"."id"
       LIMIT $3),
     "sized" AS (
       SELECT "page".*, sum("page"."bytes") OVER (ORDER BY "page"."id") AS "running",
              row_number() OVER (ORDER BY "page"."id") AS "n", count(*) OVER () AS "rows_read" FROM "page")
     SELECT "s"."tenant_id" AS "tenantId", "s"."id"::text AS "id", "s"."type", "s"."subject_id" AS "subjectId", "s"."payload",
            "s"."created_at" AS "createdAt", "s"."bytes", "s"."rows_read"::text AS "rowsRead"
     FROM "sized" AS "s"
     WHERE "s"."running" <= $4 OR "s"."n" = 1
     ORDER BY "s"."id"`,
    [tenantId, String(afterId), rows, bytes],
  );
  const rowsRead = read.length > 0 ? Number(read[0]!.rowsRead) : 0;
  return {
    events: read.map(({ rowsRead: _, ...row }) => ({ ...row, id: Number(row.id) })),
    more: read.length < rowsRead || rowsRead === rows,
  };
}

/** The tenant's last event id (0 before its first event). */
export async function lastEventId(sql: Pick<RawSql, 'query'>, tenantId: string): Promise<number> {
  const [row] = await sql.query<{ lastId: string }>(
    `SELECT "q"."last_id"::text AS "lastId" FROM "public"."event_sequences" AS "q" WHERE "q"."tenant_id" = $1`,
    [tenantId],
  );
  return row ? Number(row.lastId) : 0;
}

/** The tenant's oldest event still kept (retention deletes the older ones); null when it has none. */
export async function oldestEventId(sql: Pick<RawSql, 'query'>, tenantId: string): Promise<number | null> {
  const [row] = await sql.query<{ id: string | null }>(
    `SELECT min("e"."id")::text AS "id" FROM "public"."events" AS "e" WHERE "e"."tenant_id" = $1`,
    [tenantId],
  );
  return row?.id ? Number(row.id) : null;
}

/**
 * Retention: deletes events older than `retentionHours`, at most `batch` rows per statement, until none is
 * left or `maxBatches` ran. The sequence rows stay, so ids are never reused. Returns how many were deleted.
 */
export async function deleteOldEvents(sql: Pick<RawSql, 'query'>, retentionHours: number, options: BatchOptions = {}): Promise<number> {
  return deleteInBatches(
    sql,
    `WITH "old" AS (
       SELECT "e"."tenant_id", "e"."id" FROM "public"."events" AS "e"
       WHERE "e"."created_at" < now() - make_interval(secs => $1::double precision)
       LIMIT $2
     )
     DELETE FROM "public"."events" AS "e" USING "old"
     WHERE "e"."tenant_id" = "old"."tenant_id" AND "e"."id" = "old"."id"
     RETURNING 1 AS "n"`,
    retentionHours,
    options,
  );
}

export interface BatchOptions {
  batch?: number;
  maxBatches?: number;
}

/**
 * Runs a retention DELETE (`$1`: the retention in hours, `$2`: the batch size; `RETURNING 1`) until a batch
 * deletes fewer rows than its size, or `maxBatches` ran. Returns how many rows were deleted.
 */
export async function deleteInBatches(
  sql: Pick<RawSql, 'query'>,
  statement: string,
  retentionHours: number,
  { batch = 5000, maxBatches = 20 }: BatchOptions = {},
): Promise<number> {
  let deleted = 0;
  for (let i = 0; i < maxBatches; i++) {
    const rows = await sql.query<{ n: number }>(statement, [retentionHours * 3600, batch]);
    deleted += rows.length;
    if (rows.length < batch) break;
  }
  return deleted;
}
