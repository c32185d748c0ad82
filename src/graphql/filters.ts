import type { EnumRef } from '@pothos/core';
import { ApiError } from '../errors.js';
import { TEXT_LIMITS } from '../input-limits.js';
import { builder } from './builder.js';

// Filter inputs mirror the spec's operators (eq, neq, in, is → isNull, gt, lt, gte, lte, like, ilike) so the
// REST facade maps `field=op.value` one to one. like/ilike take `*` as the wildcard, as the spec writes them.

const likeDescription =
  'Case-sensitive pattern; `*` is the wildcard and may stand at the start and/or the end (`*sub*`, `pre*`, `*suf`).';
const ilikeDescription = 'As `like`, case-insensitive.';

export const StringFilter = builder.inputType('StringFilter', {
  fields: (t) => ({
    eq: t.string(),
    neq: t.string({ description: 'Not equal; rows where the field is null do not match (SQL semantics).' }),
    in: t.stringList(),
    isNull: t.boolean({ description: 'true: the field is null; false: it is not.' }),
    gt: t.string(),
    lt: t.string(),
    gte: t.string(),
    lte: t.string(),
    like: t.string({ description: likeDescription }),
    ilike: t.string({ description: ilikeDescription }),
  }),
});

export const DateTimeFilter = builder.inputType('DateTimeFilter', {
  fields: (t) => ({
    eq: t.field({ type: 'DateTime' }),
    neq: t.field({ type: 'DateTime' }),
    in: t.field({ type: ['DateTime'] }),
    isNull: t.boolean(),
    gt: t.field({ type: 'DateTime' }),
    lt: t.field({ type: 'DateTime' }),
    gte: t.field({ type: 'DateTime' }),
    lte: t.field({ type: 'DateTime' }),
  }),
});

export const BooleanFilter = builder.inputType('BooleanFilter', {
  fields: (t) => ({
    eq: t.boolean(),
    neq: t.boolean(),
    isNull: t.boolean(),
  }),
});

/** eq/neq/in over one GraphQL enum. */
export function enumFilter<Value extends string>(
  name: string,
  enumRef: EnumRef<typeof builder.$inferSchemaTypes, Value, Value>,
) {
  return builder.inputType(name, {
    fields: (t) => ({
      eq: t.field({ type: enumRef }),
      neq: t.field({ type: enumRef }),
      in: t.field({ type: [enumRef] }),
    }),
  });
}

export const SortDirection = builder.enumType('SortDirection', { values: ['ASC', 'DESC'] as const });
export const NullsOrder = builder.enumType('NullsOrder', {
  values: ['FIRST', 'LAST'] as const,
  description: 'Where nulls sort. Default: last for ASC, first for DESC (PostgreSQL and PostgREST default).',
});

export type ColumnKind = 'string' | 'dateTime' | 'boolean' | 'enum';

export interface ColumnSpec {
  /** Prisma field name; a dotted path (`application.category.slug`) reaches through to-one relations. */
  column: string;
  kind: ColumnKind;
  nullable: boolean;
  /**
   * The column in SQL, for resources whose lists are read with hand-written SQL (`sql.ts`): quoted and
   * qualified by the statement's alias, e.g. `"t0"."started_at"`.
   */
  sql?: string;
  /** PostgreSQL type of the column for array parameters (`= ANY($n::<type>[])`), e.g. `sync_status`. */
  sqlType?: string;
}

type Where = Record<string, unknown>;
type FieldFilter = Record<string, unknown>;

/**
 * Prisma passes contains/startsWith/endsWith text into LIKE unescaped, so `%`, `_` and `\` would act as
 * wildcards; every user text headed there goes through this first.
 */
export function escapeLike(text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`);
}

/** A like/ilike pattern taken apart: literal text, and whether `*` stands before and/or after it. */
export interface LikePattern {
  text: string;
  leading: boolean;
  trailing: boolean;
  /** Only wildcards (`*`, `**`): every non-null value matches. */
  anything: boolean;
}

/**
 * Parses a `*` wildcard pattern into the four shapes that translate exactly (equals, prefix, suffix,
 * substring); a `*` between two literal parts (`a*b`) is rejected rather than approximated.
 */
export function parseLikePattern(pattern: string): LikePattern {
  const leading = pattern.startsWith('*');
  const trailing = pattern.length > 1 && pattern.endsWith('*');
  const text = pattern.slice(leading ? 1 : 0, trailing ? -1 : undefined);
  const anything = text.replaceAll('*', '') === '' && (leading || trailing);
  if (!anything && text.includes('*')) {
    throw new ApiError(
      'INVALID_QUERY',
      `pattern "${pattern}": * may stand at the start and/or the end of a like/ilike pattern, not between characters`,
    );
  }
  return { text, leading, trailing, anything };
}

/** The LIKE pattern (`%` wildcards, literal text escaped) for a parsed `*` pattern. */
export function sqlLikePattern({ text, leading, trailing }: LikePattern): string {
  return `${leading ? '%' : ''}${escapeLike(text)}${trailing ? '%' : ''}`;
}

/** Translates a `*` wildcard pattern into Prisma's equals/prefix/suffix/substring operators. */
function likeCondition(column: string, pattern: string, insensitive: boolean): Where {
  const mode = insensitive ? { mode: 'insensitive' as const } : {};
  const like = parseLikePattern(pattern);
  // Only wildcards: every non-null value. `LIKE '%%'` says so on any column; Prisma refuses `not: null` on required ones.
  if (like.anything) return { [column]: { contains: '' } };
  const text = escapeLike(like.text);
  if (like.leading && like.trailing) return { [column]: { contains: text, ...mode } };
  if (like.leading) return { [column]: { endsWith: text, ...mode } };
  if (like.trailing) return { [column]: { startsWith: text, ...mode } };
  // Prisma's case-insensitive equals is an ILIKE, so it needs the same escaping; plain equals is `=`.
  return { [column]: { equals: insensitive ? text : like.text, ...mode } };
}

/** `{ 'a.b.c': x }` → `{ a: { b: { c: x } } }`: Prisma's shape for filtering and ordering through relations. */
export function nestPath(path: string, value: unknown): Where {
  return path
    .split('.')
    .reduceRight<unknown>((inner, key) => ({ [key]: inner }), value) as Where;
}

/**
 * The filter operators, plus `contains`: a case-insensitive substring match that keyword searches build
 * (never accepted from a filter input, where `ilike` with `*` says the same).
 */
export type FilterOperator = 'eq' | 'neq' | 'in' | 'isNull' | 'gt' | 'lt' | 'gte' | 'lte' | 'like' | 'ilike' | 'contains';
const OPERATORS = new Set<string>(['eq', 'neq', 'in', 'isNull', 'gt', 'lt', 'gte', 'lte', 'like', 'ilike']);

/**
 * What a filter becomes in one query language. The walk over the filter input (nesting, field names,
 * operators, the value budget) is `renderFilter`'s, done once for every target; a renderer only says how
 * each part is written. Two exist: Prisma `where` objects (`prismaWhere`: the catalog and connection lists,
 * read through Prisma) and SQL with bind parameters (`sqlRenderer` in `sql.ts`: the sync history, read with
 * hand-written SQL).
 */
export interface FilterRenderer<Condition> {
  all(parts: Condition[]): Condition;
  any(parts: Condition[]): Condition;
  not(part: Condition): Condition;
  /** One operator of one field filter; null/undefined operands never get here. */
  compare(spec: ColumnSpec, operator: FilterOperator, value: unknown): Condition;
}

/** Depth bound for and/or/not nesting: deeper trees are a client error rather than unbounded SQL. */
const MAX_FILTER_DEPTH = 8;

/**
 * Bound on the values one filter compares against (each `in` member counts): each is a bind parameter, and
 * PostgreSQL takes at most 65,535 in one statement. The REST grammar cannot get near it within its URL limit.
 */
export const MAX_FILTER_VALUES = 5000;

/** Renders a resource filter input (`{field: {op: value}, and, or, not}`); conditions combine with AND. */
export function renderFilter<Condition>(
  filter: Record<string, unknown> | null | undefined,
  columns: Record<string, ColumnSpec>,
  renderer: FilterRenderer<Condition>,
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
      const spec = columns[key];
      if (!spec) throw new ApiError('INVALID_QUERY', `unknown filter field ${key}`);
      for (const operand of Object.values(value as FieldFilter)) budget.values -= Array.isArray(operand) ? operand.length : 1;
      if (budget.values < 0) throw new ApiError('INVALID_QUERY', `a filter compares against at most ${MAX_FILTER_VALUES} values`);
      for (const [operator, operand] of Object.entries(value as FieldFilter)) {
        if (operand === undefined || operand === null) continue;
        if (!OPERATORS.has(operator)) throw new ApiError('INVALID_QUERY', `unknown operator ${operator}`);
        assertValueLength(`${key}.${operator}`, operand);
        conditions.push(renderer.compare(spec, operator as FilterOperator, operand));
      }
    }
  }
  return conditions.length === 1 ? (conditions[0] as Condition) : renderer.all(conditions);
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

/** Prisma `where` objects. */
const prismaWhere: FilterRenderer<Where> = {
  all: (parts) => (parts.length === 0 ? {} : { AND: parts }),
  any: (parts) => ({ OR: parts }),
  not: (part) => ({ NOT: part }),
  compare(spec, operator, value) {
    const [relationPath, column] = splitColumn(spec.column);
    const condition = columnCondition(column, spec.nullable, operator, value);
    return relationPath ? nestPath(relationPath, condition) : condition;
  },
};

function splitColumn(path: string): [string | null, string] {
  const dot = path.lastIndexOf('.');
  return dot < 0 ? [null, path] : [path.slice(0, dot), path.slice(dot + 1)];
}

function columnCondition(column: string, nullable: boolean, operator: FilterOperator, value: unknown): Where {
  switch (operator) {
    case 'eq':
      return { [column]: { equals: value } };
    case 'neq':
      // SQL semantics: a null is neither equal nor unequal. Prisma's `not` alone would let nulls through.
      return nullable ? { AND: [{ [column]: { not: value } }, { [column]: { not: null } }] } : { [column]: { not: value } };
    case 'in':
      return { [column]: { in: value } };
    case 'isNull':
      // Prisma refuses null tests on required columns; there `isNull: true` matches nothing, `false` everything.
      if (nullable) return value ? { [column]: null } : { [column]: { not: null } };
      return value ? { [column]: { in: [] } } : {};
    case 'gt':
    case 'lt':
    case 'gte':
    case 'lte':
      return { [column]: { [operator]: value } };
    case 'like':
    case 'ilike':
      return likeCondition(column, String(value), operator === 'ilike');
    case 'contains':
      return { [column]: { contains: escapeLike(String(value)), mode: 'insensitive' } };
  }
}

/** Builds a Prisma `where` from a resource filter input. */
export function filterWhere(filter: Record<string, unknown> | null | undefined, columns: Record<string, ColumnSpec>): Where {
  return renderFilter(filter, columns, prismaWhere);
}

export interface OrderInput {
  field: string;
  direction?: 'ASC' | 'DESC' | null;
  nulls?: 'FIRST' | 'LAST' | null;
}

/** Prisma orderBy for order inputs; `id` breaks ties (in the first key's direction) so pages are stable. */
export function orderByOf(
  order: readonly OrderInput[] | null | undefined,
  columns: Record<string, ColumnSpec>,
  fallback: OrderInput[],
): Record<string, unknown>[] {
  const keys = order && order.length > 0 ? order : fallback;
  const orderBy = keys.map(({ field, direction, nulls }) => {
    const spec = columns[field];
    if (!spec) throw new ApiError('INVALID_QUERY', `cannot order by ${field}`);
    const sort = direction === 'DESC' ? 'desc' : 'asc';
    const nullsOrder = nulls ? (nulls === 'FIRST' ? 'first' : 'last') : sort === 'asc' ? 'last' : 'first';
    return nestPath(spec.column, spec.nullable ? { sort, nulls: nullsOrder } : sort);
  });
  if (keys.some((key) => columns[key.field]?.column === 'id')) return orderBy;
  return [...orderBy, { id: keys[0]?.direction === 'DESC' ? 'desc' : 'asc' }];
}

/** A `<Resource>OrderField` enum value → column map, from the filterable columns that may be sorted. */
export function orderFieldEnum(name: string, columns: Record<string, ColumnSpec>) {
  const values = Object.fromEntries(Object.keys(columns).map((field) => [field, { value: field }]));
  return builder.enumType(name, { values });
}

type InputFields = PothosSchemaTypes.InputFieldBuilder<typeof builder.$inferSchemaTypes, 'InputObject'>;

/** A resource's filter input: its per-field filters plus `and`, `or` and `not` over itself. */
export function resourceFilter(name: string, fields: (t: InputFields) => Record<string, unknown>) {
  const ref = builder.inputRef<Record<string, unknown>>(name);
  ref.implement({
    description: 'Conditions are combined with AND; use `or` and `not` for other combinations.',
    fields: (t) => ({
      ...(fields(t) as Record<string, ReturnType<InputFields['string']>>),
      and: t.field({ type: [ref] }),
      or: t.field({ type: [ref] }),
      not: t.field({ type: ref }),
    }),
  });
  return ref;
}

/** `<Resource>Order { field, direction, nulls }` over the resource's sortable columns. */
export function resourceOrder(name: string, columns: Record<string, ColumnSpec>) {
  const field = orderFieldEnum(`${name}Field`, columns);
  return builder.inputType(name, {
    fields: (t) => ({
      field: t.field({ type: field, required: true }),
      direction: t.field({ type: SortDirection, defaultValue: 'ASC' }),
      nulls: t.field({ type: NullsOrder }),
    }),
  });
}
