import type { Connection } from '../generated/prisma/client.js';
import { columnOf, filterColumns, type RecordField, type RecordOf, recordOf, selectSql, type Where } from './record-descriptor.js';

// A connection (a connected application), described once (CONNECTION, a record descriptor: record-descriptor.ts),
// as the sync record is (sync-record.ts): the column tables, the row SQL of the reads and the writes' RETURNING
// (db/connection-queries.ts, db/write-transactions.ts), the GraphQL Connection type's plain fields
// (graphql/connection.ts) and the webhook message's data derive from it. The application's and category's
// columns a connection shows are theirs (db/connection-queries.ts). A new column: the Prisma model and
// migration, a line here, and a Pothos field only when it is not a plain expose
// (docs/how-to/add-a-filterable-field.md).

type Property = keyof Fields;

export const CONNECTION = {
  fields: {
    id: { type: 'text', filter: true, graphql: true, graphqlId: true },
    tenantId: { type: 'text', seeded: false },
    applicationId: { type: 'text', filter: true, graphql: true },
    name: { type: 'text', filter: true, graphql: true },
    slug: { type: 'text', filter: true, graphql: true },
    description: { type: 'text', filter: true, graphql: true },
    logoUrl: { type: 'text', filter: true, graphql: true },
    keywords: { type: 'text[]', graphql: true },
    via: { type: 'connection_via', filter: true, graphql: true },
    status: { type: 'connection_status', filter: true, graphql: true },
    metadata: { type: 'jsonb', graphql: 'custom' },
    settings: { type: 'jsonb', graphql: 'custom' },
    createdAt: { type: 'timestamptz', filter: true, graphql: true },
    updatedAt: { type: 'timestamptz', filter: true, graphql: true, seeded: false },
    deletedAt: { type: 'timestamptz', nullable: true, seeded: false },
    createdBy: {
      type: 'text',
      nullable: true,
      graphql: 'Who created it: member:<id>, token:<id>, jwt:<sub> or cli (not part of the REST shape).',
      seeded: false,
    },
  },
  /** The webhook message's data of a connection event, in its order, named as their columns. */
  webhook: ['id', 'name', 'applicationId', 'status', 'settings'],
  /**
   * The REST record (GET /connected/{id}, the list), in the spec's order, each named as its column: the
   * connection's own properties and its application's and category's (`joined`), each the GraphQL Connection
   * field of the same name. The REST operations' flags and plain members derive from it
   * (scripts/rest-operations.ts); `metadata` and `settings` select their members there by hand.
   */
  rest: [
    'id',
    'name',
    'slug',
    'applicationId',
    'applicationName',
    'applicationSlug',
    'description',
    'logoUrl',
    'keywords',
    'categoryId',
    'categorySlug',
    'categoryName',
    'via',
    'status',
    'metadata',
    'settings',
  ],
  /** The members of the REST record that are its application's and category's columns (`a`, `k`), read as SQL. */
  joined: {
    applicationName: '"a"."name"',
    applicationSlug: '"a"."slug"',
    categoryId: '"a"."category_id"',
    categorySlug: '"k"."slug"',
    categoryName: '"k"."name"',
  },
} as const satisfies {
  fields: Record<string, RecordField>;
  webhook: readonly string[];
  rest: readonly string[];
  joined: Record<string, string>;
};

type Fields = typeof CONNECTION.fields;
const entries = Object.entries(CONNECTION.fields) as [Property, RecordField][];
const PROPERTIES = entries.map(([property]) => property);

/** The filterable and sortable columns of the connection's own (query/columns.ts), against `alias`. */
export function connectionFilterColumns(alias: string) {
  return filterColumns(CONNECTION.fields, alias);
}

/** The SQL reading every column of a connection against `alias`, named as Prisma's `Connection` names them. */
export function connectionSelectSql(alias: string) {
  return selectSql(CONNECTION.fields, alias, false, PROPERTIES);
}

/** `data` of a connection event: its id, name, application, status and settings (as an object). */
export type ConnectionMessageData = RecordOf<Fields, (typeof CONNECTION.webhook)[number], Connection['settings']>;

/** A connection row as written as a connection event's `data`. */
export function connectionMessageData(connection: Connection): ConnectionMessageData {
  return recordOf(CONNECTION.fields, CONNECTION.webhook, connection, false) as ConnectionMessageData;
}

/** The properties the seed's bulk loader writes, besides the tenant: every one but those left to their default. */
export const SEEDED_CONNECTION_PROPERTIES = entries.filter(([, field]) => field.seeded !== false).map(([property]) => property as Seeded);
type Seeded = Exclude<Property, Where<Fields, { seeded: false }>>;

type RestMember = (typeof CONNECTION.rest)[number];
type JoinedMember = keyof typeof CONNECTION.joined;

/** Whether a REST member is a column of the connection's own, not its application's or category's. */
export function isOwnRestMember(member: RestMember): member is Exclude<RestMember, JoinedMember> {
  return !Object.hasOwn(CONNECTION.joined, member);
}

/**
 * The SQL reading the REST record's members of a connection `c` joined to its application `a` and category `k`,
 * each as its column's name, in the record's order.
 */
export function connectionRestSelectSql(): string {
  const own = selectSql(CONNECTION.fields, 'c', false, CONNECTION.rest.filter(isOwnRestMember));
  return CONNECTION.rest
    .map((member) => `${isOwnRestMember(member) ? own[member] : CONNECTION.joined[member]} AS ${columnOf(member)}`)
    .join(', ');
}
