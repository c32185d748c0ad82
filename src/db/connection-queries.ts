import type { Prisma } from '../generated/prisma/client.js';
import type { Columns, SqlColumn } from '../query/columns.js';
import { allOf, arrayLiteral, compareSql, raw, type Sql, sql } from '../query/sql.js';
import { connectionFilterColumns, connectionSelectSql } from '../domain/connection-record.js';
import type { RawSql } from './client.js';
import { aliasedColumns, countRows, type ListQuery, nestedRows, pageColumns, pageSql, propertiesToRead } from './list-reads.js';

// The connections' reads, in hand-written SQL like the sync history's (sync-queries.ts): a connection comes
// with its application and the application's category from the same statement (JOINs), so a page of
// connections is one statement whatever of the three the operation shows. Aliases: "t0" the connection, "t1"
// its application, "t2" the application's category; a JOIN is only written when the statement reads or
// filters by a column of its table. Every statement is scoped by the tenant first. Callers hand in the
// conditions, order and page of the list query language (query/sql.ts) and the row properties they need.

/** The filterable and sortable columns of a connection, by field name (the descriptor's); the application's and category's too. */
export const CONNECTION_COLUMNS = {
  ...connectionFilterColumns('t0'),
  applicationName: { sql: '"t1"."name"', kind: 'string', nullable: false },
  applicationSlug: { sql: '"t1"."slug"', kind: 'string', nullable: false },
  categoryId: { sql: '"t1"."category_id"', kind: 'string', nullable: false },
  categorySlug: { sql: '"t2"."slug"', kind: 'string', nullable: false },
  categoryName: { sql: '"t2"."name"', kind: 'string', nullable: false },
} satisfies Columns<SqlColumn>;

/**
 * Every property a connection read can carry and the column it reads: the connection's own as its descriptor
 * (domain/connection-record.ts) has them, its application's under `application.`, the category's under
 * `application.category.`. Arrays are read as JSON, as the descriptor's are.
 */
const CONNECTION_ROW_SQL = {
  ...connectionSelectSql('t0'),
  'application.id': '"t1"."id"',
  'application.name': '"t1"."name"',
  'application.slug': '"t1"."slug"',
  'application.description': '"t1"."description"',
  'application.logoUrl': '"t1"."logo_url"',
  'application.keywords': 'to_json("t1"."keywords")',
  'application.features': '"t1"."features"',
  'application.additionalInformation': '"t1"."additional_information"',
  'application.categoryId': '"t1"."category_id"',
  'application.category.id': '"t2"."id"',
  'application.category.slug': '"t2"."slug"',
  'application.category.name': '"t2"."name"',
  'application.category.description': '"t2"."description"',
  'application.category.sortOrder': '"t2"."sort_order"',
} as const;

export type ConnectionProperty = keyof typeof CONNECTION_ROW_SQL;

const ALL_PROPERTIES = Object.keys(CONNECTION_ROW_SQL) as ConnectionProperty[];

export function isConnectionProperty(name: string): name is ConnectionProperty {
  return Object.hasOwn(CONNECTION_ROW_SQL, name);
}

/** How deep each property sits in the row handed back: 0 the connection's, 1 its application's, 2 the category's. */
const DEPTH = Object.fromEntries(ALL_PROPERTIES.map((property) => [property, property.split('.').length - 1])) as Record<
  ConnectionProperty,
  number
>;

/**
 * A connection as the reads hand it back: its selected properties, and its application (with the category)
 * when any of theirs is selected. The shape of Prisma's Connection with both relations included.
 */
export type ConnectionRow = Prisma.ConnectionGetPayload<{ include: { application: { include: { category: true } } } }>;

/** `categoryId`: connections of applications in one category. */
export function connectionCategorySql(categoryId: string | null): Sql {
  return categoryId ? compareSql(CONNECTION_COLUMNS.categoryId, 'eq', categoryId) : allOf([]);
}

/** One list's question: conditions (filter, search…; the tenant is added here), order, page, properties. */
export interface ConnectionListQuery extends ListQuery<ConnectionProperty> {
  tenantId: string;
}

/** FROM with the JOINs the statement needs: those whose alias a read property or a condition or order names. */
function fromOf(read: readonly ConnectionProperty[], parts: readonly Sql[]): Sql {
  const text = parts.map((part) => part.strings.join('')).join(' ');
  const category = text.includes('"t2".') || read.some((property) => DEPTH[property] === 2);
  const application = category || text.includes('"t1".') || read.some((property) => DEPTH[property] === 1);
  return raw(
    'FROM "public"."connections" AS "t0"' +
      (application ? ' JOIN "public"."applications" AS "t1" ON "t1"."id" = "t0"."application_id"' : '') +
      (category ? ' JOIN "public"."categories" AS "t2" ON "t2"."id" = "t1"."category_id"' : ''),
  );
}

function whereOf(tenantId: string, conditions: readonly Sql[]): Sql {
  return allOf([sql`"t0"."tenant_id" = ${tenantId}`, ...conditions]);
}

const LIVE = raw('"t0"."deleted_at" IS NULL');

/** A page of the tenant's live connections. */
export function readConnectionPage(db: Pick<RawSql, 'query'>, query: ConnectionListQuery): Promise<ConnectionRow[]> {
  const read = propertiesToRead(ALL_PROPERTIES, query.properties);
  const where = whereOf(query.tenantId, [LIVE, query.where, query.start]);
  const from = fromOf(read, [where, query.orderBy]);
  const select = pageColumns(CONNECTION_ROW_SQL, read, query.keys);
  return nestedRows(
    db,
    sql`SELECT ${select} ${from} WHERE ${where} ORDER BY ${query.orderBy} ${pageSql(query.take, query.skip)}`,
    read,
    query.keys.length,
  );
}

/** How many of the tenant's live connections the query matches. */
export function countConnections(db: Pick<RawSql, 'query'>, query: ConnectionListQuery): Promise<number> {
  const where = whereOf(query.tenantId, [LIVE, query.where]);
  return countRows(db, fromOf([], [where]), where);
}

/**
 * The tenant's connections with these ids, in one statement, in no particular order; live ones only unless
 * `deleted` says to include deleted ones (a subscription follows a connection to its deletion).
 */
export function readConnections(
  db: Pick<RawSql, 'query'>,
  tenantId: string,
  ids: readonly string[],
  properties: ReadonlySet<ConnectionProperty> | null,
  options: { deleted: boolean } = { deleted: false },
): Promise<ConnectionRow[]> {
  const read = propertiesToRead(ALL_PROPERTIES, properties);
  const where = whereOf(tenantId, [sql`"t0"."id" = ANY(${arrayLiteral(ids)}::text[])`, ...(options.deleted ? [] : [LIVE])]);
  return nestedRows(db, sql`SELECT ${aliasedColumns(CONNECTION_ROW_SQL, read)} ${fromOf(read, [where])} WHERE ${where}`, read);
}
