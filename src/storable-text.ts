/**
 * Text PostgreSQL cannot store: a NUL (U+0000), or a lone UTF-16 surrogate (not well-formed UTF-16, so it has
 * no UTF-8 form). JSON can carry both ("\u0000", "\udfff"); a value holding one must be refused before it
 * reaches the database, which would fail the statement.
 */
export function isUnstorableText(text: string): boolean {
  return text.includes('\0') || LONE_SURROGATE.test(text);
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
