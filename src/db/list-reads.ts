import { likePattern } from '../query/filter.js';
import { allOf, raw, type Sql, sql } from '../query/sql.js';

// What the hand-written list reads share (connection-queries.ts, catalog-queries.ts, sync-queries.ts): a list's
// question, the properties a read reads, its select list, its rows nested, the keyword search, and its page.

/** One list's question: conditions, order, page, and the row properties to read (the id always; null for all). */
export interface ListQuery<Property extends string> {
  where: Sql;
  orderBy: Sql;
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

/** A page's LIMIT and OFFSET, written into the statement (whole numbers the list bounds checked). */
export function pageSql(take: number, skip: number): Sql {
  return raw(`LIMIT ${take} OFFSET ${skip}`);
}

/**
 * Rows as the reads hand them back: each read property's aliased column put in its place, a dotted property
 * (`application.category.name`) in the objects its path names, which exist only when one of their properties
 * was read.
 */
export function nestedRows<Property extends string>(rows: readonly Record<string, unknown>[], read: readonly Property[]): Record<string, unknown>[] {
  const places = read.map((property) => [property, property.split('.')] as const);
  return rows.map((row) => {
    const nested: Record<string, unknown> = {};
    for (const [property, path] of places) {
      let target = nested;
      for (let i = 0; i < path.length - 1; i++) target = (target[path[i]!] ??= {}) as Record<string, unknown>;
      target[path[path.length - 1]!] = row[property];
    }
    return nested;
  });
}

/** `search`: a lowercase keyword (query/filter.ts `searchTerm`) as a substring of the lower-cased `"t0"."search_text"`. */
export function searchTextSql(term: string | null): Sql {
  return term ? sql`"t0"."search_text" LIKE ${likePattern({ kind: 'substring', text: term })}` : allOf([]);
}
