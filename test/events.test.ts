import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createConnection, deleteConnection, updateConnection } from '../src/db/connection-writes.js';
import { deleteOldEvents, lastEventId, readEventPage, type StoredEvent } from '../src/db/events.js';
import { withinTransaction } from '../src/db/write-transactions.js';
import { claimSync, expireLeases, finishSync, reportSyncProgress, scheduleDueSyncs, triggerSync } from '../src/db/sync-runs.js';
import { runSchedulerTick } from '../src/scheduler.js';
import { applicationBySlug, seedCatalog } from '../src/seed/catalog.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from './fixtures/databases.js';
import { connectApp, createTenant } from './fixtures/write-side.js';

const WORKER = 'usr_engine_1';

describe.each(databaseKinds)('the event log on %s', (kind) => {
  let db: TestDatabase;
  let acme: string;
  let globex: string;

  beforeAll(async () => {
    db = await createTestDatabase(kind, { poolSize: 12 });
    await seedCatalog(db);
    acme = await createTenant(db, 'acme');
    globex = await createTenant(db, 'globex');
  });
  afterAll(() => db?.dispose());

  /** Every event of `tenant` after `after`, in one page. */
  const readEvents = async (sql: typeof db.raw, tenant: string, after: number) =>
    (await readEventPage(sql, tenant, after, { rows: 10_000, bytes: 1e9 })).events;

  /** Runs `write` and returns the events of `tenant` it appended. */
  async function eventsOf(tenant: string, write: () => Promise<unknown>): Promise<StoredEvent[]> {
    const before = await lastEventId(db.raw, tenant);
    await write();
    return readEvents(db.raw, tenant, before);
  }

  const shape = (events: StoredEvent[]) => events.map((e) => [e.type, e.subjectId]);

  it('every state change of the data layer appends its event, numbered on from the tenant’s last one', async () => {
    const stripe = applicationBySlug('stripe').id;
    let connectionId = '';
    const created = await eventsOf(acme, async () => {
      connectionId = (await createConnection(db.raw, acme, { applicationId: stripe })).id;
    });
    expect(shape(created)).toEqual([['connection.created', connectionId]]);
    expect(created[0]!.payload).toEqual({ status: 'pending' });
    expect(created[0]!.id).toBe(await lastEventId(db.raw, acme));

    expect(shape(await eventsOf(acme, () => updateConnection(db.raw, acme, connectionId, { name: 'Stripe EU' })))).toEqual([
      ['connection.updated', connectionId],
    ]);

    let syncId = '';
    const pending = await eventsOf(acme, async () => {
      syncId = (await triggerSync(db.raw, acme, { connectionId })).id;
    });
    expect(shape(pending)).toEqual([['sync.pending', syncId]]);
    expect(pending[0]!.payload).toMatchObject({ connection_id: connectionId, status: 'pending' });
    expect(shape(await eventsOf(acme, () => claimSync(db.raw, acme, { workerId: WORKER, connectionId })))).toEqual([
      ['sync.in_progress', syncId],
    ]);
    expect(
      shape(await eventsOf(acme, () => reportSyncProgress(db.raw, acme, { syncId, workerId: WORKER, summary: { processed: 5 } }))),
    ).toEqual([['sync.progress', syncId]]);
    // The first success makes the pending connection active: the run's event, then the connection's.
    expect(
      shape(
        await eventsOf(acme, () =>
          finishSync(db.raw, acme, { syncId, workerId: WORKER, outcome: { status: 'success', summary: { processed: 5 } } }),
        ),
      ),
    ).toEqual([
      ['sync.success', syncId],
      ['connection.updated', connectionId],
    ]);

    // A failure with a retry left: the failed run, then its retry queued.
    const retrying = await connectApp(db, acme, { status: 'active', settings: { retry_attempts: 1 } });
    const run = await triggerSync(db.raw, acme, { connectionId: retrying.id });
    await claimSync(db.raw, acme, { workerId: WORKER, connectionId: retrying.id });
    let retryId = '';
    const failed = await eventsOf(acme, async () => {
      retryId = (
        await finishSync(
          db.raw,
          acme,
          {
            syncId: run.id,
            workerId: WORKER,
            outcome: { status: 'failed', errorMessage: 'boom', summary: {} },
          },
          { retryPolicy: { baseSeconds: 0, factor: 2, maxSeconds: 0 } },
        )
      ).retry!.id;
    });
    expect(shape(failed)).toEqual([
      ['sync.failed', run.id],
      ['sync.pending', retryId],
    ]);

    // The reaper: the retry claimed with a lease that ends, then failed; no attempt left → connection error.
    await claimSync(db.raw, acme, { workerId: WORKER, connectionId: retrying.id, leaseSeconds: 1 });
    await db.raw.query(`UPDATE syncs SET lease_expires_at = now() - interval '1 second' WHERE id = $1`, [retryId]);
    expect(shape(await eventsOf(acme, () => expireLeases(db.raw, acme)))).toEqual([
      ['sync.failed', retryId],
      ['connection.updated', retrying.id],
    ]);

    // The scheduler's queued run.
    const scheduled = await connectApp(db, acme, { status: 'active', settings: { sync_interval: '1h' } });
    const queued = await eventsOf(acme, () => scheduleDueSyncs(db.raw, acme));
    expect(shape(queued)).toContainEqual(['sync.pending', expect.any(String)]);
    expect(queued.every((e) => e.type === 'sync.pending')).toBe(true);
    const scheduledRun = queued.find((e) => e.payload.connection_id === scheduled.id)!;

    // Delete: the connection, then each active run failed with it.
    expect(shape(await eventsOf(acme, () => deleteConnection(db.raw, acme, scheduled.id)))).toEqual([
      ['connection.deleted', scheduled.id],
      ['sync.failed', scheduledRun.subjectId],
    ]);

    // Ids: 1, 2, 3… without a gap; another tenant's log untouched.
    const all = await readEvents(db.raw, acme, 0);
    expect(all.map((e) => e.id)).toEqual(all.map((_, i) => i + 1));
    expect(await readEvents(db.raw, globex, 0)).toEqual([]);
  });

  it('a refused or rolled-back write leaves no event and gives no id away', async () => {
    const connection = await connectApp(db, globex, { status: 'paused' });
    const before = await lastEventId(db.raw, globex);
    await expect(triggerSync(db.raw, globex, { connectionId: connection.id })).rejects.toMatchObject({ code: 'CONFLICT' });
    await expect(
      db.raw.transaction(async (tx) => {
        await createConnection(withinTransaction(tx), globex, { applicationId: applicationBySlug('stripe').id });
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    expect(await lastEventId(db.raw, globex)).toBe(before);
    expect(await readEvents(db.raw, globex, before)).toEqual([]);
    await createConnection(db.raw, globex, { applicationId: applicationBySlug('stripe').id });
    expect((await readEvents(db.raw, globex, before)).map((e) => e.id)).toEqual([before + 1]);
  });

  it('concurrent writers: a reader following the log never skips an id that commits later', async () => {
    const tenant = await createTenant(db, 'concurrent');
    const connections = await Promise.all(Array.from({ length: 8 }, () => connectApp(db, tenant, { status: 'active' })));
    let done = false;
    const seen: number[] = [];
    const reader = (async () => {
      let cursor = 0;
      while (!done || cursor < (await lastEventId(db.raw, tenant))) {
        for (const event of await readEvents(db.raw, tenant, cursor)) {
          seen.push(event.id);
          cursor = event.id;
        }
        await new Promise((resolve) => setTimeout(resolve, 1));
      }
    })();
    await Promise.all(
      connections.map(async (connection) => {
        for (let i = 0; i < 5; i++) {
          const run = await triggerSync(db.raw, tenant, { connectionId: connection.id });
          await claimSync(db.raw, tenant, { workerId: WORKER, connectionId: connection.id });
          await finishSync(db.raw, tenant, {
            syncId: run.id,
            workerId: WORKER,
            outcome: { status: 'success', summary: {} },
          });
        }
      }),
    );
    done = true;
    await reader;
    const total = 8 + 8 * 5 * 3; // created, then pending/in_progress/success per run
    expect(seen).toEqual(Array.from({ length: total }, (_, i) => i + 1));
  });

  it('retention deletes old events in batches, and ids are not reused', async () => {
    const tenant = await createTenant(db, 'retention');
    for (let i = 0; i < 5; i++) await connectApp(db, tenant);
    await db.raw.query(`UPDATE events SET created_at = now() - interval '3 hours' WHERE tenant_id = $1 AND id <= 4`, [tenant]);
    expect(await deleteOldEvents(db.raw, 2, { batch: 2 })).toBe(4);
    expect((await readEvents(db.raw, tenant, 0)).map((e) => e.id)).toEqual([5]);
    await db.raw.query(`UPDATE events SET created_at = now() - interval '3 hours' WHERE tenant_id = $1`, [tenant]);
    const tick = await runSchedulerTick({ db, eventRetentionHours: 2 });
    expect(tick.deletedEvents).toBe(1);
    // (The tick may also have queued runs of these connections: their events come after.)
    const kept = (await readEvents(db.raw, tenant, 0)).map((e) => e.id);
    expect(kept).toEqual(kept.map((_, i) => 6 + i));
  });
});
