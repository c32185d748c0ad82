import type { Columns, PrismaColumn } from './columns.js';
import { escapeLike, type FilterOperator, type FilterRenderer, likeMatch, type OrderKey, renderAfter, renderFilter } from './filter.js';

// The list query language (query/filter.ts) written as Prisma `where` and `orderBy` objects: the lists read
// through Prisma (the catalog, connections, webhook endpoints and deliveries).

type Where = Record<string, unknown>;

/** `{ 'a.b.c': x }` → `{ a: { b: { c: x } } }`: Prisma's shape for filtering and ordering through relations. */
function nestPath(path: string, value: unknown): Where {
  return path.split('.').reduceRight<unknown>((inner, key) => ({ [key]: inner }), value) as Where;
}

const prismaWhere: FilterRenderer<Where, PrismaColumn> = {
  all: (parts) => (parts.length === 0 ? {} : { AND: parts }),
  any: (parts) => ({ OR: parts }),
  not: (part) => ({ NOT: part }),
  compare(column, operator, value) {
    const dot = column.field.lastIndexOf('.');
    const condition = fieldCondition(column.field.slice(dot + 1), column.nullable, operator, value);
    return dot < 0 ? condition : nestPath(column.field.slice(0, dot), condition);
  },
};

function fieldCondition(field: string, nullable: boolean, operator: FilterOperator, value: unknown): Where {
  switch (operator) {
    case 'eq':
      return { [field]: { equals: value } };
    case 'neq':
      // SQL semantics: a null is neither equal nor unequal. Prisma's `not` alone would let nulls through.
      return nullable ? { AND: [{ [field]: { not: value } }, { [field]: { not: null } }] } : { [field]: { not: value } };
    case 'in':
      return { [field]: { in: value } };
    case 'isNull':
      // Prisma refuses null tests on required fields; there `isNull: true` matches nothing, `false` everything.
      if (nullable) return value ? { [field]: null } : { [field]: { not: null } };
      return value ? { [field]: { in: [] } } : {};
    case 'gt':
    case 'lt':
    case 'gte':
    case 'lte':
      return { [field]: { [operator]: value } };
    case 'like':
    case 'ilike':
      return likeCondition(field, String(value), operator === 'ilike');
    case 'contains':
      return { [field]: { contains: escapeLike(String(value)), mode: 'insensitive' } };
  }
}

/** A `*` wildcard pattern as Prisma's equals/startsWith/endsWith/contains. */
function likeCondition(field: string, pattern: string, insensitive: boolean): Where {
  const mode = insensitive ? { mode: 'insensitive' as const } : {};
  const match = likeMatch(pattern);
  switch (match.kind) {
    case 'anything':
      // Every non-null value: `LIKE '%%'` says so on any field; Prisma refuses `not: null` on required ones.
      return { [field]: { contains: '' } };
    case 'substring':
      return { [field]: { contains: escapeLike(match.text), ...mode } };
    case 'suffix':
      return { [field]: { endsWith: escapeLike(match.text), ...mode } };
    case 'prefix':
      return { [field]: { startsWith: escapeLike(match.text), ...mode } };
    case 'equals':
      // Prisma's case-insensitive equals is an ILIKE, so it needs the escaping; plain equals is `=`.
      return { [field]: { equals: insensitive ? escapeLike(match.text) : match.text, ...mode } };
  }
}

/** A resource filter input as a Prisma `where`. */
export function filterWhere(filter: Record<string, unknown> | null | undefined, columns: Columns<PrismaColumn>): Where {
  return renderFilter(filter, columns, prismaWhere);
}

/** A Prisma `orderBy` for sort keys. */
export function orderByKeys(keys: readonly OrderKey<PrismaColumn>[]): Where[] {
  return keys.map(({ column, descending, nulls }) => {
    const sort = descending ? 'desc' : 'asc';
    return nestPath(column.field, nulls ? { sort, nulls } : sort);
  });
}

/** A case-insensitive `search` over some string columns (any of them may hold it); no condition without a term. */
export function searchWhere(search: string | null | undefined, columns: readonly string[]) {
  const term = search?.trim();
  if (!term) return {};
  return { OR: columns.map((column) => ({ [column]: { contains: escapeLike(term), mode: 'insensitive' as const } })) };
}

/**
 * The rows after a row whose sort keys hold `values` (its fields' values; a timestamp as ISO text, exact at the
 * millisecond precision these tables keep): a cursor page's condition (renderAfter) as a Prisma `where`.
 */
export function afterWhere(keys: readonly OrderKey<PrismaColumn>[], values: readonly unknown[]): Where {
  const typed = values.map((value, index) => {
    const column = keys[index]?.column;
    if (value === null || !column) return value;
    return column.kind === 'dateTime' ? new Date(String(value)) : column.bigint ? BigInt(String(value)) : value;
  });
  return renderAfter(keys, typed, prismaWhere);
}

/** The sort keys' values of a row read through Prisma, as a cursor carries them (a timestamp as ISO text). */
export function fieldKeyValues(keys: readonly OrderKey<PrismaColumn>[], row: Record<string, unknown>): unknown[] {
  return keys.map(({ column }) => {
    const value = column.field.split('.').reduce<unknown>((object, key) => (object as Record<string, unknown> | null)?.[key] ?? null, row);
    return value instanceof Date ? value.toISOString() : typeof value === 'bigint' ? value.toString() : value;
  });
}
