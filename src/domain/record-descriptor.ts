import type { ConnectionStatus, ConnectionVia, SyncStatus } from '../generated/prisma/enums.js';
import type { ColumnKind, SqlColumn } from '../query/columns.js';
import { formatTimestamp, timestampTextSql } from '../timestamps.js';

// What a resource's descriptor is made of (SYNC in sync-record.ts, CONNECTION in connection-record.ts), and what
// derives from any of them: a property's column, the filter and order columns, the SQL reading a row, the
// record REST and webhooks show. A descriptor is `fields` (a property per column, as Prisma names it, in order)
// and the lists of the members its records show.

/** A column's value in a record, by its PostgreSQL type (a JSON column's is the record's choice). */
interface Values {
  text: string;
  'text[]': string[];
  sync_status: SyncStatus;
  connection_via: ConnectionVia;
  connection_status: ConnectionStatus;
  timestamptz: string;
  jsonb: unknown;
  boolean: boolean;
  integer: number;
}
/** The column's PostgreSQL type: it says how the column is read, written, filtered and shown. */
export type ColumnType = keyof Values;

/** A property of a row (as Prisma names it); its column is the property in snake_case, as the schema maps it. */
export interface RecordField {
  type: ColumnType;
  nullable?: true;
  /** Filterable and sortable (the GraphQL filter and order inputs, the REST query parameters). */
  filter?: true;
  /** A plain expose on the GraphQL type (a string: its description), or `custom` (a field of the resource's module). */
  graphql?: true | string;
  /** Shown as a GraphQL ID. */
  graphqlId?: true;
  /** Left to its default by the seed's bulk loader. */
  seeded?: false;
}

type Fields = Record<string, RecordField>;
/** The properties of `F` whose field matches `Condition`. */
export type Where<F, Condition> = { [P in keyof F]: F[P] extends Condition ? P : never }[keyof F];
type Snake<S extends string> = S extends `${infer H}${infer T}` ? `${H extends Lowercase<H> ? H : `_${Lowercase<H>}`}${Snake<T>}` : S;

const KIND: Partial<Record<ColumnType, ColumnKind>> = {
  text: 'string',
  sync_status: 'enum',
  connection_via: 'enum',
  connection_status: 'enum',
  timestamptz: 'dateTime',
  boolean: 'boolean',
};

/** A property's column: the property in snake_case. */
export function columnOf(property: string): string {
  return property.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);
}

/** The filterable and sortable columns (query/columns.ts), against `alias`; an enum's with its SQL type. */
export function filterColumns<F extends Fields>(fields: F, alias: string): Record<Where<F, { filter: true }>, SqlColumn> {
  return Object.fromEntries(
    Object.entries(fields)
      .filter(([, field]) => field.filter)
      .map(([property, { type, nullable }]) => {
        const column = { sql: `"${alias}"."${columnOf(property)}"`, kind: KIND[type]!, nullable: nullable === true };
        return [property, KIND[type] === 'enum' ? { ...column, sqlType: type } : column];
      }),
  ) as Record<Where<F, { filter: true }>, SqlColumn>;
}

/**
 * The SQL reading each of `properties` against `alias`: an enum as its label, an array as JSON (pg parses a
 * text[] in JavaScript, character by character, and JSON with V8's parser), a timestamp as text in the API's
 * format when `timestampsAsText`, else as stored (a Date then).
 */
export function selectSql<F extends Fields, P extends keyof F & string>(
  fields: F,
  alias: string,
  timestampsAsText: boolean,
  properties: readonly P[],
): Record<P, string> {
  return Object.fromEntries(
    properties.map((property) => {
      const column = `"${alias}"."${columnOf(property)}"`;
      const { type } = fields[property]!;
      if (type === 'timestamptz' && timestampsAsText) return [property, timestampTextSql(column)];
      if (type === 'text[]') return [property, `to_json(${column})`];
      return [property, KIND[type] === 'enum' ? `${column}::text` : column];
    }),
  ) as Record<P, string>;
}

type Value<F, Json> = F extends { type: 'jsonb' } ? Json : F extends { type: infer T extends ColumnType } ? Values[T] : never;
/** The record of `Members` of `F`: each under its column's name, timestamps in the API's text, a JSON column as `Json`. */
export type RecordOf<F, Members extends keyof F & string, Json> = {
  [P in Members as Snake<P>]: Value<F[P], Json> | (F[P] extends { nullable: true } ? null : never);
};

/**
 * A row as written (Prisma's shape, Dates) as the record of `members`: each under its column's name, timestamps
 * in the API's text, a JSON column as its JSON text when `jsonAsText` (the REST sync record), else as it is.
 */
export function recordOf(fields: Fields, members: readonly string[], row: Record<string, unknown>, jsonAsText: boolean) {
  const record: Record<string, unknown> = {};
  for (const property of members) {
    const value = row[property];
    const { type } = fields[property]!;
    record[columnOf(property)] =
      type === 'timestamptz'
        ? value
          ? formatTimestamp(value as Date)
          : null
        : type === 'jsonb' && jsonAsText
          ? JSON.stringify(value)
          : value;
  }
  return record;
}
