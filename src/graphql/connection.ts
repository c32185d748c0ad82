import { queryFromInfo } from '@pothos/plugin-prisma';
import { ConnectionStatus as ConnectionStatusValues, ConnectionVia as ConnectionViaValues } from '../generated/prisma/enums.js';
import { ApiError } from '../errors.js';
import { keywordSearchWhere, Features } from './application.js';
import { deleteConnection } from '../db/connection-writes.js';
import { builder } from './builder.js';
import { pageComplexity } from './complexity.js';
import { Category } from './category.js';
import type { Columns, PrismaColumn } from '../query/columns.js';
import { assertValueLength, escapeLike, type OrderInput } from '../query/filter.js';
import { filterWhere, orderByOf } from '../query/prisma.js';
import { resourceFilter, resourceOrder } from './filters.js';
import { assertIdLength } from './ids.js';
import { asJsonObject, jsonBoolean, jsonInt, jsonString, type JsonObject } from './json-fields.js';
import { listPage, listType, pageArgs, pageBounds, pageWindow } from './list.js';
import { requireViewer } from './viewer.js';

export const CONNECTION_COLUMNS: Columns<PrismaColumn> = {
  id: { field: 'id', kind: 'string', nullable: false },
  name: { field: 'name', kind: 'string', nullable: false },
  slug: { field: 'slug', kind: 'string', nullable: false },
  description: { field: 'description', kind: 'string', nullable: false },
  logoUrl: { field: 'logoUrl', kind: 'string', nullable: false },
  applicationId: { field: 'applicationId', kind: 'string', nullable: false },
  applicationName: { field: 'application.name', kind: 'string', nullable: false },
  applicationSlug: { field: 'application.slug', kind: 'string', nullable: false },
  categoryId: { field: 'application.categoryId', kind: 'string', nullable: false },
  categorySlug: { field: 'application.category.slug', kind: 'string', nullable: false },
  categoryName: { field: 'application.category.name', kind: 'string', nullable: false },
  via: { field: 'via', kind: 'enum', nullable: false },
  status: { field: 'status', kind: 'enum', nullable: false },
  createdAt: { field: 'createdAt', kind: 'dateTime', nullable: false },
  updatedAt: { field: 'updatedAt', kind: 'dateTime', nullable: false },
};

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

export const Connection = builder.prismaObject('Connection', {
  description: "A tenant's connection of a catalog application.",
  // deletedAt is always loaded so a sync can tell that its connection is gone.
  select: { id: true, deletedAt: true },
  fields: (t) => ({
    id: t.exposeID('id'),
    name: t.exposeString('name'),
    slug: t.exposeString('slug'),
    applicationId: t.exposeString('applicationId'),
    applicationName: t.string({
      select: { application: { select: { name: true } } },
      resolve: (c) => c.application.name,
    }),
    applicationSlug: t.string({
      select: { application: { select: { slug: true } } },
      resolve: (c) => c.application.slug,
    }),
    description: t.exposeString('description'),
    logoUrl: t.exposeString('logoUrl'),
    keywords: t.exposeStringList('keywords'),
    categoryId: t.string({
      select: { application: { select: { categoryId: true } } },
      resolve: (c) => c.application.categoryId,
    }),
    categorySlug: t.string({
      select: { application: { select: { category: { select: { slug: true } } } } },
      resolve: (c) => c.application.category.slug,
    }),
    categoryName: t.string({
      select: { application: { select: { category: { select: { name: true } } } } },
      resolve: (c) => c.application.category.name,
    }),
    via: t.expose('via', { type: ConnectionVia }),
    status: t.expose('status', { type: ConnectionStatus }),
    metadata: t.field({ type: ConnectionMetadata, select: { metadata: true }, resolve: (c) => asJsonObject(c.metadata) }),
    settings: t.field({ type: ConnectionSettings, select: { settings: true }, resolve: (c) => asJsonObject(c.settings) }),
    features: t.field({
      type: Features,
      description: "The connected application's features.",
      select: { application: { select: { features: true } } },
      resolve: (c) => asJsonObject(c.application.features),
    }),
    additionalInformation: t.string({
      description: "The connected application's additional information (HTML).",
      select: { application: { select: { additionalInformation: true } } },
      resolve: (c) => c.application.additionalInformation,
    }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime' }),
    application: t.relation('application'),
    category: t.field({
      type: Category,
      select: (_args, _context, nestedSelection) => ({
        application: { select: { category: nestedSelection() } },
      }),
      resolve: (c) => c.application.category,
    }),
  }),
});

// Sync.connection, declared here where Connection lives (sync.ts declares Connection.syncs).
builder.prismaObjectFields('Sync', (t) => ({
    connection: t.field({
      type: Connection,
      nullable: true,
      description: 'The synchronized connection; null once it was deleted (its history stays readable).',
      authScopes: { permission: 'connections:read' },
      select: (_args, _context, nestedSelection) => ({ connection: nestedSelection() }),
      resolve: (sync) => (sync.connection.deletedAt ? null : sync.connection),
    }),
}));

const ConnectionFilter = resourceFilter('ConnectionFilter', CONNECTION_COLUMNS, { via: ConnectionVia, status: ConnectionStatus });

const ConnectionOrder = resourceOrder('ConnectionOrder', CONNECTION_COLUMNS);
const ConnectionList = listType('ConnectionList', Connection, "A page of the caller's connections.");

/** Where clause for one live (not deleted) connection of the caller. */
function ownConnection(tenantId: string, id: string) {
  return { id: assertIdLength(id, 'connection'), tenantId, deletedAt: null };
}

builder.queryFields((t) => ({
  connections: t.field({
    type: ConnectionList,
    complexity: pageComplexity(CONNECTION_PAGE),
    description: "The caller's connected applications, by name unless orderBy says otherwise.",
    authScopes: { permission: 'connections:read' },
    args: {
      categoryId: t.arg.id({ description: 'Only connections of applications in this category (exact id).' }),
      name: t.arg.string({ description: 'Only connections whose name contains this text, case-insensitively.' }),
      filter: t.arg({ type: ConnectionFilter }),
      search: t.arg.string({ description: 'Case-insensitive keyword over name, slug, description and keywords.' }),
      orderBy: t.arg({ type: [ConnectionOrder] }),
      ...pageArgs(t.arg, CONNECTION_PAGE),
    },
    resolve: (_root, args, context, info) => {
      const viewer = requireViewer(context);
      const { take, skip } = pageWindow(args, CONNECTION_PAGE);
      assertValueLength('name', args.name);
      const where = {
        AND: [
          { tenantId: viewer.tenantId, deletedAt: null },
          args.categoryId ? { application: { categoryId: assertIdLength(args.categoryId, 'category') } } : {},
          args.name ? { name: { contains: escapeLike(args.name), mode: 'insensitive' as const } } : {},
          filterWhere(args.filter, CONNECTION_COLUMNS),
          keywordSearchWhere(args.search),
        ],
      };
      const orderBy = orderByOf(args.orderBy as OrderInput[] | null, CONNECTION_COLUMNS, [{ field: 'name' }]);
      const prisma = context.db.prisma;
      return listPage(
        () => prisma.connection.findMany({ ...queryFromInfo({ context, info, path: ['nodes'] }), where, orderBy, take, skip }),
        () => prisma.connection.count({ where }),
        take,
        skip,
      );
    },
  }),
  connection: t.prismaField({
    type: 'Connection',
    nullable: true,
    description: 'One connection of the caller, or null when there is none with this id (or it was deleted).',
    authScopes: { permission: 'connections:read' },
    args: { id: t.arg.id({ required: true }) },
    resolve: (query, _root, args, context) =>
      context.db.prisma.connection.findFirst({ ...query, where: ownConnection(requireViewer(context).tenantId, args.id) }),
  }),
}));

const DeletedConnection = builder.objectRef<{ id: string }>('DeletedConnection').implement({
  fields: (t) => ({ id: t.exposeID('id') }),
});

builder.mutationFields((t) => ({
  deleteConnection: t.field({
    type: DeletedConnection,
    description:
      'Deletes a connection: afterwards it is not found anywhere, while its sync history stays readable. NOT_FOUND when there is no such live connection.',
    authScopes: { permission: 'connections:delete' },
    args: { id: t.arg.id({ required: true }) },
    resolve: async (_root, args, context) => {
      // One transaction: the connection goes, and its pending and in-progress runs fail with "connection deleted".
      const { connection } = await deleteConnection(context.db.raw, requireViewer(context).tenantId, assertIdLength(args.id, 'connection'));
      return { id: connection.id };
    },
  }),
}));
