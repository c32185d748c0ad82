import { ApiError } from '../errors.js';

/**
 * Controls (C0 and C1, among them U+009B, which terminals read as an escape sequence), format characters (invisible
 * or reordering: U+200B, U+202E, U+FEFF) and line/paragraph separators: a name that holds one prints as something else.
 */
const UNPRINTABLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;

/**
 * A name a person gave (a service user's, a token's), trimmed: 1 to `maxLength` characters, all printable, since
 * it is shown in listings, terminals and the activity log. INVALID_QUERY (400) otherwise, naming `what` it is.
 */
export function printableName(name: string, what: string, maxLength: number): string {
  const trimmed = typeof name === 'string' ? name.trim() : '';
  if (trimmed.length < 1 || trimmed.length > maxLength) {
    throw new ApiError('INVALID_QUERY', `${what} must be 1 to ${maxLength} characters long`);
  }
  if (UNPRINTABLE.test(trimmed)) {
    throw new ApiError(
      'INVALID_QUERY',
      `${what} must be printable: no control (C0, C1), format (zero-width, bidi override) or line/paragraph separator characters`,
    );
  }
  return trimmed;
}
