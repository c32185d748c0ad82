import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimSync, finishSync } from '../src/db/sync-runs.js';
import { startScheduler } from '../src/scheduler.js';
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
    for (let i = 0; i < CONNECTIONS; i++) await connectApp(db, tenantId, { status: 'active', settings: { sync_interval: '15m', retry_attempts: 1 } });
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
    const lastRound = await db.raw.query<{ connection_id: string }>(`SELECT connection_id FROM syncs WHERE tenant_id = $1 AND status = 'pending'`, [tenantId]);
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

    const ticks = children.map((child) => child.stdout().split('\n').filter((line) => line.includes('"scheduler tick"')).length);
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
