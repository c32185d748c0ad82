import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimSync, finishSync, triggerSync } from '../src/db/sync-runs.js';
import { DELIVERIES_PER_TENANT_STEP, runSchedulerTick, startScheduler } from '../src/scheduler.js';
import { MAX_DELIVERIES_PER_EVENT } from '../src/domain/webhook-caps.js';
import { seedCatalog } from '../src/seed/catalog.js';
import { startChild, type Child } from './fixtures/children.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from './fixtures/databases.js';
import { connectApp, createTenant, waitFor } from './fixtures/write-side.js';

const CONNECTIONS = 20;
const ROUNDS = 3;

interface Counts {
  total: number;
  pending: number;
  inProgress: number;
  /** The most runs any one connection has. */
  most: number;
}

describe.runIf(databaseKinds.includes('postgres'))('two scheduler processes on one PostgreSQL database', () => {
  let db: TestDatabase;
  let tenantId: string;
  const children: Child[] = [];
  beforeAll(async () => {
    db = await createTestDatabase('postgres');
    await seedCatalog(db);
    tenantId = await createTenant(db, 'scheduled');
    // Every interval lasts one second in the scheduler processes; retries are due at once.
    for (let i = 0; i < CONNECTIONS; i++)
      await connectApp(db, tenantId, { status: 'active', settings: { sync_interval: '15m', retry_attempts: 1 } });
  });
  afterAll(async () => {
    await Promise.all(children.map((child) => child.stop()));
    await db?.dispose();
  });

  const counts = async (): Promise<Counts> => {
    const [row] = await db.raw.query<Counts>(
      `SELECT count(*)::int AS total, count(*) FILTER (WHERE status = 'pending')::int AS pending,
              count(*) FILTER (WHERE status = 'in_progress')::int AS "inProgress",
              coalesce(max(per.n), 0)::int AS most
       FROM syncs s JOIN (SELECT connection_id, count(*) AS n FROM syncs WHERE tenant_id = $1 GROUP BY connection_id) per USING (connection_id)
       WHERE s.tenant_id = $1`,
      [tenantId],
    );
    return row!;
  };

  it('queue the expected runs over several ticks with no duplicate, and fail each expired lease once', async () => {
    for (let i = 0; i < 2; i++) children.push(startChild('test/fixtures/scheduler-process.ts', [], { DATABASE_URL: db.url! }));
    await waitFor(async () => children.every((child) => child.stdout().includes('scheduler started')), 60_000, 'both schedulers to start');

    for (let round = 1; round <= ROUNDS; round++) {
      // Each connection gets exactly one run per round: the round's runs all pending, no more than that.
      await waitFor(async () => (await counts()).pending === CONNECTIONS, 30_000, `round ${round}'s runs`);
      expect(await counts()).toEqual({ total: round * CONNECTIONS, pending: CONNECTIONS, inProgress: 0, most: round });
      if (round === ROUNDS) break;
      // An engine runs this round's runs, one connection at a time: a connection finished early may get its
      // next round's run meanwhile (a second after its claim), which this loop leaves for the next round.
      const connections = await db.raw.query<{ connection_id: string }>(
        `SELECT connection_id FROM syncs WHERE tenant_id = $1 AND status = 'pending'`,
        [tenantId],
      );
      for (const { connection_id: connectionId } of connections) {
        const run = (await claimSync(db.raw, tenantId, { workerId: 'engine', connectionId }))!;
        await finishSync(db.raw, tenantId, { syncId: run.id, workerId: 'engine', outcome: { status: 'success', summary: {} } });
      }
    }

    // The last round's runs are claimed with a one-second lease and abandoned: both processes reap.
    // (One connection at a time again: a retry queued by a reaper meanwhile is not this loop's.)
    const lastRound = await db.raw.query<{ connection_id: string }>(
      `SELECT connection_id FROM syncs WHERE tenant_id = $1 AND status = 'pending'`,
      [tenantId],
    );
    for (const { connection_id: connectionId } of lastRound) {
      expect(await claimSync(db.raw, tenantId, { workerId: 'vanishing', leaseSeconds: 1, connectionId })).not.toBeNull();
    }
    await waitFor(async () => (await counts()).pending === CONNECTIONS && (await counts()).inProgress === 0, 30_000, 'the reapers');
    const lost = await db.raw.query<{ id: string; retries: number }>(
      `SELECT s.id, (SELECT count(*)::int FROM syncs r WHERE r.retry_of_id = s.id) AS retries
       FROM syncs s WHERE s.tenant_id = $1 AND s.error_message = 'worker lost: lease expired'`,
      [tenantId],
    );
    expect(lost).toHaveLength(CONNECTIONS);
    expect(lost.every((run) => run.retries === 1)).toBe(true);
    expect(await counts()).toEqual({ total: (ROUNDS + 1) * CONNECTIONS, pending: CONNECTIONS, inProgress: 0, most: ROUNDS + 1 });

    const ticks = children.map(
      (child) =>
        child
          .stdout()
          .split('\n')
          .filter((line) => line.includes('"scheduler tick"')).length,
    );
    console.info(`scheduler ticks with work, per process: ${ticks.join(', ')}`);
    expect(ticks.reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
    expect(await Promise.all(children.map((child) => child.stop()))).toEqual([0, 0]);
    for (const child of children) expect(child.stderr()).toBe('');
  });
});

describe.each(databaseKinds)('the scheduler in this process on %s', (kind) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase(kind);
    await seedCatalog(db);
  });
  afterAll(() => db?.dispose());

  it('ticks at once and then every tickMs, logging what it did; after stop() nothing more is queued', async () => {
    const tenantId = await createTenant(db, 'ticking');
    const connection = await connectApp(db, tenantId, { status: 'active' });
    const lines: string[] = [];
    const log = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString('utf8'));
        done();
      },
    });
    const scheduler = startScheduler({ db, logger: pino({ level: 'info' }, log), tickMs: 100 });
    await waitFor(async () => (await db.prisma.sync.count({ where: { connectionId: connection.id } })) === 1, 10_000, 'the first tick');
    await scheduler.stop();
    expect(lines.some((line) => line.includes('scheduler tick') && line.includes('"scheduled":1'))).toBe(true);
    // Stopped: a newly due connection gets nothing.
    const later = await connectApp(db, tenantId, { status: 'active' });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await db.prisma.sync.count({ where: { connectionId: later.id } })).toBe(0);
  });
});

describe.each(databaseKinds)("one tenant's part of a tick never holds up another's on %s", (kind) => {
  let db: TestDatabase;
  /** Sorted before the neighbour: its steps run first in every tick. */
  const crowded = 'ten_0000crowded';
  const neighbour = 'ten_zzzzneighbour';
  const lines: string[] = [];
  const logger = pino(
    { level: 'info' },
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString('utf8'));
        done();
      },
    }),
  );
  const ENDPOINTS = 300;
  const SCHEDULED = 300;

  beforeAll(async () => {
    db = await createTestDatabase(kind);
    await seedCatalog(db);
    for (const id of [crowded, neighbour]) await db.prisma.tenant.create({ data: { id, slug: id, name: id } });
    // The crowded tenant: many connections due every second, each run's events sent to many endpoints (more
    // than the cap allows now: made before it, straight into the table).
    for (let i = 0; i < SCHEDULED; i++) {
      await connectApp(db, crowded, { status: 'active', settings: { sync_interval: '15m', webhook_enabled: true }, name: `Crowded ${i}` });
    }
    await db.raw.query(
      `INSERT INTO webhook_endpoints (id, tenant_id, url, secret)
       SELECT 'whk_crowded' || g, $1, 'https://example.com/' || g, 'whsec_unused' FROM generate_series(1, $2::int) AS g`,
      [crowded, ENDPOINTS],
    );
  });
  afterAll(() => db?.dispose());

  /** The neighbour's run claimed with a one-second lease and abandoned, an expired key and an old event of its own. */
  async function neighbourWork(): Promise<{ runId: string; key: string }> {
    const connection = await connectApp(db, neighbour, { status: 'active', name: `Neighbour ${Date.now()}` });
    await triggerSync(db.raw, neighbour, { connectionId: connection.id });
    const run = (await claimSync(db.raw, neighbour, { workerId: 'vanishing', leaseSeconds: 1, connectionId: connection.id }))!;
    const key = `expired-${Date.now()}`;
    await db.raw.query(
      `INSERT INTO idempotency_keys (tenant_id, key, method, path, request_hash, expires_at, created_at)
       VALUES ($1, $2, 'POST', '/x', 'h', now() - interval '1 minute', now() - interval '2 days')`,
      [neighbour, key],
    );
    await db.raw.query(`UPDATE events SET created_at = now() - interval '3 hours' WHERE tenant_id = $1`, [neighbour]);
    return { runId: run.id, key };
  }

  async function reaped({ runId, key }: { runId: string; key: string }): Promise<boolean> {
    const [row] = await db.raw.query<{ status: string; keys: number; old: number }>(
      `SELECT (SELECT status::text FROM syncs WHERE id = $1) AS status,
              (SELECT count(*)::int FROM idempotency_keys WHERE tenant_id = $2 AND key = $3) AS keys,
              (SELECT count(*)::int FROM events WHERE tenant_id = $2 AND created_at < now() - interval '2 hours') AS old`,
      [runId, neighbour, key],
    );
    return row!.status === 'failed' && row!.keys === 0 && row!.old === 0;
  }

  const fastIntervals = { '15m': 1, '1h': 1, '6h': 1, '24h': 1 };

  it('a tenant with many endpoints and scheduled connections: the neighbour is reaped within a few seconds, each tick queues a bounded share', async () => {
    const work = await neighbourWork();
    await new Promise((resolve) => setTimeout(resolve, 1100));
    // The first tick, alone: what it queues for the crowded tenant stays within the per-step budget.
    const tick = await runSchedulerTick({ db, intervalSeconds: fastIntervals, eventRetentionHours: 2 });
    expect(tick.failedSteps).toBe(0);
    expect(await reaped(work)).toBe(true);
    const [queued] = await db.raw.query<{ n: number }>('SELECT count(*)::int AS n FROM webhook_deliveries WHERE tenant_id = $1', [crowded]);
    expect(queued!.n).toBeGreaterThan(0);
    expect(queued!.n).toBeLessThanOrEqual(2 * DELIVERIES_PER_TENANT_STEP);

    // Ticking on, with the crowded tenant's work due again every second: the next abandoned lease is reaped promptly.
    const scheduler = startScheduler({ db, logger, tickMs: 100, intervalSeconds: fastIntervals, eventRetentionHours: 2 });
    try {
      const again = await neighbourWork();
      const started = Date.now();
      await waitFor(() => reaped(again), 10_000, "the neighbour's lease, key and event");
      const seconds = (Date.now() - started) / 1000;
      console.info(
        `${kind}: the neighbour's 1 s lease reaped ${seconds.toFixed(1)} s after its claim, beside ${ENDPOINTS} endpoints and ${SCHEDULED} scheduled connections`,
      );
      expect(seconds).toBeLessThan(5);
    } finally {
      await scheduler.stop();
    }
  });

  it('an event fans out to at most MAX_DELIVERIES_PER_EVENT endpoints, the oldest', async () => {
    await db.raw.query(
      `INSERT INTO webhook_endpoints (id, tenant_id, url, secret, created_at)
       SELECT 'whk_later' || g, $1, 'https://example.com/later/' || g, 'whsec_unused', now() + make_interval(secs => g) FROM generate_series(1, $2::int) AS g`,
      [crowded, MAX_DELIVERIES_PER_EVENT],
    );
    const connection = await connectApp(db, crowded, { settings: { webhook_enabled: true }, name: 'Fan-out' });
    const [fanOut] = await db.raw.query<{ n: number; later: number }>(
      `SELECT count(*)::int AS n, count(*) FILTER (WHERE endpoint_id LIKE 'whk_later%')::int AS later
       FROM webhook_deliveries WHERE tenant_id = $1 AND event_type = 'connection.created' AND payload -> 'data' ->> 'id' = $2`,
      [crowded, connection.id],
    );
    expect(fanOut).toEqual({ n: MAX_DELIVERIES_PER_EVENT, later: MAX_DELIVERIES_PER_EVENT - ENDPOINTS });
    await db.raw.query(`DELETE FROM webhook_endpoints WHERE id LIKE 'whk_later%'`);
  });

  it("a step that fails is logged and counted, and the tenant's other steps and the other tenants run", async () => {
    // Every run the crowded tenant's scheduling inserts is refused by the database.
    await db.raw.exec(`
      CREATE FUNCTION refuse_crowded_runs() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.tenant_id = '${crowded}' THEN RAISE EXCEPTION 'refused for the test'; END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER refuse_crowded_runs BEFORE INSERT ON syncs FOR EACH ROW EXECUTE FUNCTION refuse_crowded_runs();
      DELETE FROM syncs WHERE tenant_id = '${crowded}' AND status IN ('pending', 'in_progress');`);
    try {
      const work = await neighbourWork();
      await new Promise((resolve) => setTimeout(resolve, 1100));
      lines.length = 0;
      const tick = await runSchedulerTick({ db, logger, intervalSeconds: fastIntervals, eventRetentionHours: 2 });
      expect(tick.failedSteps).toBe(1);
      expect(await reaped(work)).toBe(true);
      const failed = lines.map((line) => JSON.parse(line)).filter((entry) => entry.msg === 'scheduler step failed');
      expect(failed).toHaveLength(1);
      expect(failed[0]).toMatchObject({ step: 'schedule due runs', tenant: crowded });
    } finally {
      await db.raw.exec('DROP TRIGGER refuse_crowded_runs ON syncs; DROP FUNCTION refuse_crowded_runs();');
    }
  });

  it.runIf(kind === 'postgres')('a step past its time budget is cancelled by PostgreSQL, and the next tenant is reaped', async () => {
    // Queuing the crowded tenant's runs now takes 10 s a run.
    await db.raw.exec(`
      CREATE FUNCTION slow_crowded_leases() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.tenant_id = '${crowded}' THEN PERFORM pg_sleep(10); END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER slow_crowded_leases BEFORE INSERT ON syncs FOR EACH ROW EXECUTE FUNCTION slow_crowded_leases();`);
    try {
      await db.raw.query(`DELETE FROM syncs WHERE tenant_id = $1 AND status IN ('pending', 'in_progress')`, [crowded]);
      const work = await neighbourWork();
      await new Promise((resolve) => setTimeout(resolve, 1100));
      lines.length = 0;
      const started = Date.now();
      const tick = await runSchedulerTick({ db, logger, intervalSeconds: fastIntervals, eventRetentionHours: 2, stepBudgetMs: 500 });
      expect(Date.now() - started).toBeLessThan(5000);
      expect(tick.failedSteps).toBeGreaterThanOrEqual(1);
      expect(await reaped(work)).toBe(true);
      expect(lines.some((line) => line.includes('scheduler step over its time budget, cancelled') && line.includes(crowded))).toBe(true);
    } finally {
      await db.raw.exec('DROP TRIGGER slow_crowded_leases ON syncs; DROP FUNCTION slow_crowded_leases();');
    }
  });
});
