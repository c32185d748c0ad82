import { GraphQLError, Kind, valueFromASTUntyped } from 'graphql';
import { formatTimestamp, isTimestampText, parseTimestamp } from '../timestamps.js';
import { builder } from './builder.js';
import { isJsonObject } from './json-fields.js';

function parseDateTimeInput(value: unknown): Date {
  const date = typeof value === 'string' ? parseTimestamp(value) : null;
  if (!date) {
    throw new GraphQLError('DateTime must be an ISO 8601 timestamp with a UTC offset, e.g. 2026-01-31T12:00:00+00:00', {
      extensions: { code: 'INVALID_QUERY' },
    });
  }
  return date;
}

builder.scalarType('DateTime', {
  description: 'ISO 8601 timestamp with a numeric UTC offset, e.g. 2026-03-01T09:30:00.000+00:00.',
  // A Date, or the text of a timestamp PostgreSQL already wrote in this format (the lists' rows: timestampTextSql).
  serialize: (value) =>
    value instanceof Date ? formatTimestamp(value) : isTimestampText(value) ? value : formatTimestamp(new Date(String(value))),
  parseValue: parseDateTimeInput,
  parseLiteral: (ast) => parseDateTimeInput(ast.kind === Kind.STRING ? ast.value : undefined),
});

builder.scalarType('JSONObject', {
  description: 'A JSON object; its members are checked by the field that takes it (e.g. settings by application kind).',
  serialize: (value) => value,
  parseValue: (value) => {
    if (!isJsonObject(value)) throw new GraphQLError('JSONObject must be a JSON object', { extensions: { code: 'INVALID_QUERY' } });
    return value;
  },
  parseLiteral: (ast, variables) => {
    if (ast.kind !== Kind.OBJECT) throw new GraphQLError('JSONObject must be a JSON object', { extensions: { code: 'INVALID_QUERY' } });
    return valueFromASTUntyped(ast, variables) as Record<string, unknown>;
  },
});
