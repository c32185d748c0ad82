import type { GraphQLResolveInfo } from 'graphql';
import type { Context } from '../context.js';
import {
  CONNECTION_COLUMNS,
  connectionCategorySql,
  type ConnectionProperty,
  countConnections,
  isConnectionProperty,
  readConnectionPage,
  readConnections,
} from '../db/connection-queries.js';
import { ConnectionStatus as ConnectionStatusValues, ConnectionVia as ConnectionViaValues } from '../generated/prisma/enums.js';
import { Application, applicationFieldReads, Features } from './application.js';
import { createConnection, deleteConnection, updateConnection } from '../db/connection-writes.js';
import { CONNECTION } from '../domain/connection-record.js';
import { actorOf } from '../auth/audit.js';
import { createConnectionProblems, parseConnectionPatch, parseCreateConnection } from '../domain/connection-input.js';
import { invalidGraphQLInput, withGraphQLNames } from '../domain/problems.js';
import { once } from './idempotency.js';
import { bodyOf, parsed } from './mutation-args.js';
import { searchTextSql } from '../db/list-reads.js';
import { builder } from './builder.js';
import { sqlListField } from './paged-list.js';
import { Category, categoryFieldReads } from './category.js';
import { assertValueLength } from '../query/filter.js';
import { allOf, compareSql } from '../query/sql.js';
import { assertIdLength, removalType } from './ids.js';
import { asJsonObject, jsonBoolean, jsonInt, jsonString, type JsonObject } from './json-fields.js';
import { pageBounds } from '../query/page-bounds.js';
import { recordFields } from './record-fields.js';
import { type FieldReads, selectedProperties } from './selection.js';
import { activityOriginOf, requireViewer } from './viewer.js';

export const CONNECTION_PAGE = pageBounds(100, 100);

export const ConnectionStatus = builder.enumType(ConnectionStatusValues, { name: 'ConnectionStatus' });
export const ConnectionVia = builder.enumType(ConnectionViaValues, {
  name: 'ConnectionVia',
  description: 'How the connection was established.',
});

const ConnectionMetadata = builder.objectRef<JsonObject>('ConnectionMetadata').implement({
  description: 'Descriptive members; which ones are set depends on the kind of application (null otherwise).',
  fields: (t) => ({
    region: t.string({ nullable: true, resolve: (m) => jsonString(m, 'region') }),
    version: t.string({ nullable: true, resolve: (m) => jsonString(m, 'version') }),
    location: t.string({ nullable: true, resolve: (m) => jsonString(m, 'location') }),
    gatewayId: t.string({ nullable: true, description: 'Payments.', resolve: (m) => jsonString(m, 'gateway_id') }),
    currency: t.string({ nullable: true, description: 'Payments.', resolve: (m) => jsonString(m, 'currency') }),
    propertyId: t.string({ nullable: true, description: 'Property management.', resolve: (m) => jsonString(m, 'property_id') }),
    channel: t.string({ nullable: true, description: 'Messaging.', resolve: (m) => jsonString(m, 'channel') }),
    botName: t.string({ nullable: true, description: 'Messaging.', resolve: (m) => jsonString(m, 'bot_name') }),
  }),
});

const ConnectionSettings = builder.objectRef<JsonObject>('ConnectionSettings').implement({
  description: 'Behaviour switches; which ones are set depends on the kind of application (null otherwise).',
  fields: (t) => ({
    syncInterval: t.string({ nullable: true, resolve: (s) => jsonString(s, 'sync_interval') }),
    webhookEnabled: t.boolean({ nullable: true, resolve: (s) => jsonBoolean(s, 'webhook_enabled') }),
    retryAttempts: t.int({ nullable: true, resolve: (s) => jsonInt(s, 'retry_attempts') }),
    notificationEnabled: t.boolean({ nullable: true, resolve: (s) => jsonBoolean(s, 'notification_enabled') }),
    trackUsers: t.boolean({ nullable: true, description: 'Analytics.', resolve: (s) => jsonBoolean(s, 'track_users') }),
    anonymizeIp: t.boolean({ nullable: true, description: 'Analytics.', resolve: (s) => jsonBoolean(s, 'anonymize_ip') }),
    mentionUsers: t.boolean({ nullable: true, description: 'Messaging.', resolve: (s) => jsonBoolean(s, 'mention_users') }),
    threadEnabled: t.boolean({ nullable: true, description: 'Messaging.', resolve: (s) => jsonBoolean(s, 'thread_enabled') }),
  }),
});

/**
 * How Connection fields read a connection row (db/connection-queries.ts): the flattened application and
 * category fields read theirs, and `application` and `category` are objects that come with the row.
 */
const CONNECTION_READS: FieldReads = {
  fields: {
    __typename: [],
    applicationName: ['application.name'],
    applicationSlug: ['application.slug'],
    categoryId: ['application.categoryId'],
    categorySlug: ['application.category.slug'],
    categoryName: ['application.category.name'],
    features: ['application.features'],
    additionalInformation: ['application.additionalInformation'],
    // Declared in sync.ts; loaded by the connection's id.
    syncs: [],
    syncCount: [],
  },
  objects: {
    application: { prefix: 'application.', reads: applicationFieldReads },
    category: { prefix: 'application.category.', reads: categoryFieldReads },
  },
  isProperty: isConnectionProperty,
};

/** The row properties the Connection fields selected at `path` read; null (the whole row) when one is not known. */
function connectionProperties(info: GraphQLResolveInfo, path: readonly string[]): Set<ConnectionProperty> | null {
  const properties = selectedProperties(info, path, CONNECTION_READS);
  return properties && [...properties].every(isConnectionProperty) ? (properties as Set<ConnectionProperty>) : null;
}

export const Connection = builder.prismaObject('Connection', {
  description: "A tenant's connection of a catalog application.",
  // Whole rows with the application and its category, as the hand-written reads of db/connection-queries.ts
  // hand them back (with the properties the operation selects): fields resolve from the row, without
  // plugin-prisma's per-field bookkeeping of its select mode. No connection is read through Prisma: the
  // prismaObject gives the row its type and lets sync.ts add fields by model name.
  include: { application: { include: { category: true } } },
  fields: (t) => ({
    // The connection's columns, as its descriptor (domain/connection-record.ts) says; metadata and settings as objects.
    ...recordFields(
      t,
      CONNECTION.fields,
      {
        metadata: { metadata: t.field({ type: ConnectionMetadata, resolve: (c) => asJsonObject(c.metadata) }) },
        settings: { settings: t.field({ type: ConnectionSettings, resolve: (c) => asJsonObject(c.settings) }) },
      },
      { connection_via: ConnectionVia, connection_status: ConnectionStatus },
    ),
    // Its application's and the application's category's.
    applicationName: t.string({ resolve: (c) => c.application.name }),
    applicationSlug: t.string({ resolve: (c) => c.application.slug }),
    categoryId: t.string({ resolve: (c) => c.application.categoryId }),
    categorySlug: t.string({ resolve: (c) => c.application.category.slug }),
    categoryName: t.string({ resolve: (c) => c.application.category.name }),
    features: t.field({
      type: Features,
      description: "The connected application's features.",
      resolve: (c) => asJsonObject(c.application.features),
    }),
    additionalInformation: t.string({
      description: "The connected application's additional information (HTML).",
      resolve: (c) => c.application.additionalInformation,
    }),
    application: t.field({ type: Application, resolve: (c) => c.application }),
    category: t.field({ type: Category, resolve: (c) => c.application.category }),
  }),
});

/**
 * One connection of the caller by id, with the properties the operation selects below the current field;
 * null when there is none (or it was deleted, unless `deleted` says to include deleted ones).
 */
export async function connectionById(context: Context, id: string, info: GraphQLResolveInfo, options = { deleted: false }) {
  const [connection] = await readConnections(
    context.db.raw,
    requireViewer(context).tenantId,
    [id],
    connectionProperties(info, []),
    options,
  );
  return connection ?? null;
}

// Sync.connection, declared here where Connection lives (sync.ts declares Connection.syncs). The connections
// of a whole page of syncs load in one statement; one loader per place in the operation (`byPath`), so each
// place reads what its selection needs.
builder.prismaObjectFields('Sync', (t) => ({
  connection: t.loadable({
    type: Connection,
    nullable: true,
    description: 'The synchronized connection; null once it was deleted (its history stays readable).',
    authScopes: { permission: 'connections:read' },
    byPath: true,
    load: (ids: string[], context, _args, info: GraphQLResolveInfo) =>
      readConnections(context.db.raw, requireViewer(context).tenantId, ids, connectionProperties(info, [])),
    sort: (connection) => connection.id,
    resolve: (sync) => sync.connectionId,
  }),
  // GraphQL only (the REST record keeps exactly the spec's fields): what a run's connection was called, which a
  // deleted connection's runs still show.
  connectionName: t.loadable({
    type: 'String',
    description: "The synchronized connection's name, also once it was deleted (then the name it had).",
    authScopes: { permission: 'connections:read' },
    load: async (ids: string[], context) => {
      const rows = await readConnections(context.db.raw, requireViewer(context).tenantId, ids, NAME_ONLY, { deleted: true });
      const names = new Map(rows.map((row) => [row.id, row.name]));
      return ids.map((id) => names.get(id) ?? new Error(`connection ${id} not found`));
    },
    resolve: (sync) => sync.connectionId,
  }),
}));

/** What Sync.connectionName reads of a connection. */
const NAME_ONLY: ReadonlySet<ConnectionProperty> = new Set(['id', 'name']);

// Hand-written SQL rather than Prisma, like the sync history: a page with its applications and categories is one
// statement, and the rows resolve without plugin-prisma's per-field work.
sqlListField('connections', {
  item: Connection,
  listDescription: "A page of the caller's connections.",
  description: "The caller's connected applications, by name unless orderBy says otherwise.",
  permission: 'connections:read',
  page: CONNECTION_PAGE,
  columns: CONNECTION_COLUMNS,
  enums: { via: ConnectionVia, status: ConnectionStatus },
  defaultOrder: [{ field: 'name' }],
  search: { description: 'Case-insensitive keyword over name, slug, description and keywords.', sql: searchTextSql },
  args: (arg) => ({
    categoryId: arg.id({ description: 'Only connections of applications in this category (exact id).' }),
    name: arg.string({ description: 'Only connections whose name contains this text, case-insensitively.' }),
  }),
  where: (args) => {
    const name = args.name as string | null | undefined;
    const categoryId = args.categoryId as string | null | undefined;
    assertValueLength('name', name);
    return [
      connectionCategorySql(categoryId ? assertIdLength(categoryId, 'category') : null),
      name ? compareSql(CONNECTION_COLUMNS.name, 'contains', name) : allOf([]),
    ];
  },
  properties: connectionProperties,
  read: (context, query) => readConnectionPage(context.db.raw, { ...query, tenantId: requireViewer(context).tenantId }),
  count: (context, query) => countConnections(context.db.raw, { ...query, tenantId: requireViewer(context).tenantId }),
});

builder.queryFields((t) => ({
  connection: t.field({
    type: Connection,
    nullable: true,
    description: 'One connection of the caller, or null when there is none with this id (or it was deleted).',
    authScopes: { permission: 'connections:read' },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, context, info) => connectionById(context, assertIdLength(args.id, 'connection'), info),
  }),
}));

const CreateConnectionInput = builder.inputType('CreateConnectionInput', {
  description: 'A catalog application to connect. Members left out default from the application (settings: per kind).',
  fields: (t) => ({
    applicationId: t.id({ required: true }),
    name: t.string(),
    description: t.string(),
    via: t.field({ type: ConnectionVia }),
    metadata: t.field({
      type: 'JSONObject',
      description: 'Members the application kind takes (e.g. propertyId, region), camelCase as the output fields.',
    }),
    settings: t.field({
      type: 'JSONObject',
      description: 'Members the application kind takes: syncInterval (15m, 1h, 6h, 24h), retryAttempts (0–10), webhookEnabled…',
    }),
  }),
});

const UpdateConnectionInput = builder.inputType('UpdateConnectionInput', {
  description:
    'A JSON Merge Patch (RFC 7396): members left out stay; null removes a metadata/settings member, empties description, or removes all of metadata/settings.',
  fields: (t) => ({
    name: t.string(),
    description: t.string(),
    status: t.field({ type: ConnectionStatus, description: 'active ↔ paused; error → active | paused. Other changes are CONFLICT.' }),
    metadata: t.field({ type: 'JSONObject' }),
    settings: t.field({ type: 'JSONObject' }),
  }),
});

/** The connection a write returned, read back with what the operation selects of it (a later deletion included). */
async function connectionForSelection(context: Context, info: GraphQLResolveInfo, id: string) {
  const connection = await connectionById(context, id, info, { deleted: true });
  if (!connection) throw new Error(`connection ${id} was written but is not found`);
  return connection;
}

const DeletedConnection = removalType('DeletedConnection');

builder.mutationFields((t) => ({
  createConnection: t.field({
    type: Connection,
    description: 'Connects a catalog application: pending until its first successful run. 400 lists every problem of the input.',
    authScopes: { permission: 'connections:write' },
    args: { input: t.arg({ type: CreateConnectionInput, required: true }) },
    resolve: async (_root, args, context, info) => {
      const body = bodyOf(args.input, 'input');
      const problems = await createConnectionProblems(body, context.applicationCategory);
      if (problems.length > 0) throw invalidGraphQLInput(problems, 'input');
      const { input } = parsed(parseCreateConnection(body), 'input');
      const tenantId = requireViewer(context).tenantId;
      const id = await once(
        context,
        'createConnection',
        args.input,
        async (sql) =>
          (
            await withGraphQLNames('input', () =>
              createConnection(sql, tenantId, input, actorOf(requireViewer(context)), activityOriginOf(context)),
            )
          ).id,
        (created) => ({ type: 'connection', id: created }),
        async (resource) => resource?.id ?? '',
      );
      return connectionForSelection(context, info, id);
    },
  }),
  updateConnection: t.field({
    type: Connection,
    description: 'Changes a connection (merge patch); a status change the state machine refuses is CONFLICT, and nothing changes.',
    authScopes: { permission: 'connections:write' },
    args: { id: t.arg.id({ required: true }), input: t.arg({ type: UpdateConnectionInput, required: true }) },
    resolve: async (_root, args, context, info) => {
      const { patch } = parsed(parseConnectionPatch(bodyOf(args.input, 'input')), 'input');
      const id = assertIdLength(args.id, 'connection');
      await withGraphQLNames('input', () =>
        updateConnection(context.db.raw, requireViewer(context).tenantId, id, patch, activityOriginOf(context)),
      );
      return connectionForSelection(context, info, id);
    },
  }),
  deleteConnection: t.field({
    type: DeletedConnection,
    description:
      'Deletes a connection: afterwards it is not found anywhere, while its sync history stays readable. NOT_FOUND when there is no such live connection.',
    authScopes: { permission: 'connections:delete' },
    args: { id: t.arg.id({ required: true }) },
    resolve: async (_root, args, context) => {
      // One transaction: the connection goes, and its pending and in-progress runs fail with "connection deleted".
      const { connection } = await deleteConnection(
        context.db.raw,
        requireViewer(context).tenantId,
        assertIdLength(args.id, 'connection'),
        activityOriginOf(context),
      );
      return { id: connection.id };
    },
  }),
}));
