import { DEFAULT_SESSION_POLICY, deleteEndedSessions, type SessionPolicy } from './auth/sessions.js';
import { deleteOldActivity } from './db/activity.js';
import type { Database, RawSql } from './db/client.js';
import { deleteOldEvents } from './db/events.js';
import { deleteExpiredIdempotencyKeys } from './db/idempotency.js';
import { removeExpiredRuns } from './db/retention.js';
import { deleteExpiredOAuthRecords } from './oauth/store.js';
import { deleteOldDeliveries, enabledEndpointCount } from './db/webhooks.js';
import { expireLeases, scheduleDueSyncs, type ScheduleOptions } from './db/sync-runs.js';
import { withinTransaction, type TransactionRunner } from './db/write-transactions.js';
import type { RetryPolicy } from './domain/sync-lifecycle.js';
import type { Logger } from './logger.js';
import { DEFAULT_STEP_BUDGET_MS } from './env.js';
import { MAX_DELIVERIES_PER_EVENT } from './domain/webhook-caps.js';

// The in-process scheduler: every tick it fails runs whose lease expired (retrying them as their connection
// allows) and queues the runs that are due, tenant by tenant; then it deletes expired Idempotency-Keys, and
// events and finished webhook deliveries past their retention (EVENT_RETENTION_HOURS). Every server process
// runs one; the data layer makes concurrent ticks safe (see scheduleDueSyncs and expireLeases).
//
// No tenant can hold up another's part of a tick, or the maintenance:
// - each step (one tenant's lease reaping, its scheduling; each maintenance job) runs on its own, and its
//   failure is logged and counted, never carried to the next step;
// - each step has a time budget (SCHEDULER_STEP_BUDGET_MS): on PostgreSQL its transaction's statement_timeout,
//   so the database itself cancels a step past it and rolls it back;
// - each tenant step's work is bounded before it starts: the runs it fails or queues are limited so that the
//   webhook deliveries their events fan out to stay within DELIVERIES_PER_TENANT_STEP (a tenant with many
//   endpoints gets fewer runs per tick, not a longer tick). PGlite cannot cancel a statement (it runs in this
//   thread), so there this bound is what keeps a step short.
//
// A step is one entry of TENANT_STEPS or MAINTENANCE_STEPS: a new job is one more entry.

/** What a tick did, summed over its steps. */
export interface TickResult {
  scheduled: number;
  expired: number;
  retried: number;
  expiredKeys: number;
  expiredOAuthRecords: number;
  deletedEvents: number;
  deletedDeliveries: number;
  /** Activity log entries deleted past ACTIVITY_RETENTION_DAYS. */
  deletedActivity: number;
  /** Members' sessions past their idle timeout or lifetime (refused anyway; deleted to keep the table small). */
  endedSessions: number;
  /** Finished runs deleted past SYNC_RETENTION_DAYS. */
  removedRuns: number;
  /** Steps that failed or ran out of their budget (each logged). */
  failedSteps: number;
}

type TickCounts = Partial<Omit<TickResult, 'failedSteps'>>;

/** The part of the configuration the steps read. */
export interface TickOptions extends Pick<ScheduleOptions, 'intervalSeconds'> {
  retryPolicy?: RetryPolicy | undefined;
  /** Events and finished deliveries older than this are deleted (EVENT_RETENTION_HOURS); kept forever when left out. */
  eventRetentionHours?: number | undefined;
  /** Members' session limits (SESSION_IDLE_MINUTES, SESSION_LIFETIME_HOURS); their defaults when left out. */
  sessionPolicy?: SessionPolicy | undefined;
  /** Finished runs older than this are deleted (SYNC_RETENTION_DAYS); kept when left out. */
  syncRetentionDays?: number | undefined;
  /** Activity log entries older than this are deleted (ACTIVITY_RETENTION_DAYS); kept when left out. */
  activityRetentionDays?: number | undefined;
}

/** A tenant step's statements: joined to the step's own transaction, which carries its time budget. */
type StepSql = TransactionRunner & Pick<RawSql, 'query'>;

/** One job of a tick for one tenant. */
export interface TenantStep {
  name: string;
  run(sql: StepSql, tenantId: string, options: TickOptions): Promise<TickCounts>;
}

/** One job of a tick over the whole database (retention, expiry), run after the tenants' steps. */
export interface MaintenanceStep {
  name: string;
  run(sql: StepSql, options: TickOptions): Promise<TickCounts>;
}

/** Webhook deliveries one tenant step may queue at most (runs failed or queued × the tenant's endpoints). */
export const DELIVERIES_PER_TENANT_STEP = 5000;

/** Runs one tenant step may fail or queue at most, whatever its endpoints. */
const RUNS_PER_TENANT_STEP = 500;

/** How many runs a step may touch so that their events' deliveries stay within DELIVERIES_PER_TENANT_STEP. */
async function runsWithinDeliveryBudget(sql: StepSql, tenantId: string): Promise<number> {
  const fanOut = Math.min(await enabledEndpointCount(sql, tenantId), MAX_DELIVERIES_PER_EVENT);
  // A run's step writes up to three events (the run's, a retry's, its connection's).
  return Math.max(1, Math.min(RUNS_PER_TENANT_STEP, Math.floor(DELIVERIES_PER_TENANT_STEP / (3 * Math.max(1, fanOut)))));
}

export const TENANT_STEPS: readonly TenantStep[] = [
  {
    // Leases first: a run failed now may be retried, and its connection must not also be scheduled anew.
    name: 'expire leases',
    async run(sql, tenantId, options) {
      const limit = await runsWithinDeliveryBudget(sql, tenantId);
      const expired = await expireLeases(sql, tenantId, { retryPolicy: options.retryPolicy, limit });
      return { expired: expired.failed.length, retried: expired.retries.length };
    },
  },
  {
    name: 'schedule due runs',
    async run(sql, tenantId, options) {
      const limit = await runsWithinDeliveryBudget(sql, tenantId);
      return { scheduled: (await scheduleDueSyncs(sql, tenantId, { intervalSeconds: options.intervalSeconds, limit })).length };
    },
  },
  {
    // One bounded batch a tick (db/retention.ts): a backlog is worked off tick by tick, every tenant in turn.
    name: 'sync retention',
    run: async (sql, tenantId, { syncRetentionDays }) =>
      syncRetentionDays === undefined
        ? {}
        : { removedRuns: (await removeExpiredRuns(sql, tenantId, { days: syncRetentionDays, budgetMs: 0 })).runs },
  },
];

export const MAINTENANCE_STEPS: readonly MaintenanceStep[] = [
  { name: 'expire idempotency keys', run: async (sql) => ({ expiredKeys: await deleteExpiredIdempotencyKeys(sql) }) },
  { name: 'delete expired OAuth records', run: async (sql) => ({ expiredOAuthRecords: await deleteExpiredOAuthRecords(sql) }) },
  {
    name: 'delete ended sessions',
    run: async (sql, { sessionPolicy }) => ({ endedSessions: await deleteEndedSessions(sql, sessionPolicy ?? DEFAULT_SESSION_POLICY) }),
  },
  {
    name: 'delete old events',
    run: async (sql, { eventRetentionHours }) =>
      eventRetentionHours === undefined ? {} : { deletedEvents: await deleteOldEvents(sql, eventRetentionHours) },
  },
  {
    name: 'delete old webhook deliveries',
    run: async (sql, { eventRetentionHours }) =>
      eventRetentionHours === undefined ? {} : { deletedDeliveries: await deleteOldDeliveries(sql, eventRetentionHours) },
  },
  {
    name: 'delete old activity',
    run: async (sql, { activityRetentionDays }) =>
      activityRetentionDays === undefined ? {} : { deletedActivity: await deleteOldActivity(sql, activityRetentionDays) },
  },
];

interface SchedulerOptions extends TickOptions {
  db: Pick<Database, 'raw'>;
  logger: Pick<Logger, 'info' | 'warn'>;
  /** Pause between the end of one tick and the start of the next. */
  tickMs: number;
  /** Longest a step may run (SCHEDULER_STEP_BUDGET_MS). */
  stepBudgetMs?: number | undefined;
}

/** PostgreSQL's SQLSTATE for a statement cancelled by statement_timeout. */
const QUERY_CANCELED = '57014';

/**
 * Runs `work` in a transaction of its own whose statements PostgreSQL cancels past `budgetMs` (a statement
 * waiting for a lock included). PGlite cannot cancel: there the caller's bound on the work is what holds.
 */
function withinBudget<T>(db: Pick<Database, 'raw'>, budgetMs: number, work: (sql: StepSql) => Promise<T>): Promise<T> {
  return db.raw.transaction(async (tx) => {
    await tx.query(`SELECT set_config('statement_timeout', $1, true)`, [`${Math.max(1, Math.round(budgetMs))}ms`]);
    return work({ ...withinTransaction(tx), query: tx.query.bind(tx) });
  });
}

function add(result: TickResult, counts: TickCounts): void {
  for (const [name, value] of Object.entries(counts) as [keyof TickCounts, number][]) result[name] += value;
}

/** One pass: every tenant's steps, then the maintenance, each step on its own (see above). */
export async function runSchedulerTick(
  options: Omit<SchedulerOptions, 'tickMs' | 'logger' | 'db'> & { db: Pick<Database, 'raw'>; logger?: Pick<Logger, 'warn'> },
): Promise<TickResult> {
  const { db, logger } = options;
  const budgetMs = options.stepBudgetMs ?? DEFAULT_STEP_BUDGET_MS;
  const result: TickResult = {
    scheduled: 0,
    expired: 0,
    retried: 0,
    expiredKeys: 0,
    expiredOAuthRecords: 0,
    deletedEvents: 0,
    deletedDeliveries: 0,
    deletedActivity: 0,
    endedSessions: 0,
    removedRuns: 0,
    failedSteps: 0,
  };
  const step = async (name: string, tenantId: string | undefined, work: (sql: StepSql) => Promise<TickCounts>) => {
    const started = performance.now();
    try {
      add(result, await withinBudget(db, budgetMs, work));
    } catch (error) {
      result.failedSteps += 1;
      const overBudget = (error as { code?: unknown } | null)?.code === QUERY_CANCELED;
      const elapsedMs = Math.round(performance.now() - started);
      logger?.warn(
        { step: name, tenant: tenantId, elapsed_ms: elapsedMs, ...(overBudget ? { budget_ms: budgetMs } : { err: error }) },
        overBudget ? 'scheduler step over its time budget, cancelled' : 'scheduler step failed',
      );
    }
  };
  const tenants = await db.raw.query<{ id: string }>('SELECT "t"."id" FROM "public"."tenants" AS "t" ORDER BY "t"."id"');
  for (const { id } of tenants) {
    for (const tenantStep of TENANT_STEPS) await step(tenantStep.name, id, (sql) => tenantStep.run(sql, id, options));
  }
  for (const maintenance of MAINTENANCE_STEPS) await step(maintenance.name, undefined, (sql) => maintenance.run(sql, options));
  return result;
}

export interface Scheduler {
  /** Stops ticking; resolves once a tick under way has finished. */
  stop(): Promise<void>;
}

/** Starts ticking at once, then `tickMs` after each tick ends (ticks never overlap). */
export function startScheduler(options: SchedulerOptions): Scheduler {
  const { logger, tickMs } = options;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();

  const tick = async (): Promise<void> => {
    try {
      const result = await runSchedulerTick(options);
      const { failedSteps: _failed, ...counts } = result;
      if (Object.values(counts).some((n) => n > 0)) logger.info(result, 'scheduler tick');
    } catch (error) {
      // A database outage (the tenant list unreadable) must not stop the scheduler: the next tick tries again.
      logger.warn({ err: error }, 'scheduler tick failed');
    }
  };
  const schedule = (delay: number) => {
    if (stopped) return;
    timer = setTimeout(() => {
      running = tick().then(() => schedule(tickMs));
    }, delay);
    // The scheduler alone must not keep a process alive.
    timer.unref();
  };
  schedule(0);
  logger.info({ tick_ms: tickMs, step_budget_ms: options.stepBudgetMs ?? DEFAULT_STEP_BUDGET_MS }, 'scheduler started');

  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
