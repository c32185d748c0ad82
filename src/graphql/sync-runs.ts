import type { Context } from '../context.js';
import type { IdempotentResource } from '../db/idempotency.js';
import { claimSync, finishSync, reportSyncProgress, triggerSync } from '../db/sync-runs.js';
import { parseClaimBody, parseSyncReport, parseTriggerBody, type SyncReport } from '../domain/sync-reports.js';
import { builder } from './builder.js';
import { once } from './idempotency.js';
import { assertIdLength } from './ids.js';
import { bodyOf, parsed } from './mutation-args.js';
import { Sync, SyncStatus } from './sync.js';
import { requireViewer } from './viewer.js';

// The runs' lifecycle on GraphQL: trigger, claim, report and finish runs. Each mutation turns its arguments into
// the body the REST route takes (snake_case members) and parses it with the domain's one schema
// (src/domain/sync-reports.ts), so both surfaces accept and refuse exactly the same inputs; the data layer
// (src/db/sync-runs.ts) then writes in one transaction, scoped by tenant.

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
