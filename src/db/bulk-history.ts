import type { RawSql } from './client.js';

// Synthetic sync history in bulk, written by PostgreSQL itself (generate_series): millions of finished runs a
// minute, for the scale tests and the history benchmark. Rows follow the spec's field-condition table (one run
// in ten failed, with its error text and no counters of inserted rows); every run is finished, so the
// one-active-run index is never met. sync_counts is kept by its statement triggers as for any insert. Ids rise
// with the run's index within a tenant (a prefix of the tenant, then the index in hex), so each insert adds to the
// end of its tenant's range of the primary key: random ids, as the service makes them, put each row on a random
// page of an index that outgrows shared_buffers by 1M runs, and every such page is written to the WAL whole after
// each checkpoint, which made 10M runs take 18 minutes rather than a few.

export interface SyntheticHistory {
  tenantId: string;
  connectionIds: readonly string[];
  runs: number;
  /** The index of the first run to write (0, the newest): a later call with `from` continues a history further back. */
  from?: number;
  /** The newest run's start; each older run started 30 to 59 seconds before the next. */
  newest: Date;
  /** Rows per statement (each its own transaction). */
  chunkRows?: number;
}

const INSERT_CHUNK = `
INSERT INTO "public"."syncs" ("id", "tenant_id", "connection_id", "status", "started_at", "finished_at", "error_message", "summary", "diff", "checksum", "updated_at")
SELECT
  'syn_' || substr(md5($1), 1, 6) || lpad(to_hex("g"), 20, '0'),
  $1,
  ($2::text[])[1 + "g" % cardinality($2::text[])],
  CASE WHEN "g" % 10 = 3 THEN 'failed' ELSE 'success' END::"sync_status",
  "t"."started_at",
  "t"."started_at" + interval '1 second' * (5 + "g" % 25),
  CASE WHEN "g" % 10 = 3 THEN 'upstream timed out after ' || (5 + "g" % 25) || ' s' END,
  CASE WHEN "g" % 10 = 3 THEN jsonb_build_object('processed', "g" % 500, 'errors', jsonb_build_array('timeout'))
       ELSE jsonb_build_object('processed', "g" % 1000, 'inserted', "g" % 300, 'updated', "g" % 200, 'deleted', "g" % 7) END,
  '{}'::jsonb,
  '{"b": "", "f": "", "ac": "", "ap": "", "ls": "", "file": ""}'::jsonb,
  "t"."started_at"
FROM generate_series($3::int, $4::int) AS "g",
  LATERAL (SELECT $5::timestamptz - interval '1 second' * ("g"::bigint * 45 + ("g"::bigint * 7919) % 15) AS "started_at") AS "t"`;

/** Inserts `runs` finished runs of the tenant's connections, newest first from `newest` back. */
export async function insertSyntheticHistory(db: Pick<RawSql, 'query'>, history: SyntheticHistory): Promise<void> {
  const chunk = history.chunkRows ?? 250_000;
  const connections = `{${history.connectionIds.map((id) => `"${id}"`).join(',')}}`;
  const from = history.from ?? 0;
  for (let first = from; first < from + history.runs; first += chunk) {
    const last = Math.min(from + history.runs, first + chunk) - 1;
    await db.query(INSERT_CHUNK, [history.tenantId, connections, first, last, history.newest.toISOString()]);
  }
}
