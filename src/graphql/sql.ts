import { type FieldNode, type GraphQLResolveInfo, Kind, type SelectionNode, type SelectionSetNode } from 'graphql';
import { ApiError } from '../errors.js';
import {
  type ColumnSpec,
  type FilterOperator,
  type FilterRenderer,
  type OrderInput,
  parseLikePattern,
  renderFilter,
  sqlLikePattern,
} from './filters.js';

// Hand-written SQL for the lists where Prisma's per-statement cost dominated the request (the sync history):
// the same filter walk as the Prisma `where` (filters.ts), rendered as SQL text with bind parameters. Column
// references are quoted and qualified as Prisma writes them (`"t0"."tenant_id"`), so statement checks (tenant
// scope, column pushdown) read both alike.

/** Bind parameters of one statement: `add` returns the placeholder (`$3`) for a value. */
export class SqlParams {
  readonly values: unknown[] = [];

  add(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }
}

const TRUE = 'TRUE';
const FALSE = 'FALSE';

/** SQL conditions; `params` collects the bind values as the filter is rendered. */
export function sqlRenderer(params: SqlParams): FilterRenderer<string> {
  return {
    all: (parts) => {
      const kept = parts.filter((part) => part !== TRUE);
      if (kept.length === 0) return TRUE;
      return kept.length === 1 ? kept[0]! : `(${kept.join(' AND ')})`;
    },
    any: (parts) => (parts.length === 0 ? FALSE : parts.length === 1 ? parts[0]! : `(${parts.join(' OR ')})`),
    not: (part) => `(NOT ${part})`,
    compare: (spec, operator, value) => compareSql(spec, operator, value, params),
  };
}

function compareSql(spec: ColumnSpec, operator: FilterOperator, value: unknown, params: SqlParams): string {
  const column = sqlColumn(spec);
  switch (operator) {
    case 'eq':
      return `${column} = ${params.add(value)}`;
    case 'neq':
      // `<>` is not true for a null: the SQL semantics the filter documents.
      return `${column} <> ${params.add(value)}`;
    case 'in':
      return `${column} = ANY(${params.add(arrayLiteral(value as unknown[]))}::${arrayType(spec)})`;
    case 'isNull':
      if (!spec.nullable) return value ? FALSE : TRUE;
      return value ? `${column} IS NULL` : `${column} IS NOT NULL`;
    case 'gt':
      return `${column} > ${params.add(value)}`;
    case 'lt':
      return `${column} < ${params.add(value)}`;
    case 'gte':
      return `${column} >= ${params.add(value)}`;
    case 'lte':
      return `${column} <= ${params.add(value)}`;
    case 'like':
    case 'ilike': {
      const like = parseLikePattern(String(value));
      if (like.anything) return `${column} IS NOT NULL`;
      const keyword = operator === 'ilike' ? 'ILIKE' : 'LIKE';
      // A case-sensitive exact match is plain equality, as in the Prisma rendering.
      if (!like.leading && !like.trailing && operator === 'like') return `${column} = ${params.add(like.text)}`;
      return `${column} ${keyword} ${params.add(sqlLikePattern(like))}`;
    }
    case 'contains':
      return `${column} ILIKE ${params.add(sqlLikePattern({ text: String(value), leading: true, trailing: true, anything: false }))}`;
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

function sqlColumn(spec: ColumnSpec): string {
  if (!spec.sql) throw new Error(`column ${spec.column} has no SQL name`);
  return spec.sql;
}

/** The array type of `= ANY($n::…)`, so PostgreSQL compares in the column's type and can use its index. */
function arrayType(spec: ColumnSpec): string {
  if (spec.sqlType) return `${spec.sqlType}[]`;
  switch (spec.kind) {
    case 'dateTime':
      return 'timestamptz[]';
    case 'boolean':
      return 'boolean[]';
    default:
      return 'text[]';
  }
}

/** A resource filter input as one SQL condition (`TRUE` when it has none). */
export function filterSql(filter: Record<string, unknown> | null | undefined, columns: Record<string, ColumnSpec>, params: SqlParams): string {
  return renderFilter(filter, columns, sqlRenderer(params));
}

/** ORDER BY items for order inputs, with the same tie-break on `id` and null placement as the Prisma lists. */
export function orderSql(order: readonly OrderInput[] | null | undefined, columns: Record<string, ColumnSpec>, fallback: OrderInput[]): string {
  const keys = order && order.length > 0 ? order : fallback;
  const items = keys.map(({ field, direction, nulls }) => {
    const spec = columns[field];
    if (!spec) throw new ApiError('INVALID_QUERY', `cannot order by ${field}`);
    const sort = direction === 'DESC' ? 'DESC' : 'ASC';
    if (!spec.nullable) return `${sqlColumn(spec)} ${sort}`;
    const nullsOrder = nulls ?? (sort === 'ASC' ? 'LAST' : 'FIRST');
    return `${sqlColumn(spec)} ${sort} NULLS ${nullsOrder}`;
  });
  if (keys.some((key) => columns[key.field]?.column === 'id')) return items.join(', ');
  const id = columns.id;
  if (!id) throw new Error('ordered columns need an id column for the tie-break');
  return [...items, `${sqlColumn(id)} ${keys[0]?.direction === 'DESC' ? 'DESC' : 'ASC'}`].join(', ');
}

/**
 * The names (not aliases) of the fields the operation selects at `path` below the current field, with
 * fragments expanded and @include/@skip applied: what the rows must carry. `null` when the path is not
 * selected at all.
 */
export function selectedFields(info: GraphQLResolveInfo, path: readonly string[]): Set<string> | null {
  let sets: SelectionSetNode[] = info.fieldNodes.flatMap((node) => (node.selectionSet ? [node.selectionSet] : []));
  for (const name of path) {
    sets = fieldsIn(sets, info)
      .filter((field) => field.name.value === name)
      .flatMap((field) => (field.selectionSet ? [field.selectionSet] : []));
    if (sets.length === 0) return null;
  }
  return new Set(fieldsIn(sets, info).map((field) => field.name.value));
}

function fieldsIn(sets: SelectionSetNode[], info: GraphQLResolveInfo): FieldNode[] {
  const fields: FieldNode[] = [];
  const visit = (set: SelectionSetNode) => {
    for (const selection of set.selections) {
      if (!included(selection, info)) continue;
      if (selection.kind === Kind.FIELD) fields.push(selection);
      else if (selection.kind === Kind.INLINE_FRAGMENT) visit(selection.selectionSet);
      else {
        const fragment = info.fragments[selection.name.value];
        if (fragment) visit(fragment.selectionSet);
      }
    }
  };
  for (const set of sets) visit(set);
  return fields;
}

/** graphql-js' own rule for @skip/@include, read straight off the (already validated and coerced) operation. */
function included(node: SelectionNode, info: GraphQLResolveInfo): boolean {
  for (const directive of node.directives ?? []) {
    const name = directive.name.value;
    if (name !== 'skip' && name !== 'include') continue;
    const condition = directive.arguments?.find((argument) => argument.name.value === 'if')?.value;
    const value =
      condition?.kind === Kind.VARIABLE ? info.variableValues[condition.name.value] : condition?.kind === Kind.BOOLEAN ? condition.value : undefined;
    if (value === (name === 'skip')) return false;
  }
  return true;
}
