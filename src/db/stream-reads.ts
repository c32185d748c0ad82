import type { Sync } from '../generated/prisma/client.js';
import type { RawSql } from './client.js';
import { SYNC_ROW } from './write-transactions.js';

// The reads a stream makes when it opens, scoped by tenant like every other: the run it follows (its state
// to start from), and whether the connection it follows exists (deleted ones included: their history stays).

export async function runOf(sql: Pick<RawSql, 'query'>, tenantId: string, id: string): Promise<Sync | undefined> {
  const [run] = await sql.query<Sync>(`SELECT ${SYNC_ROW} FROM "public"."syncs" AS "s" WHERE "s"."tenant_id" = $1 AND "s"."id" = $2`, [
    tenantId,
    id,
  ]);
  return run;
}

export async function connectionExists(sql: Pick<RawSql, 'query'>, tenantId: string, id: string): Promise<boolean> {
  const rows = await sql.query(`SELECT 1 FROM "public"."connections" AS "c" WHERE "c"."tenant_id" = $1 AND "c"."id" = $2`, [tenantId, id]);
  return rows.length > 0;
}
