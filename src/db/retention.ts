import type { RawSql } from './client.js';

// SYNC_RETENTION_DAYS: finished runs (success, failed) that finished before the window are deleted, with their
// events, in bounded batches: each batch is one short transaction that deletes at most `batchRows` runs found
// by the (tenant, status, started_at) index (a run finishes after it starts, so the window bounds both), so no
// lock is held long and no statement reads the whole table. Between batches the step pauses as long as the batch
// took, twice over, so retention takes at most a third of one connection's time from the reads beside it.
// sync_counts stays exact: its statement trigger sees every deleted row (see the sync_counts migration).
// Deleting a run unlinks the retries that point at it (ON DELETE SET NULL, through syncs_retry_of_id_idx).

export interface RetentionOptions {
  days: number;
  /** Runs deleted per transaction at most. */
  batchRows?: number;
  /** How long one tenant's step may go on; the rest waits for the next step. */
  budgetMs?: number;
  now?: Date;
}

export interface RetentionResult {
  runs: number;
  events: number;
  batches: number;
  /** Runs past the window may remain (the step's time ran out). */
  more: boolean;
}

export const RETENTION_BATCH_ROWS = 1000;
const RETENTION_BUDGET_MS = 2000;

const DELETE_BATCH = `
WITH "doomed" AS (
  SELECT "s"."id" FROM "public"."syncs" AS "s"
  WHERE "s"."tenant_id" = $1 AND "s"."status" IN ('success', 'failed') AND "s"."started_at" < $2 AND "s"."finished_at" < $2
  LIMIT $3 FOR UPDATE SKIP LOCKED
), "gone" AS (
  DELETE FROM "public"."syncs" AS "s" USING "doomed" WHERE "s"."id" = "doomed"."id" AND "s"."tenant_id" = $1 RETURNING "s"."id"
), "events_gone" AS (
  DELETE FROM "public"."events" AS "e"
  WHERE "e"."tenant_id" = $1 AND "e"."created_at" < $2 AND "e"."type" LIKE 'sync.%' AND "e"."subject_id" IN (SELECT "id" FROM "gone")
  RETURNING 1
)
SELECT (SELECT count(*) FROM "gone")::int AS "runs", (SELECT count(*) FROM "events_gone")::int AS "events"`;

/** One tenant's retention step: batches until no run is past the window or the step's time is up. */
export async function removeExpiredRuns(db: Pick<RawSql, 'query'>, tenantId: string, options: RetentionOptions): Promise<RetentionResult> {
  const batchRows = options.batchRows ?? RETENTION_BATCH_ROWS;
  const budgetMs = options.budgetMs ?? RETENTION_BUDGET_MS;
  const cutoff = new Date((options.now ?? new Date()).getTime() - options.days * 86_400_000).toISOString();
  const started = performance.now();
  const result: RetentionResult = { runs: 0, events: 0, batches: 0, more: false };
  for (;;) {
    const batchStarted = performance.now();
    const [row] = await db.query<{ runs: number; events: number }>(DELETE_BATCH, [tenantId, cutoff, batchRows]);
    result.batches += 1;
    result.runs += row?.runs ?? 0;
    result.events += row?.events ?? 0;
    if ((row?.runs ?? 0) < batchRows) return result;
    const took = performance.now() - batchStarted;
    if (performance.now() - started + 3 * took > budgetMs) return { ...result, more: true };
    await new Promise((resolve) => setTimeout(resolve, 2 * took));
  }
}
