import type { Prisma } from '../generated/prisma/client.js';
import type { Columns, SqlColumn } from '../query/columns.js';
import { likePattern, type OrderKey } from '../query/filter.js';
import { allOf, arrayLiteral, raw, type Sql, sql } from '../query/sql.js';
import type { RawSql } from './client.js';
import { aliasedColumns, countRows, type ListQuery, nestedRows, pageColumns, pageSql, propertiesToRead } from './list-reads.js';

// The catalog, read in hand-written SQL like the connections (connection-queries.ts). An application comes with
// its category from the same statement (a JOIN, written only when the statement reads or filters by a column
// of the category): aliases "t0" the application, "t1" its category. A category list's statements read
// categories alone ("t0"); the applications of a page's categories come from one more statement for them all.
// The catalog is global: no tenant scope. Callers hand in the conditions, order and page of the list query
// language (query/sql.ts) and the row properties they need.

/** Filterable and sortable columns, by field name: these properties of a row SQL table, each non-null text. */
function textColumns<const Property extends string>(rowSql: Readonly<Record<NoInfer<Property>, string>>, properties: readonly Property[]) {
  const columns = properties.map((property) => [property, { sql: rowSql[property], kind: 'string', nullable: false }]);
  return Object.fromEntries(columns) as Readonly<Record<Property, SqlColumn>>;
}

/** Every property a category read can carry and the column it reads. */
const CATEGORY_ROW_SQL = {
  id: '"t0"."id"',
  slug: '"t0"."slug"',
  name: '"t0"."name"',
  description: '"t0"."description"',
  sortOrder: '"t0"."sort_order"',
} as const;

export type CategoryProperty = keyof typeof CATEGORY_ROW_SQL;

/** The filterable and sortable columns of a category, by field name. */
export const CATEGORY_COLUMNS = textColumns(CATEGORY_ROW_SQL, ['id', 'slug', 'name', 'description']) satisfies Columns<SqlColumn>;

const ALL_CATEGORY_PROPERTIES = Object.keys(CATEGORY_ROW_SQL) as CategoryProperty[];

/** A category as the reads hand it back: its selected properties. */
export type CategoryRow = Prisma.CategoryGetPayload<object>;

/** One category list's question: conditions (filter, search), order, page, properties. */
export type CategoryListQuery = ListQuery<CategoryProperty>;

/**
 * The categories' order when the caller gives none: sort_order, then name (then id, as every list). sort_order
 * is no filter or order field of the API, so its column is described here only as a sort key (whose value a
 * cursor carries as text, which the comparison reads back as the column's integer).
 */
export const CATEGORY_DEFAULT_KEYS: readonly OrderKey<SqlColumn>[] = [
  { column: { sql: '"t0"."sort_order"', kind: 'string', nullable: false }, descending: false, nulls: null },
  { column: CATEGORY_COLUMNS.name, descending: false, nulls: null },
  { column: CATEGORY_COLUMNS.id, descending: false, nulls: null },
];

/** `search` over categories: a lowercase keyword (query/filter.ts `searchTerm`) in the name, slug or description, any case. */
export function categorySearchSql(term: string | null): Sql {
  if (!term) return allOf([]);
  const pattern = likePattern({ kind: 'substring', text: term });
  return sql`("t0"."name" ILIKE ${pattern} OR "t0"."slug" ILIKE ${pattern} OR "t0"."description" ILIKE ${pattern})`;
}

const CATEGORIES = raw('FROM "public"."categories" AS "t0"');

/** A page of the catalog's categories. */
export async function readCategoryPage(db: Pick<RawSql, 'query'>, query: CategoryListQuery): Promise<CategoryRow[]> {
  const read = propertiesToRead(ALL_CATEGORY_PROPERTIES, query.properties);
  const statement = sql`SELECT ${pageColumns(CATEGORY_ROW_SQL, read, query.keys)} ${CATEGORIES} WHERE ${allOf([query.where, query.start])} ORDER BY ${query.orderBy} ${pageSql(query.take, query.skip)}`;
  return (await db.query<Record<string, unknown>>(statement.text, statement.values)) as CategoryRow[];
}

/** How many categories the query matches. */
export function countCategories(db: Pick<RawSql, 'query'>, query: Pick<CategoryListQuery, 'where'>): Promise<number> {
  return countRows(db, CATEGORIES, query.where);
}

/** One category by id, or null. */
export async function readCategory(
  db: Pick<RawSql, 'query'>,
  id: string,
  properties: ReadonlySet<string> | null,
): Promise<CategoryRow | null> {
  const read = propertiesToRead(ALL_CATEGORY_PROPERTIES, properties);
  const statement = sql`SELECT ${aliasedColumns(CATEGORY_ROW_SQL, read)} ${CATEGORIES} WHERE "t0"."id" = ${id}`;
  const [row] = await db.query<CategoryRow>(statement.text, statement.values);
  return row ?? null;
}

/**
 * Every property an application read can carry and the column it reads: the category's under `category.`. Arrays
 * are read as JSON, as in connection-queries.ts.
 */
const APPLICATION_ROW_SQL = {
  id: '"t0"."id"',
  name: '"t0"."name"',
  slug: '"t0"."slug"',
  description: '"t0"."description"',
  logoUrl: '"t0"."logo_url"',
  keywords: 'to_json("t0"."keywords")',
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

/** The filterable and sortable columns of an application, by field name. */
const APPLICATION_FILTER_PROPERTIES = ['id', 'name', 'slug', 'description', 'logoUrl', 'additionalInformation', 'categoryId'] as const;
export const APPLICATION_COLUMNS = textColumns(APPLICATION_ROW_SQL, APPLICATION_FILTER_PROPERTIES) satisfies Columns<SqlColumn>;

const ALL_PROPERTIES = Object.keys(APPLICATION_ROW_SQL) as ApplicationProperty[];

/** An application as the reads hand it back: its selected properties, and its category when one of the category's is. */
export type ApplicationRow = Prisma.ApplicationGetPayload<{ include: { category: true } }>;

/** One list's question: conditions (filter, search), order, page, properties. */
export type ApplicationListQuery = ListQuery<ApplicationProperty>;

const withCategory = (read: readonly ApplicationProperty[]) => read.some((property) => property.startsWith('category.'));

/** FROM with the category's JOIN when a read property, a condition or the order names it. */
function fromOf(read: readonly ApplicationProperty[], parts: readonly Sql[]): Sql {
  const category = withCategory(read) || parts.some((part) => part.strings.join('').includes('"t1".'));
  return raw(
    `FROM "public"."applications" AS "t0"${category ? ' JOIN "public"."categories" AS "t1" ON "t1"."id" = "t0"."category_id"' : ''}`,
  );
}

/** A page of the catalog's applications. */
export function readApplicationPage(db: Pick<RawSql, 'query'>, query: ApplicationListQuery): Promise<ApplicationRow[]> {
  const read = propertiesToRead(ALL_PROPERTIES, query.properties);
  const where = allOf([query.where, query.start]);
  return nestedRows(
    db,
    sql`SELECT ${pageColumns(APPLICATION_ROW_SQL, read, query.keys)} ${fromOf(read, [where, query.orderBy])} WHERE ${where} ORDER BY ${query.orderBy} ${pageSql(query.take, query.skip)}`,
    read,
    query.keys.length,
  );
}

/** How many applications the query matches. */
export function countApplications(db: Pick<RawSql, 'query'>, query: Pick<ApplicationListQuery, 'where'>): Promise<number> {
  return countRows(db, fromOf([], [query.where]), query.where);
}

/** One application by id, or null. */
export async function readApplication(
  db: Pick<RawSql, 'query'>,
  id: string,
  properties: ReadonlySet<string> | null,
): Promise<ApplicationRow | null> {
  const read = propertiesToRead(ALL_PROPERTIES, properties);
  const [row] = await nestedRows<ApplicationRow>(
    db,
    sql`SELECT ${aliasedColumns(APPLICATION_ROW_SQL, read)} ${fromOf(read, [])} WHERE "t0"."id" = ${id}`,
    read,
  );
  return row ?? null;
}

/**
 * The applications of several categories, by name (then id) within each: one statement for a page's
 * categories. Each row carries its categoryId, by which the caller groups them.
 */
export function readApplicationsOfCategories(
  db: Pick<RawSql, 'query'>,
  categoryIds: readonly string[],
  properties: ReadonlySet<string> | null,
): Promise<ApplicationRow[]> {
  const read = propertiesToRead(ALL_PROPERTIES, properties && new Set([...properties, 'categoryId']));
  return nestedRows(
    db,
    sql`SELECT ${aliasedColumns(APPLICATION_ROW_SQL, read)} ${fromOf(read, [])} WHERE "t0"."category_id" = ANY(${arrayLiteral(categoryIds)}::text[]) ORDER BY "t0"."name" ASC, "t0"."id" ASC`,
    read,
  );
}
