import { filterColumns, type RecordField, type RecordOf, recordOf, selectSql, type Where } from './record-descriptor.js';

// A sync record, described once (SYNC, a record descriptor: record-descriptor.ts); every other description of
// its shape derives from it: the column tables, list and write SQL (db/sync-queries.ts,
// db/write-transactions.ts), the GraphQL Sync type's plain fields (graphql/sync.ts), the REST operations
// (scripts/rest-operations.ts), the webhook message's data, the seed's loader and the benchmark's baseline. A new
// column: the Prisma model and migration, a line here, and a Pothos field only when it is not a plain expose
// (docs/how-to/add-a-filterable-field.md).

type Property = keyof Fields;

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
} as const satisfies { fields: Record<string, RecordField>; rest: readonly string[] };

type Fields = typeof SYNC.fields;
/** The properties the lists read (the GraphQL Sync shows each): all but the write side's own. */
export type SyncProperty = Where<Fields, { graphql: unknown }>;
type RestProperty = (typeof SYNC.rest)[number];

const entries = Object.entries(SYNC.fields) as [Property, RecordField][];

/** The filterable and sortable columns (query/columns.ts), against `alias`. */
export function syncFilterColumns(alias: string) {
  return filterColumns(SYNC.fields, alias);
}

/** The properties the lists read, in the descriptor's order. */
export const SYNC_PROPERTIES = entries.filter(([, field]) => field.graphql).map(([property]) => property as SyncProperty);

/**
 * The SQL reading each of `properties` (every column when not given) against `alias`, the enum as its label; a
 * timestamp as text in the API's format when `timestampsAsText`, else as stored (a Date then).
 */
export function syncSelectSql<P extends Property = Property>(
  alias: string,
  timestampsAsText: boolean,
  properties: readonly P[] = Object.keys(SYNC.fields) as P[],
) {
  return selectSql(SYNC.fields, alias, timestampsAsText, properties);
}

/** The GraphQL field a REST member selects: the property, or its JSON text for a JSON column. */
export function restGraphqlField(property: RestProperty): string {
  return SYNC.fields[property].type === 'jsonb' ? `${property}Json` : property;
}

/** The REST sync record: the spec's members, timestamps in the API's text, JSON columns as their JSON text. */
export type SyncRecord = RecordOf<Fields, RestProperty, string>;

/** A sync row as written (Prisma's Sync shape, Dates) as the REST record. */
export function syncRecordOf(run: { [P in RestProperty]: unknown }): SyncRecord {
  return recordOf(SYNC.fields, SYNC.rest, run, true) as SyncRecord;
}

/** The timestamps of a sync row. */
export type SyncTimestamp = Where<Fields, { type: 'timestamptz' }>;
export const SYNC_TIMESTAMPS = entries.filter(([, field]) => field.type === 'timestamptz').map(([property]) => property as SyncTimestamp);

/** The properties the seed's bulk loader writes, besides the tenant: every one but those left to their default. */
export const SEEDED_SYNC_PROPERTIES = entries.filter(([, field]) => field.seeded !== false).map(([property]) => property as Seeded);
type Seeded = Exclude<Property, Where<Fields, { seeded: false }>>;
