import { ApiError } from '../errors.js';
import type { Columns, PrismaColumn, SqlColumn } from './columns.js';

// The list query language, apart from any surface or driver: a filter (`{field: {op: value}, and, or, not}`),
// an order and a keyword search, walked and decided here once, and written by a renderer in the target's
// terms (query/prisma.ts: Prisma `where`/`orderBy`; query/sql.ts: SQL with bind parameters). The GraphQL
// inputs (graphql/filters.ts) and the REST grammar (rest/query-params.ts) both end here.

/**
 * Caps on text a caller sends, the same on both surfaces: REST's query-string parser (rest/query-params.ts)
 * and GraphQL's filter and search arguments, both walked here.
 */
export const TEXT_LIMITS = {
  /** One compared value: an `eq`/`like`/`ilike`/… operand or one `in` member (REST: a parameter's whole value). */
  maxValueLength: 4096,
  /** A `search` keyword, in characters (code points). */
  maxSearchLength: 200,
} as const;

/**
 * The filter operators, plus `contains`: a case-insensitive substring match that keyword searches build
 * (never accepted from a filter input, where `ilike` with `*` says the same).
 */
export type FilterOperator = 'eq' | 'neq' | 'in' | 'isNull' | 'gt' | 'lt' | 'gte' | 'lte' | 'like' | 'ilike' | 'contains';
const OPERATORS = new Set<string>(['eq', 'neq', 'in', 'isNull', 'gt', 'lt', 'gte', 'lte', 'like', 'ilike']);

/** What a filter becomes in one query language; the walk (`renderFilter`) is shared, a renderer only writes. */
export interface FilterRenderer<Condition, Column> {
  all(parts: Condition[]): Condition;
  any(parts: Condition[]): Condition;
  not(part: Condition): Condition;
  /** One operator of one field filter; null/undefined operands never get here. */
  compare(column: Column, operator: FilterOperator, value: unknown): Condition;
}

/** Depth bound for and/or/not nesting: deeper trees are a client error rather than unbounded SQL. */
const MAX_FILTER_DEPTH = 8;

/**
 * Bound on the values one filter compares against (each `in` member counts): each is a bind parameter, and
 * PostgreSQL takes at most 65,535 in one statement. The REST grammar cannot get near it within its URL limit.
 */
const MAX_FILTER_VALUES = 5000;

/** Renders a resource filter input; its conditions combine with AND. */
export function renderFilter<Condition, Column>(
  filter: Record<string, unknown> | null | undefined,
  columns: Readonly<Record<string, Column>>,
  renderer: FilterRenderer<Condition, Column>,
  depth = 0,
  budget = { values: MAX_FILTER_VALUES },
): Condition {
  if (!filter) return renderer.all([]);
  if (depth > MAX_FILTER_DEPTH) throw new ApiError('INVALID_QUERY', `filters nest at most ${MAX_FILTER_DEPTH} levels`);
  const conditions: Condition[] = [];
  for (const [key, value] of Object.entries(filter)) {
    if (value === undefined || value === null) continue;
    if (key === 'and' || key === 'or') {
      const parts = (value as Record<string, unknown>[]).map((f) => renderFilter(f, columns, renderer, depth + 1, budget));
      conditions.push(key === 'and' ? renderer.all(parts) : renderer.any(parts));
    } else if (key === 'not') {
      conditions.push(renderer.not(renderFilter(value as Record<string, unknown>, columns, renderer, depth + 1, budget)));
    } else {
      const column = columns[key];
      if (!column) throw new ApiError('INVALID_QUERY', `unknown filter field ${key}`);
      const operators = value as Record<string, unknown>;
      for (const operand of Object.values(operators)) budget.values -= Array.isArray(operand) ? operand.length : 1;
      if (budget.values < 0) throw new ApiError('INVALID_QUERY', `a filter compares against at most ${MAX_FILTER_VALUES} values`);
      for (const [operator, operand] of Object.entries(operators)) {
        if (operand === undefined || operand === null) continue;
        if (!OPERATORS.has(operator)) throw new ApiError('INVALID_QUERY', `unknown operator ${operator}`);
        assertValueLength(`${key}.${operator}`, operand);
        conditions.push(renderer.compare(column, operator as FilterOperator, operand));
      }
    }
  }
  return conditions.length === 1 ? (conditions[0] as Condition) : renderer.all(conditions);
}

/** The columns a filter's conditions read, through the same walk (and checks) as every renderer. */
export function filterColumns<Column>(
  filter: Record<string, unknown> | null | undefined,
  columns: Readonly<Record<string, Column>>,
): ReadonlySet<Column> {
  const union = (parts: ReadonlySet<Column>[]) => new Set(parts.flatMap((part) => [...part]));
  return renderFilter<ReadonlySet<Column>, Column>(filter, columns, {
    all: union,
    any: union,
    not: (part) => part,
    compare: (column) => new Set([column]),
  });
}

/** The REST parser's cap on compared text, on GraphQL's filter values (each `in` member) and text arguments too. */
export function assertValueLength(what: string, operand: unknown): void {
  const values = Array.isArray(operand) ? operand : [operand];
  if (values.some((v) => typeof v === 'string' && v.length > TEXT_LIMITS.maxValueLength)) {
    throw new ApiError('INVALID_QUERY', `a value of ${what} is longer than ${TEXT_LIMITS.maxValueLength} characters`);
  }
}

/** A `search` argument as a lowercase keyword, or null for none; longer than REST allows is a client error. */
export function searchTerm(search: string | null | undefined): string | null {
  const term = search?.trim().toLowerCase();
  if (!term) return null;
  if ([...term].length > TEXT_LIMITS.maxSearchLength) {
    throw new ApiError('INVALID_QUERY', `search is longer than ${TEXT_LIMITS.maxSearchLength} characters`);
  }
  return term;
}

// ---- like patterns ----

/**
 * What a like/ilike pattern (`*` the wildcard) asks for: every non-null value (only wildcards), an equal
 * value, or a value with the literal `text` as prefix, suffix or substring. A `*` between two literal
 * parts (`a*b`) is refused rather than approximated.
 */
type LikeMatch = { kind: 'anything' } | { kind: 'equals' | 'prefix' | 'suffix' | 'substring'; text: string };

export function likeMatch(pattern: string): LikeMatch {
  const leading = pattern.startsWith('*');
  const trailing = pattern.length > 1 && pattern.endsWith('*');
  const text = pattern.slice(leading ? 1 : 0, trailing ? -1 : undefined);
  if (text.replaceAll('*', '') === '' && (leading || trailing)) return { kind: 'anything' };
  if (text.includes('*')) {
    throw new ApiError(
      'INVALID_QUERY',
      `pattern "${pattern}": * may stand at the start and/or the end of a like/ilike pattern, not between characters`,
    );
  }
  if (leading && trailing) return { kind: 'substring', text };
  if (leading) return { kind: 'suffix', text };
  return { kind: trailing ? 'prefix' : 'equals', text };
}

/**
 * `%`, `_` and `\` escaped: the literal text of a LIKE pattern. Prisma passes contains/startsWith/endsWith
 * text into LIKE unescaped, so every user text headed there goes through this first.
 */
export function escapeLike(text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`);
}

/** The LIKE pattern (`%` wildcards, literal text escaped) of a match other than `anything`. */
export function likePattern(match: Exclude<LikeMatch, { kind: 'anything' }>): string {
  const text = escapeLike(match.text);
  switch (match.kind) {
    case 'equals':
      return text;
    case 'prefix':
      return `${text}%`;
    case 'suffix':
      return `%${text}`;
    case 'substring':
      return `%${text}%`;
  }
}

// ---- order ----

export interface OrderInput {
  field: string;
  direction?: 'ASC' | 'DESC' | null;
  nulls?: 'FIRST' | 'LAST' | null;
}

export interface OrderKey<Column> {
  column: Column;
  descending: boolean;
  /** Where nulls sort; null for a column that cannot hold one (no NULLS clause). */
  nulls: 'first' | 'last' | null;
}

/**
 * The sort keys of an order input (or `fallback` without one): nulls last ascending and first descending
 * unless asked otherwise (PostgreSQL's and PostgREST's default), and `id` (in the first key's direction)
 * breaking ties unless it is ordered by already, so pages are stable.
 */
export function orderKeys<Column extends PrismaColumn | SqlColumn>(
  order: readonly OrderInput[] | null | undefined,
  columns: Columns<Column>,
  fallback: readonly OrderInput[],
): OrderKey<Column>[] {
  const inputs = order && order.length > 0 ? order : fallback;
  const keys = inputs.map(({ field, direction, nulls }): OrderKey<Column> => {
    const column = columns[field];
    if (!column) throw new ApiError('INVALID_QUERY', `cannot order by ${field}`);
    const descending = direction === 'DESC';
    if (!column.nullable) return { column, descending, nulls: null };
    return { column, descending, nulls: nulls ? (nulls === 'FIRST' ? 'first' : 'last') : descending ? 'first' : 'last' };
  });
  if (inputs.some((input) => input.field === 'id')) return keys;
  return [...keys, { column: columns.id, descending: inputs[0]?.direction === 'DESC', nulls: null }];
}

// ---- keyset (cursor pages) ----

/**
 * The rows after a row whose sort keys hold `values` (a null for a null), in the order of `keys`: the keyset
 * condition of a cursor page, as a filter condition in the renderer's terms. Row by row it is
 * `k1 after v1 OR (k1 = v1 AND k2 after v2) OR …`, where "after" follows each key's direction and nulls
 * placement. The first key's bound is repeated on its own (`k1 >= v1`, or `<=` descending) when that key
 * cannot be null: it is what an index on the keys reads as the start of a range.
 */
export function renderAfter<Condition, Column extends { nullable: boolean }>(
  keys: readonly OrderKey<Column>[],
  values: readonly unknown[],
  renderer: Pick<FilterRenderer<Condition, Column>, 'all' | 'any' | 'compare'>,
): Condition {
  const alternatives: Condition[] = [];
  const equalSoFar: Condition[] = [];
  keys.forEach((key, index) => {
    const value = values[index] ?? null;
    const after = afterKey(key, value, renderer);
    if (after !== null) alternatives.push(renderer.all([...equalSoFar, after]));
    equalSoFar.push(value === null ? renderer.compare(key.column, 'isNull', true) : renderer.compare(key.column, 'eq', value));
  });
  const first = keys[0];
  const condition = renderer.any(alternatives);
  if (!first || first.column.nullable || values[0] === null || values[0] === undefined) return condition;
  return renderer.all([renderer.compare(first.column, first.descending ? 'lte' : 'gte', values[0]), condition]);
}

/** The rows after `value` on one key alone; null when none can be (a null that sorts last). */
function afterKey<Condition, Column extends { nullable: boolean }>(
  key: OrderKey<Column>,
  value: unknown,
  renderer: Pick<FilterRenderer<Condition, Column>, 'any' | 'compare'>,
): Condition | null {
  if (value === null) return key.nulls === 'first' ? renderer.compare(key.column, 'isNull', false) : null;
  const beyond = renderer.compare(key.column, key.descending ? 'lt' : 'gt', value);
  return key.nulls === 'last' ? renderer.any([beyond, renderer.compare(key.column, 'isNull', true)]) : beyond;
}
