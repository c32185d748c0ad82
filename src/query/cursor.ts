import { createHmac, hash, timingSafeEqual } from 'node:crypto';
import { ApiError } from '../errors.js';

// A list cursor: where the next page starts (the sort keys' values of the last row read) and how many rows
// came before it, bound to the question it pages through (the list, the caller's tenant, the filter, search
// and order) and signed with the server's key. A cursor is opaque to clients: they hand back what a page gave
// them. The signature makes a cursor that was not written by the server (edited, truncated, made up) a client
// error before any of its values reaches a statement; the binding makes one of another list, tenant, filter
// or order a client error too, so a cursor can never widen what the request itself may read.

/** A decoded cursor: the sort keys' values of the row the page starts after, and that row's position. */
export interface CursorPosition {
  values: unknown[];
  /** How many rows of the list come before the page (what `offset` would have said). */
  offset: number;
}

const VERSION = 1;
const MAC_BYTES = 16;
/** Longer than any cursor the server writes (five sort keys of bounded text): refused unread. */
const MAX_CURSOR_LENGTH = 8192;

/** What a cursor is bound to: a digest of the list's name, the tenant and the arguments that shape the list. */
export function cursorBinding(parts: unknown): string {
  return hash('sha256', JSON.stringify(parts), 'base64url').slice(0, 22);
}

function mac(key: Buffer, binding: string, payload: string): Buffer {
  return createHmac('sha256', key).update(binding).update('\0').update(payload).digest().subarray(0, MAC_BYTES);
}

/** The cursor of the page after a row: its sort keys' values, and how many rows precede the next page. */
export function encodeCursor(key: Buffer, binding: string, position: CursorPosition): string {
  const payload = Buffer.from(JSON.stringify([VERSION, position.offset, position.values])).toString('base64url');
  return `${payload}.${mac(key, binding, payload).toString('base64url')}`;
}

function invalid(reason: string): ApiError {
  return new ApiError(
    'INVALID_QUERY',
    `cursor is not valid: ${reason}; use the cursor a page of this same list gave (the Link rel="next" URL, or pageInfo.endCursor)`,
  );
}

/** A cursor this server wrote for the same list, or a 400 INVALID_QUERY that says why not. */
export function decodeCursor(key: Buffer, binding: string, cursor: string, keyCount: number): CursorPosition {
  if (cursor.length === 0 || cursor.length > MAX_CURSOR_LENGTH) throw invalid('it is empty or too long');
  const [payload, signature, extra] = cursor.split('.');
  if (!payload || !signature || extra !== undefined || !/^[\w-]+$/.test(payload) || !/^[\w-]+$/.test(signature)) {
    throw invalid('it is malformed');
  }
  const given = Buffer.from(signature, 'base64url');
  if (given.length !== MAC_BYTES || !timingSafeEqual(given, mac(key, binding, payload))) {
    throw invalid('it was altered, or belongs to another list, filter, search or order');
  }
  const [version, offset, values] = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as [unknown, unknown, unknown];
  if (
    version !== VERSION ||
    !Number.isSafeInteger(offset) ||
    (offset as number) < 0 ||
    !Array.isArray(values) ||
    values.length !== keyCount
  ) {
    throw invalid('it was written for another version of this list');
  }
  return { values, offset: offset as number };
}
