import type { Sync } from '../generated/prisma/client.js';
import { SyncStatus } from '../generated/prisma/enums.js';
import type { Columns, SqlColumn } from '../query/columns.js';
import { allOf, anyOf, arrayLiteral, compareSql, keysetOrder, keyValuesSql, raw, type Sql, sql } from '../query/sql.js';
import type { OrderKey } from '../query/filter.js';
import { binaryTimestampText, type TimestampText } from '../timestamps.js';
import { type ColumnType, columnOf } from '../domain/record-descriptor.js';
import { SYNC, SYNC_PROPERTIES, type SyncProperty, type SyncTimestamp, syncFilterColumns, syncSelectSql } from '../domain/sync-record.js';
import type { DatabaseKind, RawSql } from './client.js';
import { pageSql } from './list-reads.js';
import type { BinaryValue, ListRowReader } from './binary-rows.js';
import { CopyBinaryTuples, WHOLE_BATCH_ROWS } from './copy-binary.js';

// The sync history's reads, in hand-written SQL: the hot read of the service, where Prisma's per-statement
// work cost more than the rest of the request. Every statement is scoped by the tenant
// first. Callers hand in the conditions, order and page of the list query language (query/sql.ts) and the
// row properties they need; this module knows statements, not the API that asks for them.

/** The filterable and sortable columns of a sync, by field name (alias "t0"). */
export const SYNC_COLUMNS = syncFilterColumns('t0') satisfies Columns<SqlColumn>;

/** The SQL a page reads each property with: a timestamp as text in the API's format, the enum as its label. */
const SYNC_ROW_SQL = syncSelectSql('t0', true, SYNC_PROPERTIES);

export function isSyncProperty(name: string): name is SyncProperty {
  return Object.hasOwn(SYNC_ROW_SQL, name);
}

/** A sync row as the list statements read it: the selected properties of Prisma's Sync, timestamps as text. */
export type SyncListRow = {
  [P in keyof Sync]: P extends SyncTimestamp ? TimestampText | (null extends Sync[P] ? null : never) : Sync[P];
};

/** `search`: a case-insensitive substring of error_message, or of the status name. */
export function syncSearchSql(term: string | null): Sql {
  if (!term) return allOf([]);
  const statuses = Object.values(SyncStatus).filter((status) => status.includes(term));
  const errorMessage = compareSql(SYNC_COLUMNS.errorMessage, 'contains', term);
  return statuses.length > 0 ? anyOf([errorMessage, compareSql(SYNC_COLUMNS.status, 'in', statuses)]) : errorMessage;
}

/**
 * The columns sync_counts keys runs by, besides the tenant (see the sync_counts migration: triggers keep it
 * exact in every writing transaction). A condition that reads no other column holds for all of a key's
 * runs or for none of them, so summing the counts of the keys it holds for answers it exactly.
 */
const COUNT_KEY_COLUMNS: ReadonlySet<SqlColumn> = new Set([SYNC_COLUMNS.connectionId, SYNC_COLUMNS.status]);

/** Whether conditions reading `columns` can be counted from sync_counts instead of from the rows. */
export function countableByKeys(columns: ReadonlySet<SqlColumn>): boolean {
  return [...columns].every((column) => COUNT_KEY_COLUMNS.has(column));
}

/** One list's question: conditions (filter and search; the tenant is added here), order, page, properties. */
export interface SyncListQuery {
  tenantId: string;
  where: Sql;
  /** `where` reads only the connection and the status (countableByKeys): its count sums sync_counts. */
  totalFromCounts: boolean;
  orderBy: Sql;
  /** The sort keys `orderBy` is written from: each page also reads their values, for the next page's cursor. */
  keys: readonly OrderKey<SqlColumn>[];
  /** A cursor page: the rows after the cursor's (query/sql.ts afterSql); TRUE otherwise. Not counted in totals. */
  start: Sql;
  /** `orderBy` is the default (newest started first, then id), the order every syncs index ends with. */
  indexOrdered: boolean;
  take: number;
  skip: number;
  /** The row properties to read (the id always); null for all. */
  properties: ReadonlySet<SyncProperty> | null;
}

function selectList(properties: ReadonlySet<SyncProperty> | null, always: readonly SyncProperty[] = []): Sql {
  const read = SYNC_PROPERTIES.filter(
    (property) => !properties || property === 'id' || properties.has(property) || always.includes(property),
  );
  return raw(read.map((property) => `${SYNC_ROW_SQL[property]} AS "${property}"`).join(', '));
}

const FROM = raw('FROM "public"."syncs" AS "t0"');
/**
 * sync_counts names its key columns as syncs does (tenant_id, connection_id, status, same types), so the
 * conditions of a query with totalFromCounts, written against the alias "t0", apply to it unchanged.
 */
const COUNTS_FROM = raw('FROM "public"."sync_counts" AS "t0"');

function whereOf(query: SyncListQuery, scope: Sql | null): Sql {
  return allOf([sql`"t0"."tenant_id" = ${query.tenantId}`, ...(scope ? [scope] : []), query.where]);
}

/**
 * A first page in the default order is read straight from the index that holds that order: PostgreSQL walks it
 * and computes the select list for the page's rows only (50 connections' latest 10 runs: 3.0 ms against 8.0 ms
 * through the ids; a sync page 0.3 against 0.5 ms).
 *
 * Any other page: its ids first, then its rows. PostgreSQL computes a statement's select list for every row it
 * reads, the rows OFFSET skips (and those a sort orders) included, so formatting the timestamps
 * (timestampTextSql) there cost as much again for each skipped row (a last page of 6.7k: 23 ms against 6 ms; a
 * first page of 100k runs by error message: 133 ms against 41 ms). The inner statement reads only ids, which the
 * (tenant, [connection,] started_at, id) indexes hold, so the skipped rows need not even be read from the table
 * when the visibility map allows; the page's own rows are joined back by primary key (and tenant) under the
 * alias the select list and the order are written against. Its ORDER BY sorts at most a page, and keeps the
 * order the SQL standard does not promise through a join.
 */
function pageOf(query: SyncListQuery, properties: Sql, scope: Sql | null): Sql {
  const select = sql`${properties}, ${keyValuesSql(query.keys)}`;
  const where = allOf([whereOf(query, scope), query.start]);
  if (query.skip === 0 && query.indexOrdered) {
    return sql`SELECT ${select} ${FROM} WHERE ${where} ORDER BY ${query.orderBy} LIMIT ${raw(String(query.take))}`;
  }
  const ids = sql`SELECT "t0"."id" ${FROM} WHERE ${where} ORDER BY ${query.orderBy} ${pageSql(query.take, query.skip)}`;
  return sql`SELECT ${select} FROM (${ids}) AS "page" JOIN "public"."syncs" AS "t0" ON "t0"."id" = "page"."id" AND "t0"."tenant_id" = ${query.tenantId} ORDER BY ${query.orderBy}`;
}

/** The condition that keeps one connection's syncs, or none for the whole tenant's. */
function connectionScope(connectionId: string | null): Sql | null {
  return connectionId ? sql`"t0"."connection_id" = ${connectionId}` : null;
}

/** A page of the tenant's syncs, of one connection when `connectionId` is given. */
export function readSyncPage(db: Pick<RawSql, 'query'>, query: SyncListQuery, connectionId: string | null): Promise<SyncListRow[]> {
  const statement = pageOf(query, selectList(query.properties), connectionScope(connectionId));
  return db.query<SyncListRow>(statement.text, statement.values);
}

/** How PostgreSQL sends each column type in binary: an export reads it so. */
const BINARY: Partial<Record<ColumnType, BinaryValue>> = {
  text: 'text',
  sync_status: 'enum',
  timestamptz: 'timestamp',
  jsonb: 'jsonb',
  boolean: 'boolean',
  integer: 'int4',
};

/**
 * The reader of every row a sync list's query matches, of one connection when `connectionId` is given, for an
 * export (./binary-rows.ts): batches by keyset, each row the values of the properties asked for as PostgreSQL
 * sends them in binary (BINARY), then the sort keys', read as binary COPY output and handed over as bytes as they
 * arrive. A batch resolves with its number of rows and the last one's sort keys' values, as text (a timestamp in
 * the API's text).
 */
export function syncExportRows(
  db: Pick<RawSql, 'copyRows'>,
  kind: DatabaseKind,
  query: SyncListQuery,
  connectionId: string | null,
): ListRowReader {
  const kinds = query.keys.map((key) => key.column.kind);
  return {
    batchRows: kind === 'pglite' ? WHOLE_BATCH_ROWS : undefined,
    valueOf: (property) => (isSyncProperty(property) ? BINARY[SYNC.fields[property].type] : undefined),
    async read(properties, after, take, onRow, room) {
      const columns = [...properties.map((property) => `"t0"."${columnOf(property)}"`), ...query.keys.map((key) => key.column.sql)];
      const batch = { ...query, ...keysetOrder(query.keys, after), take };
      const tuples = new CopyBinaryTuples((row) => {
        row.keepFields(properties.length);
        onRow(row);
      });
      await db.copyRows(pageOf(batch, raw(columns.join(', ')), connectionScope(connectionId)), (chunk) => tuples.push(chunk), room);
      tuples.end();
      if (tuples.rows === 0) return { rows: 0, lastKeys: null };
      const lastKeys = tuples.keptValues((index, data, start, length) => {
        if (kinds[index] === 'dateTime') return binaryTimestampText(data, start);
        if (kinds[index] === 'boolean') return data[start] === 1 ? 'true' : 'false';
        return data.toString('utf8', start, start + length);
      });
      return { rows: tuples.rows, lastKeys };
    },
  };
}

/** One of the tenant's syncs by id, or null: the properties asked for (the id always; null for all). */
export async function readSync(
  db: Pick<RawSql, 'query'>,
  tenantId: string,
  id: string,
  properties: ReadonlySet<SyncProperty> | null,
): Promise<SyncListRow | null> {
  const statement = sql`SELECT ${selectList(properties)} ${FROM} WHERE "t0"."tenant_id" = ${tenantId} AND "t0"."id" = ${id}`;
  const [row] = await db.query<SyncListRow>(statement.text, statement.values);
  return row ?? null;
}

/** How many of the tenant's syncs match: count(*) of the rows, or the sum of their keys' counts (totalFromCounts). */
function countOf(query: SyncListQuery): Sql {
  return query.totalFromCounts ? sql`COALESCE(sum("t0"."count"), 0)::int AS "count" ${COUNTS_FROM}` : sql`count(*)::int AS "count" ${FROM}`;
}

/** How many of the tenant's syncs (of one connection when given) the query matches. */
export async function countSyncs(db: Pick<RawSql, 'query'>, query: SyncListQuery, connectionId: string | null): Promise<number> {
  const statement = sql`SELECT ${countOf(query)} WHERE ${whereOf(query, connectionScope(connectionId))}`;
  const [row] = await db.query<{ count: number }>(statement.text, statement.values);
  return row?.count ?? 0;
}

/** A page of syncs of each of several connections, in one statement (a LATERAL page per connection). */
export function readConnectionSyncPages(
  db: Pick<RawSql, 'query'>,
  connectionIds: readonly string[],
  query: SyncListQuery,
): Promise<SyncListRow[]> {
  // The rows are grouped by connection afterwards, so the connection id is always read.
  const page = pageOf(query, selectList(query.properties, ['connectionId']), raw('"t0"."connection_id" = "parent"."id"'));
  const statement = sql`SELECT "page".* FROM unnest(${arrayLiteral(connectionIds)}::text[]) AS "parent"("id") CROSS JOIN LATERAL (${page}) AS "page"`;
  return db.query<SyncListRow>(statement.text, statement.values);
}

/** How many syncs of each connection the query matches, in one statement, in the order of `connectionIds`. */
export async function countConnectionSyncs(
  db: Pick<RawSql, 'query'>,
  connectionIds: readonly string[],
  query: SyncListQuery,
): Promise<number[]> {
  const scope = sql`"t0"."connection_id" = ANY(${arrayLiteral(connectionIds)}::text[])`;
  const statement = sql`SELECT "t0"."connection_id" AS "connectionId", ${countOf(query)} WHERE ${whereOf(query, scope)} GROUP BY "t0"."connection_id"`;
  const rows = await db.query<{ connectionId: string; count: number }>(statement.text, statement.values);
  const counts = new Map(rows.map((row) => [row.connectionId, row.count]));
  return connectionIds.map((id) => counts.get(id) ?? 0);
}
