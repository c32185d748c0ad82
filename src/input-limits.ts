/**
 * Caps on text a caller sends, the same on both surfaces: REST's query-string parser (src/rest/query-params.ts)
 * and GraphQL's filter and search arguments (src/graphql/filters.ts) both read them from here.
 */
export const TEXT_LIMITS = {
  /** One compared value: an `eq`/`like`/`ilike`/… operand or one `in` member (REST: a parameter's whole value). */
  maxValueLength: 4096,
  /** A `search` keyword, in characters (code points). */
  maxSearchLength: 200,
} as const;
