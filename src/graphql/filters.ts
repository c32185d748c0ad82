import type { EnumRef } from '@pothos/core';
import type { ColumnKind } from '../query/columns.js';
import { builder } from './builder.js';

// The GraphQL side of the list query language (query/filter.ts): filter and order inputs, generated from
// each resource's column table. Filter inputs mirror the spec's operators (eq, neq, in, is → isNull, gt, lt,
// gte, lte, like, ilike) so the REST facade maps `field=op.value` one to one. like/ilike take `*` as the
// wildcard, as the spec writes them.

const likeDescription = 'Case-sensitive pattern; `*` is the wildcard and may stand at the start and/or the end (`*sub*`, `pre*`, `*suf`).';
const ilikeDescription = 'As `like`, case-insensitive.';

const StringFilter = builder.inputType('StringFilter', {
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

const DateTimeFilter = builder.inputType('DateTimeFilter', {
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

const BooleanFilter = builder.inputType('BooleanFilter', {
  fields: (t) => ({
    eq: t.boolean(),
    neq: t.boolean(),
    isNull: t.boolean(),
  }),
});

type AnyEnumRef = EnumRef<typeof builder.$inferSchemaTypes, string, string>;

const enumFilters = new Map<string, ReturnType<typeof createEnumFilter>>();

function createEnumFilter(values: AnyEnumRef) {
  return builder.inputType(`${values.name}Filter`, {
    fields: (t) => ({
      eq: t.field({ type: values }),
      neq: t.field({ type: values }),
      in: t.field({ type: [values] }),
    }),
  });
}

/** `<Enum>Filter`: eq/neq/in over one GraphQL enum, one input type per enum however many columns use it. */
function enumFilter(values: AnyEnumRef) {
  let filter = enumFilters.get(values.name);
  if (!filter) {
    filter = createEnumFilter(values);
    enumFilters.set(values.name, filter);
  }
  return filter;
}

const SortDirection = builder.enumType('SortDirection', { values: ['ASC', 'DESC'] as const });
const NullsOrder = builder.enumType('NullsOrder', {
  values: ['FIRST', 'LAST'] as const,
  description: 'Where nulls sort. Default: last for ASC, first for DESC (PostgreSQL and PostgREST default).',
});

/** The filter input of each column kind; an enum column's comes from its enum (`enumFilter`). */
const FILTER_OF_KIND = { string: StringFilter, dateTime: DateTimeFilter, boolean: BooleanFilter } as const;

/**
 * A resource's filter input, generated from its column table: one member per column, typed by the column's
 * kind (an `enum` column by the enum in `enums` under its name), plus `and`, `or` and `not` over itself.
 */
export function resourceFilter(
  name: string,
  columns: Readonly<Record<string, { kind: ColumnKind }>>,
  enums: Readonly<Record<string, AnyEnumRef>> = {},
) {
  const ref = builder.inputRef<Record<string, unknown>>(name);
  const memberType = (field: string, kind: ColumnKind) => {
    if (kind !== 'enum') return FILTER_OF_KIND[kind];
    const values = enums[field];
    if (!values) throw new Error(`${name}: enum column ${field} needs its enum type`);
    return enumFilter(values);
  };
  ref.implement({
    description: 'Conditions are combined with AND; use `or` and `not` for other combinations.',
    fields: (t) => ({
      ...Object.fromEntries(Object.entries(columns).map(([field, { kind }]) => [field, t.field({ type: memberType(field, kind) })])),
      and: t.field({ type: [ref] }),
      or: t.field({ type: [ref] }),
      not: t.field({ type: ref }),
    }),
  });
  return ref;
}

/** `<Resource>Order { field, direction, nulls }`, `field` an enum of the resource's columns. */
export function resourceOrder(name: string, columns: Readonly<Record<string, unknown>>) {
  const values = Object.fromEntries(Object.keys(columns).map((field) => [field, { value: field }]));
  const field = builder.enumType(`${name}Field`, { values });
  return builder.inputType(name, {
    fields: (t) => ({
      field: t.field({ type: field, required: true }),
      direction: t.field({ type: SortDirection, defaultValue: 'ASC' }),
      nulls: t.field({ type: NullsOrder }),
    }),
  });
}
