import { SYNC_INTERVAL_SECONDS, type SyncInterval } from '../domain/connection-members.js';
import { connectionStatusAfterRun, RUNNABLE_CONNECTION_STATUSES, SCHEDULED_CONNECTION_STATUSES } from '../domain/connection-status.js';
import { invalidInput } from '../domain/problems.js';
import {
  ACTIVE_SYNC_STATUSES,
  LEASE_SECONDS,
  RETRY_BACKOFF,
  retryDelaySeconds,
  shouldRetry,
  SYNC_FAILURES,
  syncTransitionConflict,
  type RetryPolicy,
} from '../domain/sync-lifecycle.js';
import type { ProgressSummary, SyncOutcome } from '../domain/sync-reports.js';
import { ApiError } from '../errors.js';
import type { Connection, Sync } from '../generated/prisma/client.js';
import type { ConnectionStatus } from '../generated/prisma/enums.js';
import { newId } from '../prefixed-ids.js';
import type { RawSql } from './client.js';
import { appendEvents, connectionEvent, syncEvent } from './events.js';
import { CONNECTION_ROW, failedSummarySql, inTransaction, SYNC_ROW, type TransactionRunner, type Tx } from './write-transactions.js';

// The run lifecycle: trigger, claim, progress, finish, plus the scheduler's two jobs (queue due runs, fail
// runs whose lease expired). Each change is one transaction; each run transition one conditional UPDATE
// (`… AND status = 'x'`): when it changes nothing, the row is read to tell NOT_FOUND from CONFLICT, and the
// refusal leaves it as it was. The trigger `syncs_status_transition_guard` stands behind all of them. Enum arrays
// travel as text[] (PGlite serializes only arrays of types it knows) and are cast in SQL.

const ACTIVE_RUN_CONFLICT = `ON CONFLICT ("tenant_id", "connection_id") WHERE "status" = ANY (ARRAY['pending'::sync_status, 'in_progress'::sync_status]) DO NOTHING`;

function syncNotFound(id: string): ApiError {
  return new ApiError('NOT_FOUND', `sync ${id} not found`);
}

function connectionNotFound(id: string): ApiError {
  return new ApiError('NOT_FOUND', `connection ${id} not found`);
}

interface QueuedRun {
  connectionId: string;
  summary: Record<string, unknown>;
  /** Seconds from now until it may be claimed. */
  delaySeconds: number;
  attempt: number;
  retryOfId: string | null;
}

/**
 * Inserts a pending run, unless the connection has an active one already (the partial unique index decides,
 * so two processes cannot both queue one). Returns null in that case.
 */
async function queueRun(tx: Tx, tenantId: string, run: QueuedRun): Promise<Sync | null> {
  const [row] = await tx.query<Sync>(
    `INSERT INTO "public"."syncs" AS "s" ("id", "tenant_id", "connection_id", "status", "started_at", "due_at", "summary", "attempt", "retry_of_id")
     VALUES ($1, $2, $3, 'pending', now(), now() + make_interval(secs => $4), $5::jsonb, $6, $7)
     ${ACTIVE_RUN_CONFLICT}
     RETURNING ${SYNC_ROW}`,
    [newId('syn'), tenantId, run.connectionId, run.delaySeconds, JSON.stringify(run.summary), run.attempt, run.retryOfId],
  );
  return row ?? null;
}

async function activeRunOf(tx: Tx, tenantId: string, connectionId: string): Promise<Pick<Sync, 'id' | 'status'> | undefined> {
  const [row] = await tx.query<Pick<Sync, 'id' | 'status'>>(
    `SELECT "s"."id", "s"."status"::text AS "status" FROM "public"."syncs" AS "s"
     WHERE "s"."tenant_id" = $1 AND "s"."connection_id" = $2 AND "s"."status" = ANY($3::text[]::sync_status[])`,
    [tenantId, connectionId, ACTIVE_SYNC_STATUSES],
  );
  return row;
}

interface TriggerSyncInput {
  connectionId: string;
  /** Shown in the queued run's summary. */
  estimatedItems?: number;
}

/**
 * Queues a run of a live connection: `pending`, due now, summary `{queued: true, estimated_items?}`.
 * CONFLICT when the connection is paused, or already has a pending or in-progress run (the message names
 * it); NOT_FOUND when there is no such live connection.
 */
export async function triggerSync(sql: TransactionRunner, tenantId: string, input: TriggerSyncInput): Promise<Sync> {
  return inTransaction(sql, async (tx) => {
    // FOR SHARE: a delete or pause of the connection waits until this run is queued (and then fails it).
    const [connection] = await tx.query<{ status: ConnectionStatus }>(
      `SELECT "c"."status"::text AS "status" FROM "public"."connections" AS "c"
       WHERE "c"."tenant_id" = $1 AND "c"."id" = $2 AND "c"."deleted_at" IS NULL
       FOR SHARE OF "c"`,
      [tenantId, input.connectionId],
    );
    if (!connection) throw connectionNotFound(input.connectionId);
    if (!RUNNABLE_CONNECTION_STATUSES.includes(connection.status)) {
      throw new ApiError(
        'CONFLICT',
        `connection ${input.connectionId} is "${connection.status}": runs can be triggered while it is ${RUNNABLE_CONNECTION_STATUSES.map((s) => `"${s}"`).join(', ')}; set it to "active" first`,
      );
    }
    const summary = { queued: true, ...(input.estimatedItems === undefined ? {} : { estimated_items: input.estimatedItems }) };
    // Twice at most: the active run met on the first try may finish before it can be named.
    for (let attempt = 0; attempt < 2; attempt++) {
      const run = await queueRun(tx, tenantId, { connectionId: input.connectionId, summary, delaySeconds: 0, attempt: 1, retryOfId: null });
      if (run) {
        await appendEvents(tx, tenantId, [syncEvent(run)]);
        return run;
      }
      const active = await activeRunOf(tx, tenantId, input.connectionId);
      if (active) {
        throw new ApiError(
          'CONFLICT',
          `connection ${input.connectionId} already has an active run: sync ${active.id} is "${active.status}"; a connection has one pending or in-progress run at a time`,
        );
      }
    }
    throw new ApiError('CONFLICT', `connection ${input.connectionId} already has a pending or in-progress run`);
  });
}

interface ClaimSyncInput {
  /** Who claims (the credential's subject): only they may report on the run. */
  workerId: string;
  /** How long the run stays theirs without a progress report; LEASE_SECONDS bounds it. */
  leaseSeconds?: number;
  connectionId?: string;
  applicationSlug?: string;
}

function leaseSecondsOf(input: { leaseSeconds?: number | undefined }): number {
  const lease = input.leaseSeconds ?? LEASE_SECONDS.default;
  if (!Number.isInteger(lease) || lease < LEASE_SECONDS.min || lease > LEASE_SECONDS.max) {
    throw invalidInput([{ field: 'lease_seconds', message: `must be an integer from ${LEASE_SECONDS.min} to ${LEASE_SECONDS.max}` }]);
  }
  return lease;
}

/**
 * Takes the oldest due pending run of the tenant (optionally of one connection or application), moves it to
 * `in_progress` with a lease and returns it; null when nothing is due. Runs of paused or deleted connections
 * are not claimable. Concurrent claimers never get the same run (FOR UPDATE SKIP LOCKED).
 */
export async function claimSync(sql: TransactionRunner, tenantId: string, input: ClaimSyncInput): Promise<Sync | null> {
  const leaseSeconds = leaseSecondsOf(input);
  return inTransaction(sql, async (tx) => {
    const [run] = await tx.query<Sync>(
      `WITH "due" AS (
         SELECT "s"."id" FROM "public"."syncs" AS "s"
         JOIN "public"."connections" AS "c" ON "c"."tenant_id" = "s"."tenant_id" AND "c"."id" = "s"."connection_id"
         JOIN "public"."applications" AS "a" ON "a"."id" = "c"."application_id"
         WHERE "s"."tenant_id" = $1 AND "s"."status" = 'pending' AND "s"."due_at" <= now()
           AND "c"."deleted_at" IS NULL AND "c"."status" = ANY($2::text[]::connection_status[])
           AND ($3::text IS NULL OR "s"."connection_id" = $3) AND ($4::text IS NULL OR "a"."slug" = $4)
         ORDER BY "s"."due_at", "s"."id"
         LIMIT 1
         FOR UPDATE OF "s" SKIP LOCKED
       )
       UPDATE "public"."syncs" AS "s"
       SET "status" = 'in_progress', "started_at" = now(), "lease_expires_at" = now() + make_interval(secs => $5),
           "lease_seconds" = $5, "worker_id" = $6, "updated_at" = now(),
           "summary" = jsonb_strip_nulls(jsonb_build_object('in_progress', true, 'processed', 0, 'estimated_items', "s"."summary" -> 'estimated_items'))
       FROM "due"
       WHERE "s"."tenant_id" = $1 AND "s"."id" = "due"."id" AND "s"."status" = 'pending'
       RETURNING ${SYNC_ROW}`,
      [tenantId, RUNNABLE_CONNECTION_STATUSES, input.connectionId ?? null, input.applicationSlug ?? null, leaseSeconds, input.workerId],
    );
    if (!run) return null;
    await appendEvents(tx, tenantId, [syncEvent(run)]);
    return run;
  });
}

type ReportedRun = Sync & { leaseLive: boolean };

/** Why a report on a run changed nothing: NOT_FOUND, or CONFLICT naming the run's state. */
async function refusedReport(tx: Tx, tenantId: string, syncId: string, workerId: string, requested: Sync['status']): Promise<ApiError> {
  const [run] = await tx.query<ReportedRun>(
    `SELECT ${SYNC_ROW}, "s"."lease_expires_at" > now() AS "leaseLive" FROM "public"."syncs" AS "s"
     WHERE "s"."tenant_id" = $1 AND "s"."id" = $2`,
    [tenantId, syncId],
  );
  if (!run) return syncNotFound(syncId);
  if (run.status === 'pending') {
    return new ApiError('CONFLICT', `sync ${syncId} is "pending": it has not been claimed; claim it before reporting on it`);
  }
  if (run.status !== 'in_progress') {
    const conflict = syncTransitionConflict(syncId, run.status, requested);
    if (run.status === 'failed' && run.errorMessage) {
      return new ApiError('CONFLICT', `${conflict.message} (it failed: ${run.errorMessage})`);
    }
    return conflict;
  }
  if (run.workerId !== workerId) return new ApiError('CONFLICT', `sync ${syncId} is "in_progress" under another worker's claim`);
  if (!run.leaseLive) {
    return new ApiError(
      'CONFLICT',
      `the lease on sync ${syncId} expired at ${run.leaseExpiresAt?.toISOString()}: report progress within lease_seconds (${run.leaseSeconds}) of the claim or of the previous report`,
    );
  }
  return syncTransitionConflict(syncId, run.status, requested);
}

/** The live-lease condition of every report: the run is in progress, claimed by this worker, lease not over. */
const CLAIMED_BY_WORKER = `"s"."tenant_id" = $1 AND "s"."id" = $2 AND "s"."status" = 'in_progress' AND "s"."worker_id" = $3 AND "s"."lease_expires_at" > now()`;

interface SyncProgressInput {
  syncId: string;
  workerId: string;
  /** Merged into the run's summary, member by member. */
  summary: ProgressSummary;
}

/**
 * Records progress on a run in progress and extends its lease by its lease length (a heartbeat). Only the
 * claimer may, and only while the lease lasts: otherwise CONFLICT and nothing changes. The same report twice
 * gives the same summary.
 */
export async function reportSyncProgress(sql: TransactionRunner, tenantId: string, input: SyncProgressInput): Promise<Sync> {
  return inTransaction(sql, async (tx) => {
    const [run] = await tx.query<Sync>(
      `UPDATE "public"."syncs" AS "s"
       SET "summary" = "s"."summary" || $4::jsonb || '{"in_progress": true}'::jsonb,
           "lease_expires_at" = now() + make_interval(secs => COALESCE("s"."lease_seconds", $5)), "updated_at" = now()
       WHERE ${CLAIMED_BY_WORKER}
       RETURNING ${SYNC_ROW}`,
      [tenantId, input.syncId, input.workerId, JSON.stringify(input.summary), LEASE_SECONDS.default],
    );
    if (!run) throw await refusedReport(tx, tenantId, input.syncId, input.workerId, 'in_progress');
    await appendEvents(tx, tenantId, [syncEvent(run, true)]);
    return run;
  });
}

interface FinishSyncInput {
  syncId: string;
  workerId: string;
  outcome: SyncOutcome;
}

interface RunConsequences {
  /** The retry queued for a failed run, when its connection's retry_attempts allows another attempt. */
  retry: Sync | null;
  /** The connection, when the run's outcome changed its status. */
  connection: Connection | null;
}

interface FinishedSync extends RunConsequences {
  run: Sync;
}

/** The connection a run belongs to, locked before the run changes (the lock order: connection, then run). */
interface RunConnection {
  id: string;
  status: ConnectionStatus;
  settings: unknown;
  deletedAt: Date | null;
}

interface RetryOptions {
  retryPolicy?: RetryPolicy;
}

/**
 * Records a run's outcome: `success` (summary, file_url, diff, checksum) or `failed` (error_message,
 * summary); `finished_at` is the server's clock. In the same transaction the connection follows the state
 * machine, and a failure with attempts left queues its retry. Only the claimer, while the lease lasts.
 */
export async function finishSync(
  sql: TransactionRunner,
  tenantId: string,
  input: FinishSyncInput,
  options: RetryOptions = {},
): Promise<FinishedSync> {
  return inTransaction(sql, async (tx) => {
    const [connection] = await tx.query<RunConnection>(
      `SELECT "c"."id", "c"."status"::text AS "status", "c"."settings", "c"."deleted_at" AS "deletedAt"
       FROM "public"."syncs" AS "s"
       JOIN "public"."connections" AS "c" ON "c"."tenant_id" = "s"."tenant_id" AND "c"."id" = "s"."connection_id"
       WHERE "s"."tenant_id" = $1 AND "s"."id" = $2
       FOR NO KEY UPDATE OF "c"`,
      [tenantId, input.syncId],
    );
    if (!connection) throw syncNotFound(input.syncId);
    const { outcome } = input;
    const [run] =
      outcome.status === 'success'
        ? await tx.query<Sync>(
            `UPDATE "public"."syncs" AS "s"
             SET "status" = 'success', "finished_at" = GREATEST(now(), "s"."started_at"), "summary" = $4::jsonb,
                 "file_url" = $5, "diff" = COALESCE($6::jsonb, "s"."diff"), "checksum" = COALESCE($7::jsonb, "s"."checksum"),
                 "lease_expires_at" = NULL, "updated_at" = now()
             WHERE ${CLAIMED_BY_WORKER}
             RETURNING ${SYNC_ROW}`,
            [
              tenantId,
              input.syncId,
              input.workerId,
              JSON.stringify(outcome.summary),
              outcome.fileUrl ?? null,
              outcome.diff === undefined ? null : JSON.stringify(outcome.diff),
              outcome.checksum === undefined ? null : JSON.stringify(outcome.checksum),
            ],
          )
        : await tx.query<Sync>(
            `UPDATE "public"."syncs" AS "s"
             SET "status" = 'failed', "finished_at" = GREATEST(now(), "s"."started_at"), "error_message" = $4,
                 "summary" = $5::jsonb, "lease_expires_at" = NULL, "updated_at" = now()
             WHERE ${CLAIMED_BY_WORKER}
             RETURNING ${SYNC_ROW}`,
            [tenantId, input.syncId, input.workerId, outcome.errorMessage, JSON.stringify(outcome.summary)],
          );
    if (!run) throw await refusedReport(tx, tenantId, input.syncId, input.workerId, outcome.status);
    const consequences = await settleRunConsequences(tx, tenantId, connection, run, options);
    await appendEvents(tx, tenantId, [syncEvent(run), ...consequenceEvents(consequences)]);
    return { run, ...consequences };
  });
}

function retryAttemptsOf(settings: unknown): number {
  const value = (settings as { retry_attempts?: unknown } | null)?.retry_attempts;
  return typeof value === 'number' && Number.isInteger(value) ? value : 0;
}

/** Queues the retry of a failed run: attempt + 1, due after the back-off, pointing at the run it retries. */
async function queueRetry(tx: Tx, tenantId: string, failed: Sync, policy: RetryPolicy): Promise<Sync | null> {
  return queueRun(tx, tenantId, {
    connectionId: failed.connectionId,
    summary: { queued: true },
    delaySeconds: retryDelaySeconds(failed.attempt, policy),
    attempt: failed.attempt + 1,
    retryOfId: failed.id,
  });
}

/** Moves a connection as a finished run makes it (state machine); returns it when its status changed. */
async function moveConnectionAfterRun(tx: Tx, tenantId: string, connection: RunConnection, run: Sync): Promise<Connection | null> {
  const next = connectionStatusAfterRun(connection.status, run.status === 'success' ? 'success' : 'failed');
  if (next === connection.status) return null;
  const [changed] = await tx.query<Connection>(
    `UPDATE "public"."connections" AS "c" SET "status" = $3::connection_status, "updated_at" = now()
     WHERE "c"."tenant_id" = $1 AND "c"."id" = $2 AND "c"."deleted_at" IS NULL
     RETURNING ${CONNECTION_ROW}`,
    [tenantId, connection.id, next],
  );
  return changed ?? null;
}

/**
 * What a finished run does to the rest: a failure with attempts left queues a retry (and leaves the
 * connection as it is); otherwise the connection follows the outcome. Nothing for a deleted connection.
 */
async function settleRunConsequences(
  tx: Tx,
  tenantId: string,
  connection: RunConnection,
  run: Sync,
  { retryPolicy = RETRY_BACKOFF }: RetryOptions,
): Promise<RunConsequences> {
  if (connection.deletedAt) return { retry: null, connection: null };
  if (run.status === 'failed' && shouldRetry(run.attempt, retryAttemptsOf(connection.settings))) {
    // Null only when another run was queued meanwhile (a trigger): that one stands in for the retry.
    return { retry: await queueRetry(tx, tenantId, run, retryPolicy), connection: null };
  }
  return { retry: null, connection: await moveConnectionAfterRun(tx, tenantId, connection, run) };
}

/** The events of a finished run's consequences: its retry queued, its connection's status changed. */
function consequenceEvents({ retry, connection }: RunConsequences) {
  return [...(retry ? [syncEvent(retry)] : []), ...(connection ? [connectionEvent(connection, 'connection.updated')] : [])];
}

interface ExpiredLeases {
  /** Runs failed with "worker lost: lease expired". */
  failed: Sync[];
  retries: Sync[];
  /** Connections whose status changed (to error, retries spent). */
  connections: Connection[];
}

/**
 * The lease reaper: fails the tenant's in-progress runs whose lease expired ("worker lost: lease expired")
 * and settles each like an engine-reported failure (retry or connection error). Several processes can run it
 * at once: each run's connection is locked with SKIP LOCKED and the run changes only if still in progress
 * with its lease over, so no run is failed twice.
 */
export async function expireLeases(
  sql: TransactionRunner,
  tenantId: string,
  options: RetryOptions & { limit?: number } = {},
): Promise<ExpiredLeases> {
  return inTransaction(sql, async (tx) => {
    const connections = await tx.query<RunConnection & { syncId: string }>(
      `SELECT "s"."id" AS "syncId", "c"."id", "c"."status"::text AS "status", "c"."settings", "c"."deleted_at" AS "deletedAt"
       FROM "public"."syncs" AS "s"
       JOIN "public"."connections" AS "c" ON "c"."tenant_id" = "s"."tenant_id" AND "c"."id" = "s"."connection_id"
       WHERE "s"."tenant_id" = $1 AND "s"."status" = 'in_progress' AND "s"."lease_expires_at" <= now()
       ORDER BY "s"."lease_expires_at"
       LIMIT $2
       FOR NO KEY UPDATE OF "c" SKIP LOCKED`,
      [tenantId, options.limit ?? 500],
    );
    const result: ExpiredLeases = { failed: [], retries: [], connections: [] };
    if (connections.length === 0) return result;
    result.failed = await tx.query<Sync>(
      `UPDATE "public"."syncs" AS "s"
       SET "status" = 'failed', "finished_at" = GREATEST(now(), "s"."started_at"), "error_message" = $3,
           "summary" = ${failedSummarySql('$3')}, "lease_expires_at" = NULL, "updated_at" = now()
       WHERE "s"."tenant_id" = $1 AND "s"."id" = ANY($2::text[]) AND "s"."status" = 'in_progress' AND "s"."lease_expires_at" <= now()
       RETURNING ${SYNC_ROW}`,
      [tenantId, connections.map((c) => c.syncId), SYNC_FAILURES.leaseExpired],
    );
    const connectionOf = new Map(connections.map((c) => [c.syncId, c]));
    const events = [];
    for (const run of result.failed) {
      const consequences = await settleRunConsequences(tx, tenantId, connectionOf.get(run.id)!, run, options);
      if (consequences.retry) result.retries.push(consequences.retry);
      if (consequences.connection) result.connections.push(consequences.connection);
      events.push(syncEvent(run), ...consequenceEvents(consequences));
    }
    await appendEvents(tx, tenantId, events);
    return result;
  });
}

/**
 * When the scheduler queues each of these connections' next run, by scheduleDueSyncs's rule: its sync_interval
 * after its newest run started, or now when that has passed or it never ran (the run then comes at the next
 * tick). None for a connection the scheduler does not run (deleted, paused, in error, without a sync_interval)
 * or whose run is pending or in progress: the next one counts from that run's start.
 */
export async function nextScheduledRuns(
  db: Pick<RawSql, 'query'>,
  tenantId: string,
  ids: readonly string[],
  intervals: Readonly<Record<SyncInterval, number>> = SYNC_INTERVAL_SECONDS,
): Promise<Map<string, Date>> {
  // greatest() passes over a NULL: a connection that never ran is due now.
  const rows = await db.query<{ id: string; dueMs: number }>(
    `SELECT "c"."id", extract(epoch FROM greatest(now(),
       (SELECT "s"."started_at" FROM "public"."syncs" AS "s"
         WHERE "s"."tenant_id" = "c"."tenant_id" AND "s"."connection_id" = "c"."id"
         ORDER BY "s"."started_at" DESC LIMIT 1) + make_interval(secs => "i"."seconds"))) * 1000 AS "dueMs"
     FROM ${SCHEDULED_CONNECTIONS} AND "c"."id" = ANY($6::text[])`,
    [...scheduledConnectionParams(tenantId, intervals), ids],
  );
  return new Map(rows.map((row) => [row.id, new Date(Number(row.dueMs))]));
}

/**
 * The connections the scheduler runs, as "c", each with its interval as "i"."seconds": not deleted, pending or
 * active, with a `sync_interval`, and no run pending or in progress. One rule for scheduleDueSyncs and
 * nextScheduledRuns; its parameters $1 to $5 are scheduledConnectionParams.
 */
const SCHEDULED_CONNECTIONS = `"public"."connections" AS "c"
       JOIN unnest($2::text[], $3::int[]) AS "i"("sync_interval", "seconds") ON "i"."sync_interval" = "c"."settings" ->> 'sync_interval'
       WHERE "c"."tenant_id" = $1 AND "c"."deleted_at" IS NULL AND "c"."status" = ANY($4::text[]::connection_status[])
         AND NOT EXISTS (SELECT 1 FROM "public"."syncs" AS "a"
                         WHERE "a"."tenant_id" = "c"."tenant_id" AND "a"."connection_id" = "c"."id" AND "a"."status" = ANY($5::text[]::sync_status[]))`;

function scheduledConnectionParams(tenantId: string, intervals: Readonly<Record<SyncInterval, number>>): unknown[] {
  return [tenantId, Object.keys(intervals), Object.values(intervals), SCHEDULED_CONNECTION_STATUSES, ACTIVE_SYNC_STATUSES];
}

export interface ScheduleOptions {
  /** Seconds per `sync_interval` value; SYNC_INTERVAL_SECONDS unless a test shortens them. */
  intervalSeconds?: Readonly<Record<SyncInterval, number>>;
  limit?: number;
}

/**
 * The scheduler's job for one tenant: every pending or active connection with a `sync_interval` gets a pending
 * run when that interval has passed since its last run started and it has no active run. Safe with several
 * processes: one schedules a tenant at a time (advisory lock, skipped when taken), and the partial unique
 * index refuses a second active run whatever happens.
 */
export async function scheduleDueSyncs(sql: TransactionRunner, tenantId: string, options: ScheduleOptions = {}): Promise<Sync[]> {
  const intervals = options.intervalSeconds ?? SYNC_INTERVAL_SECONDS;
  return inTransaction(sql, async (tx) => {
    const [lock] = await tx.query<{ acquired: boolean }>('SELECT pg_try_advisory_xact_lock(hashtextextended($1, 0)) AS "acquired"', [
      `schedule:${tenantId}`,
    ]);
    if (!lock?.acquired) return [];
    const due = await tx.query<{ id: string }>(
      `SELECT "c"."id" FROM ${SCHEDULED_CONNECTIONS}
         AND NOT EXISTS (SELECT 1 FROM "public"."syncs" AS "r"
                         WHERE "r"."tenant_id" = "c"."tenant_id" AND "r"."connection_id" = "c"."id"
                           AND "r"."started_at" > now() - make_interval(secs => "i"."seconds"))
       ORDER BY "c"."id"
       LIMIT $6
       FOR SHARE OF "c" SKIP LOCKED`,
      [...scheduledConnectionParams(tenantId, intervals), options.limit ?? 1000],
    );
    if (due.length === 0) return [];
    const queued = await tx.query<Sync>(
      `INSERT INTO "public"."syncs" AS "s" ("id", "tenant_id", "connection_id", "status", "started_at", "due_at", "summary")
       SELECT "n"."id", $1, "n"."connection_id", 'pending', now(), now(), '{"queued": true}'::jsonb
       FROM unnest($2::text[], $3::text[]) AS "n"("id", "connection_id")
       ${ACTIVE_RUN_CONFLICT}
       RETURNING ${SYNC_ROW}`,
      [tenantId, due.map(() => newId('syn')), due.map((c) => c.id)],
    );
    await appendEvents(
      tx,
      tenantId,
      queued.map((run) => syncEvent(run)),
    );
    return queued;
  });
}
