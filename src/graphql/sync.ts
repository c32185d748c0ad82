import type { PrismaObjectRef } from '@pothos/plugin-prisma';
import type { GraphQLResolveInfo } from 'graphql';
import type { Context } from '../context.js';
import type { Prisma } from '../generated/prisma/client.js';
import type PrismaTypes from '../generated/pothos-prisma-types.js';
import { SyncStatus as SyncStatusValues } from '../generated/prisma/enums.js';
import { builder } from './builder.js';
import { pageComplexity } from './complexity.js';
import { Connection } from './connection.js';
import {
  BooleanFilter,
  type ColumnSpec,
  DateTimeFilter,
  enumFilter,
  type FilterRenderer,
  type OrderInput,
  resourceFilter,
  resourceOrder,
  searchTerm,
  StringFilter,
} from './filters.js';
import { assertIdLength } from './ids.js';
import { asJsonObject, jsonBoolean, jsonInt, jsonString, jsonStringList, type JsonObject } from './json-fields.js';
import { listPage, listType, pageWindow } from './list.js';
import { arrayLiteral, filterSql, orderSql, selectedFields, SqlParams, sqlRenderer } from './sql.js';
import { requireViewer } from './viewer.js';

/** The filterable and sortable columns; `sql` as the hand-written list statements write them (alias "t0"). */
export const SYNC_COLUMNS: Record<string, ColumnSpec> = {
  id: { column: 'id', sql: '"t0"."id"', kind: 'string', nullable: false },
  connectionId: { column: 'connectionId', sql: '"t0"."connection_id"', kind: 'string', nullable: false },
  status: { column: 'status', sql: '"t0"."status"', sqlType: 'sync_status', kind: 'enum', nullable: false },
  startedAt: { column: 'startedAt', sql: '"t0"."started_at"', kind: 'dateTime', nullable: false },
  finishedAt: { column: 'finishedAt', sql: '"t0"."finished_at"', kind: 'dateTime', nullable: true },
  errorMessage: { column: 'errorMessage', sql: '"t0"."error_message"', kind: 'string', nullable: true },
  fileUrl: { column: 'fileUrl', sql: '"t0"."file_url"', kind: 'string', nullable: true },
  isAutoMigrate: { column: 'isAutoMigrate', sql: '"t0"."is_auto_migrate"', kind: 'boolean', nullable: true },
};

/** Every property of a sync row (as Prisma names it) and the SQL that reads it into that name. */
const SYNC_ROW_SQL: Record<string, string> = {
  id: '"t0"."id"',
  tenantId: '"t0"."tenant_id" AS "tenantId"',
  connectionId: '"t0"."connection_id" AS "connectionId"',
  status: '"t0"."status"::text',
  startedAt: '"t0"."started_at" AS "startedAt"',
  finishedAt: '"t0"."finished_at" AS "finishedAt"',
  errorMessage: '"t0"."error_message" AS "errorMessage"',
  summary: '"t0"."summary"',
  fileUrl: '"t0"."file_url" AS "fileUrl"',
  isAutoMigrate: '"t0"."is_auto_migrate" AS "isAutoMigrate"',
  diff: '"t0"."diff"',
  checksum: '"t0"."checksum"',
  attempt: '"t0"."attempt"',
  retryOfId: '"t0"."retry_of_id" AS "retryOfId"',
  dueAt: '"t0"."due_at" AS "dueAt"',
  leaseExpiresAt: '"t0"."lease_expires_at" AS "leaseExpiresAt"',
  workerId: '"t0"."worker_id" AS "workerId"',
};

/** Sync fields that read row properties of another name; every other field reads its namesake. */
const SYNC_FIELD_READS: Record<string, string[]> = {
  __typename: [],
  summaryJson: ['summary'],
  diffJson: ['diff'],
  checksumJson: ['checksum'],
  // Loaded by plugin-prisma from the row's id (one batched statement for the page).
  connection: [],
};

/**
 * The SELECT list for the Sync fields an operation asks for: the REST `select` (through @include) and
 * GraphQL selections reach the SQL. The id is always read; an unknown field reads the whole row.
 */
function syncSelectList(fields: Set<string> | null, always: string[] = []): string {
  const properties = new Set(['id', ...always]);
  for (const field of fields ?? []) {
    const reads = SYNC_FIELD_READS[field] ?? (field in SYNC_ROW_SQL ? [field] : null);
    if (!reads) return Object.values(SYNC_ROW_SQL).join(', ');
    for (const property of reads) properties.add(property);
  }
  return Object.keys(SYNC_ROW_SQL)
    .filter((property) => properties.has(property))
    .map((property) => SYNC_ROW_SQL[property])
    .join(', ');
}

/** Sync lists: 10 per page by default (the spec's observed per_page), at most 100. */
export const SYNC_PAGE = { defaultLimit: 10, maxLimit: 100 };

/** Newest first, as the spec observes. */
export const SYNC_DEFAULT_ORDER: OrderInput[] = [{ field: 'startedAt', direction: 'DESC' }];

/** A sync row as the list statements read it: the selected properties of Prisma's Sync. */
export type SyncRow = Prisma.SyncGetPayload<object>;

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

/** Annotated: Sync and Connection refer to each other, which TypeScript cannot infer through. */
export const Sync: PrismaObjectRef<typeof builder.$inferSchemaTypes, PrismaTypes['Sync'], SyncRow> = builder.prismaObject('Sync', {
  description: 'One synchronization run of a connection.',
  // Whole rows, not plugin-prisma's per-field select mode: the lists read rows with hand-written SQL
  // (column pushdown done there), and without `select` plain fields resolve without per-field bookkeeping.
  findUnique: (sync, context) => ({ id: sync.id, tenantId: requireViewer(context).tenantId }),
  fields: (t) => ({
    id: t.exposeID('id'),
    tenantId: t.exposeString('tenantId'),
    connectionId: t.exposeString('connectionId'),
    status: t.expose('status', { type: SyncStatus }),
    startedAt: t.expose('startedAt', { type: 'DateTime' }),
    finishedAt: t.expose('finishedAt', { type: 'DateTime', nullable: true, description: 'Null while the run is not finished.' }),
    errorMessage: t.exposeString('errorMessage', { nullable: true, description: 'Text when the run failed.' }),
    summary: t.field({ type: SyncSummary, resolve: (s) => asJsonObject(s.summary) }),
    summaryJson: t.string({
      description: 'summary as a JSON-encoded string (the REST representation).',
      resolve: (s) => JSON.stringify(s.summary),
    }),
    fileUrl: t.exposeString('fileUrl', { nullable: true }),
    isAutoMigrate: t.exposeBoolean('isAutoMigrate', { nullable: true }),
    diff: t.field({ type: SyncDiff, resolve: (s) => asJsonObject(s.diff) }),
    diffJson: t.string({ resolve: (s) => JSON.stringify(s.diff) }),
    checksum: t.field({ type: SyncChecksum, resolve: (s) => asJsonObject(s.checksum) }),
    checksumJson: t.string({ resolve: (s) => JSON.stringify(s.checksum) }),
    // The engine's side of a run (GraphQL only: the REST record keeps exactly the spec's fields).
    attempt: t.exposeInt('attempt', { description: '1 for a triggered or scheduled run, n + 1 for the retry of attempt n.' }),
    retryOfId: t.exposeID('retryOfId', { nullable: true, description: 'The failed run this one retries.' }),
    dueAt: t.expose('dueAt', { type: 'DateTime', nullable: true, description: 'When a pending run may be claimed (later for a retry in back-off).' }),
    leaseExpiresAt: t.expose('leaseExpiresAt', {
      type: 'DateTime',
      nullable: true,
      description: 'While in progress: when the claim lapses without a progress report.',
    }),
    workerId: t.exposeString('workerId', { nullable: true, description: 'Who claimed the run (the credential\'s subject).' }),
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
function syncSearch<Condition>(search: string | null | undefined, renderer: FilterRenderer<Condition>): Condition {
  const term = searchTerm(search);
  if (!term) return renderer.all([]);
  const statuses = Object.values(SyncStatusValues).filter((status) => status.includes(term));
  const errorMessage = renderer.compare(SYNC_COLUMNS.errorMessage!, 'contains', term);
  return statuses.length > 0 ? renderer.any([errorMessage, renderer.compare(SYNC_COLUMNS.status!, 'in', statuses)]) : errorMessage;
}

/** The arguments every sync list takes: the root `syncs` field and `Connection.syncs`. */
export interface SyncListArgs {
  filter?: Record<string, unknown> | null;
  search?: string | null;
  orderBy?: readonly unknown[] | null;
  limit?: number | null;
  offset?: number | null;
}

/**
 * A sync list as SQL: the caller's tenant first, then `scope` (one connection, or the batch's parent), the
 * filter and the search. `params` holds the bind values of every part.
 */
function syncListSql(args: SyncListArgs, context: Context, scope: (params: SqlParams) => string[]) {
  const { take, skip } = pageWindow(args, SYNC_PAGE);
  const params = new SqlParams();
  const render = sqlRenderer(params);
  const tenant = `"t0"."tenant_id" = ${params.add(requireViewer(context).tenantId)}`;
  const where = render.all([tenant, ...scope(params), filterSql(args.filter, SYNC_COLUMNS, params), syncSearch(args.search, render)]);
  const orderBy = orderSql(args.orderBy as OrderInput[] | null, SYNC_COLUMNS, SYNC_DEFAULT_ORDER);
  return { params, where, orderBy, take, skip, from: `FROM "public"."syncs" AS "t0"` };
}

/** The latest syncs (a page of each) of several connections in one statement: `Connection.syncs`. */
export async function loadConnectionSyncs(
  connectionIds: readonly string[],
  context: Context,
  args: SyncListArgs,
  info: GraphQLResolveInfo,
): Promise<SyncRow[]> {
  const sql = syncListSql(args, context, () => ['"t0"."connection_id" = "parent"."id"']);
  const parents = sql.params.add(arrayLiteral(connectionIds));
  // The rows are grouped by connection afterwards, so the connection id is always read.
  const select = syncSelectList(selectedFields(info, []), ['connectionId']);
  const page = `SELECT ${select} ${sql.from} WHERE ${sql.where} ORDER BY ${sql.orderBy} LIMIT ${sql.take} OFFSET ${sql.skip}`;
  return context.db.raw.query<SyncRow>(
    `SELECT "page".* FROM unnest(${parents}::text[]) AS "parent"("id") CROSS JOIN LATERAL (${page}) AS "page"`,
    sql.params.values,
  );
}

/** How many syncs of each connection match the filter and search, in one statement: `Connection.syncCount`. */
export async function countConnectionSyncs(connectionIds: readonly string[], context: Context, args: SyncListArgs): Promise<number[]> {
  const sql = syncListSql(args, context, (params) => [`"t0"."connection_id" = ANY(${params.add(arrayLiteral(connectionIds))}::text[])`]);
  const rows = await context.db.raw.query<{ connectionId: string; count: number }>(
    `SELECT "t0"."connection_id" AS "connectionId", count(*)::int AS "count" ${sql.from} WHERE ${sql.where} GROUP BY "t0"."connection_id"`,
    sql.params.values,
  );
  const counts = new Map(rows.map((row) => [row.connectionId, row.count]));
  return connectionIds.map((id) => counts.get(id) ?? 0);
}

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
      limit: t.arg.int({ description: `Page size, 1 to ${SYNC_PAGE.maxLimit}; default ${SYNC_PAGE.defaultLimit}.` }),
      offset: t.arg.int(),
    },
    // Hand-written SQL rather than Prisma: the history is the hot read, and Prisma's per-statement work cost
    // more than the rest of the request (BENCHMARKS.md).
    resolve: (_root, args, context, info) => {
      const connectionId = args.connectionId ? assertIdLength(args.connectionId, 'connection') : null;
      const sql = syncListSql(args, context, (params) => (connectionId ? [`"t0"."connection_id" = ${params.add(connectionId)}`] : []));
      const raw = context.db.raw;
      return listPage(
        () => {
          const select = syncSelectList(selectedFields(info, ['nodes']));
          const page = `SELECT ${select} ${sql.from} WHERE ${sql.where} ORDER BY ${sql.orderBy} LIMIT ${sql.take} OFFSET ${sql.skip}`;
          return raw.query<SyncRow>(page, sql.params.values);
        },
        async () => {
          const [row] = await raw.query<{ count: number }>(`SELECT count(*)::int AS "count" ${sql.from} WHERE ${sql.where}`, sql.params.values);
          return row?.count ?? 0;
        },
        sql.take,
        sql.skip,
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
        where: { id: assertIdLength(args.id, 'sync'), tenantId: requireViewer(context).tenantId },
      }),
  }),
}));
