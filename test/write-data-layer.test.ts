import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createConnection, deleteConnection, slugify, updateConnection } from '../src/db/connection-writes.js';
import { claimSync, expireLeases, finishSync, reportSyncProgress, scheduleDueSyncs, triggerSync } from '../src/db/sync-runs.js';
import { defaultSettings } from '../src/domain/connection-members.js';
import { LEASE_SECONDS } from '../src/domain/sync-lifecycle.js';
import type { TransactionRunner } from '../src/db/write-transactions.js';
import type { ApiError } from '../src/errors.js';
import type { Sync } from '../src/generated/prisma/client.js';
import { newId } from '../src/prefixed-ids.js';
import { applicationBySlug } from '../src/seed/catalog.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from './fixtures/databases.js';
import { tenantScopeProblems } from './fixtures/tenant-scope.js';
import { connectApp, connectionRow, createTenant, errorCodeOf, expectRunReadsLikeSeeded, runRow, waitFor } from './fixtures/write-side.js';

const TENANT_TABLES = ['connections', 'syncs', 'idempotency_keys', 'events', 'event_sequences'];
const WORKER = 'usr_engine_1';

async function refusal(promise: Promise<unknown>): Promise<ApiError> {
  return promise.then(
    () => {
      throw new Error('expected a refusal');
    },
    (error: ApiError) => error,
  );
}

describe.each(databaseKinds)('the write data layer on %s', (kind) => {
  let db: TestDatabase;
  let acme: string;
  let globex: string;
  const statements: string[] = [];
  /** db.raw, recording the statements the data layer issues. */
  const sql: TransactionRunner = {
    transaction: (work) =>
      db.raw.transaction((tx) =>
        work({
          ...tx,
          query: (text, params) => {
            statements.push(text);
            return tx.query(text, params);
          },
        }),
      ),
  };

  beforeAll(async () => {
    // A copy of the seeded database the global setup made: the catalog is there, its tenants (demo, other)
    // are not the ones made here, and no initdb or migrations are repeated.
    db = await createTestDatabase(kind, { template: inject('seededDatabases')[kind]?.template });
    acme = await createTenant(db, 'acme');
    globex = await createTenant(db, 'globex');
  });
  afterAll(() => db?.dispose());

  /** A connection with a pending run, claimed by WORKER: the run in progress. */
  async function runningRun(options: Parameters<typeof connectApp>[2] = {}): Promise<Sync> {
    const connection = await connectApp(db, acme, { status: 'active', ...options });
    await triggerSync(sql, acme, { connectionId: connection.id });
    return (await claimSync(sql, acme, { workerId: WORKER, connectionId: connection.id }))!;
  }

  describe('connections', () => {
    it('creates a pending connection with the application’s name, slug, description and the default settings', async () => {
      const stripe = applicationBySlug('stripe');
      const connection = await createConnection(sql, acme, { applicationId: stripe.id });
      expect(connection).toMatchObject({
        tenantId: acme,
        applicationId: stripe.id,
        name: 'Stripe',
        slug: 'stripe',
        description: stripe.description,
        logoUrl: stripe.logoUrl,
        keywords: stripe.keywords,
        via: 'manual',
        status: 'pending',
        metadata: {},
        settings: defaultSettings('payments'),
        deletedAt: null,
      });
      expect(connection.id).toMatch(/^con_/);
      // The next one of the same name gets the next free slug.
      const again = await createConnection(sql, acme, {
        applicationId: stripe.id,
        via: 'api_key',
        metadata: { currency: 'EUR', region: 'eu-west-1' },
        settings: { retry_attempts: 5, sync_interval: null },
      });
      expect(again).toMatchObject({ slug: 'stripe-2', via: 'api_key', metadata: { currency: 'EUR', region: 'eu-west-1' } });
      expect(again.settings).toEqual({ webhook_enabled: false, retry_attempts: 5, notification_enabled: true });
      expect(slugify('Mews – Berlin Mitte (Café)')).toBe('mews-berlin-mitte-cafe');
    });

    it('refuses an unknown application, and every problem of metadata and settings, writing nothing', async () => {
      const before = await db.prisma.connection.count({ where: { tenantId: acme } });
      const unknown = await refusal(createConnection(sql, acme, { applicationId: 'app_nope' }));
      expect(unknown.extensions).toMatchObject({ code: 'INVALID_QUERY', details: [{ parameter: 'application_id' }] });
      const bad = await refusal(
        createConnection(sql, acme, {
          applicationId: applicationBySlug('slack').id,
          metadata: { channel: '#ops', location: 'Berlin' },
          settings: { retry_attempts: 11, track_users: true, mention_users: 'yes', notification_enabled: null },
        }),
      );
      expect(bad.extensions.code).toBe('INVALID_QUERY');
      expect((bad.extensions.details as { parameter: string }[]).map((p) => p.parameter).sort()).toEqual([
        'metadata.location',
        'settings.mention_users',
        'settings.notification_enabled',
        'settings.retry_attempts',
        'settings.track_users',
      ]);
      expect(await db.prisma.connection.count({ where: { tenantId: acme } })).toBe(before);
    });

    it('applies a JSON Merge Patch, validating the merged members', async () => {
      const connection = await createConnection(sql, acme, {
        applicationId: applicationBySlug('slack').id,
        name: 'Slack ops',
        metadata: { channel: '#ops', bot_name: 'Bot', region: 'eu' },
      });
      const patched = await updateConnection(sql, acme, connection.id, {
        name: 'Slack operations',
        description: null,
        metadata: { bot_name: null, channel: '#alerts' },
        settings: { sync_interval: '1h', thread_enabled: false },
      });
      expect(patched).toMatchObject({
        name: 'Slack operations',
        description: '',
        metadata: { channel: '#alerts', region: 'eu' },
        settings: { ...defaultSettings('messaging'), sync_interval: '1h', thread_enabled: false },
      });
      expect(patched.updatedAt.getTime()).toBeGreaterThanOrEqual(connection.updatedAt.getTime());
      // sync_interval may go (no scheduled runs); a required member may not; metadata: null empties it.
      expect((await updateConnection(sql, acme, connection.id, { settings: { sync_interval: null } })).settings).not.toHaveProperty(
        'sync_interval',
      );
      expect((await updateConnection(sql, acme, connection.id, { metadata: null })).metadata).toEqual({});
      const before = await connectionRow(db, connection.id);
      const refused = await refusal(
        updateConnection(sql, acme, connection.id, {
          name: 'x',
          settings: { retry_attempts: null, webhook_enabled: 1 },
          metadata: { gateway_id: 'g' },
        }),
      );
      expect(refused.extensions.code).toBe('INVALID_QUERY');
      expect((refused.extensions.details as { parameter: string; message: string }[]).map((p) => `${p.parameter}: ${p.message}`)).toEqual([
        expect.stringMatching(/^metadata\.gateway_id: unknown member/),
        expect.stringMatching(/^settings\.webhook_enabled: /),
        'settings.retry_attempts: is required',
      ]);
      expect(await connectionRow(db, connection.id)).toEqual(before);
      // Settings nobody touches are not judged again (stored data from before the rules).
      await db.raw.query(`UPDATE connections SET settings = settings || '{"legacy": 1}' WHERE id = $1`, [connection.id]);
      expect((await updateConnection(sql, acme, connection.id, { name: 'renamed' })).name).toBe('renamed');
    });

    it('moves status as an admin may, and refuses the rest with CONFLICT naming what is allowed', async () => {
      const connection = await createConnection(sql, acme, { applicationId: applicationBySlug('xero').id });
      const before = await connectionRow(db, connection.id);
      const toActive = await refusal(updateConnection(sql, acme, connection.id, { status: 'active', name: 'never applied' }));
      expect(toActive.extensions.code).toBe('CONFLICT');
      expect(toActive.message).toMatch(/is "pending".*an admin can set nothing.*first successful run/);
      expect(await connectionRow(db, connection.id)).toEqual(before);
      // The current status again is a no-op.
      expect((await updateConnection(sql, acme, connection.id, { status: 'pending' })).status).toBe('pending');

      await db.raw.query(`UPDATE connections SET status = 'active' WHERE id = $1`, [connection.id]);
      expect((await updateConnection(sql, acme, connection.id, { status: 'paused' })).status).toBe('paused');
      expect((await updateConnection(sql, acme, connection.id, { status: 'active' })).status).toBe('active');
      const toError = await refusal(updateConnection(sql, acme, connection.id, { status: 'error' }));
      expect(toError.message).toMatch(/is "active": it cannot be set to "error"; from "active" an admin can set "paused"/);
      await db.raw.query(`UPDATE connections SET status = 'error' WHERE id = $1`, [connection.id]);
      expect((await updateConnection(sql, acme, connection.id, { status: 'paused' })).status).toBe('paused');
      await db.raw.query(`UPDATE connections SET status = 'error' WHERE id = $1`, [connection.id]);
      expect((await updateConnection(sql, acme, connection.id, { status: 'active' })).status).toBe('active');
    });

    it("treats another tenant's connection, and a deleted one, as not found", async () => {
      const theirs = await connectApp(db, globex, { status: 'active' });
      const theirRun = await triggerSync(sql, globex, { connectionId: theirs.id });
      const before = await connectionRow(db, theirs.id);
      expect(await errorCodeOf(updateConnection(sql, acme, theirs.id, { name: 'mine' }))).toBe('NOT_FOUND');
      expect(await errorCodeOf(deleteConnection(sql, acme, theirs.id))).toBe('NOT_FOUND');
      expect(await errorCodeOf(triggerSync(sql, acme, { connectionId: theirs.id }))).toBe('NOT_FOUND');
      expect(await errorCodeOf(updateConnection(sql, acme, newId('con'), { name: 'x' }))).toBe('NOT_FOUND');
      expect(await connectionRow(db, theirs.id)).toEqual(before);
      expect((await runRow(db, theirRun.id)).status).toBe('pending');
      // Their run, claimed by them, is not found for acme whatever acme reports.
      const claimed = (await claimSync(sql, globex, { workerId: WORKER, connectionId: theirs.id }))!;
      const claimedRow = await runRow(db, claimed.id);
      expect(
        await errorCodeOf(finishSync(sql, acme, { syncId: claimed.id, workerId: WORKER, outcome: { status: 'success', summary: {} } })),
      ).toBe('NOT_FOUND');
      expect(await errorCodeOf(reportSyncProgress(sql, acme, { syncId: claimed.id, workerId: WORKER, summary: {} }))).toBe('NOT_FOUND');
      expect((await expireLeases(sql, acme)).failed.map((r) => r.id)).not.toContain(claimed.id);
      expect(await runRow(db, claimed.id)).toEqual(claimedRow);

      const gone = await connectApp(db, acme);
      await deleteConnection(sql, acme, gone.id);
      expect(await errorCodeOf(deleteConnection(sql, acme, gone.id))).toBe('NOT_FOUND');
      expect(await errorCodeOf(updateConnection(sql, acme, gone.id, { name: 'x' }))).toBe('NOT_FOUND');
      expect(await errorCodeOf(triggerSync(sql, acme, { connectionId: gone.id }))).toBe('NOT_FOUND');
    });

    it('deleting fails its pending and in-progress runs; a later report on one is a CONFLICT', async () => {
      const running = await runningRun();
      const { connection, failedRuns } = await deleteConnection(sql, acme, running.connectionId);
      expect(connection.deletedAt).toBeInstanceOf(Date);
      expect(failedRuns.map((r) => [r.id, r.status, r.errorMessage])).toEqual([[running.id, 'failed', 'connection deleted']]);
      expectRunReadsLikeSeeded(failedRuns[0]!);
      const report = await refusal(reportSyncProgress(sql, acme, { syncId: running.id, workerId: WORKER, summary: { processed: 1 } }));
      expect(report.extensions.code).toBe('CONFLICT');
      expect(report.message).toMatch(/is "failed".*\(it failed: connection deleted\)/);
      expect(
        await errorCodeOf(finishSync(sql, acme, { syncId: running.id, workerId: WORKER, outcome: { status: 'success', summary: {} } })),
      ).toBe('CONFLICT');

      const queued = await connectApp(db, acme, { status: 'active' });
      const pending = await triggerSync(sql, acme, { connectionId: queued.id });
      const deleted = await deleteConnection(sql, acme, queued.id);
      expect(deleted.failedRuns.map((r) => [r.id, r.errorMessage, r.summary])).toEqual([
        [pending.id, 'connection deleted', { errors: ['connection deleted'] }],
      ]);
    });
  });

  describe('runs', () => {
    it('triggers one pending run per connection, and names the active run on a second trigger', async () => {
      const connection = await connectApp(db, acme, { status: 'active' });
      const run = await triggerSync(sql, acme, { connectionId: connection.id, estimatedItems: 120 });
      expect(run).toMatchObject({
        status: 'pending',
        summary: { queued: true, estimated_items: 120 },
        attempt: 1,
        retryOfId: null,
        finishedAt: null,
      });
      expect(run.dueAt!.getTime()).toBe(run.startedAt.getTime());
      expectRunReadsLikeSeeded(run);
      const second = await refusal(triggerSync(sql, acme, { connectionId: connection.id }));
      expect(second.extensions.code).toBe('CONFLICT');
      expect(second.message).toBe(
        `connection ${connection.id} already has an active run: sync ${run.id} is "pending"; a connection has one pending or in-progress run at a time`,
      );
      await claimSync(sql, acme, { workerId: WORKER, connectionId: connection.id });
      expect((await refusal(triggerSync(sql, acme, { connectionId: connection.id }))).message).toMatch(/is "in_progress"/);
      expect(await db.prisma.sync.count({ where: { connectionId: connection.id } })).toBe(1);

      const paused = await connectApp(db, acme, { status: 'paused' });
      expect((await refusal(triggerSync(sql, acme, { connectionId: paused.id }))).message).toMatch(
        /is "paused": runs can be triggered while it is/,
      );
      // A new connection and one in error may be run.
      await triggerSync(sql, acme, { connectionId: (await connectApp(db, acme)).id });
      await triggerSync(sql, acme, { connectionId: (await connectApp(db, acme, { status: 'error' })).id });
    });

    it('claims the oldest due run: in progress, leased to the claimer, started now', async () => {
      const tenant = await createTenant(db, `claims-${kind}`);
      expect(await claimSync(sql, tenant, { workerId: WORKER })).toBeNull();
      const first = await connectApp(db, tenant, { status: 'active', app: 'mews-pms' });
      const second = await connectApp(db, tenant, { status: 'active', app: 'slack' });
      const paused = await connectApp(db, tenant, { status: 'active' });
      const older = await triggerSync(sql, tenant, { connectionId: first.id, estimatedItems: 50 });
      const newer = await triggerSync(sql, tenant, { connectionId: second.id });
      const ofPaused = await triggerSync(sql, tenant, { connectionId: paused.id });
      await updateConnection(sql, tenant, paused.id, { status: 'paused' });

      // Filters: a connection, an application.
      const bySlug = await claimSync(sql, tenant, { workerId: WORKER, applicationSlug: 'slack', leaseSeconds: 30 });
      expect(bySlug!.id).toBe(newer.id);
      expect(bySlug!.leaseSeconds).toBe(30);
      expect(await claimSync(sql, tenant, { workerId: WORKER, connectionId: paused.id })).toBeNull();

      const claimed = (await claimSync(sql, tenant, { workerId: WORKER }))!;
      expect(claimed).toMatchObject({ id: older.id, status: 'in_progress', workerId: WORKER, leaseSeconds: LEASE_SECONDS.default });
      expect(claimed.summary).toEqual({ in_progress: true, processed: 0, estimated_items: 50 });
      expect(claimed.startedAt.getTime()).toBeGreaterThanOrEqual(older.startedAt.getTime());
      expect(claimed.leaseExpiresAt!.getTime() - claimed.startedAt.getTime()).toBe(LEASE_SECONDS.default * 1000);
      expectRunReadsLikeSeeded(claimed);
      // The paused connection's run stays pending; nothing else is due; another tenant's runs are never claimed.
      expect(await claimSync(sql, tenant, { workerId: WORKER })).toBeNull();
      expect((await runRow(db, ofPaused.id)).status).toBe('pending');
      await triggerSync(sql, globex, { connectionId: (await connectApp(db, globex, { status: 'active' })).id });
      expect(await claimSync(sql, tenant, { workerId: WORKER })).toBeNull();

      expect(await errorCodeOf(claimSync(sql, tenant, { workerId: WORKER, leaseSeconds: 0 }))).toBe('INVALID_QUERY');
      expect(await errorCodeOf(claimSync(sql, tenant, { workerId: WORKER, leaseSeconds: LEASE_SECONDS.max + 1 }))).toBe('INVALID_QUERY');
    });

    it('records progress and extends the lease, for the claimer only', async () => {
      const run = await runningRun();
      await new Promise((resolve) => setTimeout(resolve, 20));
      const progressed = await reportSyncProgress(sql, acme, {
        syncId: run.id,
        workerId: WORKER,
        summary: { processed: 40, estimated_items: 90 },
      });
      expect(progressed.summary).toEqual({ in_progress: true, processed: 40, estimated_items: 90 });
      expect(progressed.leaseExpiresAt!.getTime()).toBeGreaterThan(run.leaseExpiresAt!.getTime());
      // The same report again gives the same summary.
      const again = await reportSyncProgress(sql, acme, {
        syncId: run.id,
        workerId: WORKER,
        summary: { processed: 40, estimated_items: 90 },
      });
      expect(again.summary).toEqual(progressed.summary);

      const before = await runRow(db, run.id);
      const other = await refusal(reportSyncProgress(sql, acme, { syncId: run.id, workerId: 'usr_other', summary: { processed: 1 } }));
      expect(other.message).toBe(`sync ${run.id} is "in_progress" under another worker's claim`);
      expect(await errorCodeOf(reportSyncProgress(sql, globex, { syncId: run.id, workerId: WORKER, summary: {} }))).toBe('NOT_FOUND');
      expect(await errorCodeOf(reportSyncProgress(sql, acme, { syncId: newId('syn'), workerId: WORKER, summary: {} }))).toBe('NOT_FOUND');
      expect(await runRow(db, run.id)).toEqual(before);

      const connection = await connectApp(db, acme, { status: 'active' });
      const pending = await triggerSync(sql, acme, { connectionId: connection.id });
      const unclaimed = await refusal(reportSyncProgress(sql, acme, { syncId: pending.id, workerId: WORKER, summary: {} }));
      expect(unclaimed.message).toMatch(/is "pending": it has not been claimed/);
    });

    it('finishes with success: server clock, outcome fields, connection active; nothing leaves success', async () => {
      const run = await runningRun();
      expect((await connectionRow(db, run.connectionId)).status).toBe('active');
      await db.raw.query(`UPDATE connections SET status = 'pending' WHERE id = $1`, [run.connectionId]);
      const {
        run: done,
        retry,
        connection,
      } = await finishSync(sql, acme, {
        syncId: run.id,
        workerId: WORKER,
        outcome: {
          status: 'success',
          summary: { processed: 10, inserted: 3, updated: 6, deleted: 1 },
          fileUrl: 'https://files.example.com/run.json',
          diff: { added: ['ext_1'] },
          checksum: { b: 'abc', f: '', ac: '', ap: '', ls: '', file: 'f00' },
        },
      });
      expect(done).toMatchObject({
        status: 'success',
        errorMessage: null,
        summary: { processed: 10, inserted: 3, updated: 6, deleted: 1 },
        fileUrl: 'https://files.example.com/run.json',
        diff: { added: ['ext_1'] },
        checksum: { b: 'abc', f: '', ac: '', ap: '', ls: '', file: 'f00' },
        leaseExpiresAt: null,
      });
      expect(done.finishedAt!.getTime()).toBeGreaterThanOrEqual(done.startedAt.getTime());
      expectRunReadsLikeSeeded(done);
      expect(retry).toBeNull();
      expect(connection).toMatchObject({ id: run.connectionId, status: 'active' });

      const before = await runRow(db, run.id);
      for (const outcome of [
        { status: 'failed', errorMessage: 'late', summary: {} },
        { status: 'success', summary: {} },
      ] as const) {
        const refused = await refusal(finishSync(sql, acme, { syncId: run.id, workerId: WORKER, outcome }));
        expect(refused.extensions.code).toBe('CONFLICT');
        expect(refused.message).toBe(
          `sync ${run.id} is "success": it cannot move to "${outcome.status}"; from "success" it can move to nothing (it is finished)`,
        );
      }
      expect(await runRow(db, run.id)).toEqual(before);
    });

    it('a failure with attempts left queues a retry with back-off; retries spent make the connection error; a success heals it', async () => {
      const run = await runningRun({ settings: { retry_attempts: 1 } });
      const failed = await finishSync(sql, acme, {
        syncId: run.id,
        workerId: WORKER,
        outcome: { status: 'failed', errorMessage: 'Provider API returned 503', summary: { errors: ['503'], processed: 7 } },
      });
      expect(failed.run).toMatchObject({
        status: 'failed',
        errorMessage: 'Provider API returned 503',
        summary: { errors: ['503'], processed: 7 },
      });
      expectRunReadsLikeSeeded(failed.run);
      expect(failed.connection).toBeNull();
      const retry = failed.retry!;
      expect(retry).toMatchObject({ status: 'pending', attempt: 2, retryOfId: run.id, summary: { queued: true } });
      expect((retry.dueAt!.getTime() - retry.startedAt.getTime()) / 1000).toBe(30);
      // Not due yet.
      expect(await claimSync(sql, acme, { workerId: WORKER, connectionId: run.connectionId })).toBeNull();

      // The same with no back-off, to follow the retry through.
      const now = { retryPolicy: { baseSeconds: 0, factor: 2, maxSeconds: 0 } };
      const first = await runningRun({ settings: { retry_attempts: 1 } });
      const { retry: immediate } = await finishSync(
        sql,
        acme,
        { syncId: first.id, workerId: WORKER, outcome: { status: 'failed', errorMessage: 'x', summary: {} } },
        now,
      );
      const second = (await claimSync(sql, acme, { workerId: WORKER, connectionId: first.connectionId }))!;
      expect(second).toMatchObject({ id: immediate!.id, attempt: 2 });
      const spent = await finishSync(
        sql,
        acme,
        { syncId: second.id, workerId: WORKER, outcome: { status: 'failed', errorMessage: 'again', summary: {} } },
        now,
      );
      expect(spent.retry).toBeNull();
      expect(spent.connection).toMatchObject({ id: first.connectionId, status: 'error' });

      // An admin (or a trigger) runs it again; a success makes it active.
      await triggerSync(sql, acme, { connectionId: first.connectionId });
      const third = (await claimSync(sql, acme, { workerId: WORKER, connectionId: first.connectionId }))!;
      const healed = await finishSync(sql, acme, { syncId: third.id, workerId: WORKER, outcome: { status: 'success', summary: {} } });
      expect(healed.connection).toMatchObject({ status: 'active' });
    });

    it('a paused connection stays paused whatever its running run does', async () => {
      const run = await runningRun({ settings: { retry_attempts: 0 } });
      await updateConnection(sql, acme, run.connectionId, { status: 'paused' });
      const result = await finishSync(sql, acme, {
        syncId: run.id,
        workerId: WORKER,
        outcome: { status: 'failed', errorMessage: 'x', summary: {} },
      });
      expect(result.connection).toBeNull();
      expect((await connectionRow(db, run.connectionId)).status).toBe('paused');
    });

    it('a lost lease: the report is refused, the reaper fails the run and retries it as configured, a late report is refused', async () => {
      const connection = await connectApp(db, acme, { status: 'active', settings: { retry_attempts: 2 } });
      await triggerSync(sql, acme, { connectionId: connection.id });
      const run = (await claimSync(sql, acme, { workerId: WORKER, connectionId: connection.id, leaseSeconds: 1 }))!;
      const leaseOver = async () =>
        (await db.raw.query<{ over: boolean }>('SELECT lease_expires_at <= now() AS over FROM syncs WHERE id = $1', [run.id]))[0]!.over;
      await waitFor(leaseOver, 10_000, 'the lease to expire');

      const before = await runRow(db, run.id);
      const lost = await refusal(reportSyncProgress(sql, acme, { syncId: run.id, workerId: WORKER, summary: { processed: 5 } }));
      expect(lost.extensions.code).toBe('CONFLICT');
      expect(lost.message).toMatch(new RegExp(`^the lease on sync ${run.id} expired at .*lease_seconds \\(1\\)`));
      expect(await runRow(db, run.id)).toEqual(before);

      // Another tenant's reaper does not touch it.
      expect((await expireLeases(sql, globex)).failed).toEqual([]);
      const reaped = await expireLeases(sql, acme);
      const failed = reaped.failed.find((r) => r.id === run.id)!;
      expect(failed).toMatchObject({
        status: 'failed',
        errorMessage: 'worker lost: lease expired',
        summary: { errors: ['worker lost: lease expired'], processed: 0 },
      });
      expectRunReadsLikeSeeded(failed);
      const retry = reaped.retries.find((r) => r.retryOfId === run.id)!;
      expect(retry).toMatchObject({ status: 'pending', attempt: 2, connectionId: connection.id });
      // Reaping again finds nothing: no run is failed twice.
      expect((await expireLeases(sql, acme)).failed.map((r) => r.id)).not.toContain(run.id);

      const late = await refusal(finishSync(sql, acme, { syncId: run.id, workerId: WORKER, outcome: { status: 'success', summary: {} } }));
      expect(late.message).toMatch(/is "failed".*\(it failed: worker lost: lease expired\)/);
    });

    it('the scheduler queues a run for due pending and active connections with a sync_interval, once', async () => {
      const tenant = await createTenant(db, `schedule-${kind}`);
      const active = await connectApp(db, tenant, { status: 'active' });
      const fresh = await connectApp(db, tenant);
      const manual = await connectApp(db, tenant, { status: 'active', settings: { sync_interval: null } });
      const paused = await connectApp(db, tenant, { status: 'paused' });
      const failing = await connectApp(db, tenant, { status: 'error' });
      const busy = await connectApp(db, tenant, { status: 'active' });
      const busyRun = await triggerSync(sql, tenant, { connectionId: busy.id });
      const deleted = await connectApp(db, tenant, { status: 'active' });
      await deleteConnection(sql, tenant, deleted.id);

      const scheduled = await scheduleDueSyncs(sql, tenant);
      expect(scheduled.map((r) => r.connectionId).sort()).toEqual([active.id, fresh.id].sort());
      for (const run of scheduled) {
        expect(run).toMatchObject({ status: 'pending', summary: { queued: true }, attempt: 1 });
        expectRunReadsLikeSeeded(run);
      }
      expect(await scheduleDueSyncs(sql, tenant)).toEqual([]);
      expect((await runRow(db, busyRun.id)).status).toBe('pending');
      for (const quiet of [manual, paused, failing]) expect(await db.prisma.sync.count({ where: { connectionId: quiet.id } })).toBe(0);

      // Once its run is done, a connection is due again only after its interval.
      const claimed = (await claimSync(sql, tenant, { workerId: WORKER, connectionId: active.id }))!;
      await finishSync(sql, tenant, { syncId: claimed.id, workerId: WORKER, outcome: { status: 'success', summary: {} } });
      expect(await scheduleDueSyncs(sql, tenant)).toEqual([]);
      const again = await scheduleDueSyncs(sql, tenant, { intervalSeconds: { '15m': 0, '1h': 0, '6h': 0, '24h': 0 } });
      expect(again.map((r) => r.connectionId)).toEqual([active.id]);
    });
  });

  it('scoped every statement by tenant', () => {
    expect(statements.length).toBeGreaterThan(50);
    const kinds = new Set(statements.map((text) => /^\s*(WITH|SELECT|INSERT|UPDATE|DELETE)/.exec(text)?.[1]));
    expect([...kinds].sort()).toEqual(['INSERT', 'SELECT', 'UPDATE', 'WITH']);
    for (const text of new Set(statements)) expect(tenantScopeProblems(text, TENANT_TABLES), text).toEqual([]);
  });
});
