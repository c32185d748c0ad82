// A JSON request body as every surface reads it (REST, GraphQL over HTTP, sign-in and invitations): UTF-8 that is
// valid, since a malformed byte sequence decoded leniently becomes U+FFFD and would be stored as if the client
// had sent that character; JSON; and objects and arrays nested no deeper than a bound, since the code that walks
// a body (REST's member renaming, GraphQL's coercion) recurses once per level.

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * How deep objects and arrays may nest in a REST or sign-in body (the body itself is the first level): far beyond
 * any body the API takes, and far below what would exhaust the stack. GraphQL variables have their own bound
 * (src/admission/request-limits.ts), which a REST body, one level inside its operation's variables, never reaches.
 */
export const MAX_BODY_DEPTH = 32;

/** The text of UTF-8 bytes, or null when they are not valid UTF-8. */
export function decodeUtf8(bytes: Uint8Array): string | null {
  try {
    return UTF8.decode(bytes);
  } catch {
    return null;
  }
}

/** The JSON value of a body, or what is wrong with it (to be answered with 400 INVALID_QUERY). */
export function parseJsonBody(bytes: Uint8Array): { value: unknown } | { problem: string } {
  const text = decodeUtf8(bytes);
  if (text === null) return { problem: 'the body is not valid UTF-8' };
  if (text.trim() === '') return { problem: 'the body is empty; send a JSON object' };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { problem: 'the body is not valid JSON' };
  }
  if (nestsDeeper(value, MAX_BODY_DEPTH)) return { problem: `the body nests objects and arrays deeper than ${MAX_BODY_DEPTH} levels` };
  return { value };
}

/** Whether objects or arrays in `value` nest more than `max` levels deep; it looks no deeper than that. */
export function nestsDeeper(value: unknown, max: number): boolean {
  if (value === null || typeof value !== 'object') return false;
  if (max === 0) return true;
  return Object.values(value).some((member) => nestsDeeper(member, max - 1));
}

/**
 * Text PostgreSQL cannot store: a NUL (U+0000), or a lone UTF-16 surrogate (not well-formed UTF-16, so it has
 * no UTF-8 form). JSON can carry both ("\u0000", "\udfff"); a value holding one must be refused before it
 * reaches the database, which would fail the statement.
 */
export function isUnstorableText(text: string): boolean {
  return text.includes('\0') || LONE_SURROGATE.test(text);
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
