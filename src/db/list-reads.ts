import { raw, type Sql } from '../query/sql.js';

// What the hand-written list reads share (connection-queries.ts, catalog-queries.ts, sync-queries.ts): a list's
// question, the properties a read reads, its select list, and its page.

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
