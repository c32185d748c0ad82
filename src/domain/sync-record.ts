import type { SyncStatus } from '../generated/prisma/enums.js';
import type { ColumnKind, SqlColumn } from '../query/columns.js';
import type { BinaryValue } from '../query/list-export.js';
import { formatTimestamp, timestampTextSql } from '../timestamps.js';

// A sync record, described once (SYNC); every other description of its shape derives from it: the column tables,
// list and write SQL (db/sync-queries.ts, db/write-transactions.ts), the GraphQL Sync type's plain fields
// (graphql/sync.ts), the REST operations (scripts/rest-operations.ts), the webhook message's data, the seed's
// loader and the benchmark's baseline. A new column: the Prisma model and migration, a line here, and a Pothos
// field only when it is not a plain expose (docs/how-to/add-a-filterable-field.md).

type Property = keyof Fields;

/** The column's PostgreSQL type: it says how the column is read, written, filtered and shown. */
type ColumnType = 'text' | 'sync_status' | 'timestamptz' | 'jsonb' | 'boolean' | 'integer';

/** A property of a sync row (as Prisma names it); its column is the property in snake_case, as the schema maps it. */
export interface SyncField {
  type: ColumnType;
  nullable?: true;
  /** Filterable and sortable (the GraphQL filter and order inputs, the REST query parameters). */
  filter?: true;
  /** A plain expose on GraphQL's Sync (a string: its description), or `custom` (graphql/sync.ts). None: not read by the lists. */
  graphql?: true | string;
  /** Shown as a GraphQL ID. */
  graphqlId?: true;
  /** Left to its default by the seed's bulk loader (src/seed/syncs.ts). */
  seeded?: false;
}

export const SYNC = {
  fields: {
    id: { type: 'text', filter: true, graphql: true, graphqlId: true },
    tenantId: { type: 'text', graphql: true, seeded: false },
    connectionId: { type: 'text', filter: true, graphql: true },
    status: { type: 'sync_status', filter: true, graphql: true },
    startedAt: { type: 'timestamptz', filter: true, graphql: true },
    finishedAt: { type: 'timestamptz', nullable: true, filter: true, graphql: 'Null while the run is not finished.' },
    errorMessage: { type: 'text', nullable: true, filter: true, graphql: 'Text when the run failed.' },
    summary: { type: 'jsonb', graphql: 'custom' },
    fileUrl: { type: 'text', nullable: true, filter: true, graphql: true },
    isAutoMigrate: { type: 'boolean', nullable: true, filter: true, graphql: true },
    diff: { type: 'jsonb', graphql: 'custom' },
    checksum: { type: 'jsonb', graphql: 'custom' },
    // The engine's side of a run (GraphQL only: the REST record keeps exactly the spec's fields).
    attempt: { type: 'integer', graphql: '1 for a triggered or scheduled run, n + 1 for the retry of attempt n.', seeded: false },
    retryOfId: { type: 'text', nullable: true, graphql: 'The failed run this one retries.', graphqlId: true, seeded: false },
    dueAt: { type: 'timestamptz', nullable: true, graphql: 'When a pending run may be claimed (later for a retry in back-off).' },
    leaseExpiresAt: { type: 'timestamptz', nullable: true, graphql: 'While in progress: when the claim lapses without a progress report.' },
    leaseSeconds: { type: 'integer', nullable: true },
    workerId: { type: 'text', nullable: true, graphql: "Who claimed the run (the credential's subject).", seeded: false },
    updatedAt: { type: 'timestamptz', seeded: false },
  },
  /** The REST record (GET /syncs/{id}, the lists, webhooks): the spec's fields in its order, named as their columns. */
  rest: [
    'id',
    'tenantId',
    'connectionId',
    'startedAt',
    'finishedAt',
    'errorMessage',
    'summary',
    'fileUrl',
    'isAutoMigrate',
    'diff',
    'checksum',
    'status',
  ],
} as const satisfies { fields: Record<string, SyncField>; rest: readonly string[] };

type Fields = typeof SYNC.fields;
type Where<Condition> = { [P in Property]: Fields[P] extends Condition ? P : never }[Property];
/** The properties the lists read (the GraphQL Sync shows each): all but the write side's own. */
export type SyncProperty = Where<{ graphql: unknown }>;
type RestProperty = (typeof SYNC.rest)[number];
type Snake<S extends string> = S extends `${infer H}${infer T}` ? `${H extends Lowercase<H> ? H : `_${Lowercase<H>}`}${Snake<T>}` : S;

const entries = Object.entries(SYNC.fields) as [Property, SyncField][];
const BINARY: Record<ColumnType, BinaryValue> = {
  text: 'text',
  sync_status: 'enum',
  timestamptz: 'timestamp',
  jsonb: 'jsonb',
  boolean: 'boolean',
  integer: 'int4',
};
const KIND: Partial<Record<ColumnType, ColumnKind>> = { text: 'string', sync_status: 'enum', timestamptz: 'dateTime', boolean: 'boolean' };

/** A property's column: the property in snake_case. */
export function syncColumn(property: Property): string {
  return property.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);
}

/** The filterable and sortable columns (query/columns.ts), against `alias`. */
export function syncFilterColumns(alias: string): Record<Where<{ filter: true }>, SqlColumn> {
  const filterable = entries.filter(([, field]) => field.filter);
  return Object.fromEntries(
    filterable.map(([property, { type, nullable }]) => {
      const column = { sql: `"${alias}"."${syncColumn(property)}"`, kind: KIND[type]!, nullable: nullable === true };
      return [property, type === 'sync_status' ? { ...column, sqlType: type } : column];
    }),
  ) as Record<Where<{ filter: true }>, SqlColumn>;
}

/** The properties the lists read, in the descriptor's order. */
export const SYNC_PROPERTIES = entries.filter(([, field]) => field.graphql).map(([property]) => property as SyncProperty);

/** How PostgreSQL sends a property's value in binary (query/list-export.ts): an export reads it so. */
export function syncBinaryValue(property: Property): BinaryValue {
  return BINARY[SYNC.fields[property].type];
}

/**
 * The SQL reading each of `properties` (every column when not given) against `alias`, the enum as its label; a
 * timestamp as text in the API's format when `timestampsAsText`, else as stored (a Date then).
 */
export function syncSelectSql(
  alias: string,
  timestampsAsText: boolean,
  properties: readonly Property[] = Object.keys(SYNC.fields) as Property[],
) {
  return Object.fromEntries(
    properties.map((property) => {
      const column = `"${alias}"."${syncColumn(property)}"`;
      const { type } = SYNC.fields[property];
      return [
        property,
        type === 'timestamptz' && timestampsAsText ? timestampTextSql(column) : type === 'sync_status' ? `${column}::text` : column,
      ];
    }),
  ) as Record<Property, string>;
}

/** The GraphQL field a REST member selects: the property, or its JSON text for a JSON column. */
export function restGraphqlField(property: RestProperty): string {
  return SYNC.fields[property].type === 'jsonb' ? `${property}Json` : property;
}

type RestValue<F> = F extends { type: 'boolean' } ? boolean : F extends { type: 'sync_status' } ? SyncStatus : string;
/** The REST sync record: the spec's members, timestamps in the API's text, JSON columns as their JSON text. */
export type SyncRecord = { [P in RestProperty as Snake<P>]: RestValue<Fields[P]> | (Fields[P] extends { nullable: true } ? null : never) };

/** A sync row as written (Prisma's Sync shape, Dates) as the REST record. */
export function syncRecordOf(run: { [P in RestProperty]: unknown }): SyncRecord {
  const record: Record<string, unknown> = {};
  for (const property of SYNC.rest) {
    const value = run[property];
    const { type } = SYNC.fields[property];
    record[syncColumn(property)] =
      type === 'timestamptz' ? (value ? formatTimestamp(value as Date) : null) : type === 'jsonb' ? JSON.stringify(value) : value;
  }
  return record as SyncRecord;
}

/** The timestamps of a sync row. */
export type SyncTimestamp = Where<{ type: 'timestamptz' }>;
export const SYNC_TIMESTAMPS = entries.filter(([, field]) => field.type === 'timestamptz').map(([property]) => property as SyncTimestamp);

/** The properties the seed's bulk loader writes, besides the tenant: every one but those left to their default. */
export const SEEDED_SYNC_PROPERTIES = entries.filter(([, field]) => field.seeded !== false).map(([property]) => property as Seeded);
type Seeded = Exclude<Property, Where<{ seeded: false }>>;
