import type { RawSql } from './client.js';

// The aggregates behind the console's overview, computed in SQL and scoped by tenant first. Both statements
// read one tenant's runs of a bounded window through the (tenant_id, started_at) index, so their cost grows with
// the runs of that window, never with the whole history or other tenants' rows.

export interface SyncDayCount {
  /** The UTC day, YYYY-MM-DD. */
  day: string;
  status: 'pending' | 'in_progress' | 'success' | 'failed';
  count: number;
}

export interface ConnectionDurations {
  connectionId: string;
  /** Null once the connection was deleted. */
  connectionName: string | null;
  /** The name a deleted connection had; null while it exists. */
  deletedConnectionName: string | null;
  /** Finished runs in the window. */
  runs: number;
  p50Ms: number;
  p95Ms: number;
}

/** At most this many connections in the durations list: the slowest by p95. */
export const DURATION_CONNECTIONS_LIMIT = 100;

/** Runs started since `since`, counted per UTC day and status. Days without runs are absent. */
export async function readSyncsPerDay(raw: Pick<RawSql, 'query'>, tenantId: string, since: Date): Promise<SyncDayCount[]> {
  return raw.query<SyncDayCount>(
    `SELECT to_char("started_at" AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS "day", "status"::text AS "status", count(*)::int AS "count"
       FROM "syncs"
      WHERE "tenant_id" = $1 AND "started_at" >= $2
      GROUP BY 1, 2
      ORDER BY 1, 2`,
    [tenantId, since.toISOString()],
  );
}

/** Duration percentiles of the finished runs started since `since`, per connection, the slowest p95 first. */
export async function readDurationsPerConnection(
  raw: Pick<RawSql, 'query'>,
  tenantId: string,
  since: Date,
): Promise<ConnectionDurations[]> {
  const rows = await raw.query<Omit<ConnectionDurations, 'p50Ms' | 'p95Ms'> & Record<'p50Ms' | 'p95Ms', number | string>>(
    `SELECT "d"."connection_id" AS "connectionId",
            CASE WHEN "c"."deleted_at" IS NULL THEN "c"."name" END AS "connectionName",
            CASE WHEN "c"."deleted_at" IS NOT NULL THEN "c"."name" END AS "deletedConnectionName",
            "d"."runs", "d"."p50Ms", "d"."p95Ms"
       FROM (SELECT "connection_id", count(*)::int AS "runs",
                    round(percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM "finished_at" - "started_at")) * 1000)::int AS "p50Ms",
                    round(percentile_cont(0.95) WITHIN GROUP (ORDER BY extract(epoch FROM "finished_at" - "started_at")) * 1000)::int AS "p95Ms"
               FROM "syncs"
              WHERE "tenant_id" = $1 AND "started_at" >= $2 AND "finished_at" IS NOT NULL
              GROUP BY "connection_id") AS "d"
       LEFT JOIN "connections" AS "c" ON "c"."tenant_id" = $1 AND "c"."id" = "d"."connection_id"
      ORDER BY "d"."p95Ms" DESC, "d"."connection_id"
      LIMIT ${DURATION_CONNECTIONS_LIMIT}`,
    [tenantId, since.toISOString()],
  );
  return rows.map((row) => ({ ...row, p50Ms: Number(row.p50Ms), p95Ms: Number(row.p95Ms) }));
}
