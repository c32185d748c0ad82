import type { SyncStatus } from '../generated/prisma/enums.js';
import type { ColumnKind, SqlColumn } from '../query/columns.js';
import type { BinaryValue } from '../query/list-export.js';
import { formatTimestamp, timestampTextSql } from '../timestamps.js';

// A sync record, described once: every other description of its shape is derived from SYNC below. The data
// layer's column tables, list and write SQL (db/sync-queries.ts, db/write-transactions.ts), the GraphQL Sync
// type's plain fields (graphql/sync.ts), the REST record's operations (schema/operations/, written by
// scripts/print-operations.ts), the webhook message's data (webhook-messages.ts), the seed's bulk loader and the
// benchmark's baseline read it. Adding a column: the Prisma model and its migration, a line here, and a Pothos
// field only when it is not a plain expose.

/** How the column is stored (its PostgreSQL type): it says how it is read, written, filtered and shown. */
type ColumnType = 'text' | 'sync_status' | 'timestamptz' | 'jsonb' | 'boolean' | 'integer';

interface SyncField {
  /** The column of `syncs`. */
  column: string;
  type: ColumnType;
  nullable: boolean;
  /** Filterable and sortable (the GraphQL filter and order inputs, the REST query parameters). */
  filter?: true;
  /** The GraphQL field: a plain expose (of this scalar type when the column's type does not say it), or `custom` (declared in graphql/sync.ts). None: not shown, and not read by the lists. */
  graphql?: { type?: 'ID'; description?: string } | 'custom';
  /** Left to its default by the seed's bulk loader (src/seed/syncs.ts). */
  seeded?: false;
}

export const SYNC = {
  fields: {
    id: { column: 'id', type: 'text', nullable: false, filter: true, graphql: { type: 'ID' } },
    tenantId: { column: 'tenant_id', type: 'text', nullable: false, graphql: {}, seeded: false },
    connectionId: { column: 'connection_id', type: 'text', nullable: false, filter: true, graphql: {} },
    status: { column: 'status', type: 'sync_status', nullable: false, filter: true, graphql: {} },
    startedAt: { column: 'started_at', type: 'timestamptz', nullable: false, filter: true, graphql: {} },
    finishedAt: {
      column: 'finished_at',
      type: 'timestamptz',
      nullable: true,
      filter: true,
      graphql: { description: 'Null while the run is not finished.' },
    },
    errorMessage: {
      column: 'error_message',
      type: 'text',
      nullable: true,
      filter: true,
      graphql: { description: 'Text when the run failed.' },
    },
    summary: { column: 'summary', type: 'jsonb', nullable: false, graphql: 'custom' },
    fileUrl: { column: 'file_url', type: 'text', nullable: true, filter: true, graphql: {} },
    isAutoMigrate: { column: 'is_auto_migrate', type: 'boolean', nullable: true, filter: true, graphql: {} },
    diff: { column: 'diff', type: 'jsonb', nullable: false, graphql: 'custom' },
    checksum: { column: 'checksum', type: 'jsonb', nullable: false, graphql: 'custom' },
    // The engine's side of a run (GraphQL only: the REST record keeps exactly the spec's fields).
    attempt: {
      column: 'attempt',
      type: 'integer',
      nullable: false,
      graphql: { description: '1 for a triggered or scheduled run, n + 1 for the retry of attempt n.' },
      seeded: false,
    },
    retryOfId: {
      column: 'retry_of_id',
      type: 'text',
      nullable: true,
      graphql: { type: 'ID', description: 'The failed run this one retries.' },
      seeded: false,
    },
    dueAt: {
      column: 'due_at',
      type: 'timestamptz',
      nullable: true,
      graphql: { description: 'When a pending run may be claimed (later for a retry in back-off).' },
    },
    leaseExpiresAt: {
      column: 'lease_expires_at',
      type: 'timestamptz',
      nullable: true,
      graphql: { description: 'While in progress: when the claim lapses without a progress report.' },
    },
    leaseSeconds: { column: 'lease_seconds', type: 'integer', nullable: true },
    workerId: {
      column: 'worker_id',
      type: 'text',
      nullable: true,
      graphql: { description: "Who claimed the run (the credential's subject)." },
      seeded: false,
    },
    updatedAt: { column: 'updated_at', type: 'timestamptz', nullable: false, seeded: false },
  },
  /**
   * The REST record (GET /syncs/{id}, the lists, the webhook message), exactly the spec's fields in its order:
   * each member named as its column, a JSON column as its JSON text (the GraphQL field `<property>Json`).
   */
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

/** The properties the lists read (the GraphQL Sync shows each): all but the write side's own. */
export type SyncProperty = { [P in keyof Fields]: Fields[P] extends { graphql: unknown } ? P : never }[keyof Fields];
type FilterProperty = { [P in keyof Fields]: Fields[P] extends { filter: true } ? P : never }[keyof Fields];
type RestProperty = (typeof SYNC.rest)[number];

const entries = Object.entries(SYNC.fields) as [keyof Fields, SyncField][];

/** How each column type arrives in binary COPY output (query/list-export.ts). */
const BINARY: Record<ColumnType, BinaryValue> = {
  text: 'text',
  sync_status: 'enum',
  timestamptz: 'timestamp',
  jsonb: 'jsonb',
  boolean: 'boolean',
  integer: 'int4',
};
const KIND: Partial<Record<ColumnType, ColumnKind>> = { text: 'string', sync_status: 'enum', timestamptz: 'dateTime', boolean: 'boolean' };

/** `"<alias>"."<column>"`. */
export function syncColumnSql(property: keyof Fields, alias: string): string {
  return `"${alias}"."${SYNC.fields[property].column}"`;
}

/** The filterable and sortable columns (query/columns.ts), against `alias`. */
export function syncFilterColumns(alias: string): Record<FilterProperty, SqlColumn> {
  const columns: Record<string, SqlColumn> = {};
  for (const [property, field] of entries) {
    if (!field.filter) continue;
    const sql = syncColumnSql(property, alias);
    const kind = KIND[field.type]!;
    columns[property] =
      field.type === 'sync_status' ? { sql, sqlType: field.type, kind, nullable: field.nullable } : { sql, kind, nullable: field.nullable };
  }
  return columns as Record<FilterProperty, SqlColumn>;
}

/** Every listed property's column against `alias`, and how PostgreSQL sends it in binary. */
export function syncListColumns(alias: string): Record<SyncProperty, { column: string; value: BinaryValue }> {
  return Object.fromEntries(
    entries
      .filter(([, field]) => field.graphql)
      .map(([property, field]) => [property, { column: syncColumnSql(property, alias), value: BINARY[field.type] }]),
  ) as Record<SyncProperty, { column: string; value: BinaryValue }>;
}

/**
 * The select list of `properties` (every column when not given) against `alias`, each named as Prisma's Sync
 * names it, the enum as its label; a timestamp as text in the API's format when `timestampsAsText`, else as
 * stored (node-postgres and PGlite then hand over a Date).
 */
export function syncSelectSql(
  alias: string,
  timestampsAsText: boolean,
  properties: readonly (keyof Fields)[] = Object.keys(SYNC.fields) as (keyof Fields)[],
): Record<string, string> {
  return Object.fromEntries(
    properties.map((property) => {
      const column = syncColumnSql(property, alias);
      const type = SYNC.fields[property].type;
      return [
        property,
        type === 'timestamptz' && timestampsAsText ? timestampTextSql(column) : type === 'sync_status' ? `${column}::text` : column,
      ];
    }),
  );
}

/** The GraphQL field a REST member selects: the property, or its JSON text for a JSON column. */
export function restGraphqlField(property: RestProperty): string {
  return SYNC.fields[property].type === 'jsonb' ? `${property}Json` : property;
}

type RestValue<F extends SyncField> =
  | (F['type'] extends 'boolean' ? boolean : F['type'] extends 'integer' ? number : F['type'] extends 'sync_status' ? SyncStatus : string)
  | (F['nullable'] extends true ? null : never);

/** The REST sync record: the spec's members, timestamps in the API's text, JSON columns as their JSON text. */
export type SyncRecord = { [P in RestProperty as Fields[P]['column']]: RestValue<Fields[P]> };

/** A sync row as written (Prisma's Sync shape, Dates) as the REST record. */
export function syncRecordOf(run: { [P in RestProperty]: unknown }): SyncRecord {
  const record: Record<string, unknown> = {};
  for (const property of SYNC.rest) {
    const value = run[property];
    const type = SYNC.fields[property].type;
    record[SYNC.fields[property].column] =
      type === 'timestamptz' ? (value ? formatTimestamp(value as Date) : null) : type === 'jsonb' ? JSON.stringify(value) : value;
  }
  return record as SyncRecord;
}

type SeededProperty = { [P in keyof Fields]: Fields[P] extends { seeded: false } ? never : P }[keyof Fields];

/** The columns the seed's bulk loader writes, besides the tenant's: every one but those left to their default. */
export const SEEDED_SYNC_COLUMNS = entries
  .filter(([, field]) => field.seeded !== false)
  .map(([property, { column, type }]) => ({ property: property as SeededProperty, column, type }));
