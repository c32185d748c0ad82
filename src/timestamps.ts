// Timestamps in and out, for both surfaces: REST's query-string values (src/rest/query-params.ts) and
// GraphQL's DateTime scalar (src/graphql/scalars.ts) parse with the one function here, so a value one
// surface refuses the other refuses too.

/** ISO 8601 with a numeric UTC offset (`2026-03-01T09:30:00.000+00:00`), as the spec's timestamps show. */
export function formatTimestamp(value: Date): string {
  // toISOString always ends in Z (UTC); slicing is cheaper than a regex on every timestamp of every row.
  return `${value.toISOString().slice(0, -1)}+00:00`;
}

/** A timestamp already written as formatTimestamp writes it, by PostgreSQL (timestampTextSql). */
export type TimestampText = string & { readonly __timestampText: unique symbol };

const TIMESTAMP_TEXT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}\+00:00$/;

export function isTimestampText(value: unknown): value is TimestampText {
  return typeof value === 'string' && TIMESTAMP_TEXT.test(value);
}

/**
 * SQL that reads a timestamptz(3) `column` (every timestamp of the schema keeps milliseconds) as
 * formatTimestamp would write it, in UTC. The hot lists read their timestamps so: no Date is parsed and
 * formatted again per value, a noticeable share of a nested page's CPU.
 */
export function timestampTextSql(column: string): string {
  return `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"+00:00"')`;
}

const TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(?:([Zz])|([+\- ])(\d{2}):?(\d{2})))?$/;

/**
 * Parses an ISO 8601 timestamp that carries `Z` or a numeric offset, or a bare date (midnight UTC). Returns null
 * when the text is not one, names a day or time that does not exist (`2027-02-31`, `24:00`), or falls outside
 * the years 0001–9999 once its offset is applied (PostgreSQL refuses year 0, which is 1 BC).
 */
export function parseTimestamp(text: string): Date | null {
  // A literal '+' in a query string decodes to a space, so `+02:00` typed unencoded arrives as ` 02:00`;
  // the space cannot mean anything else there, so it is read as '+'.
  const match = TIMESTAMP.exec(text);
  if (match === null) return null;
  const [, y, mo, d, h, mi, s, frac, , sign, oh, om] = match;
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return null;
  const hour = Number(h ?? '0');
  const minute = Number(mi ?? '0');
  const second = Number(s ?? '0');
  const millis = Number((frac ?? '').padEnd(3, '0').slice(0, 3));
  if (hour > 23 || minute > 59 || second > 59) return null;
  const offsetHours = Number(oh ?? '0');
  const offsetMinutes = Number(om ?? '0');
  if (offsetHours > 23 || offsetMinutes > 59) return null;
  const offset = (sign === '-' ? -1 : 1) * (offsetHours * 60 + offsetMinutes);

  // setUTCFullYear rather than Date.UTC, which maps years 0–99 onto 1900–1999.
  const local = new Date(0);
  local.setUTCFullYear(year, month - 1, day);
  local.setUTCHours(hour, minute, second, millis);
  const date = new Date(local.getTime() - offset * 60_000);
  const utcYear = date.getUTCFullYear();
  return utcYear < 1 || utcYear > 9999 ? null : date;
}

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31] as const;

function daysInMonth(year: number, month: number): number {
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  return month === 2 && leap ? 29 : (DAYS_IN_MONTH[month - 1] ?? 0);
}
