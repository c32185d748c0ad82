import { Prisma } from '../generated/prisma/client.js';
import type { Columns, SqlColumn } from './columns.js';
import { type FilterOperator, type FilterRenderer, likeMatch, likePattern, type OrderKey, renderAfter, renderFilter } from './filter.js';

// The list query language (query/filter.ts) written as SQL: composed with Prisma's tagged template
// (`Prisma.sql`, sql-template-tag), so every value is a bind parameter and fragments nest without counting
// placeholders, and run through the raw driver path (`db.raw.query(statement.text, statement.values)`). Column
// references are quoted and qualified as Prisma writes them (`"t0"."tenant_id"`), so statement checks
// (tenant scope, column pushdown) read both alike.

export type Sql = Prisma.Sql;
export const sql = Prisma.sql;
export const raw = Prisma.raw;

const TRUE = Prisma.raw('TRUE');
const FALSE = Prisma.raw('FALSE');

/** `parts` joined with AND, in parentheses; `TRUE` parts are left out and none at all is `TRUE`. */
export function allOf(parts: readonly Sql[]): Sql {
  const kept = parts.filter((part) => part !== TRUE);
  if (kept.length === 0) return TRUE;
  return kept.length === 1 ? kept[0]! : Prisma.join(kept, ' AND ', '(', ')');
}

/** `parts` joined with OR, in parentheses; none at all is `FALSE`. */
export function anyOf(parts: readonly Sql[]): Sql {
  if (parts.length === 0) return FALSE;
  return parts.length === 1 ? parts[0]! : Prisma.join(parts, ' OR ', '(', ')');
}

const sqlRenderer: FilterRenderer<Sql, SqlColumn> = {
  all: allOf,
  any: anyOf,
  not: (part) => sql`(NOT ${part})`,
  compare: compareSql,
};

/** One operator of one column; `compare` of the renderer, and of searches that build their own conditions. */
export function compareSql(column: SqlColumn, operator: FilterOperator, value: unknown): Sql {
  const ref = raw(column.sql);
  switch (operator) {
    case 'eq':
      return sql`${ref} = ${value}`;
    case 'neq':
      // `<>` is not true for a null: the SQL semantics the filter documents.
      return sql`${ref} <> ${value}`;
    case 'in':
      return sql`${ref} = ANY(${arrayLiteral(value as unknown[])}::${raw(arrayType(column))})`;
    case 'isNull':
      if (!column.nullable) return value ? FALSE : TRUE;
      return value ? sql`${ref} IS NULL` : sql`${ref} IS NOT NULL`;
    case 'gt':
      return sql`${ref} > ${value}`;
    case 'lt':
      return sql`${ref} < ${value}`;
    case 'gte':
      return sql`${ref} >= ${value}`;
    case 'lte':
      return sql`${ref} <= ${value}`;
    case 'like':
    case 'ilike': {
      const match = likeMatch(String(value));
      if (match.kind === 'anything') return sql`${ref} IS NOT NULL`;
      // A case-sensitive exact match is plain equality, as in the Prisma rendering.
      if (match.kind === 'equals' && operator === 'like') return sql`${ref} = ${match.text}`;
      return sql`${ref} ${raw(operator === 'ilike' ? 'ILIKE' : 'LIKE')} ${likePattern(match)}`;
    }
    case 'contains':
      return sql`${ref} ILIKE ${likePattern({ kind: 'substring', text: String(value) })}`;
  }
}

/**
 * An array parameter as PostgreSQL's array text (`{"a","b"}`), which the cast in the statement types: both
 * drivers pass text through unchanged, whereas their own array serialization differs (PGlite cannot
 * serialize arrays of an enum type it does not know).
 */
export function arrayLiteral(values: readonly unknown[]): string {
  const members = values.map((value) => {
    const text = value instanceof Date ? value.toISOString() : String(value);
    return `"${text.replace(/["\\]/g, (c) => `\\${c}`)}"`;
  });
  return `{${members.join(',')}}`;
}

/** The array type of `= ANY($n::…)`, so PostgreSQL compares in the column's type and can use its index. */
function arrayType(column: SqlColumn): string {
  if (column.sqlType) return `${column.sqlType}[]`;
  switch (column.kind) {
    case 'dateTime':
      return 'timestamptz[]';
    case 'boolean':
      return 'boolean[]';
    default:
      return 'text[]';
  }
}

/** A resource filter input as one SQL condition (`TRUE` when it has none). */
export function filterSql(filter: Record<string, unknown> | null | undefined, columns: Columns<SqlColumn>): Sql {
  return renderFilter(filter, columns, sqlRenderer);
}

/** ORDER BY items for sort keys. */
export function orderByKeysSql(keys: readonly OrderKey<SqlColumn>[]): Sql {
  const items = keys.map(({ column, descending, nulls }) =>
    raw(`${column.sql} ${descending ? 'DESC' : 'ASC'}${nulls ? ` NULLS ${nulls.toUpperCase()}` : ''}`),
  );
  return Prisma.join(items, ', ');
}

/** The alias a list read gives the text of its `index`th sort key (keyValuesSql), read back for the page's cursor. */
export function keyAlias(index: number): string {
  return `__key${index}`;
}

/**
 * Select items reading each sort key's value as text: exact (a timestamp keeps its microseconds and its offset),
 * and what a comparison with a text parameter reads back into the column's type (afterSql).
 */
export function keyValuesSql(keys: readonly OrderKey<SqlColumn>[]): Sql {
  return raw(keys.map(({ column }, index) => `(${column.sql})::text AS "${keyAlias(index)}"`).join(', '));
}

/** The sort keys' values of a row read with keyValuesSql. */
export function keyValuesOf(row: Record<string, unknown>, count: number): (string | null)[] {
  return Array.from({ length: count }, (_, index) => (row[keyAlias(index)] ?? null) as string | null);
}

/**
 * The rows after a row whose sort keys read `values` (keyValuesOf): a cursor page's condition. Keys that all sort
 * one way and hold no null are one row comparison, `(a, b) < ($1, $2)`: PostgreSQL reads it as one range of an
 * index on those columns and estimates it as such, whereas the equivalent OR of renderAfter is estimated at a
 * small fraction of its rows, so that deep in a large history a batch was planned as a bitmap scan of everything
 * left and a sort (200 ms for 5,000 rows rather than 4). Other keys take renderAfter's OR.
 */
export function afterSql(keys: readonly OrderKey<SqlColumn>[], values: readonly (string | null)[]): Sql {
  const descending = keys[0]?.descending;
  const oneWay =
    keys.length > 1 &&
    keys.every(
      (key, index) => !key.column.nullable && key.descending === descending && values[index] !== null && values[index] !== undefined,
    );
  if (!oneWay) return renderAfter(keys, values, sqlRenderer);
  const columns = Prisma.join(keys.map((key) => raw(key.column.sql)));
  return sql`(${columns}) ${raw(descending ? '<' : '>')} (${Prisma.join(values.slice(0, keys.length))})`;
}

/** A list's order as its reads take it: the sort keys, their ORDER BY, and a cursor page's start (afterSql; TRUE without). */
export function keysetOrder(
  keys: readonly OrderKey<SqlColumn>[],
  after: readonly unknown[] | null,
): { keys: readonly OrderKey<SqlColumn>[]; orderBy: Sql; start: Sql } {
  return { keys, orderBy: orderByKeysSql(keys), start: after ? afterSql(keys, after as (string | null)[]) : TRUE };
}
