import { actorOf } from '../auth/audit.js';
import { GraphQLError, type GraphQLResolveInfo, Kind, valueFromASTUntyped } from 'graphql';
import type { Context } from '../context.js';
import { createConnection, updateConnection } from '../db/connection-writes.js';
import { hashRequestBody, IDEMPOTENCY_KEY_PATTERN, type IdempotentResource, runIdempotently } from '../db/idempotency.js';
import { claimSync, finishSync, reportSyncProgress, triggerSync } from '../db/sync-runs.js';
import type { TransactionRunner } from '../db/write-transactions.js';
import { createConnectionProblems, parseConnectionPatch, parseCreateConnection } from '../domain/connection-input.js';
import { camelCaseName, type FieldProblem, invalidGraphQLInput, snakeCaseName, withGraphQLNames } from '../domain/problems.js';
import { ApiError } from '../errors.js';
import { parseClaimBody, parseSyncReport, parseTriggerBody, type SyncReport } from '../domain/sync-reports.js';
import { builder } from './builder.js';
import { Connection, connectionById, ConnectionStatus, ConnectionVia } from './connection.js';
import { assertIdLength } from './ids.js';
import { Sync, SyncStatus } from './sync.js';
import { activityOriginOf, requireViewer } from './viewer.js';

// The write side on GraphQL: connect, change and delete connections; trigger, claim, report and finish runs.
// Each mutation turns its arguments into the body the REST route takes (snake_case members) and parses it
// with the domain's one schema (src/domain/*), so both surfaces accept and refuse exactly the same inputs;
// the data layer (src/db/connection-writes.ts, sync-runs.ts) then writes in one transaction, scoped by tenant.

function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

builder.scalarType('JSONObject', {
  description: 'A JSON object; its members are checked by the field that takes it (e.g. settings by application kind).',
  serialize: (value) => value,
  parseValue: (value) => {
    if (!isJsonObject(value)) throw new GraphQLError('JSONObject must be a JSON object', { extensions: { code: 'INVALID_QUERY' } });
    return value;
  },
  parseLiteral: (ast, variables) => {
    if (ast.kind !== Kind.OBJECT) throw new GraphQLError('JSONObject must be a JSON object', { extensions: { code: 'INVALID_QUERY' } });
    return valueFromASTUntyped(ast, variables) as Record<string, unknown>;
  },
});

/**
 * The REST body equivalent of a GraphQL argument: member names in snake_case at every depth (the JSON members
 * settings, metadata, summary… included), omitted members left out, explicit nulls kept. GraphQL inputs are
 * camelCase throughout, so a member written in snake_case is refused, named by its GraphQL path under `argument`.
 */
export function bodyOf(args: Record<string, unknown>, argument?: string): Record<string, unknown> {
  const problems: FieldProblem[] = [];
  const convert = (value: unknown, path: readonly string[]): unknown => {
    if (Array.isArray(value)) return value.map((member) => convert(member, path));
    if (!isJsonObject(value)) return value;
    const members: [string, unknown][] = [];
    for (const [key, member] of Object.entries(value)) {
      if (member === undefined) continue;
      if (key.includes('_')) {
        problems.push({
          field: [...path, key].join('.'),
          message: `GraphQL inputs are camelCase: write ${camelCaseName(key)}, not ${key}`,
        });
        continue;
      }
      members.push([snakeCaseName(key), convert(member, [...path, snakeCaseName(key)])]);
    }
    return Object.fromEntries(members);
  };
  const body = convert(args, []) as Record<string, unknown>;
  if (problems.length > 0) throw invalidGraphQLInput(problems, argument);
  return body;
}

/** A parse result's value, or its problems named by their GraphQL path under `argument`. */
export function parsed<T>(result: T | { problems: FieldProblem[] }, argument?: string): T {
  if (typeof result === 'object' && result !== null && 'problems' in result) throw invalidGraphQLInput(result.problems, argument);
  return result as T;
}

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

const FinishSyncInput = builder.inputType('FinishSyncInput', {
  description: 'How a run ended: success with its counts (and file, diff, checksum), or failed with its error.',
  fields: (t) => ({
    status: t.field({ type: SyncStatus, required: true, description: 'success or failed.' }),
    summary: t.field({ type: 'JSONObject', description: 'success: processed, inserted, updated, deleted; failed: errors, processed.' }),
    errorMessage: t.string({ description: 'Required when failed.' }),
    fileUrl: t.string(),
    diff: t.field({ type: 'JSONObject', description: '{added, changed, removed}: lists of external record ids.' }),
    checksum: t.field({ type: 'JSONObject', description: 'Members b, f, ac, ap, ls, file (strings).' }),
  }),
});

/** The connection a write returned, read back with what the operation selects of it (a later deletion included). */
async function connectionForSelection(context: Context, info: GraphQLResolveInfo, id: string) {
  const connection = await connectionById(context, id, info, { deleted: true });
  if (!connection) throw new Error(`connection ${id} was written but is not found`);
  return connection;
}

/**
 * Does a POST's write at most once per Idempotency-Key (24 h, per tenant), when the request sends one: the key
 * is reserved in the write's own transaction (src/db/idempotency.ts), so the work and the key commit together.
 * The same key again with the same operation and arguments answers what the first request wrote (loaded by
 * `replay` from the resource it recorded); with anything else it is IDEMPOTENCY_KEY_REUSED (422).
 */
export async function once<T>(
  context: Context,
  operation: string,
  args: unknown,
  work: (sql: TransactionRunner) => Promise<T>,
  resourceOf: (result: T) => IdempotentResource | null,
  replay: (resource: IdempotentResource | null) => Promise<T>,
): Promise<T> {
  const { idempotency } = context;
  if (!idempotency) return work(context.db.raw);
  if (!IDEMPOTENCY_KEY_PATTERN.test(idempotency.key)) {
    throw new ApiError('INVALID_QUERY', 'The Idempotency-Key header must be 1 to 255 visible ASCII characters (a UUID, say)');
  }
  if (idempotency.outcome) throw new ApiError('INVALID_QUERY', 'An Idempotency-Key covers one mutation; send the others separately');
  const request = { key: idempotency.key, method: 'mutation', path: operation, requestHash: hashRequestBody(args) };
  const outcome = await runIdempotently(context.db.raw, requireViewer(context).tenantId, request, work, resourceOf);
  if (!outcome.replayed) {
    idempotency.outcome = { replayed: false };
    return outcome.result;
  }
  idempotency.outcome = { replayed: true, record: outcome.record };
  return replay(outcome.record.resource);
}

/** A run by id, scoped to the caller's tenant (an idempotent replay answers it as it is now). */
async function syncOf(context: Context, resource: IdempotentResource | null) {
  if (!resource) return null;
  return context.db.prisma.sync.findUniqueOrThrow({ where: { id: resource.id, tenantId: requireViewer(context).tenantId } });
}

/** A parsed run report applied by the claimer: progress (a heartbeat) or the outcome. */
async function applyReport(context: Context, id: string, report: SyncReport) {
  const viewer = requireViewer(context);
  const syncId = assertIdLength(id, 'sync');
  if (report.kind === 'progress') {
    return reportSyncProgress(context.db.raw, viewer.tenantId, { syncId, workerId: viewer.subject, summary: report.summary });
  }
  return (await finishSync(context.db.raw, viewer.tenantId, { syncId, workerId: viewer.subject, outcome: report.outcome })).run;
}

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
  triggerSync: t.field({
    type: Sync,
    description: 'Queues a run of a connection now (pending). CONFLICT when it already has a pending or in-progress run, or is paused.',
    authScopes: { permission: 'syncs:trigger' },
    args: { connectionId: t.arg.id({ required: true }), estimatedItems: t.arg.int() },
    resolve: async (_root, args, context) => {
      const { trigger } = parsed(parseTriggerBody(bodyOf(args)));
      const tenantId = requireViewer(context).tenantId;
      const run = await once(
        context,
        'triggerSync',
        args,
        (sql) =>
          triggerSync(sql, tenantId, {
            connectionId: trigger.connection_id,
            ...(trigger.estimated_items === undefined ? {} : { estimatedItems: trigger.estimated_items }),
          }),
        (queued) => ({ type: 'sync', id: queued.id }),
        async (resource) => {
          const queued = await syncOf(context, resource);
          if (!queued) throw new Error('a replayed trigger names the run it queued');
          return queued;
        },
      );
      return run;
    },
  }),
  claimSync: t.field({
    type: Sync,
    nullable: true,
    description:
      'Takes the oldest due pending run of the tenant (optionally of one connection or application) and moves it to in_progress with a lease; null when nothing is due.',
    authScopes: { permission: 'syncs:run' },
    args: { leaseSeconds: t.arg.int(), connectionId: t.arg.id(), applicationSlug: t.arg.string() },
    resolve: async (_root, args, context) => {
      const { claim } = parsed(parseClaimBody(bodyOf(args)));
      const viewer = requireViewer(context);
      const { lease_seconds: leaseSeconds, connection_id: connectionId, application_slug: applicationSlug } = claim;
      return once(
        context,
        'claimSync',
        args,
        (sql) =>
          claimSync(sql, viewer.tenantId, {
            workerId: viewer.subject,
            ...(leaseSeconds === undefined ? {} : { leaseSeconds }),
            ...(connectionId === undefined ? {} : { connectionId }),
            ...(applicationSlug === undefined ? {} : { applicationSlug }),
          }),
        // A claim that found nothing due records no resource, and its replay is nothing again (204).
        (claimed) => (claimed ? { type: 'sync', id: claimed.id } : null),
        (resource) => syncOf(context, resource),
      );
    },
  }),
  reportSyncProgress: t.field({
    type: Sync,
    description: 'Records progress on a run this credential claimed and extends its lease (a heartbeat). CONFLICT once the lease is lost.',
    authScopes: { permission: 'syncs:run' },
    args: { id: t.arg.id({ required: true }), summary: t.arg({ type: 'JSONObject', required: true }) },
    resolve: async (_root, args, context) =>
      applyReport(context, args.id, parsed(parseSyncReport({ summary: bodyOf(args.summary, 'summary') })).report),
  }),
  finishSync: t.field({
    type: Sync,
    description:
      'Records the outcome of a run this credential claimed; finishedAt is the server clock. A failure with attempts left queues a retry. CONFLICT for a finished run or a lost lease.',
    authScopes: { permission: 'syncs:run' },
    args: { id: t.arg.id({ required: true }), input: t.arg({ type: FinishSyncInput, required: true }) },
    resolve: async (_root, args, context) => {
      // FinishSyncInput requires a status, so the report is an outcome, never progress.
      const { report } = parsed(parseSyncReport(bodyOf(args.input, 'input')), 'input');
      return applyReport(context, args.id, report);
    },
  }),
  reportSync: t.field({
    type: Sync,
    description:
      'A run report as PATCH /api/v1/integrations/syncs/{id} takes it: {summary} is progress (a heartbeat), {status: "success" | "failed", …} the outcome.',
    authScopes: { permission: 'syncs:run' },
    args: { id: t.arg.id({ required: true }), report: t.arg({ type: 'JSONObject', required: true }) },
    resolve: async (_root, args, context) =>
      applyReport(context, args.id, parsed(parseSyncReport(bodyOf(args.report, 'report')), 'report').report),
  }),
}));
