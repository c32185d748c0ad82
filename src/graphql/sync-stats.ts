import { readDurationsPerConnection, readSyncsPerDay, type ConnectionDurations, type SyncDayCount } from '../db/sync-stats.js';
import { ApiError } from '../errors.js';
import type { Role as RoleName } from '../generated/prisma/enums.js';
import { Role } from './access.js';
import { builder } from './builder.js';
import { SyncStatus } from './sync.js';
import { requireViewer } from './viewer.js';

// The console's overview as API reads: runs per day by status, duration percentiles per connection (both over
// a window of at most MAX_DAYS days, computed in SQL), and the caller's organization with the caller's role.

const DEFAULT_DAYS = 30;
const MAX_DAYS = 90;
const DAY_MS = 24 * 60 * 60 * 1000;

const SyncDayCountRef = builder.objectRef<SyncDayCount>('SyncDayCount').implement({
  description: 'Runs of one UTC day with one status.',
  fields: (t) => ({
    day: t.exposeString('day', { description: 'The UTC day, YYYY-MM-DD.' }),
    status: t.field({ type: SyncStatus, resolve: (row) => row.status }),
    count: t.exposeInt('count'),
  }),
});

const ConnectionDurationsRef = builder.objectRef<ConnectionDurations>('ConnectionDurations').implement({
  description: 'How long the finished runs of one connection took.',
  fields: (t) => ({
    connectionId: t.exposeString('connectionId'),
    connectionName: t.exposeString('connectionName', { nullable: true, description: 'Null once the connection was deleted.' }),
    deletedConnectionName: t.exposeString('deletedConnectionName', {
      nullable: true,
      description: 'The name the connection had once it was deleted; null while it exists.',
    }),
    runs: t.exposeInt('runs', { description: 'Finished runs in the window.' }),
    p50Ms: t.exposeInt('p50Ms', { description: 'Median duration (finishedAt - startedAt), in milliseconds.' }),
    p95Ms: t.exposeInt('p95Ms', { description: '95th percentile duration, in milliseconds.' }),
  }),
});

interface SyncStatsView {
  since: Date;
  days: number;
  tenantId: string;
}

const SyncStatsRef = builder.objectRef<SyncStatsView>('SyncStats').implement({
  description: 'Aggregates of the sync history over the last `days` days.',
  fields: (t) => ({
    days: t.exposeInt('days'),
    since: t.field({
      type: 'DateTime',
      description: 'Start of the window: the UTC midnight `days - 1` days ago.',
      resolve: (stats) => stats.since,
    }),
    perDay: t.field({
      type: [SyncDayCountRef],
      description: 'Runs started in the window, per UTC day and status; days and statuses without runs are absent.',
      resolve: (stats, _args, context) => readSyncsPerDay(context.db.raw, stats.tenantId, stats.since),
    }),
    durations: t.field({
      type: [ConnectionDurationsRef],
      description: 'Duration percentiles of the runs finished in the window, per connection, the slowest p95 first (at most 100).',
      resolve: (stats, _args, context) => readDurationsPerConnection(context.db.raw, stats.tenantId, stats.since),
    }),
  }),
});

interface OrganizationView {
  id: string;
  slug: string;
  name: string;
  viewerRole: RoleName;
}

const OrganizationRef = builder.objectRef<OrganizationView>('Organization').implement({
  description: "The caller's tenant.",
  fields: (t) => ({
    id: t.exposeID('id'),
    slug: t.exposeString('slug'),
    name: t.exposeString('name'),
    viewerRole: t.field({ type: Role, description: "The caller's role in it.", resolve: (organization) => organization.viewerRole }),
  }),
});

builder.queryFields((t) => ({
  syncStats: t.field({
    type: SyncStatsRef,
    description: `Aggregates of the caller's sync history over the last \`days\` UTC days, today included (1 to ${MAX_DAYS}, default ${DEFAULT_DAYS}).`,
    authScopes: { permission: 'syncs:read' },
    args: { days: t.arg.int({ defaultValue: DEFAULT_DAYS }) },
    resolve: (_root, args, context) => {
      const days = args.days ?? DEFAULT_DAYS;
      if (!Number.isInteger(days) || days < 1 || days > MAX_DAYS) {
        throw new ApiError('INVALID_QUERY', `days must be between 1 and ${MAX_DAYS}`);
      }
      const today = new Date();
      today.setUTCHours(0, 0, 0, 0);
      return { days, since: new Date(today.getTime() - (days - 1) * DAY_MS), tenantId: requireViewer(context).tenantId };
    },
  }),
  organization: t.field({
    type: OrganizationRef,
    description: "The caller's tenant (organization) and the caller's role in it.",
    authScopes: { authenticated: true },
    resolve: async (_root, _args, context) => {
      const viewer = requireViewer(context);
      const tenant = await context.db.prisma.tenant.findUniqueOrThrow({
        where: { id: viewer.tenantId },
        select: { id: true, slug: true, name: true },
      });
      return { ...tenant, viewerRole: viewer.role };
    },
  }),
}));
