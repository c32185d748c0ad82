import { DEFAULT_SESSION_POLICY, deleteEndedSessions, type SessionPolicy } from './auth/sessions.js';
import type { Database } from './db/client.js';
import { deleteOldEvents } from './db/events.js';
import { deleteExpiredIdempotencyKeys } from './db/idempotency.js';
import { deleteOldDeliveries } from './db/webhooks.js';
import { expireLeases, scheduleDueSyncs, type ScheduleOptions } from './db/sync-runs.js';
import type { RetryPolicy } from './domain/sync-lifecycle.js';
import type { Logger } from './logger.js';

// The in-process scheduler: every tick it fails runs whose lease expired (retrying them as their connection
// allows), queues the runs that are due, deletes expired Idempotency-Keys, members' ended sessions, and
// events and finished webhook deliveries past their retention (EVENT_RETENTION_HOURS). Every server process runs one;
// the data layer makes concurrent ticks safe (see scheduleDueSyncs and expireLeases).

interface SchedulerOptions extends Pick<ScheduleOptions, 'intervalSeconds'> {
  db: Pick<Database, 'raw'>;
  logger: Logger;
  /** Pause between the end of one tick and the start of the next. */
  tickMs: number;
  retryPolicy?: RetryPolicy;
  /** Events older than this are deleted (EVENT_RETENTION_HOURS); kept forever when left out. */
  eventRetentionHours?: number;
  /** Members' sessions past these limits are deleted (they are refused anyway; this keeps the table small). */
  sessionPolicy?: SessionPolicy;
}

interface TickResult {
  scheduled: number;
  expired: number;
  retried: number;
  expiredKeys: number;
  deletedEvents: number;
  deletedDeliveries: number;
  endedSessions: number;
}

/** One pass over every tenant. */
export async function runSchedulerTick(options: Omit<SchedulerOptions, 'tickMs' | 'logger'>): Promise<TickResult> {
  const { db } = options;
  const result: TickResult = { scheduled: 0, expired: 0, retried: 0, expiredKeys: 0, deletedEvents: 0, deletedDeliveries: 0, endedSessions: 0 };
  const tenants = await db.raw.query<{ id: string }>('SELECT "t"."id" FROM "public"."tenants" AS "t" ORDER BY "t"."id"');
  for (const { id } of tenants) {
    // Leases first: a run failed now may be retried, and its connection must not also be scheduled anew.
    const expired = await expireLeases(db.raw, id, { retryPolicy: options.retryPolicy });
    result.expired += expired.failed.length;
    result.retried += expired.retries.length;
    const scheduled = await scheduleDueSyncs(db.raw, id, { intervalSeconds: options.intervalSeconds });
    result.scheduled += scheduled.length;
  }
  result.expiredKeys = await deleteExpiredIdempotencyKeys(db.raw);
  result.endedSessions = await deleteEndedSessions(db, options.sessionPolicy ?? DEFAULT_SESSION_POLICY);
  if (options.eventRetentionHours !== undefined) {
    result.deletedEvents = await deleteOldEvents(db.raw, options.eventRetentionHours);
    result.deletedDeliveries = await deleteOldDeliveries(db.raw, options.eventRetentionHours);
  }
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
      if (result.scheduled + result.expired + result.expiredKeys + result.deletedEvents + result.deletedDeliveries + result.endedSessions > 0) logger.info(result, 'scheduler tick');
    } catch (error) {
      // A database outage must not stop the scheduler: the next tick tries again.
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
  logger.info({ tick_ms: tickMs }, 'scheduler started');

  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
