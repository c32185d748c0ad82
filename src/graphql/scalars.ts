import { GraphQLError, Kind } from 'graphql';
import { builder } from './builder.js';

/** ISO 8601 with a numeric UTC offset (`2026-03-01T09:30:00.000+00:00`), as the spec's timestamps show. */
export function formatTimestamp(value: Date): string {
  // toISOString always ends in Z (UTC); slicing is cheaper than a regex on every timestamp of every row.
  return `${value.toISOString().slice(0, -1)}+00:00`;
}

const ISO_TIMESTAMP = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2}))?$/i;

/** Accepts an ISO 8601 timestamp with an offset or Z, or a date alone (midnight UTC). */
export function parseTimestamp(value: string): Date | null {
  if (value.length > 40 || !ISO_TIMESTAMP.test(value)) return null;
  const date = new Date(value.length === 10 ? `${value}T00:00:00Z` : value);
  if (Number.isNaN(date.getTime())) return null;
  // Year 0000 (or 0001 moved back by an offset) is 1 BC, which PostgreSQL refuses as out of range.
  const year = date.getUTCFullYear();
  return year < 1 || year > 9999 ? null : date;
}

function parseDateTimeInput(value: unknown): Date {
  const date = typeof value === 'string' ? parseTimestamp(value) : null;
  if (!date) {
    throw new GraphQLError(
      'DateTime must be an ISO 8601 timestamp with a UTC offset, e.g. 2026-01-31T12:00:00+00:00',
      { extensions: { code: 'INVALID_QUERY' } },
    );
  }
  return date;
}

builder.scalarType('DateTime', {
  description: 'ISO 8601 timestamp with a numeric UTC offset, e.g. 2026-03-01T09:30:00.000+00:00.',
  serialize: (value) => formatTimestamp(value instanceof Date ? value : new Date(String(value))),
  parseValue: parseDateTimeInput,
  parseLiteral: (ast) => parseDateTimeInput(ast.kind === Kind.STRING ? ast.value : undefined),
});
