import { queryFromInfo } from '@pothos/plugin-prisma';
import { SyncStatus as SyncStatusValues } from '../generated/prisma/enums.js';
import { builder } from './builder.js';
import { Connection } from './connection.js';
import {
  BooleanFilter,
  type ColumnSpec,
  DateTimeFilter,
  enumFilter,
  escapeLike,
  filterWhere,
  type OrderInput,
  orderByOf,
  resourceFilter,
  resourceOrder,
  StringFilter,
} from './filters.js';
import { assertIdShape } from './ids.js';
import { asJsonObject, jsonBoolean, jsonInt, jsonString, jsonStringList, type JsonObject } from './json-fields.js';
import { listPage, listType, pageWindow } from './list.js';
import { requireViewer } from './viewer.js';

export const SYNC_COLUMNS: Record<string, ColumnSpec> = {
  id: { column: 'id', kind: 'string', nullable: false },
  connectionId: { column: 'connectionId', kind: 'string', nullable: false },
  status: { column: 'status', kind: 'enum', nullable: false },
  startedAt: { column: 'startedAt', kind: 'dateTime', nullable: false },
  finishedAt: { column: 'finishedAt', kind: 'dateTime', nullable: true },
  errorMessage: { column: 'errorMessage', kind: 'string', nullable: true },
  fileUrl: { column: 'fileUrl', kind: 'string', nullable: true },
  isAutoMigrate: { column: 'isAutoMigrate', kind: 'boolean', nullable: true },
};

/** Sync lists: 10 per page by default (the spec's observed per_page), at most 100. */
export const SYNC_PAGE = { defaultLimit: 10, maxLimit: 100 };

/** Newest first, as the spec observes. */
export const SYNC_DEFAULT_ORDER: OrderInput[] = [{ field: 'startedAt', direction: 'DESC' }];

export const SyncStatus = builder.enumType(SyncStatusValues, {
  name: 'SyncStatus',
  description: 'pending → in_progress → success | failed.',
});

const SyncSummary = builder.objectRef<JsonObject>('SyncSummary').implement({
  description: 'Progress and outcome counters of a run. Members depend on the status; absent ones are null.',
  fields: (t) => ({
    queued: t.boolean({ nullable: true, resolve: (s) => jsonBoolean(s, 'queued') }),
    estimatedItems: t.int({ nullable: true, resolve: (s) => jsonInt(s, 'estimated_items') }),
    processed: t.int({ nullable: true, resolve: (s) => jsonInt(s, 'processed') }),
    inProgress: t.boolean({ nullable: true, resolve: (s) => jsonBoolean(s, 'in_progress') }),
    inserted: t.int({ nullable: true, resolve: (s) => jsonInt(s, 'inserted') }),
    updated: t.int({ nullable: true, resolve: (s) => jsonInt(s, 'updated') }),
    deleted: t.int({ nullable: true, resolve: (s) => jsonInt(s, 'deleted') }),
    errors: t.stringList({ nullable: true, resolve: (s) => jsonStringList(s, 'errors') }),
  }),
});

const SyncDiff = builder.objectRef<JsonObject>('SyncDiff').implement({
  description: 'External record ids the run added, changed and removed. Empty (all null) when nothing is recorded.',
  fields: (t) => ({
    added: t.stringList({ nullable: true, resolve: (d) => jsonStringList(d, 'added') }),
    changed: t.stringList({ nullable: true, resolve: (d) => jsonStringList(d, 'changed') }),
    removed: t.stringList({ nullable: true, resolve: (d) => jsonStringList(d, 'removed') }),
  }),
});

const SyncChecksum = builder.objectRef<JsonObject>('SyncChecksum').implement({
  description: 'Checksums of the run; each member is an empty string when unset.',
  fields: (t) => ({
    b: t.string({ resolve: (c) => jsonString(c, 'b') ?? '' }),
    f: t.string({ resolve: (c) => jsonString(c, 'f') ?? '' }),
    ac: t.string({ resolve: (c) => jsonString(c, 'ac') ?? '' }),
    ap: t.string({ resolve: (c) => jsonString(c, 'ap') ?? '' }),
    ls: t.string({ resolve: (c) => jsonString(c, 'ls') ?? '' }),
    file: t.string({ resolve: (c) => jsonString(c, 'file') ?? '' }),
  }),
});

export const Sync = builder.prismaObject('Sync', {
  description: 'One synchronization run of a connection.',
  select: { id: true },
  fields: (t) => ({
    id: t.exposeID('id'),
    tenantId: t.exposeString('tenantId'),
    connectionId: t.exposeString('connectionId'),
    status: t.expose('status', { type: SyncStatus }),
    startedAt: t.expose('startedAt', { type: 'DateTime' }),
    finishedAt: t.expose('finishedAt', { type: 'DateTime', nullable: true, description: 'Null while the run is not finished.' }),
    errorMessage: t.exposeString('errorMessage', { nullable: true, description: 'Text when the run failed.' }),
    summary: t.field({ type: SyncSummary, select: { summary: true }, resolve: (s) => asJsonObject(s.summary) }),
    summaryJson: t.string({
      description: 'summary as a JSON-encoded string (the REST representation).',
      select: { summary: true },
      resolve: (s) => JSON.stringify(s.summary),
    }),
    fileUrl: t.exposeString('fileUrl', { nullable: true }),
    isAutoMigrate: t.exposeBoolean('isAutoMigrate', { nullable: true }),
    diff: t.field({ type: SyncDiff, select: { diff: true }, resolve: (s) => asJsonObject(s.diff) }),
    diffJson: t.string({ select: { diff: true }, resolve: (s) => JSON.stringify(s.diff) }),
    checksum: t.field({ type: SyncChecksum, select: { checksum: true }, resolve: (s) => asJsonObject(s.checksum) }),
    checksumJson: t.string({ select: { checksum: true }, resolve: (s) => JSON.stringify(s.checksum) }),
    connection: t.field({
      type: Connection,
      nullable: true,
      description: 'The synchronized connection; null once it was deleted (its history stays readable).',
      authScopes: { permission: 'connections:read' },
      select: (_args, _context, nestedSelection) => ({ connection: nestedSelection() }),
      resolve: (sync) => (sync.connection.deletedAt ? null : sync.connection),
    }),
  }),
});

export const SyncFilter = resourceFilter('SyncFilter', (t) => ({
  id: t.field({ type: StringFilter }),
  connectionId: t.field({ type: StringFilter }),
  status: t.field({ type: enumFilter('SyncStatusFilter', SyncStatus) }),
  startedAt: t.field({ type: DateTimeFilter }),
  finishedAt: t.field({ type: DateTimeFilter }),
  errorMessage: t.field({ type: StringFilter }),
  fileUrl: t.field({ type: StringFilter }),
  isAutoMigrate: t.field({ type: BooleanFilter }),
}));

export const SyncOrder = resourceOrder('SyncOrder', SYNC_COLUMNS);
const SyncList = listType('SyncList', Sync, 'A page of sync records.');

/** `search`: case-insensitive substring of error_message, or of the status name. */
export function syncSearchWhere(search: string | null | undefined) {
  const term = search?.trim().toLowerCase();
  if (!term) return {};
  const statuses = Object.values(SyncStatusValues).filter((status) => status.includes(term));
  return {
    OR: [
      { errorMessage: { contains: escapeLike(term), mode: 'insensitive' as const } },
      ...(statuses.length > 0 ? [{ status: { in: statuses } }] : []),
    ],
  };
}

export function syncWhere(args: { filter?: Record<string, unknown> | null; search?: string | null }) {
  return [filterWhere(args.filter, SYNC_COLUMNS), syncSearchWhere(args.search)];
}

builder.queryFields((t) => ({
  syncs: t.field({
    type: SyncList,
    description: "The caller's sync history, newest started first unless orderBy says otherwise.",
    authScopes: { permission: 'syncs:read' },
    args: {
      connectionId: t.arg.id({ description: 'Only runs of this connection (deleted connections included).' }),
      filter: t.arg({ type: SyncFilter }),
      search: t.arg.string({ description: 'Case-insensitive keyword over error message and status.' }),
      orderBy: t.arg({ type: [SyncOrder] }),
      limit: t.arg.int({ description: `Page size, 1 to ${SYNC_PAGE.maxLimit}; default ${SYNC_PAGE.defaultLimit}.` }),
      offset: t.arg.int(),
    },
    resolve: (_root, args, context, info) => {
      const viewer = requireViewer(context);
      const { take, skip } = pageWindow(args, SYNC_PAGE);
      const connection = args.connectionId ? { connectionId: assertIdShape(args.connectionId, 'connection') } : {};
      const where = { AND: [{ tenantId: viewer.tenantId, ...connection }, ...syncWhere(args)] };
      const orderBy = orderByOf(args.orderBy as OrderInput[] | null, SYNC_COLUMNS, SYNC_DEFAULT_ORDER);
      const prisma = context.db.prisma;
      return listPage(
        () => prisma.sync.findMany({ ...queryFromInfo({ context, info, path: ['nodes'] }), where, orderBy, take, skip }),
        () => prisma.sync.count({ where }),
        take,
        skip,
      );
    },
  }),
  sync: t.prismaField({
    type: 'Sync',
    nullable: true,
    description: 'One sync record of the caller, or null when there is none with this id.',
    authScopes: { permission: 'syncs:read' },
    args: { id: t.arg.id({ required: true }) },
    resolve: (query, _root, args, context) =>
      context.db.prisma.sync.findFirst({
        ...query,
        where: { id: assertIdShape(args.id, 'sync'), tenantId: requireViewer(context).tenantId },
      }),
  }),
}));
