import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../src/db/client.js';
import { deleteConnection } from '../src/db/connection-writes.js';
import { migrate, MIGRATIONS_DIR, readMigrations } from '../src/db/migrate.js';
import { claimSync, expireLeases, finishSync, reportSyncProgress, scheduleDueSyncs, triggerSync } from '../src/db/sync-runs.js';
import { withinTransaction } from '../src/db/write-transactions.js';
import { ApiError } from '../src/errors.js';
import { seedCatalog } from '../src/seed/catalog.js';
import { seedLoad } from '../src/seed/load.js';
import { createRng, type Rng } from '../src/seed/random.js';
import { insertSyncs, syncHistory } from '../src/seed/syncs.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from './fixtures/databases.js';
import { createTestGateway, graphql, type TestGateway } from './fixtures/gateway.js';
import { BASE, restOk } from './fixtures/rest.js';
import { connectApp, createTenant } from './fixtures/write-side.js';

// sync_counts is kept by triggers on syncs in every writing transaction. After a seeded
// random mix of the write side's operations, bulk loads, deletes and rolled-back transactions (concurrent ones
// on PostgreSQL), every kept count must equal count(*) of its key; and the lists that read their totals from
// it must answer what count(*) answers.

type Counts = Record<string, number>;

/** count(*) of syncs per (tenant, connection, status). */
async function countedByRows(db: Database): Promise<Counts> {
  const rows = await db.raw.query<{ key: string; n: number }>(
    `SELECT tenant_id || '|' || connection_id || '|' || status::text AS key, count(*)::int AS n FROM syncs GROUP BY tenant_id, connection_id, status`,
  );
  return Object.fromEntries(rows.map((row) => [row.key, row.n]));
}

/** The kept counts that are not 0 (a key whose runs are gone may keep a 0). */
async function keptCounts(db: Database): Promise<Counts> {
  const rows = await db.raw.query<{ key: string; n: number }>(
    `SELECT tenant_id || '|' || connection_id || '|' || status::text AS key, count::int AS n FROM sync_counts WHERE count <> 0`,
  );
  return Object.fromEntries(rows.map((row) => [row.key, row.n]));
}

async function expectCountsExact(db: Database, when: string): Promise<void> {
  const [rows, kept] = [await countedByRows(db), await keptCounts(db)];
  expect(kept, `sync_counts after ${when}`).toEqual(rows);
}

const FAST_RETRY = { retryPolicy: { baseSeconds: 0, factor: 1, maxSeconds: 0 } };
const WORKER = 'counts-worker';

/** Refusals the random mix runs into by design (a run claimed meanwhile, a connection deleted…). */
function expectedRefusal(error: unknown): boolean {
  return error instanceof ApiError && ['CONFLICT', 'NOT_FOUND'].includes(error.code);
}

async function idsOf(db: Database, sql: string, values: unknown[]): Promise<string[]> {
  return (await db.raw.query<{ id: string }>(sql, values)).map((row) => row.id);
}

interface Mix {
  db: Database;
  tenantId: string;
  slug: string;
  rng: Rng;
  /** Bulk loads and whole-connection deletes are rarer when several workers share the tenant. */
  heavy: boolean;
}

/** One random operation of the write side (or of a hand at psql) on the tenant; returns its name. */
async function randomWrite({ db, tenantId, slug, rng, heavy }: Mix): Promise<string> {
  const live = () => idsOf(db, 'SELECT id FROM connections WHERE tenant_id = $1 AND deleted_at IS NULL ORDER BY id', [tenantId]);
  const inProgress = () =>
    idsOf(db, `SELECT id FROM syncs WHERE tenant_id = $1 AND status = 'in_progress' AND worker_id = $2 ORDER BY id`, [tenantId, WORKER]);
  const operation = rng.weighted<string>([
    ['trigger', 8],
    ['claim', 8],
    ['progress', 6],
    ['finish', 8],
    ['reap', 2],
    ['schedule', 2],
    ['connect', 2],
    ['delete-connection', 1],
    ['load', heavy ? 2 : 0.5],
    ['delete-runs', heavy ? 1 : 0.3],
    ['rolled-back', 2],
  ]);
  try {
    switch (operation) {
      case 'trigger': {
        const connections = await live();
        if (connections.length > 0)
          await triggerSync(db.raw, tenantId, { connectionId: rng.pick(connections), estimatedItems: rng.int(1, 99) });
        break;
      }
      case 'claim':
        await claimSync(db.raw, tenantId, { workerId: WORKER, leaseSeconds: 600 });
        break;
      case 'progress': {
        const runs = await inProgress();
        if (runs.length > 0)
          await reportSyncProgress(db.raw, tenantId, { syncId: rng.pick(runs), workerId: WORKER, summary: { processed: rng.int(1, 50) } });
        break;
      }
      case 'finish': {
        const runs = await inProgress();
        if (runs.length === 0) break;
        const outcome = rng.chance(0.6)
          ? ({ status: 'success', summary: { processed: 5, inserted: 2, updated: 2, deleted: 1 } } as const)
          : ({ status: 'failed', errorMessage: 'provider said no', summary: { processed: 1 } } as const);
        await finishSync(db.raw, tenantId, { syncId: rng.pick(runs), workerId: WORKER, outcome }, FAST_RETRY);
        break;
      }
      case 'reap': {
        // A lease that ran out: the update keeps the status (nets to nothing), the reaper fails and retries.
        const runs = await inProgress();
        if (runs.length > 0) {
          await db.raw.query(
            `UPDATE syncs SET lease_expires_at = now() - interval '1 second' WHERE tenant_id = $1 AND id = $2 AND status = 'in_progress'`,
            [tenantId, rng.pick(runs)],
          );
        }
        await expireLeases(db.raw, tenantId, FAST_RETRY);
        break;
      }
      case 'schedule':
        await scheduleDueSyncs(db.raw, tenantId, { intervalSeconds: { '15m': 0, '1h': 0, '6h': 0, '24h': 0 } });
        break;
      case 'connect':
        await connectApp(db, tenantId, {
          status: 'active',
          settings: { sync_interval: '1h', retry_attempts: rng.int(0, 2) },
          name: `Counts ${rng.hex(8)}`,
        });
        break;
      case 'delete-connection': {
        // Soft: its runs stay (and stay counted); its active run fails.
        const connections = await live();
        if (connections.length > 2) await deleteConnection(db.raw, tenantId, rng.pick(connections));
        break;
      }
      case 'load':
        // The CLI's bulk loader (`seed load`), several writers on PostgreSQL.
        await seedLoad(db, slug, { connections: rng.int(1, 3), syncs: rng.int(0, 600), seed: rng.int(1, 1e6) });
        break;
      case 'delete-runs': {
        // By hand: one connection's history deleted outright (retries pointing into it get retry_of_id NULL: an
        // update by the foreign key's action, which keeps their status).
        const connections = await idsOf(db, 'SELECT id FROM connections WHERE tenant_id = $1 ORDER BY id', [tenantId]);
        if (connections.length > 0)
          await db.raw.query('DELETE FROM syncs WHERE tenant_id = $1 AND connection_id = $2', [tenantId, rng.pick(connections)]);
        break;
      }
      case 'rolled-back': {
        // A write that commits nothing: the API's trigger joined to a transaction that then fails.
        const connections = await live();
        if (connections.length === 0) break;
        await db.raw
          .transaction(async (tx) => {
            await triggerSync(withinTransaction(tx), tenantId, { connectionId: rng.pick(connections) });
            throw new Error('rolled back on purpose');
          })
          .catch((error: unknown) => {
            if (!(error instanceof Error && error.message === 'rolled back on purpose') && !expectedRefusal(error)) throw error;
          });
        break;
      }
    }
  } catch (error) {
    if (!expectedRefusal(error)) throw error;
  }
  return operation;
}

describe.each(databaseKinds)('sync_counts on %s', (kind) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase(kind, { poolSize: 16 });
    await seedCatalog(db);
  });
  afterAll(() => db?.dispose());

  it('stays equal to count(*) through a seeded random mix of API writes, bulk loads and deletes', async () => {
    const slug = `counts-seq-${kind}`;
    const tenantId = await createTenant(db, slug);
    await seedLoad(db, slug, { connections: 4, syncs: 1500, seed: 7 });
    await db.raw.query(
      `UPDATE connections SET status = 'active', settings = '{"sync_interval": "1h", "retry_attempts": 1}' WHERE tenant_id = $1`,
      [tenantId],
    );
    await expectCountsExact(db, 'the first load');
    const rng = createRng(`sync-counts:${kind}`);
    const done: Record<string, number> = {};
    for (let step = 1; step <= 160; step++) {
      const operation = await randomWrite({ db, tenantId, slug, rng, heavy: true });
      done[operation] = (done[operation] ?? 0) + 1;
      if (step % 20 === 0) await expectCountsExact(db, `step ${step} (${operation})`);
    }
    // Every kind of write happened.
    expect(Object.keys(done).sort()).toEqual(
      [
        'claim',
        'connect',
        'delete-connection',
        'delete-runs',
        'finish',
        'load',
        'progress',
        'reap',
        'rolled-back',
        'schedule',
        'trigger',
      ].sort(),
    );
    const statuses = await db.raw.query<{ status: string }>(
      'SELECT DISTINCT status::text AS status FROM syncs WHERE tenant_id = $1 ORDER BY 1',
      [tenantId],
    );
    expect(statuses.map((row) => row.status)).toEqual(['failed', 'in_progress', 'pending', 'success']);
    // A tenant's whole history deleted by hand (the service has no tenant deletion; syncs go first, RESTRICT).
    await db.raw.query('DELETE FROM syncs WHERE tenant_id = $1', [tenantId]);
    await expectCountsExact(db, "deleting the tenant's runs");
    expect(await db.raw.query('SELECT 1 FROM sync_counts WHERE tenant_id = $1 AND count <> 0', [tenantId])).toEqual([]);
  });

  it('stays equal to count(*) with concurrent writers and a bulk load at once', async () => {
    const slugs = [`counts-a-${kind}`, `counts-b-${kind}`];
    const tenants = await Promise.all(slugs.map((slug) => createTenant(db, slug)));
    for (const [index, slug] of slugs.entries()) {
      await seedLoad(db, slug, { connections: 3, syncs: 300, seed: index });
      await db.raw.query(
        `UPDATE connections SET status = 'active', settings = '{"sync_interval": "1h", "retry_attempts": 2}' WHERE tenant_id = $1`,
        [tenants[index]],
      );
    }
    // Four writers per tenant, on the same connections (the same count keys), while the loader writes more.
    const writers = kind === 'postgres' ? 4 : 2;
    const operations = await Promise.all([
      ...slugs.flatMap((slug, index) =>
        Array.from({ length: writers }, async (_, writer) => {
          const mix = { db, tenantId: tenants[index]!, slug, rng: createRng(`concurrent:${kind}:${slug}:${writer}`), heavy: false };
          for (let step = 0; step < 40; step++) await randomWrite(mix);
          return 40;
        }),
      ),
      seedLoad(db, slugs[0]!, { connections: 2, syncs: 3000, seed: 99 }).then(() => 1),
    ]);
    expect(operations.reduce((a, b) => a + b, 0)).toBe(slugs.length * writers * 40 + 1);
    // The writers got through: runs were claimed (and many finished) under the shared keys.
    const [claimed] = await db.raw.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM syncs WHERE tenant_id = ANY($1::text[]) AND worker_id = $2',
      [`{${tenants.join(',')}}`, WORKER],
    );
    expect(claimed!.n).toBeGreaterThan(10);
    await expectCountsExact(db, 'the concurrent writers');
  });

  it('leaves the counts unchanged when a writing transaction rolls back or a write is refused', async () => {
    const slug = `counts-rollback-${kind}`;
    const tenantId = await createTenant(db, slug);
    const connection = await connectApp(db, tenantId, { status: 'active' });
    const run = await triggerSync(db.raw, tenantId, { connectionId: connection.id });
    const before = await keptCounts(db);

    // The API's write joined to a transaction that fails afterwards (as an Idempotency-Key reservation would).
    await expect(
      db.raw.transaction(async (tx) => {
        const claimed = await claimSync(withinTransaction(tx), tenantId, { workerId: WORKER });
        expect(claimed?.id).toBe(run.id);
        // Inside the transaction the change is counted…
        const [inside] = await tx.query<{ n: number }>(
          `SELECT count::int AS n FROM sync_counts WHERE tenant_id = $1 AND connection_id = $2 AND status = 'in_progress'`,
          [tenantId, connection.id],
        );
        expect(inside?.n).toBe(1);
        throw new Error('rolled back on purpose');
      }),
    ).rejects.toThrow('rolled back on purpose');
    expect(await keptCounts(db)).toEqual(before);

    // A bulk load whose second statement fails (a duplicate id): the first statement's rows go too.
    const rows = [
      ...syncHistory(createRng('rollback'), {
        tenantId,
        connectionId: connection.id,
        from: new Date('2026-01-01'),
        to: new Date('2026-02-01'),
        count: 20,
        newest: ['success'],
      }),
    ];
    await expect(
      db.raw.transaction(async (tx) => {
        await insertSyncs(tx, tenantId, rows.slice(0, 10));
        await insertSyncs(tx, tenantId, rows.slice(9));
      }),
    ).rejects.toThrow();
    expect(await keptCounts(db)).toEqual(before);

    // Refused by the database: the transition guard (a pending run cannot succeed) and the one-active-run index.
    await expect(db.raw.query(`UPDATE syncs SET status = 'success', finished_at = now() WHERE id = $1`, [run.id])).rejects.toThrow();
    await expect(triggerSync(db.raw, tenantId, { connectionId: connection.id })).rejects.toMatchObject({ code: 'CONFLICT' });
    expect(await keptCounts(db)).toEqual(before);
    await expectCountsExact(db, 'the refusals');
  });

  it('is emptied by TRUNCATE and rebuilt by the next writes', async () => {
    await db.raw.query('TRUNCATE syncs');
    expect(await db.raw.query('SELECT 1 FROM sync_counts WHERE count <> 0')).toEqual([]);
    const slug = `counts-truncate-${kind}`;
    await createTenant(db, slug);
    await seedLoad(db, slug, { connections: 2, syncs: 100 });
    await expectCountsExact(db, 'TRUNCATE and a load');
  });
});

describe.each(databaseKinds)('the sync_counts migration on %s', (kind) => {
  it('counts the runs already there', async () => {
    const countsMigration = readMigrations().find((m) => m.name.endsWith('_sync_counts'))!.name;
    const before = mkdtempSync(join(tmpdir(), 'migrations-'));
    for (const migration of readMigrations()) {
      if (migration.name >= countsMigration) break;
      cpSync(join(MIGRATIONS_DIR, migration.name), join(before, migration.name), { recursive: true });
    }
    const db = await createTestDatabase(kind, { migrationsDir: before });
    try {
      await seedCatalog(db);
      for (const slug of ['backfill-a', 'backfill-b']) {
        await createTenant(db, slug);
        await seedLoad(db, slug, { connections: 5, syncs: 700 });
      }
      // The counts migration and those after it.
      expect(await migrate(db)).toEqual(readMigrations().flatMap((m) => (m.name >= countsMigration ? [m.name] : [])));
      expect(Object.values(await keptCounts(db)).reduce((a, b) => a + b, 0)).toBe(1400);
      await expectCountsExact(db, 'the migration');
    } finally {
      await db.dispose();
      rmSync(before, { recursive: true, force: true });
    }
  });
});

describe.each(databaseKinds)('sync list totals from sync_counts on %s', (kind) => {
  let t: TestGateway;
  beforeAll(async () => {
    t = await createTestGateway(kind);
  });
  afterAll(() => t?.dispose());

  /** count(*) of the demo tenant's syncs under an SQL condition. */
  async function rowCount(condition: string, values: unknown[] = []): Promise<number> {
    const [row] = await t.db.raw.query<{ n: number }>(`SELECT count(*)::int AS n FROM syncs WHERE tenant_id = $1 AND ${condition}`, [
      t.tenants.demo.id,
      ...values,
    ]);
    return row!.n;
  }

  /** The total a REST sync list answers, and whether its count statement read sync_counts or counted rows. */
  async function restTotal(query: string): Promise<{ total: number; from: 'sync_counts' | 'syncs' }> {
    const statements: string[] = [];
    const stop = t.db.onQuery((event) => statements.push(event.query));
    let body;
    try {
      body = await restOk(t.gateway, `${BASE}/syncs${query}`, t.tenants.demo.adminToken);
    } finally {
      stop();
    }
    const counts = statements.filter((sql) => /\bsum\("t0"\."count"\)|\bcount\(\*\)/.test(sql));
    expect(counts, statements.join('\n')).toHaveLength(1);
    return { total: body.meta.pagination.total_items, from: counts[0]!.includes('"public"."sync_counts"') ? 'sync_counts' : 'syncs' };
  }

  it('answers unfiltered, connection and status lists from sync_counts, equal to count(*), after writes too', async () => {
    const tenantId = t.tenants.demo.id;
    const [connection] = await t.db.raw.query<{ id: string }>('SELECT id FROM connections WHERE tenant_id = $1 ORDER BY id LIMIT 1', [
      tenantId,
    ]);
    const check = async () => {
      expect(await restTotal('')).toEqual({ total: await rowCount('TRUE'), from: 'sync_counts' });
      expect(await restTotal(`?connection_id=${connection!.id}`)).toEqual({
        total: await rowCount('connection_id = $2', [connection!.id]),
        from: 'sync_counts',
      });
      expect(await restTotal('?status=eq.failed')).toEqual({ total: await rowCount(`status = 'failed'`), from: 'sync_counts' });
      expect(await restTotal('?status=in.(pending,in_progress)&limit=3')).toEqual({
        total: await rowCount(`status IN ('pending', 'in_progress')`),
        from: 'sync_counts',
      });
      expect(await restTotal(`?connection_id=${connection!.id}&status=not.eq.success`)).toEqual({
        total: await rowCount(`connection_id = $2 AND status <> 'success'`, [connection!.id]),
        from: 'sync_counts',
      });
      expect(await restTotal('?connection_id=con_missing')).toEqual({ total: 0, from: 'sync_counts' });
      // Conditions on other columns, and searches, still count rows.
      expect(await restTotal('?started_at=gte.2026-10-01')).toEqual({ total: await rowCount(`started_at >= '2026-10-01'`), from: 'syncs' });
      expect(await restTotal('?search=timeout')).toMatchObject({ from: 'syncs' });
      expect(await restTotal('?status=eq.failed&error_message=is.null')).toEqual({ total: 0, from: 'syncs' });
    };
    await check();
    // Writes move runs between keys; the totals follow.
    await t.db.raw.query(`UPDATE connections SET status = 'active' WHERE tenant_id = $1 AND deleted_at IS NULL`, [tenantId]);
    const live = await t.db.raw.query<{ id: string }>(
      'SELECT id FROM connections WHERE tenant_id = $1 AND deleted_at IS NULL ORDER BY id',
      [tenantId],
    );
    for (const { id } of live)
      await triggerSync(t.db.raw, tenantId, { connectionId: id }).catch((error: unknown) => expect(expectedRefusal(error)).toBe(true));
    const claimed = await claimSync(t.db.raw, tenantId, { workerId: WORKER });
    expect(claimed).not.toBeNull();
    await deleteConnection(t.db.raw, tenantId, live[0]!.id);
    await check();
  });

  it('answers GraphQL totalCount and Connection.syncCount from sync_counts when unfiltered or filtered by status', async () => {
    const statements: string[] = [];
    const stop = t.db.onQuery((event) => statements.push(event.query));
    let response;
    try {
      response = await graphql(
        t.gateway,
        `{ syncs(limit: 1, filter: { or: [{ status: { eq: failed } }, { status: { eq: success } }] }) { totalCount }
           connections(limit: 100) { nodes { id syncCount failed: syncCount(filter: { status: { eq: failed } }) since: syncCount(filter: { startedAt: { gte: "2026-10-01T00:00:00Z" } }) } } }`,
        { token: t.tenants.demo.readerToken, expectOk: true },
      );
    } finally {
      stop();
    }
    const data = response.body.data!;
    expect(data.syncs.totalCount).toBe(await rowCount(`status IN ('failed', 'success')`));
    for (const node of data.connections.nodes as { id: string; syncCount: number; failed: number; since: number }[]) {
      expect(node.syncCount).toBe(await rowCount('connection_id = $2', [node.id]));
      expect(node.failed).toBe(await rowCount(`connection_id = $2 AND status = 'failed'`, [node.id]));
      expect(node.since).toBe(await rowCount(`connection_id = $2 AND started_at >= '2026-10-01'`, [node.id]));
    }
    // Three counts read sync_counts (the root total, the two unfiltered-or-status syncCounts); the date one counts rows.
    expect(statements.filter((sql) => sql.includes('"public"."sync_counts"'))).toHaveLength(3);
    expect(statements.filter((sql) => /count\(\*\)/.test(sql) && sql.includes('"public"."syncs"'))).toHaveLength(1);
  });
});
