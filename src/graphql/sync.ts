import type { FieldMap } from '@pothos/core';
import type { GraphQLResolveInfo } from 'graphql';
import type { Context } from '../context.js';
import {
  countableByKeys,
  countConnectionSyncs,
  countSyncs,
  isSyncProperty,
  readConnectionSyncPages,
  readSync,
  readSyncPage,
  SYNC_COLUMNS,
  type SyncListQuery,
  type SyncListRow,
  syncExportRows,
  syncSearchSql,
} from '../db/sync-queries.js';
import type { Prisma } from '../generated/prisma/client.js';
import { SYNC, type SyncProperty } from '../domain/sync-record.js';
import { SyncStatus as SyncStatusValues } from '../generated/prisma/enums.js';
import { filterColumns, type OrderInput, orderKeys, searchTerm } from '../query/filter.js';
import { allOf, filterSql, keysetOrder, keyValuesOf } from '../query/sql.js';
import { nextScheduledRuns } from '../db/sync-runs.js';
import { builder } from './builder.js';
import { pageComplexity } from './complexity.js';
import { recordFields } from './record-fields.js';
import { resourceFilter, resourceOrder } from './filters.js';
import { assertIdLength } from './ids.js';
import { asJsonObject, jsonBoolean, jsonInt, jsonString, jsonStringList, type JsonObject } from './json-fields.js';
import { JSON_TEXT_OF } from '../query/list-plan.js';
import { listPage, listType, offsetWindow, pageArgs, type PageWindow, pageWindow } from './list.js';
import { pageBounds } from '../query/page-bounds.js';
import { type FieldReads, selectedProperties } from './selection.js';
import { requireViewer } from './viewer.js';

/** How Sync fields read a sync row: the JSON strings read their object, and the connection is loaded by its id. */
const SYNC_READS: FieldReads = {
  fields: {
    __typename: [],
    summaryJson: ['summary'],
    diffJson: ['diff'],
    checksumJson: ['checksum'],
    // Declared in connection.ts; loaded by its id, for the whole page in one statement.
    connection: ['connectionId'],
    connectionName: ['connectionId'],
  },
  isProperty: isSyncProperty,
};

/**
 * The row properties the Sync fields selected at `path` read: the REST `select` (through @include) and GraphQL
 * selections reach the SQL. null (the whole row) when a field is not known here.
 */
function syncProperties(info: GraphQLResolveInfo, path: readonly string[]): Set<SyncProperty> | null {
  return selectedProperties(info, path, SYNC_READS) as Set<SyncProperty> | null;
}

/** Sync lists: 10 per page by default (the spec's observed per_page), at most 100. */
export const SYNC_PAGE = pageBounds(10, 100);

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
  // Whole rows, not plugin-prisma's per-field select mode: the lists read rows with hand-written SQL
  // (column pushdown done there), and without `select` plain fields resolve without per-field bookkeeping.
  findUnique: (sync, context) => ({ id: sync.id, tenantId: requireViewer(context).tenantId }),
  fields: (t) => {
    // The REST representation of a JSON column: its JSON text, which an export writes from the column's text.
    const jsonTextField = (property: 'summary' | 'diff' | 'checksum', description?: string) =>
      t.string({ description, extensions: { [JSON_TEXT_OF]: property }, resolve: (s) => JSON.stringify(s[property]) });
    // The fields that are not a plain expose of a column: a JSON column as an object and as its JSON text.
    const custom: Record<string, FieldMap> = {
      summary: {
        summary: t.field({ type: SyncSummary, resolve: (s) => asJsonObject(s.summary) }),
        summaryJson: jsonTextField('summary', 'summary as a JSON-encoded string (the REST representation).'),
      },
      diff: { diff: t.field({ type: SyncDiff, resolve: (s) => asJsonObject(s.diff) }), diffJson: jsonTextField('diff') },
      checksum: {
        checksum: t.field({ type: SyncChecksum, resolve: (s) => asJsonObject(s.checksum) }),
        checksumJson: jsonTextField('checksum'),
      },
    };
    // Every other field a column's plain expose, as the descriptor (domain/sync-record.ts) says, in its order.
    return recordFields(t, SYNC.fields, custom, { sync_status: SyncStatus });
  },
});

const SyncFilter = resourceFilter('SyncFilter', SYNC_COLUMNS, { status: SyncStatus });

const SyncOrder = resourceOrder('SyncOrder', SYNC_COLUMNS);
const SyncList = listType('SyncList', Sync, 'A page of sync records.');

/** The arguments every sync list takes: the root `syncs` field and `Connection.syncs`. */
interface SyncListArgs {
  filter?: Record<string, unknown> | null;
  search?: string | null;
  orderBy?: readonly unknown[] | null;
  limit?: number | null;
  offset?: number | null;
  after?: string | null;
}

/**
 * The lists' rows as the Sync object's shape (Prisma's Sync). Their timestamps are the text PostgreSQL wrote in
 * the API's format, not Dates: each Sync field that reads one is a DateTime, whose serialize takes either
 * (src/graphql/scalars.ts), and no resolver reads them otherwise. The one place the two shapes meet.
 */
function asSyncObjects(rows: SyncListRow[]): Prisma.SyncGetPayload<object>[] {
  return rows as unknown as Prisma.SyncGetPayload<object>[];
}

/** The sort keys of a sync list: its order, or newest started first; then the id. */
function syncOrderKeys(args: SyncListArgs) {
  return orderKeys(args.orderBy as OrderInput[] | null, SYNC_COLUMNS, SYNC_DEFAULT_ORDER);
}

/** A sync list's arguments as the data layer's question: the caller's tenant, conditions, order and page. */
function syncListQuery(
  args: SyncListArgs,
  context: Context,
  properties: ReadonlySet<SyncProperty> | null,
  window: Pick<PageWindow, 'take' | 'skip' | 'after'>,
): SyncListQuery {
  const term = searchTerm(args.search);
  const keys = syncOrderKeys(args);
  return {
    tenantId: requireViewer(context).tenantId,
    where: allOf([filterSql(args.filter, SYNC_COLUMNS), syncSearchSql(term)]),
    // A search reads error_message, so only a list without one can be counted from the maintained counts.
    totalFromCounts: term === null && countableByKeys(filterColumns(args.filter, SYNC_COLUMNS)),
    ...keysetOrder(keys, window.after),
    indexOrdered: !args.orderBy?.length,
    take: window.take,
    skip: window.skip,
    properties,
  };
}

// Connection.syncs and Connection.syncCount, declared here where the sync list lives. Loaded with one
// statement for all the connections of a page: per-connection pages through a LATERAL join, counts
// grouped by connection. One loader per place in the operation (`byPath`), so each place's arguments and
// selection hold for its batch.
builder.prismaObjectFields('Connection', (t) => ({
  syncs: t.loadableGroup({
    type: Sync,
    complexity: pageComplexity(SYNC_PAGE),
    description: `Runs of this connection, newest first unless orderBy says otherwise; limit 1 to ${SYNC_PAGE.maxLimit}.`,
    authScopes: { permission: 'syncs:read' },
    args: {
      filter: t.arg({ type: SyncFilter }),
      search: t.arg.string(),
      orderBy: t.arg({ type: [SyncOrder] }),
      ...pageArgs(t.arg, SYNC_PAGE, { defaults: true, cursor: false }),
    },
    byPath: true,
    load: (ids: string[], context, args, info: GraphQLResolveInfo) =>
      readConnectionSyncPages(
        context.db.raw,
        ids,
        syncListQuery(args, context, syncProperties(info, []), { ...offsetWindow(args, SYNC_PAGE), after: null }),
      ).then(asSyncObjects),
    group: (sync) => sync.connectionId,
    resolve: (connection) => connection.id,
  }),
  syncCount: t.loadable({
    type: 'Int',
    description: 'Number of runs matching the filter and search.',
    authScopes: { permission: 'syncs:read' },
    args: { filter: t.arg({ type: SyncFilter }), search: t.arg.string() },
    byPath: true,
    load: (ids: string[], context, args) =>
      countConnectionSyncs(context.db.raw, ids, syncListQuery(args, context, new Set(), { take: 0, skip: 0, after: null })),
    resolve: (connection) => connection.id,
  }),
  nextScheduledRunAt: t.loadable({
    type: 'DateTime',
    nullable: true,
    description:
      'When the scheduler queues the next run: sync_interval after the newest run started, or now when that has passed (at its next tick). Null when it schedules none: paused, in error, no sync_interval, or a run pending or in progress.',
    authScopes: { permission: 'syncs:read' },
    load: async (ids: string[], context) => {
      const due = await nextScheduledRuns(context.db.raw, requireViewer(context).tenantId, ids);
      return ids.map((id) => due.get(id) ?? null);
    },
    resolve: (connection) => connection.id,
  }),
}));

builder.queryFields((t) => ({
  syncs: t.field({
    type: SyncList,
    complexity: pageComplexity(SYNC_PAGE),
    description: "The caller's sync history, newest started first unless orderBy says otherwise.",
    authScopes: { permission: 'syncs:read' },
    args: {
      connectionId: t.arg.id({ description: 'Only runs of this connection (deleted connections included).' }),
      filter: t.arg({ type: SyncFilter }),
      search: t.arg.string({ description: 'Case-insensitive keyword over error message and status.' }),
      orderBy: t.arg({ type: [SyncOrder] }),
      ...pageArgs(t.arg, SYNC_PAGE, { limitDescription: `Page size, 1 to ${SYNC_PAGE.maxLimit}; default ${SYNC_PAGE.defaultLimit}.` }),
    },
    // Hand-written SQL rather than Prisma: the history is the hot read, and Prisma's per-statement work cost
    // more than the rest of the request.
    resolve: async (_root, args, context, info) => {
      const connectionId = args.connectionId ? assertIdLength(args.connectionId, 'connection') : null;
      const window = await pageWindow(args, SYNC_PAGE, context, { list: 'syncs', args, keyCount: syncOrderKeys(args).length });
      const query = syncListQuery(args, context, syncProperties(info, ['nodes']), window);
      const raw = context.db.raw;
      return listPage(
        (take) => readSyncPage(raw, { ...query, take }, connectionId).then(asSyncObjects),
        () => countSyncs(raw, query, connectionId),
        window,
        (row) => keyValuesOf(row as unknown as Record<string, unknown>, query.keys.length),
        syncExportRows(raw, context.db.kind, query, connectionId),
      );
    },
  }),
  sync: t.field({
    type: Sync,
    nullable: true,
    description: 'One sync record of the caller, or null when there is none with this id.',
    authScopes: { permission: 'syncs:read' },
    args: { id: t.arg.id({ required: true }) },
    // Hand-written SQL as the lists: the selected columns of the caller's run.
    resolve: async (_root, args, context, info) => {
      const row = await readSync(
        context.db.raw,
        requireViewer(context).tenantId,
        assertIdLength(args.id, 'sync'),
        syncProperties(info, []),
      );
      return row ? asSyncObjects([row])[0]! : null;
    },
  }),
}));
