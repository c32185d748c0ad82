import type { Prisma } from '../generated/prisma/client.js';
import type { Columns, SqlColumn } from '../query/columns.js';
import { raw, type Sql, sql } from '../query/sql.js';
import type { RawSql } from './client.js';
import { aliasedColumns, type ListQuery, nestedRows, pageSql, propertiesToRead } from './list-reads.js';

// The catalog's applications, read in hand-written SQL like the connections (connection-queries.ts): an
// application comes with its category from the same statement (a JOIN, written only when the statement reads
// or filters by a column of the category). Aliases: "t0" the application, "t1" its category. The catalog is
// global: no tenant scope. Callers hand in the conditions, order and page of the list query language
// (query/sql.ts) and the row properties they need.

/** The filterable and sortable columns of an application, by field name. */
export const APPLICATION_COLUMNS = {
  id: { sql: '"t0"."id"', kind: 'string', nullable: false },
  name: { sql: '"t0"."name"', kind: 'string', nullable: false },
  slug: { sql: '"t0"."slug"', kind: 'string', nullable: false },
  description: { sql: '"t0"."description"', kind: 'string', nullable: false },
  logoUrl: { sql: '"t0"."logo_url"', kind: 'string', nullable: false },
  additionalInformation: { sql: '"t0"."additional_information"', kind: 'string', nullable: false },
  categoryId: { sql: '"t0"."category_id"', kind: 'string', nullable: false },
} satisfies Columns<SqlColumn>;

/** Every property an application read can carry and the column it reads: the category's under `category.`. */
const APPLICATION_ROW_SQL = {
  id: '"t0"."id"',
  name: '"t0"."name"',
  slug: '"t0"."slug"',
  description: '"t0"."description"',
  logoUrl: '"t0"."logo_url"',
  keywords: '"t0"."keywords"',
  features: '"t0"."features"',
  additionalInformation: '"t0"."additional_information"',
  categoryId: '"t0"."category_id"',
  'category.id': '"t1"."id"',
  'category.slug': '"t1"."slug"',
  'category.name': '"t1"."name"',
  'category.description': '"t1"."description"',
  'category.sortOrder': '"t1"."sort_order"',
} as const;

export type ApplicationProperty = keyof typeof APPLICATION_ROW_SQL;

const ALL_PROPERTIES = Object.keys(APPLICATION_ROW_SQL) as ApplicationProperty[];

/** An application as the reads hand it back: its selected properties, and its category when one of the category's is. */
export type ApplicationRow = Prisma.ApplicationGetPayload<{ include: { category: true } }>;

/** One list's question: conditions (filter, search), order, page, properties. */
export type ApplicationListQuery = ListQuery<ApplicationProperty>;

const withCategory = (read: readonly ApplicationProperty[]) => read.some((property) => property.startsWith('category.'));

/** FROM with the category's JOIN when a read property, a condition or the order names it. */
function fromOf(read: readonly ApplicationProperty[], parts: readonly Sql[]): Sql {
  const category = withCategory(read) || parts.some((part) => part.strings.join('').includes('"t1".'));
  return raw('FROM "public"."applications" AS "t0"' + (category ? ' JOIN "public"."categories" AS "t1" ON "t1"."id" = "t0"."category_id"' : ''));
}

async function rowsOf(db: Pick<RawSql, 'query'>, statement: Sql, read: readonly ApplicationProperty[]): Promise<ApplicationRow[]> {
  return nestedRows(await db.query<Record<string, unknown>>(statement.text, statement.values), read) as ApplicationRow[];
}

/** A page of the catalog's applications. */
export function readApplicationPage(db: Pick<RawSql, 'query'>, query: ApplicationListQuery): Promise<ApplicationRow[]> {
  const read = propertiesToRead(ALL_PROPERTIES, query.properties);
  return rowsOf(
    db,
    sql`SELECT ${aliasedColumns(APPLICATION_ROW_SQL, read)} ${fromOf(read, [query.where, query.orderBy])} WHERE ${query.where} ORDER BY ${query.orderBy} ${pageSql(query.take, query.skip)}`,
    read,
  );
}

/** How many applications the query matches. */
export async function countApplications(db: Pick<RawSql, 'query'>, query: Pick<ApplicationListQuery, 'where'>): Promise<number> {
  const statement = sql`SELECT count(*)::int AS "count" ${fromOf([], [query.where])} WHERE ${query.where}`;
  const [row] = await db.query<{ count: number }>(statement.text, statement.values);
  return row?.count ?? 0;
}

/** One application by id, or null. */
export async function readApplication(db: Pick<RawSql, 'query'>, id: string, properties: ReadonlySet<string> | null): Promise<ApplicationRow | null> {
  const read = propertiesToRead(ALL_PROPERTIES, properties);
  const [row] = await rowsOf(db, sql`SELECT ${aliasedColumns(APPLICATION_ROW_SQL, read)} ${fromOf(read, [])} WHERE "t0"."id" = ${id}`, read);
  return row ?? null;
}
