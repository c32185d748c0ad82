// Grammar of a REST list request's query string: horizontal filters, select,
// search, order and pagination. PostgREST is the model wherever the spec is
// silent. Pure: no I/O and no GraphQL, so it is tested as a plain function.

import { TEXT_LIMITS } from '../query/filter.js';
import { clip } from '../errors.js';

export type FieldType = 'string' | 'int' | 'boolean' | 'timestamp' | 'enum' | 'string_array' | 'json';

export interface FieldSpec {
  type: FieldType;
  /** Defaults to true; string_array and json fields are never filterable. */
  filterable?: boolean;
  /** Defaults to true, except for string_array and json fields. */
  sortable?: boolean;
  enumValues?: readonly string[];
  nullable?: boolean;
  /**
   * The GraphQL input type's own coercion of a filter value (the filter member's scalar or enum, attached by
   * compile-routes): it returns the value or throws when it refuses it. The grammar reads the text into the
   * variable's JSON form (a boolean for `true`, an integer for digits, the text otherwise) and lets this
   * decide, so REST accepts exactly what the GraphQL surface accepts. A field without it cannot be compared.
   */
  parseValue?: (input: VariableValue) => unknown;
}

export interface ResourceSpec {
  /** REST field names (snake_case) → spec. These are also the names `select` accepts. */
  fields: Record<string, FieldSpec>;
  /** Query parameters with their own meaning on this endpoint (e.g. connection_id, category_id, name, limit, offset, page); they are not filters. */
  reserved: readonly string[];
  /** The GraphQL field's page bounds (rest/compile-routes.ts reads them off its `limit` argument). */
  maxLimit: number;
  defaultLimit: number;
  maxOffset: number;
}

export const FILTER_OPERATORS = ['eq', 'neq', 'in', 'is', 'gt', 'lt', 'gte', 'lte', 'like', 'ilike'] as const;
type FilterOperator = (typeof FILTER_OPERATORS)[number];

/** A filter value as the operation variable carries it (JSON), which the schema's scalars then coerce. */
type VariableValue = string | number | boolean;
/** `is.null` → null, `is.not_null` → 'not_null', `is.true`/`is.false` → boolean. */
type IsValue = null | 'not_null' | boolean;

interface ConditionBase {
  field: string;
  negated: boolean;
  /** The value exactly as written after `op.`. */
  raw: string;
}

/** A compared value: as the operation variable carries it, and as the field's GraphQL type coerced it. */
interface ComparedValue {
  input: VariableValue;
  value: unknown;
}

export type FilterCondition =
  | (ConditionBase & { operator: 'eq' | 'neq' | 'gt' | 'lt' | 'gte' | 'lte' } & ComparedValue)
  | (ConditionBase & { operator: 'in'; input: VariableValue[]; value: unknown[] })
  | (ConditionBase & { operator: 'is'; value: IsValue })
  | (ConditionBase & {
      operator: 'like' | 'ilike';
      /** The pattern keeps the caller's `*` wildcards; the GraphQL layer translates them. */
      value: string;
    });

interface OrderKey {
  field: string;
  direction: 'asc' | 'desc';
  nulls: 'first' | 'last';
}

export interface ListQuery {
  filters: FilterCondition[];
  select: string[] | null;
  search: string | null;
  order: OrderKey[];
  limit: number;
  offset: number;
  page: number;
  /** `cursor`: the page after the row it names (a Link rel="next" URL's), instead of offset/page. */
  cursor: string | null;
  paginationRequested: boolean;
  /** Raw values of the resource's reserved parameters, e.g. connection_id. */
  reserved: Record<string, string>;
}

export interface QueryProblem {
  parameter: string;
  message: string;
}

type ParseResult = { ok: true; query: ListQuery } | { ok: false; problems: QueryProblem[] };

/** Bounds that keep the work done on hostile input small. */
export const QUERY_LIMITS = {
  maxValueLength: TEXT_LIMITS.maxValueLength,
  maxFilters: 50,
  maxInMembers: 500,
  maxSearchLength: TEXT_LIMITS.maxSearchLength,
  maxOrderKeys: 5,
  maxProblems: 50,
} as const;

const CONTROL_PARAMS: ReadonlySet<string> = new Set(['select', 'search', 'order', 'limit', 'offset', 'page', 'cursor']);

const COMPARISONS: readonly FilterOperator[] = ['eq', 'neq', 'in', 'is', 'gt', 'lt', 'gte', 'lte'];
export const OPERATORS_BY_TYPE: Record<FieldType, readonly FilterOperator[]> = {
  string: [...COMPARISONS, 'like', 'ilike'],
  int: COMPARISONS,
  timestamp: COMPARISONS,
  // Ordering booleans or enum labels has no meaning a caller could rely on.
  boolean: ['eq', 'neq', 'is'],
  enum: ['eq', 'neq', 'in', 'is'],
  string_array: [],
  json: [],
};

const INT32_MIN = -2_147_483_648;
const INT32_MAX = 2_147_483_647;

/** Parses a list request's query string against the resource's fields; reports every problem found. */
export function parseListQuery(params: URLSearchParams, resource: ResourceSpec): ParseResult {
  const problems = new ProblemList();
  const filters: FilterCondition[] = [];
  const reserved: Record<string, string> = {};
  const reservedNames = new Set(resource.reserved);
  const seenSingle = new Set<string>();
  const duplicateReported = new Set<string>();
  let select: string[] | null = null;
  let search: string | null = null;
  let order: OrderKey[] = [];
  const paging: { limit?: string; offset?: string; page?: string; cursor?: string } = {};
  let filterCount = 0;

  for (const [name, value] of params) {
    if (problems.full) break;
    const isControl = CONTROL_PARAMS.has(name);
    if (isControl || reservedNames.has(name)) {
      if (seenSingle.has(name)) {
        if (!duplicateReported.has(name)) {
          duplicateReported.add(name);
          problems.add(name, `'${name}' may be given only once`);
        }
        continue;
      }
      seenSingle.add(name);
    }
    if (value.length > QUERY_LIMITS.maxValueLength) {
      problems.add(name, `value of '${clip(name, 64)}' is longer than ${QUERY_LIMITS.maxValueLength} characters`);
      continue;
    }

    switch (name) {
      case 'select':
        select = parseSelect(value, resource, problems);
        continue;
      case 'search':
        search = parseSearch(value, problems);
        continue;
      case 'order':
        order = parseOrder(value, resource, problems);
        continue;
      case 'limit':
      case 'offset':
      case 'page':
      case 'cursor':
        paging[name] = value;
        continue;
    }

    if (reservedNames.has(name)) {
      reserved[name] = value;
      continue;
    }
    const spec = Object.hasOwn(resource.fields, name) ? resource.fields[name] : undefined;
    if (spec === undefined) {
      problems.add(name, unknownFieldMessage(name, resource));
      continue;
    }
    filterCount += 1;
    if (filterCount > QUERY_LIMITS.maxFilters) {
      if (filterCount === QUERY_LIMITS.maxFilters + 1) {
        problems.add(name, `too many filter conditions (at most ${QUERY_LIMITS.maxFilters})`);
      }
      continue;
    }
    const parsed = parseCondition(name, spec, value);
    if (Array.isArray(parsed)) {
      for (const message of parsed) problems.add(name, message);
    } else {
      filters.push(parsed);
    }
  }

  const pagination = parsePagination(paging, resource, problems);
  if (!problems.empty) return { ok: false, problems: problems.list };
  return { ok: true, query: { filters, select, search, order, ...pagination, reserved } };
}

/** The spec's meta.filters echo: operator carries the `not.` prefix, value is the raw text. */
export function describeFilters(filters: FilterCondition[]): Array<{ field: string; operator: string; value: string }> {
  return filters.map((f) => ({ field: f.field, operator: (f.negated ? 'not.' : '') + f.operator, value: f.raw }));
}

/** The spec's meta.order echo, with the effective nulls placement. */
export function describeOrder(order: OrderKey[]): Array<{ field: string; direction: string; nulls: string }> {
  return order.map((k) => ({ field: k.field, direction: k.direction, nulls: k.nulls }));
}

/**
 * Parses the text after `in.`, e.g. `(a,"b,c",d)`. Members are not trimmed (as in PostgREST);
 * a double-quoted member may hold commas, parentheses and spaces, with `\"` and `\\` escapes.
 */
export function parseInList(raw: string): string[] | { error: string } {
  if (raw.length > QUERY_LIMITS.maxValueLength) {
    return { error: `list is longer than ${QUERY_LIMITS.maxValueLength} characters` };
  }
  if (raw.charAt(0) !== '(') return { error: "expected '(' after 'in.'" };
  if (raw === '()') return [];

  const members: string[] = [];
  let i = 1;
  for (;;) {
    if (members.length === QUERY_LIMITS.maxInMembers) {
      return { error: `more than ${QUERY_LIMITS.maxInMembers} members` };
    }
    let member = '';
    if (raw.charAt(i) === '"') {
      i += 1;
      for (;;) {
        if (i >= raw.length) return { error: 'unterminated quoted member' };
        const ch = raw.charAt(i);
        if (ch === '"') {
          i += 1;
          break;
        }
        if (ch === '\\') {
          const next = raw.charAt(i + 1);
          if (next === '') return { error: 'unterminated quoted member' };
          // Only two escapes exist, so a stray backslash (a Windows path, say) is flagged instead of silently eaten.
          if (next !== '"' && next !== '\\') {
            return { error: `unsupported escape '\\${next}' in a quoted member (only \\" and \\\\ are allowed)` };
          }
          member += next;
          i += 2;
          continue;
        }
        member += ch;
        i += 1;
      }
      const after = raw.charAt(i);
      if (after === '') return { error: "missing closing ')'" };
      if (after !== ',' && after !== ')') {
        return { error: `unexpected '${after}' after a quoted member; expected ',' or ')'` };
      }
    } else {
      const start = i;
      for (; i < raw.length; i += 1) {
        const ch = raw.charAt(i);
        if (ch === ',' || ch === ')') break;
        if (ch === '"') return { error: "unexpected '\"' inside an unquoted member; quote the whole member" };
        if (ch === '(') return { error: "unexpected '(' inside an unquoted member; quote members that contain parentheses" };
      }
      if (i >= raw.length) return { error: "missing closing ')'" };
      member = raw.slice(start, i);
    }
    members.push(member);
    if (raw.charAt(i) === ')') {
      if (i !== raw.length - 1) return { error: "unexpected text after the closing ')'" };
      return members;
    }
    i += 1;
  }
}

class ProblemList {
  readonly list: QueryProblem[] = [];
  full = false;

  get empty(): boolean {
    return this.list.length === 0;
  }

  add(parameter: string, message: string): void {
    if (this.full) return;
    if (this.list.length === QUERY_LIMITS.maxProblems) {
      this.full = true;
      this.list.push({ parameter: '*', message: `too many problems; only the first ${QUERY_LIMITS.maxProblems} are reported` });
      return;
    }
    this.list.push({ parameter: clip(parameter, 128), message });
  }
}

function parseCondition(field: string, spec: FieldSpec, text: string): FilterCondition | string[] {
  const allowed = OPERATORS_BY_TYPE[spec.type];
  if (spec.filterable === false || allowed.length === 0) {
    const hint = spec.type === 'string_array' ? '; use search' : '';
    return [`field '${field}' cannot be filtered${hint}`];
  }
  let rest = text;
  let negated = false;
  if (rest.startsWith('not.')) {
    negated = true;
    rest = rest.slice(4);
  }
  const dot = rest.indexOf('.');
  const opText = dot === -1 ? rest : rest.slice(0, dot);
  if (opText === '' || opText === 'not') {
    if (negated && opText === 'not') return [`'not.' may appear only once in '${field}'`];
    if (negated || opText === 'not') return [`expected an operator after 'not.' in '${field}' (e.g. ${field}=not.eq.value)`];
    return [`expected 'operator.value' in '${field}' (e.g. ${field}=eq.value)`];
  }
  if (!isOperator(opText)) {
    return [`unknown operator ${quote(opText)} in '${field}'; expected one of ${FILTER_OPERATORS.join(', ')}`];
  }
  if (dot === -1) return [`expected '.' after operator '${opText}' in '${field}' (e.g. ${field}=${opText}.value)`];
  const operator = opText;
  const raw = rest.slice(dot + 1);

  if (!allowed.includes(operator)) {
    return [`operator '${operator}' is not supported on ${spec.type} field '${field}'; supported: ${allowed.join(', ')}`];
  }

  switch (operator) {
    case 'is': {
      const word = raw.toLowerCase();
      if (word === 'null' || word === 'not_null') {
        if (spec.nullable !== true) return [`field '${field}' is not nullable, so 'is.${word}' does not apply`];
        return { field, operator, negated, raw, value: word === 'null' ? null : 'not_null' };
      }
      if (word === 'true' || word === 'false') {
        if (spec.type !== 'boolean') return [`'is.${word}' applies only to boolean fields; '${field}' is ${spec.type}`];
        return { field, operator, negated, raw, value: word === 'true' };
      }
      return [`expected null, not_null, true or false after 'is.' in '${field}', got ${quote(raw)}`];
    }
    case 'in': {
      const members = parseInList(raw);
      if (!Array.isArray(members)) return [`malformed list in '${field}=in.': ${members.error}`];
      const inputs: VariableValue[] = [];
      const values: unknown[] = [];
      const errors: string[] = [];
      for (const member of members) {
        const compared = comparedValue(member, spec);
        if (compared === undefined) errors.push(`expected ${expectation(spec)} in '${field}=in.(…)', got ${quote(member)}`);
        else {
          inputs.push(compared.input);
          values.push(compared.value);
        }
      }
      return errors.length > 0 ? errors : { field, operator, negated, raw, input: inputs, value: values };
    }
    case 'like':
    case 'ilike':
      return { field, operator, negated, raw, value: raw };
    default: {
      const compared = comparedValue(raw, spec);
      if (compared === undefined) return [`expected ${expectation(spec)} after '${operator}.' in '${field}', got ${quote(raw)}`];
      return { field, operator, negated, raw, ...compared };
    }
  }
}

/** The text after `op.` read into the variable's JSON form and coerced by the field's GraphQL type; undefined when refused. */
function comparedValue(text: string, spec: FieldSpec): ComparedValue | undefined {
  const input =
    spec.type === 'boolean'
      ? text === 'true'
        ? true
        : text === 'false'
          ? false
          : undefined
      : spec.type === 'int'
        ? parseInt32(text)
        : text;
  if (input === undefined || !spec.parseValue) return undefined;
  try {
    const value = spec.parseValue(input);
    return value === undefined ? undefined : { input, value };
  } catch {
    return undefined;
  }
}

function expectation(spec: FieldSpec): string {
  switch (spec.type) {
    case 'int':
      return 'a 32-bit integer';
    case 'boolean':
      return 'true or false';
    case 'timestamp':
      return 'an ISO 8601 timestamp with Z or a UTC offset (e.g. 2026-01-01T00:00:00Z) or a date (2026-01-01)';
    case 'enum':
      return `one of ${(spec.enumValues ?? []).join(', ')}`;
    default:
      return 'a value';
  }
}

function parseInt32(text: string): number | undefined {
  if (!/^-?\d{1,10}$/.test(text)) return undefined;
  const n = Number(text);
  if (n < INT32_MIN || n > INT32_MAX) return undefined;
  return n === 0 ? 0 : n; // folds -0
}

function parseSelect(text: string, resource: ResourceSpec, problems: ProblemList): string[] | null {
  if (text.trim() === '') {
    problems.add('select', 'select must name at least one field');
    return null;
  }
  const names: string[] = [];
  for (const part of text.split(',')) {
    const name = part.trim();
    if (name === '') {
      problems.add('select', 'select contains an empty field name');
    } else if (!Object.hasOwn(resource.fields, name)) {
      problems.add('select', `unknown field ${quote(name)} in select; known fields: ${Object.keys(resource.fields).join(', ')}`);
    } else if (!names.includes(name)) {
      names.push(name);
    }
  }
  return names;
}

function parseSearch(text: string, problems: ProblemList): string | null {
  const keyword = text.trim();
  if (keyword === '') {
    problems.add('search', 'search must not be empty');
    return null;
  }
  if ([...keyword].length > QUERY_LIMITS.maxSearchLength) {
    problems.add('search', `search is longer than ${QUERY_LIMITS.maxSearchLength} characters`);
    return null;
  }
  return keyword;
}

function parseOrder(text: string, resource: ResourceSpec, problems: ProblemList): OrderKey[] {
  const parts = text.split(',');
  if (parts.length > QUERY_LIMITS.maxOrderKeys) {
    problems.add('order', `order has ${parts.length} keys; at most ${QUERY_LIMITS.maxOrderKeys} are allowed`);
    return [];
  }
  const keys: OrderKey[] = [];
  for (const part of parts) {
    const key = part.trim();
    if (key === '') {
      problems.add('order', 'order contains an empty sort key');
      continue;
    }
    const tokens = key.split('.');
    const field = tokens[0] ?? '';
    const spec = Object.hasOwn(resource.fields, field) ? resource.fields[field] : undefined;
    if (spec === undefined) {
      problems.add('order', `unknown field ${quote(field)} in order`);
      continue;
    }
    if (!isSortable(spec)) {
      problems.add('order', `field '${field}' cannot be sorted`);
      continue;
    }
    let next = 1;
    let direction: OrderKey['direction'] = 'asc';
    if (tokens[next] === 'asc' || tokens[next] === 'desc') {
      direction = tokens[next] as OrderKey['direction'];
      next += 1;
    }
    // PostgREST's default: NULL sorts as the largest value.
    let nulls: OrderKey['nulls'] = direction === 'asc' ? 'last' : 'first';
    if (tokens[next] === 'nullsfirst' || tokens[next] === 'nullslast') {
      nulls = tokens[next] === 'nullsfirst' ? 'first' : 'last';
      next += 1;
    }
    if (next < tokens.length) {
      problems.add(
        'order',
        `unexpected ${quote(tokens[next] ?? '')} in sort key ${quote(key)}; expected field[.asc|.desc][.nullsfirst|.nullslast]`,
      );
      continue;
    }
    if (keys.some((k) => k.field === field)) {
      problems.add('order', `field '${field}' appears more than once in order`);
      continue;
    }
    keys.push({ field, direction, nulls });
  }
  return keys;
}

function isSortable(spec: FieldSpec): boolean {
  return spec.sortable ?? (spec.type !== 'string_array' && spec.type !== 'json');
}

function parsePagination(
  paging: { limit?: string; offset?: string; page?: string; cursor?: string },
  resource: ResourceSpec,
  problems: ProblemList,
): Pick<ListQuery, 'limit' | 'offset' | 'page' | 'cursor' | 'paginationRequested'> {
  const paginationRequested =
    paging.limit !== undefined || paging.offset !== undefined || paging.page !== undefined || paging.cursor !== undefined;
  // The cursor's own checks (signature, list, filters) are the GraphQL field's; here only its exclusivity.
  const cursor = paging.cursor ?? null;
  if (cursor !== null && (paging.offset !== undefined || paging.page !== undefined)) {
    problems.add(
      'cursor',
      `cursor and ${paging.offset !== undefined ? 'offset' : 'page'} cannot be combined; a cursor names where its page starts`,
    );
  } else if (cursor === '') {
    problems.add('cursor', 'cursor is not valid: it is empty; use the cursor of a Link rel="next" URL');
  }
  let limit = resource.defaultLimit;
  if (paging.limit !== undefined) {
    const n = parseBoundedCount(paging.limit, 1, resource.maxLimit);
    if (n === undefined) problems.add('limit', `limit must be an integer from 1 to ${resource.maxLimit}, got ${quote(paging.limit)}`);
    else limit = n;
  }
  let offset = 0;
  let page = 1;
  if (paging.offset !== undefined && paging.page !== undefined) {
    problems.add('page', 'offset and page cannot be combined; give one of them');
  } else if (paging.offset !== undefined) {
    const n = parseBoundedCount(paging.offset, 0, resource.maxOffset);
    if (n === undefined) {
      problems.add('offset', `offset must be an integer from 0 to ${resource.maxOffset}, got ${quote(paging.offset)}; ${DEEPER}`);
    } else {
      offset = n;
      page = Math.floor(offset / limit) + 1;
    }
  } else if (paging.page !== undefined) {
    const n = parseBoundedCount(paging.page, 1, resource.maxOffset + 1);
    if (n === undefined) {
      problems.add('page', `page must be an integer of at least 1, got ${quote(paging.page)}`);
    } else if ((n - 1) * limit > resource.maxOffset) {
      problems.add('page', `page ${n} with limit ${limit} starts beyond the maximum offset ${resource.maxOffset}; ${DEEPER}`);
    } else {
      page = n;
      offset = (n - 1) * limit;
    }
  }
  return { limit, offset, page, cursor, paginationRequested };
}

/** What a page past the offset limit is told: the Link rel="next" cursors reach every row, at any depth. */
const DEEPER = 'to page deeper, follow the Link rel="next" URL of each page (cursor pages reach every row)';

function parseBoundedCount(text: string, min: number, max: number): number | undefined {
  // The length check keeps Number() exact; anything this long is out of range anyway.
  if (!/^\d+$/.test(text) || text.length > 15) return undefined;
  const n = Number(text);
  return n >= min && n <= max ? n : undefined;
}

function unknownFieldMessage(name: string, resource: ResourceSpec): string {
  if (name === '') return 'empty parameter name';
  const filterable = Object.entries(resource.fields)
    .filter(([, spec]) => spec.filterable !== false && OPERATORS_BY_TYPE[spec.type].length > 0)
    .map(([field]) => field);
  return `unknown field ${quote(name)}; filterable fields: ${filterable.join(', ')}`;
}

function isOperator(text: string): text is FilterOperator {
  return (FILTER_OPERATORS as readonly string[]).includes(text);
}

function quote(text: string): string {
  return `'${clip(text, 64)}'`;
}

const FILTER_FORM = new RegExp(`^(?:not\\.)?(?:${FILTER_OPERATORS.join('|')})\\.`);

/**
 * An endpoint parameter that is also a field (`name`, `connection_id`) is a filter when every value it is
 * given is in `op.value` form, and the endpoint's own parameter otherwise.
 */
export function withFilterFormParams(resource: ResourceSpec, params: URLSearchParams): ResourceSpec {
  const filterForm = resource.reserved.filter(
    (name) => Object.hasOwn(resource.fields, name) && params.has(name) && params.getAll(name).every((v) => FILTER_FORM.test(v)),
  );
  if (filterForm.length === 0) return resource;
  return { ...resource, reserved: resource.reserved.filter((name) => !filterForm.includes(name)) };
}
