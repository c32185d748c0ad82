import type { CompiledRoute, RestField } from './compile-routes.js';
import type { FilterCondition, ListQuery } from './query-params.js';
import type { ListSpec } from './routes.js';

// How a parsed REST list request becomes the operation's variables. The filter inputs mirror the grammar's
// operators one to one, so this is a renaming, not a second interpretation of the query.

type FilterInput = Record<string, unknown>;

/** Variables of a list operation: filter, search, order, window, endpoint parameters and `$with_<field>` flags. */
export function listVariables(route: CompiledRoute, list: ListSpec, query: ListQuery): Record<string, unknown> {
  const byName = fieldsByName(route);
  const variables: Record<string, unknown> = {
    filter: filterInput(query.filters, byName),
    search: query.search,
    orderBy:
      query.order.length > 0
        ? query.order.map((key) => ({
            field: byName.get(key.field)?.orderValue,
            direction: key.direction === 'desc' ? 'DESC' : 'ASC',
            nulls: key.nulls === 'first' ? 'FIRST' : 'LAST',
          }))
        : null,
    limit: query.limit,
    offset: query.cursor === null ? query.offset : null,
    after: query.cursor,
  };
  for (const [param, raw] of Object.entries(query.reserved)) {
    const endpointParam = list.params[param];
    if (endpointParam) variables[endpointParam.variable] = raw;
  }
  const selected = query.select === null ? null : new Set(query.select);
  for (const field of route.fields) variables[`with_${field.name}`] = selected === null || selected.has(field.name);
  return variables;
}

const fieldMaps = new WeakMap<CompiledRoute, ReadonlyMap<string, RestField>>();

/** A route's fields by name, built once per route. */
function fieldsByName(route: CompiledRoute): ReadonlyMap<string, RestField> {
  let byName = fieldMaps.get(route);
  if (!byName) {
    byName = new Map(route.fields.map((field) => [field.name, field]));
    fieldMaps.set(route, byName);
  }
  return byName;
}

/** `[a, b]` → `{and: [a, b]}`; a `not.` condition is wrapped in `{not: …}`. */
function filterInput(conditions: FilterCondition[], fields: ReadonlyMap<string, RestField>): FilterInput | null {
  const parts = conditions.map((condition) => {
    const key = fields.get(condition.field)?.filterKey;
    // The grammar only accepts filterable fields, so a missing key is a bug in the route's derivation.
    if (!key) throw new Error(`field ${condition.field} has no filter input member`);
    const input = { [key]: operatorInput(condition) };
    return condition.negated ? { not: input } : input;
  });
  if (parts.length === 0) return null;
  return parts.length === 1 ? (parts[0] ?? null) : { and: parts };
}

function operatorInput(condition: FilterCondition): Record<string, unknown> {
  switch (condition.operator) {
    case 'is':
      if (condition.value === null) return { isNull: true };
      if (condition.value === 'not_null') return { isNull: false };
      return { eq: condition.value };
    case 'like':
    case 'ilike':
      return { [condition.operator]: condition.value };
    default:
      // The value as the caller wrote it; the schema's scalars coerce it, as they checked it (query-params.ts).
      return { [condition.operator]: condition.input };
  }
}
