import { MAX_ID_LENGTH } from '../prefixed-ids.js';
import { TEXT_LIMITS } from '../query/filter.js';
import type { JsonSchema, RestField } from './compile-routes.js';
import { FILTER_OPERATORS, type FieldSpec, OPERATORS_BY_TYPE, QUERY_LIMITS } from './query-params.js';

// The query-string grammar (src/rest/query-params.ts) as JSON Schema patterns, so that what the OpenAPI
// document allows is what the parser accepts: a client or a property tester that follows the document is
// never refused. Where a regular expression cannot say exactly what the parser accepts, the pattern is the
// stricter of the two (dates up to the 28th, years 1000–9899, 9-digit integers), never the looser.

/** No NUL anywhere: PostgreSQL text cannot hold it, so every value with one is refused. */
const CHAR = '[^\\u0000]';

const YEAR = '(?:1\\d|[2-8]\\d|9[0-8])\\d{2}';
const DATE = `${YEAR}-(?:0[1-9]|1[0-2])-(?:0[1-9]|1\\d|2[0-8])`;
const TIME = '(?:[01]\\d|2[0-3]):[0-5]\\d(?::[0-5]\\d(?:\\.\\d{1,9})?)?';
const OFFSET = '(?:Z|[+-](?:[01]\\d|2[0-3]):?[0-5]\\d)';
const TIMESTAMP = `${DATE}(?:T${TIME}${OFFSET})?`;
/** A quoted `in` member: `"…"` with `\"` and `\\` as the only escapes. */
const QUOTED_MEMBER = '"(?:[^"\\\\\\u0000]|\\\\["\\\\])*"';

function alternatives(values: readonly string[]): string {
  return `(?:${values.map(escapeRegExp).join('|')})`;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** One value of a field's type, as the parser coerces it; null when the type takes no scalar value. */
function scalarPattern(spec: FieldSpec): string | null {
  switch (spec.type) {
    case 'string':
      return `${CHAR}*`;
    case 'int':
      return '-?\\d{1,9}';
    case 'boolean':
      return '(?:true|false)';
    case 'timestamp':
      return TIMESTAMP;
    case 'enum':
      return alternatives(spec.enumValues ?? []);
    case 'string_array':
    case 'json':
      return null;
  }
}

/** An `in.(…)` member of a field's type: any scalar unquoted (no `,()"`), strings also quoted. */
function memberPattern(spec: FieldSpec): string {
  if (spec.type === 'string') return `(?:${QUOTED_MEMBER}|[^,()"\\u0000]+)`;
  return scalarPattern(spec) ?? '(?!)';
}

/** `field=[not.]operator.value` for one filterable field, with the operators and values its type takes. */
export function filterSchema(field: RestField): JsonSchema {
  const { spec } = field;
  const operators = OPERATORS_BY_TYPE[spec.type];
  const scalar = scalarPattern(spec);
  const forms: string[] = [];
  const compared = operators.filter((op) => !['in', 'is', 'like', 'ilike'].includes(op));
  if (scalar !== null && compared.length > 0) forms.push(`${alternatives(compared)}\\.${scalar}`);
  if (operators.includes('in')) {
    const member = memberPattern(spec);
    forms.push(`in\\.\\((?:${member}(?:,${member}){0,${QUERY_LIMITS.maxInMembers - 1}})?\\)`);
  }
  if (operators.includes('is')) {
    const words = [...(spec.nullable ? ['null', 'not_null'] : []), ...(spec.type === 'boolean' ? ['true', 'false'] : [])];
    if (words.length > 0) forms.push(`is\\.${alternatives(words)}`);
  }
  // `*` stands at the start and/or the end of a pattern, never between characters.
  if (operators.includes('like')) forms.push('i?like\\.\\*?[^*\\u0000]*\\*?');
  return {
    type: 'string',
    maxLength: QUERY_LIMITS.maxValueLength,
    pattern: `^(?:not\\.)?(?:${forms.join('|')})$`,
  };
}

/**
 * An endpoint parameter's own (plain) value: an exact id, or a name fragment (dots and all: `Shop.com`). Only a
 * value that starts like a filter (`eq.…`, `not.ilike.…`) is read as one instead; filter forms cover those.
 */
export function plainParamSchema(kind: 'id' | 'text'): JsonSchema {
  const pattern = `^(?!(?:not\\.)?${alternatives(FILTER_OPERATORS)}\\.)${CHAR}*$`;
  return { type: 'string', maxLength: kind === 'id' ? MAX_ID_LENGTH : QUERY_LIMITS.maxValueLength, pattern };
}

/** `select=a,b`: known fields, commas between, spaces around names allowed; a field named twice counts once. */
export function selectSchema(fieldNames: readonly string[]): JsonSchema {
  const name = ` *${alternatives(fieldNames)} *`;
  return { type: 'string', maxLength: QUERY_LIMITS.maxValueLength, pattern: `^${name}(?:,${name})*$` };
}

/**
 * `order=key,key`: up to five sort keys `field[.asc|.desc][.nullsfirst|.nullslast]` over the sortable fields,
 * each field at most once (the lookahead refuses a field that comes back later).
 */
export function orderSchema(sortable: readonly string[]): JsonSchema {
  const field = alternatives(sortable);
  const key = `${field}(?:\\.(?:asc|desc))?(?:\\.(?:nullsfirst|nullslast))?`;
  const repeated = `(?!(?:[^,]*,)*(${field})(?:\\.[a-z]+)*,(?:[^,]*,)*\\1(?:\\.[a-z]+)*(?:,|$))`;
  return { type: 'string', pattern: `^${repeated}${key}(?:,${key}){0,${QUERY_LIMITS.maxOrderKeys - 1}}$` };
}

/** A keyword with at least one non-space character, at most the search cap. */
export const SEARCH_SCHEMA: JsonSchema = {
  type: 'string',
  minLength: 1,
  maxLength: TEXT_LIMITS.maxSearchLength,
  pattern: '^[^\\u0000]*[^\\s\\u0000][^\\u0000]*$',
};

/**
 * Any string names an item or nothing (404); only NUL and over-long strings cannot be ids (400). `.` and `..`
 * are path segments, not ids: a URL normalises them away.
 */
export const PATH_ID_SCHEMA: JsonSchema = { type: 'string', minLength: 1, maxLength: MAX_ID_LENGTH, pattern: '^(?!\\.{1,2}$)[^\\u0000]+$' };

/** The largest page that starts within the maximum offset at every page size. */
export function maxPage({ maxLimit, maxOffset }: { maxLimit: number; maxOffset: number }): number {
  return Math.floor(maxOffset / maxLimit) + 1;
}
