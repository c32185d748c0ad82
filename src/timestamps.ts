// Timestamps in and out, for both surfaces: REST's query-string values (src/rest/query-params.ts) and
// GraphQL's DateTime scalar (src/graphql/scalars.ts) parse with the one function here, so a value one
// surface refuses the other refuses too.

/** ISO 8601 with a numeric UTC offset (`2026-03-01T09:30:00.000+00:00`), as the spec's timestamps show. */
export function formatTimestamp(value: Date): string {
  // toISOString always ends in Z (UTC); slicing is cheaper than a regex on every timestamp of every row.
  return `${value.toISOString().slice(0, -1)}+00:00`;
}

/** formatTimestamp's text is 29 bytes. */
export const TIMESTAMP_TEXT_BYTES = 29;

const DIGITS = 0x30;
/** Milliseconds from 1970 to 2000, where PostgreSQL's timestamps count from. */
const MS_1970_TO_2000 = 946_684_800_000;

/**
 * Writes a timestamptz as PostgreSQL sends it in binary (microseconds since 2000-01-01 UTC, a 64-bit integer at
 * `data[start]`) into `out` at `at`, in formatTimestamp's text as timestampTextSql writes it (to_char): whole
 * milliseconds, the year's four digits (more past 9999, and the year's number counted back for one before
 * year 1). Returns the bytes written (TIMESTAMP_TEXT_BYTES, more for a year past 9999), or 0 for ±infinity,
 * which to_char writes as null.
 */
export function writeBinaryTimestamp(data: Buffer, start: number, out: Buffer, at: number): number {
  const high = data.readInt32BE(start);
  const low = data.readUInt32BE(start + 4);
  if ((high === 0x7fffffff && low === 0xffffffff) || (high === -0x80000000 && low === 0)) return 0;
  // 2^32 µs = 4,294,967 ms and 296 µs: exact in doubles for any year PostgreSQL keeps.
  const ms = high * 4_294_967 + Math.floor((high * 296 + low) / 1000) + MS_1970_TO_2000;
  const days = Math.floor(ms / 86_400_000);
  let rest = ms - days * 86_400_000;
  // The civil date of a day count (H. Hinnant's days_from_civil, inverted), in the proleptic Gregorian calendar.
  const shifted = days + 719_468;
  const era = Math.floor(shifted / 146_097);
  const dayOfEra = shifted - era * 146_097;
  const yearOfEra = Math.floor(
    (dayOfEra - Math.floor(dayOfEra / 1460) + Math.floor(dayOfEra / 36_524) - Math.floor(dayOfEra / 146_096)) / 365,
  );
  const dayOfYear = dayOfEra - (365 * yearOfEra + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100));
  const monthIndex = Math.floor((5 * dayOfYear + 2) / 153);
  const day = dayOfYear - Math.floor((153 * monthIndex + 2) / 5) + 1;
  const month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9;
  const astronomicalYear = yearOfEra + era * 400 + (month <= 2 ? 1 : 0);
  const year = astronomicalYear > 0 ? astronomicalYear : 1 - astronomicalYear;
  let position = at;
  if (year > 9999) {
    const digits = String(year);
    position += out.write(digits, position, 'latin1');
  } else {
    out[position++] = DIGITS + Math.floor(year / 1000);
    out[position++] = DIGITS + (Math.floor(year / 100) % 10);
    out[position++] = DIGITS + (Math.floor(year / 10) % 10);
    out[position++] = DIGITS + (year % 10);
  }
  const hours = Math.floor(rest / 3_600_000);
  rest -= hours * 3_600_000;
  const minutes = Math.floor(rest / 60_000);
  rest -= minutes * 60_000;
  const seconds = Math.floor(rest / 1000);
  const milliseconds = rest - seconds * 1000;
  out[position++] = 0x2d; // -
  position = twoDigits(out, position, month);
  out[position++] = 0x2d;
  position = twoDigits(out, position, day);
  out[position++] = 0x54; // T
  position = twoDigits(out, position, hours);
  out[position++] = 0x3a; // :
  position = twoDigits(out, position, minutes);
  out[position++] = 0x3a;
  position = twoDigits(out, position, seconds);
  out[position++] = 0x2e; // .
  out[position++] = DIGITS + Math.floor(milliseconds / 100);
  out[position++] = DIGITS + (Math.floor(milliseconds / 10) % 10);
  out[position++] = DIGITS + (milliseconds % 10);
  out[position++] = 0x2b; // +
  out[position++] = DIGITS;
  out[position++] = DIGITS;
  out[position++] = 0x3a;
  out[position++] = DIGITS;
  out[position++] = DIGITS;
  return position - at;
}

function twoDigits(out: Buffer, at: number, value: number): number {
  out[at] = DIGITS + Math.floor(value / 10);
  out[at + 1] = DIGITS + (value % 10);
  return at + 2;
}

/** writeBinaryTimestamp's text as a string, or null for ±infinity. */
export function binaryTimestampText(data: Buffer, start: number): string | null {
  const out = Buffer.allocUnsafe(TIMESTAMP_TEXT_BYTES + 8);
  const length = writeBinaryTimestamp(data, start, out, 0);
  return length === 0 ? null : out.toString('latin1', 0, length);
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
