import type { EnumRef } from '@pothos/core';
import { ApiError } from '../errors.js';
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

/**
 * Translates a `*` wildcard pattern into Prisma's equals/prefix/suffix/substring operators. Those four shapes
 * are the ones that translate exactly; a `*` between two literal parts (`a*b`) is rejected rather than
 * approximated.
 */
export function likeCondition(column: string, pattern: string, insensitive: boolean): Where {
  const mode = insensitive ? { mode: 'insensitive' as const } : {};
  const leading = pattern.startsWith('*');
  const trailing = pattern.length > 1 && pattern.endsWith('*');
  const text = pattern.slice(leading ? 1 : 0, trailing ? -1 : undefined);
  if (text.includes('*') && text.replaceAll('*', '') !== '') {
    throw new ApiError(
      'INVALID_QUERY',
      `pattern "${pattern}": * may stand at the start and/or the end of a like/ilike pattern, not between characters`,
    );
  }
  // Only wildcards: every non-null value. `LIKE '%%'` says so on any column; Prisma refuses `not: null` on required ones.
  if (text.replaceAll('*', '') === '' && (leading || trailing)) return { [column]: { contains: '' } };
  if (leading && trailing) return { [column]: { contains: escapeLike(text), ...mode } };
  if (leading) return { [column]: { endsWith: escapeLike(text), ...mode } };
  if (trailing) return { [column]: { startsWith: escapeLike(text), ...mode } };
  // Prisma's case-insensitive equals is an ILIKE, so it needs the same escaping; plain equals is `=`.
  return { [column]: { equals: insensitive ? escapeLike(text) : text, ...mode } };
}

/** `{ 'a.b.c': x }` → `{ a: { b: { c: x } } }`: Prisma's shape for filtering and ordering through relations. */
export function nestPath(path: string, value: unknown): Where {
  return path
    .split('.')
    .reduceRight<unknown>((inner, key) => ({ [key]: inner }), value) as Where;
}

function fieldConditions(spec: ColumnSpec, filter: FieldFilter): Where[] {
  const [relationPath, column] = splitColumn(spec.column);
  return columnConditions(column, spec.nullable, filter).map((condition) =>
    relationPath ? nestPath(relationPath, condition) : condition,
  );
}

function splitColumn(path: string): [string | null, string] {
  const dot = path.lastIndexOf('.');
  return dot < 0 ? [null, path] : [path.slice(0, dot), path.slice(dot + 1)];
}

function columnConditions(column: string, nullable: boolean, filter: FieldFilter): Where[] {
  const out: Where[] = [];
  for (const [operator, value] of Object.entries(filter)) {
    if (value === undefined || value === null) continue;
    switch (operator) {
      case 'eq':
        out.push({ [column]: { equals: value } });
        break;
      case 'neq':
        out.push({ [column]: { not: value } });
        if (nullable) out.push({ [column]: { not: null } });
        break;
      case 'in':
        out.push({ [column]: { in: value } });
        break;
      case 'isNull':
        // Prisma refuses null tests on required columns; there `isNull: true` matches nothing, `false` everything.
        if (nullable) out.push(value ? { [column]: null } : { [column]: { not: null } });
        else if (value) out.push({ [column]: { in: [] } });
        break;
      case 'gt':
      case 'lt':
      case 'gte':
      case 'lte':
        out.push({ [column]: { [operator]: value } });
        break;
      case 'like':
      case 'ilike':
        out.push(likeCondition(column, String(value), operator === 'ilike'));
        break;
      default:
        throw new ApiError('INVALID_QUERY', `unknown operator ${operator}`);
    }
  }
  return out;
}

/** Depth bound for and/or/not nesting: deeper trees are a client error rather than unbounded SQL. */
const MAX_FILTER_DEPTH = 8;

/**
 * Bound on the values one filter compares against (each `in` member counts): each is a bind parameter, and
 * PostgreSQL takes at most 65,535 in one statement. The REST grammar cannot get near it within its URL limit.
 */
export const MAX_FILTER_VALUES = 5000;

/** Builds a Prisma `where` from a resource filter input (`{field: {op: value}, and, or, not}`). */
export function filterWhere(
  filter: Record<string, unknown> | null | undefined,
  columns: Record<string, ColumnSpec>,
  depth = 0,
  budget = { values: MAX_FILTER_VALUES },
): Where {
  if (!filter) return {};
  if (depth > MAX_FILTER_DEPTH) throw new ApiError('INVALID_QUERY', `filters nest at most ${MAX_FILTER_DEPTH} levels`);
  const conditions: Where[] = [];
  for (const [key, value] of Object.entries(filter)) {
    if (value === undefined || value === null) continue;
    if (key === 'and' || key === 'or') {
      const parts = (value as Record<string, unknown>[]).map((f) => filterWhere(f, columns, depth + 1, budget));
      conditions.push({ [key === 'and' ? 'AND' : 'OR']: parts });
    } else if (key === 'not') {
      conditions.push({ NOT: filterWhere(value as Record<string, unknown>, columns, depth + 1, budget) });
    } else {
      const spec = columns[key];
      if (!spec) throw new ApiError('INVALID_QUERY', `unknown filter field ${key}`);
      for (const operand of Object.values(value as FieldFilter)) budget.values -= Array.isArray(operand) ? operand.length : 1;
      if (budget.values < 0) throw new ApiError('INVALID_QUERY', `a filter compares against at most ${MAX_FILTER_VALUES} values`);
      conditions.push(...fieldConditions(spec, value as FieldFilter));
    }
  }
  return conditions.length === 1 ? (conditions[0] as Where) : { AND: conditions };
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
