import type { SqlColumn } from '../query/columns.js';
import { likePattern, type OrderKey } from '../query/filter.js';
import { allOf, keyAlias, keyValuesSql, raw, type Sql, sql } from '../query/sql.js';
import type { RawSql } from './client.js';

// What the hand-written list reads share (connection-queries.ts, catalog-queries.ts, sync-queries.ts): a list's
// question, the properties a read reads, its select list, its rows nested, the keyword search, its page and count.

/** One list's question: conditions, order, page, and the row properties to read (the id always; null for all). */
export interface ListQuery<Property extends string> {
  where: Sql;
  orderBy: Sql;
  /** The sort keys `orderBy` is written from: a page also reads their values, for the next page's cursor. */
  keys: readonly OrderKey<SqlColumn>[];
  /** A cursor page: the rows after the cursor's (query/sql.ts afterSql); TRUE otherwise. Not counted in totals. */
  start: Sql;
  take: number;
  skip: number;
  properties: ReadonlySet<Property> | ReadonlySet<string> | null;
}

/** The properties a read reads, in their table's order: the id always, the selected ones, or every one for null. */
export function propertiesToRead<Property extends string>(all: readonly Property[], selected: ReadonlySet<string> | null): Property[] {
  return selected ? all.filter((property) => property === 'id' || selected.has(property)) : [...all];
}

/** The select list: each read property's column, aliased by the property's name. */
export function aliasedColumns<Property extends string>(columns: Readonly<Record<Property, string>>, read: readonly Property[]): Sql {
  return raw(read.map((property) => `${columns[property]} AS "${property}"`).join(', '));
}

/** A page's select list: the read properties (aliasedColumns), then its sort keys' values (keyValuesSql). */
export function pageColumns<Property extends string>(
  columns: Readonly<Record<Property, string>>,
  read: readonly Property[],
  keys: readonly OrderKey<SqlColumn>[],
): Sql {
  return keys.length === 0 ? aliasedColumns(columns, read) : sql`${aliasedColumns(columns, read)}, ${keyValuesSql(keys)}`;
}

/** How many rows a FROM clause and a condition match. */
export async function countRows(db: Pick<RawSql, 'query'>, from: Sql, where: Sql): Promise<number> {
  const statement = sql`SELECT count(*)::int AS "count" ${from} WHERE ${where}`;
  const [row] = await db.query<{ count: number }>(statement.text, statement.values);
  return row?.count ?? 0;
}

/** A page's LIMIT and OFFSET, written into the statement (whole numbers the list bounds checked). */
export function pageSql(take: number, skip: number): Sql {
  return raw(`LIMIT ${take} OFFSET ${skip}`);
}

/**
 * Runs a statement that reads `read` and hands back its rows as the reads do: each read property's aliased
 * column put in its place, a dotted property (`application.category.name`) in the objects its path names, which
 * exist only when one of their properties was read. The places are worked out once per read, not per row: a row
 * is then a fixed set of fresh objects, each filled by index and linked to its parent (a page of 100
 * connections with their application and category is some 1,700 assignments a request).
 */
export async function nestedRows<Row>(db: Pick<RawSql, 'query'>, statement: Sql, read: readonly string[], keyCount = 0): Promise<Row[]> {
  // The objects of a row: 0 the row itself, then one per dotted path, each after its parent and linked to it.
  const paths = [''];
  const links: { child: number; parent: number; key: string }[] = [];
  const objectOf = (path: string): number => {
    const known = paths.indexOf(path);
    if (known >= 0) return known;
    const dot = path.lastIndexOf('.');
    const parent = objectOf(dot < 0 ? '' : path.slice(0, dot));
    const child = paths.push(path) - 1;
    links.push({ child, parent, key: path.slice(dot + 1) });
    return child;
  };
  const leaves = read.map((property) => {
    const dot = property.lastIndexOf('.');
    return { property, object: objectOf(dot < 0 ? '' : property.slice(0, dot)), key: property.slice(dot + 1) };
  });
  // The sort keys' values (pageColumns) stay on the row itself, for the page's cursor.
  for (let index = 0; index < keyCount; index += 1) leaves.push({ property: keyAlias(index), object: 0, key: keyAlias(index) });
  const rows = await db.query<Record<string, unknown>>(statement.text, statement.values);
  return rows.map((row) => {
    const objects: Record<string, unknown>[] = paths.map(() => ({}));
    for (const { property, object, key } of leaves) objects[object]![key] = row[property];
    for (const { child, parent, key } of links) objects[parent]![key] = objects[child];
    return objects[0] as Row;
  });
}

/** `search`: a lowercase keyword (query/filter.ts `searchTerm`) as a substring of the lower-cased `"t0"."search_text"`. */
export function searchTextSql(term: string | null): Sql {
  return term ? sql`"t0"."search_text" LIKE ${likePattern({ kind: 'substring', text: term })}` : allOf([]);
}
