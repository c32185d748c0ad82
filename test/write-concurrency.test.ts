import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../src/db/client.js';
import {
  deleteExpiredIdempotencyKeys,
  findIdempotencyKey,
  hashRequestBody,
  runIdempotently,
  storeIdempotentResponse,
  type IdempotentRequest,
} from '../src/db/idempotency.js';
import { claimSync, reportSyncProgress, triggerSync } from '../src/db/sync-runs.js';
import type { Sync } from '../src/generated/prisma/client.js';
import { runSchedulerTick } from '../src/scheduler.js';
import { seedCatalog } from '../src/seed/catalog.js';
import { seedLoad } from '../src/seed/load.js';
import { startChild } from './fixtures/children.js';
import { runClaimers } from './fixtures/claimers.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from './fixtures/databases.js';
import { connectApp, createTenant, errorCodeOf, runRow, waitFor } from './fixtures/write-side.js';

const RUNS = 200;
const CLAIMERS = 20;

/** A tenant with `count` active connections, each with one pending run; returns the tenant id and run ids. */
async function pendingRuns(db: Database, slug: string, count: number): Promise<{ tenantId: string; runs: string[] }> {
  const tenantId = await createTenant(db, slug);
  await seedLoad(db, slug, { connections: count, syncs: 0 });
  await db.raw.query(`UPDATE connections SET status = 'active' WHERE tenant_id = $1`, [tenantId]);
  const connections = await db.raw.query<{ id: string }>('SELECT id FROM connections WHERE tenant_id = $1', [tenantId]);
  const runs: string[] = [];
  for (const { id } of connections) runs.push((await triggerSync(db.raw, tenantId, { connectionId: id })).id);
  return { tenantId, runs };
}

async function statusCounts(db: Database, tenantId: string): Promise<Record<string, number>> {
  const rows = await db.raw.query<{ status: string; n: number }>(
    'SELECT status::text AS status, count(*)::int AS n FROM syncs WHERE tenant_id = $1 GROUP BY status',
    [tenantId],
  );
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}

function expectEachClaimedOnce(claims: string[][], runs: string[]): void {
  const all = claims.flat();
  expect(all.length).toBe(runs.length);
  expect(new Set(all).size).toBe(runs.length);
  expect([...all].sort()).toEqual([...runs].sort());
}

describe.each(databaseKinds)('concurrent writers on %s', (kind) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase(kind, { poolSize: CLAIMERS + 5 });
    await seedCatalog(db);
  });
  afterAll(() => db?.dispose());

  it(`${CLAIMERS} concurrent claimers take ${RUNS} runs: each exactly once, none lost, none left in progress`, async () => {
    const { tenantId, runs } = await pendingRuns(db, `claims-${kind}`, RUNS);
    const started = performance.now();
    const claims = await runClaimers(db.raw, tenantId, CLAIMERS, 'claimer');
    const seconds = (performance.now() - started) / 1000;
    expectEachClaimedOnce(claims, runs);
    expect(await statusCounts(db, tenantId)).toEqual({ success: RUNS });
    // On PostgreSQL the claimers really overlap: more than one of them took work.
    if (kind === 'postgres') expect(claims.filter((c) => c.length > 0).length).toBeGreaterThan(1);
    console.info(`${kind}: ${RUNS} runs claimed, reported and finished by ${CLAIMERS} claimers in ${seconds.toFixed(2)} s`);
  });

  it('a claimer that stops heartbeating loses its run to the reaper, which retries it; its late report is a CONFLICT', async () => {
    const tenantId = await createTenant(db, `lease-${kind}`);
    const connection = await connectApp(db, tenantId, { status: 'active', settings: { retry_attempts: 1 } });
    await triggerSync(db.raw, tenantId, { connectionId: connection.id });
    // A 3 s lease leaves room for a slow machine between heartbeats (every 300 ms, plus a scheduler tick).
    const run = (await claimSync(db.raw, tenantId, { workerId: 'w', leaseSeconds: 3 }))!;
    // Heartbeats keep the run through scheduler ticks well past its first lease.
    const until = Date.now() + 4_500;
    while (Date.now() < until) {
      await reportSyncProgress(db.raw, tenantId, { syncId: run.id, workerId: 'w', summary: { processed: 1 } });
      await runSchedulerTick({ db });
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
    expect((await runRow(db, run.id)).status).toBe('in_progress');
    // Then the claimer goes quiet.
    await waitFor(
      async () => {
        await runSchedulerTick({ db });
        return (await runRow(db, run.id)).status === 'failed';
      },
      15_000,
      'the reaper to fail the run',
    );
    expect(await runRow(db, run.id)).toMatchObject({ error_message: 'worker lost: lease expired' });
    const [retry] = await db.raw.query<{ id: string; attempt: number; status: string }>(
      'SELECT id, attempt, status::text AS status FROM syncs WHERE retry_of_id = $1',
      [run.id],
    );
    expect(retry).toMatchObject({ attempt: 2, status: 'pending' });
    expect(await errorCodeOf(reportSyncProgress(db.raw, tenantId, { syncId: run.id, workerId: 'w', summary: {} }))).toBe('CONFLICT');
  });

  describe('idempotency keys', () => {
    let tenantId: string;
    beforeAll(async () => {
      tenantId = await createTenant(db, `keys-${kind}`);
    });
    const request = (key: string, body: unknown): IdempotentRequest => ({
      key,
      method: 'POST',
      path: '/api/v1/integrations/syncs',
      requestHash: hashRequestBody(body),
    });
    const trigger = (key: string, connectionId: string) =>
      runIdempotently(
        db.raw,
        tenantId,
        request(key, { connection_id: connectionId }),
        (sql) => triggerSync(sql, tenantId, { connectionId }),
        (run: Sync) => ({ type: 'sync', id: run.id }),
      );

    it('concurrent requests with the same key do the work once; the others replay it', async () => {
      const connection = await connectApp(db, tenantId, { status: 'active' });
      const outcomes = await Promise.all(Array.from({ length: 10 }, () => trigger('same-key', connection.id)));
      const done = outcomes.filter((o) => !o.replayed);
      expect(done).toHaveLength(1);
      const runId = !done[0]!.replayed ? done[0]!.result.id : '';
      for (const outcome of outcomes.filter((o) => o.replayed)) {
        expect(outcome.replayed && outcome.record.resource).toEqual({ type: 'sync', id: runId });
      }
      expect(await db.prisma.sync.count({ where: { connectionId: connection.id } })).toBe(1);

      // Once the response is stored, a replay carries it; a second store does not replace it.
      await storeIdempotentResponse(db.raw, tenantId, 'same-key', { status: 201, body: { msg: 'created', data: { id: runId } } });
      await storeIdempotentResponse(db.raw, tenantId, 'same-key', { status: 500, body: null });
      const replay = await trigger('same-key', connection.id);
      expect(replay.replayed && replay.record.response).toEqual({ status: 201, body: { msg: 'created', data: { id: runId } } });
    });

    it('concurrent triggers with different keys: one run, the others CONFLICT, and their keys are not kept', async () => {
      const connection = await connectApp(db, tenantId, { status: 'active' });
      const settled = await Promise.allSettled(Array.from({ length: 10 }, (_, i) => trigger(`k-${connection.id}-${i}`, connection.id)));
      expect(settled.filter((s) => s.status === 'fulfilled')).toHaveLength(1);
      for (const refused of settled.filter((s): s is PromiseRejectedResult => s.status === 'rejected')) {
        expect(refused.reason.extensions.code).toBe('CONFLICT');
      }
      expect(await db.prisma.sync.count({ where: { connectionId: connection.id } })).toBe(1);
      const kept = await db.raw.query('SELECT key FROM idempotency_keys WHERE tenant_id = $1 AND key LIKE $2', [
        tenantId,
        `k-${connection.id}-%`,
      ]);
      expect(kept).toHaveLength(1);
    });

    it('the same key with another body, method or path is IDEMPOTENCY_KEY_REUSED (422); a different member order is the same body', async () => {
      const connection = await connectApp(db, tenantId, { status: 'active' });
      await trigger('reused', connection.id);
      const other = await connectApp(db, tenantId, { status: 'active' });
      const refused = await trigger('reused', other.id).catch((error) => error);
      expect(refused.extensions).toMatchObject({ code: 'IDEMPOTENCY_KEY_REUSED', http: { status: 422 } });
      // Neither the earlier operation nor its time is revealed.
      expect(refused.message).toBe('the Idempotency-Key was already used for another request; use a new key for a new request');
      expect(refused.message).not.toMatch(/syncs|POST|\d{4}-\d{2}-\d{2}/);
      const elsewhere = await runIdempotently(
        db.raw,
        tenantId,
        { ...request('reused', { connection_id: connection.id }), path: '/other' },
        async () => 1,
        () => null,
      ).catch((error) => error);
      expect(elsewhere.extensions.code).toBe('IDEMPOTENCY_KEY_REUSED');
      expect(await db.prisma.sync.count({ where: { connectionId: other.id } })).toBe(0);
      expect(hashRequestBody({ a: 1, b: { c: [1, { d: 2, e: 3 }] } })).toBe(hashRequestBody({ b: { c: [1, { e: 3, d: 2 }] }, a: 1 }));
      expect(hashRequestBody({ a: 1 })).not.toBe(hashRequestBody({ a: '1' }));
    });

    it('keys are per tenant, expire after 24 h and are then reusable, and expired ones are deleted in batches', async () => {
      const connection = await connectApp(db, tenantId, { status: 'active' });
      const first = await trigger('expiring', connection.id);
      const record = await findIdempotencyKey(db.raw, tenantId, 'expiring');
      expect(record!.expiresAt.getTime() - record!.createdAt.getTime()).toBe(24 * 3600 * 1000);
      // Another tenant's identical key is its own.
      const otherTenant = await createTenant(db, `keys-other-${kind}`);
      const theirs = await connectApp(db, otherTenant, { status: 'active' });
      const outcome = await runIdempotently(
        db.raw,
        otherTenant,
        request('expiring', { connection_id: theirs.id }),
        (sql) => triggerSync(sql, otherTenant, { connectionId: theirs.id }),
        (run) => ({ type: 'sync', id: run.id }),
      );
      expect(outcome.replayed).toBe(false);

      await db.raw.query(
        `UPDATE idempotency_keys SET created_at = created_at - interval '2 days', expires_at = now() - interval '1 second' WHERE tenant_id = $1 AND key = 'expiring'`,
        [tenantId],
      );
      expect(await findIdempotencyKey(db.raw, tenantId, 'expiring')).toBeNull();
      // An expired key is this request's again: the work runs (here: a CONFLICT, the first run is still pending).
      expect(await errorCodeOf(trigger('expiring', connection.id))).toBe('CONFLICT');
      expect(first.replayed).toBe(false);

      const expired = await db.raw.query<{ n: number }>(`SELECT count(*)::int AS n FROM idempotency_keys WHERE expires_at <= now()`);
      expect(expired[0]!.n).toBe(1);
      expect(await deleteExpiredIdempotencyKeys(db.raw, 10)).toBe(1);
      expect(await deleteExpiredIdempotencyKeys(db.raw, 10)).toBe(0);
      expect(await db.raw.query('SELECT 1 FROM idempotency_keys WHERE tenant_id = $1', [otherTenant])).toHaveLength(1);
    });
  });
});

describe.runIf(databaseKinds.includes('postgres'))('claimers in separate processes on postgres', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase('postgres');
    await seedCatalog(db);
  });
  afterAll(() => db?.dispose());

  it(`4 processes × 5 claimers take ${RUNS} runs: each exactly once, none left in progress`, async () => {
    const { tenantId, runs } = await pendingRuns(db, 'claims-processes', RUNS);
    const children = Array.from({ length: 4 }, () => startChild('test/fixtures/claimers-process.ts', [db.url!, tenantId, '5']));
    const codes = await Promise.all(children.map((child) => child.exited));
    expect(codes, children.map((c) => c.stderr()).join('\n')).toEqual([0, 0, 0, 0]);
    const claims = children.flatMap((child) => JSON.parse(child.stdout()) as string[][]);
    expectEachClaimedOnce(claims, runs);
    expect(await statusCounts(db, tenantId)).toEqual({ success: RUNS });
  });
});
