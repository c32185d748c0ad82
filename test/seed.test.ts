import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Database } from '../src/db/client.js';
import { newId } from '../src/prefixed-ids.js';
import { CONNECTION_MEMBERS, SYNC_INTERVALS, type ConnectionKind } from '../src/domain/connection-members.js';
import { APPLICATIONS, CATEGORIES, seedCatalog } from '../src/seed/catalog.js';
import { DEMO_TENANT_SLUG, demoRows, ensureDemo, seedDemoTenant } from '../src/seed/demo.js';
import { seedLoad } from '../src/seed/load.js';
import { generateSyncs, insertSyncs } from '../src/seed/syncs.js';
import { triggerSync } from '../src/db/sync-runs.js';
import { createRng } from '../src/seed/random.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from './fixtures/databases.js';

const NOW = new Date('2026-11-20T12:00:00.000Z');

interface SyncDbRow {
  id: string;
  tenant_id: string;
  connection_id: string;
  status: string;
  started_at: Date;
  finished_at: Date | null;
  error_message: string | null;
  summary: Record<string, unknown>;
  file_url: string | null;
  is_auto_migrate: boolean | null;
  diff: Record<string, unknown>;
  checksum: Record<string, unknown>;
}

const SUMMARY_KEYS: Record<string, string[]> = {
  pending: ['queued', 'estimated_items'],
  in_progress: ['processed', 'in_progress'],
  success: ['processed', 'inserted', 'updated', 'deleted'],
  failed: ['errors', 'processed'],
};

async function syncRows(db: Database, tenantId: string): Promise<SyncDbRow[]> {
  return db.raw.query<SyncDbRow>(
    `SELECT id, tenant_id, connection_id, status::text AS status, started_at, finished_at, error_message, summary,
            file_url, is_auto_migrate, diff, checksum
     FROM syncs WHERE tenant_id = $1 ORDER BY connection_id, started_at, id`,
    [tenantId],
  );
}

/** The spec's field-condition table plus the JSON shapes, checked on rows read back from the database. */
function expectValidSync(row: SyncDbRow): void {
  const open = row.status === 'pending' || row.status === 'in_progress';
  expect(row.id).toMatch(/^syn_[0-9a-z]+$/);
  expect(row.started_at).toBeInstanceOf(Date);
  if (open) {
    expect(row.finished_at).toBeNull();
  } else {
    expect(row.finished_at).toBeInstanceOf(Date);
    expect(row.finished_at!.getTime()).toBeGreaterThanOrEqual(row.started_at.getTime());
  }
  if (row.status === 'failed') expect(row.error_message).toMatch(/\S/);
  else expect(row.error_message).toBeNull();

  for (const key of Object.keys(row.summary)) expect(SUMMARY_KEYS[row.status]).toContain(key);
  if (row.status === 'failed' && 'errors' in row.summary) {
    expect(row.summary.errors).toEqual(expect.arrayContaining([expect.any(String)]));
  }
  for (const [key, value] of Object.entries(row.diff)) {
    expect(['added', 'changed', 'removed']).toContain(key);
    expect(value).toEqual(expect.arrayContaining([expect.stringMatching(/^ext_/)]));
  }
  expect(Object.keys(row.checksum).sort()).toEqual(['ac', 'ap', 'b', 'f', 'file', 'ls']);
  for (const value of Object.values(row.checksum)) expect(typeof value).toBe('string');
  if (row.file_url !== null) expect(row.file_url).toBe(`https://files.example.com/syncs/${row.id}.json`);
  expect([true, false, null]).toContain(row.is_auto_migrate);
}

async function createTenant(db: Database, slug: string): Promise<string> {
  const tenant = await db.prisma.tenant.create({ data: { id: newId('ten'), slug, name: slug } });
  return tenant.id;
}

test('the PRNG is reproducible, and a fork does not depend on how much of its parent was used', () => {
  const draw = (seed: number) => {
    const rng = createRng(seed);
    return [rng.next(), rng.int(1, 6), rng.hex(8), Array.from(rng.bytes(5))];
  };
  expect(draw(42)).toEqual(draw(42));
  expect(draw(42)).not.toEqual(draw(43));

  const used = createRng(1);
  used.bytes(100);
  expect(used.fork('x').hex(16)).toBe(createRng(1).fork('x').hex(16));

  const rng = createRng('bounds');
  const seen = new Set(Array.from({ length: 500 }, () => rng.int(1, 3)));
  expect([...seen].sort()).toEqual([1, 2, 3]);
  expect(rng.bytes(7)).toHaveLength(7);
});

test('the demo rows of some connections are those of the whole demo (the examples generate only what they name)', () => {
  const options = { seed: 7, now: NOW };
  const whole = demoRows('ten_x', 'acme', options);
  const some = demoRows('ten_x', 'acme', { ...options, historyOf: ['stripe-eu', 'mews-berlin-mitte'] });
  expect(some.connections).toEqual(whole.connections);
  const ids = new Set(whole.connections.filter((c) => ['stripe-eu', 'mews-berlin-mitte'].includes(c.slug)).map((c) => c.id));
  expect(ids.size).toBe(2);
  expect(some.syncs).toEqual(whole.syncs.filter((s) => ids.has(s.connectionId)));
});

describe.each(databaseKinds)('seed data on %s', (kind) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase(kind);
  });
  afterAll(async () => {
    await db?.dispose();
  });

  test('seedCatalog inserts the catalog once', async () => {
    const first = await seedCatalog(db);
    expect(first).toEqual({ categories: CATEGORIES.length, applications: APPLICATIONS.length });
    expect(await seedCatalog(db)).toEqual({ categories: 0, applications: 0 });

    expect(await db.prisma.category.count()).toBeGreaterThanOrEqual(6);
    const apps = await db.prisma.application.findMany();
    expect(apps.length).toBeGreaterThanOrEqual(20);
    expect(apps.some((app) => app.keywords.some((k) => k.includes('"')))).toBe(true);
    expect(apps.some((app) => app.keywords.some((k) => k.includes("'")))).toBe(true);
    for (const app of apps) {
      expect(app.id).toMatch(/^app_[0-9a-z]+$/);
      expect(app.logoUrl).toBe(`/logos/${app.slug}.svg`);
      expect(app.additionalInformation).toMatch(/<p>/);
      const features = app.features as { title: unknown; features: Record<string, unknown>[] };
      expect(typeof features.title).toBe('string');
      expect(features.features.length).toBeGreaterThan(0);
      for (const feature of features.features) {
        expect(Object.keys(feature).sort()).toEqual(['content', 'image_urls', 'name']);
        expect(feature.content).toMatch(/<p>.*<\/p><ul><li>/);
        expect(feature.image_urls).toEqual([expect.stringMatching(/^https:\/\//)]);
      }
    }
  });

  test('seedDemoTenant adds connections of several kinds and a valid sync history', async () => {
    const tenantId = await createTenant(db, 'acme');
    const result = await seedDemoTenant(db, 'acme', { seed: 7, now: NOW });
    expect(result.tenantId).toBe(tenantId);

    const connections = await db.prisma.connection.findMany({
      where: { tenantId },
      include: { application: { include: { category: true } } },
    });
    expect(connections.length).toBe(result.connections);
    expect(connections.length).toBeGreaterThanOrEqual(6);
    expect(new Set(connections.map((c) => c.application.categoryId)).size).toBeGreaterThanOrEqual(4);
    const kindBySlug = new Map(CATEGORIES.map((c) => [c.slug, c.kind] as [string, ConnectionKind]));
    for (const connection of connections) {
      const connectionKind = kindBySlug.get(connection.application.category.slug)!;
      const metadata = connection.metadata as Record<string, unknown>;
      const settings = connection.settings as Record<string, unknown>;
      expect(Object.keys(metadata).sort()).toEqual([...CONNECTION_MEMBERS[connectionKind].metadata].sort());
      for (const value of Object.values(metadata)) expect(typeof value).toBe('string');
      expect(Object.keys(settings).sort()).toEqual([...CONNECTION_MEMBERS[connectionKind].settings].sort());
      expect(SYNC_INTERVALS).toContain(settings.sync_interval);
      expect(Number.isInteger(settings.retry_attempts)).toBe(true);
      for (const key of ['webhook_enabled', 'notification_enabled', 'track_users', 'anonymize_ip', 'mention_users', 'thread_enabled']) {
        if (key in settings) expect(typeof settings[key]).toBe('boolean');
      }
      expect(connection.logoUrl).toBe(connection.application.logoUrl);
      expect(connection.keywords).toEqual(connection.application.keywords);
      expect(connection.name).toMatch(new RegExp(`^${connection.application.name} – `));
    }

    const rows = await syncRows(db, tenantId);
    expect(rows.length).toBe(result.syncs);
    expect(rows.length).toBeGreaterThanOrEqual(200);
    expect(new Set(rows.map((r) => r.status))).toEqual(new Set(['pending', 'in_progress', 'success', 'failed']));
    rows.forEach(expectValidSync);
    const months = new Set(rows.map((r) => r.started_at.toISOString().slice(0, 7)));
    expect(months.size).toBeGreaterThanOrEqual(5);
    expect(rows.every((r) => r.started_at <= NOW)).toBe(true);
    expect(rows.some((r) => Object.keys(r.diff).length > 0)).toBe(true);
    expect(rows.some((r) => r.file_url !== null)).toBe(true);
    expect(rows.some((r) => Object.keys(r.summary).length === 0)).toBe(true);

    // Open runs only at the head of a connection's history, as in a live system.
    for (const connection of connections) {
      const history = rows.filter((r) => r.connection_id === connection.id);
      const firstOpen = history.findIndex((r) => r.status === 'pending' || r.status === 'in_progress');
      if (firstOpen >= 0) expect(firstOpen).toBeGreaterThanOrEqual(history.length - 2);
    }

    await expect(seedDemoTenant(db, 'acme', { seed: 7, now: NOW })).rejects.toThrow(/already has the demo data/);
    await expect(seedDemoTenant(db, 'no-such-tenant')).rejects.toThrow(/tenant "no-such-tenant" does not exist/);
  });

  test('the same seed and tenant slug reproduce the same rows in another database', async () => {
    const other = await createTestDatabase(kind);
    try {
      const demoTenantId = await ensureDemo(other, { now: NOW });
      expect(demoTenantId).toMatch(/^ten_/);
      expect(await ensureDemo(other)).toBeUndefined();
      const demo = await other.prisma.tenant.findUniqueOrThrow({ where: { slug: DEMO_TENANT_SLUG } });
      expect(demo.id).toBe(demoTenantId);
      expect(await other.prisma.sync.count({ where: { tenantId: demo.id } })).toBeGreaterThanOrEqual(200);

      const acmeHere = (await db.prisma.tenant.findUniqueOrThrow({ where: { slug: 'acme' } })).id;
      const acmeThere = await createTenant(other, 'acme');
      expect(acmeThere).not.toBe(acmeHere);
      await seedDemoTenant(other, 'acme', { seed: 7, now: NOW });
      const strip = (rows: SyncDbRow[]) => rows.map(({ tenant_id: _tenant, ...rest }) => rest);
      expect(strip(await syncRows(other, acmeThere))).toEqual(strip(await syncRows(db, acmeHere)));
      const connections = (database: Database, tenantId: string) =>
        database.prisma.connection.findMany({
          where: { tenantId },
          orderBy: { id: 'asc' },
          omit: { tenantId: true, updatedAt: true },
        });
      expect(await connections(other, acmeThere)).toEqual(await connections(db, acmeHere));

      // Another seed is another data set (and does not collide with the first).
      const withOtherSeed = await seedDemoTenant(other, 'acme', { seed: 8, now: NOW });
      const ids = (await syncRows(other, acmeThere)).map((r) => r.id);
      expect(new Set(ids).size).toBe(ids.length);
      expect(ids.length).toBe(withOtherSeed.syncs + (await syncRows(db, acmeHere)).length);
    } finally {
      await other.dispose();
    }
  });

  test("the first start's demo history ends at that start: the overview's last days have runs", async () => {
    const fresh = await createTestDatabase(kind);
    try {
      const startedAt = Date.now();
      const tenantId = await ensureDemo(fresh);
      const [window] = await fresh.raw.query<{ newest: string; latestFinish: string | null; lastTenDays: number }>(
        `SELECT max("started_at")::text AS "newest", max("finished_at")::text AS "latestFinish",
                count(*) FILTER (WHERE "started_at" >= now() - interval '10 days')::int AS "lastTenDays"
           FROM "syncs" WHERE "tenant_id" = $1`,
        [tenantId],
      );
      // Nothing after the start, and the newest run a few days before it at most (runs are days apart).
      expect(new Date(window!.newest).getTime()).toBeLessThanOrEqual(Date.now());
      expect(new Date(window!.newest).getTime()).toBeGreaterThan(startedAt - 3 * 86_400_000);
      expect(new Date(window!.latestFinish!).getTime()).toBeLessThanOrEqual(Date.now());
      // The last third of the overview's 30 days is not empty.
      expect(window!.lastTenDays).toBeGreaterThanOrEqual(10);
    } finally {
      await fresh.dispose();
    }
  });

  test('seedLoad inserts exactly the requested counts, and again on a second run', async () => {
    const tenantId = await createTenant(db, 'bench');
    const result = await seedLoad(db, 'bench', { connections: 20, syncs: 5000, now: NOW });
    expect(result).toEqual({ tenantId, connections: 20, syncs: 5000 });
    expect(await db.prisma.connection.count({ where: { tenantId } })).toBe(20);
    expect(await db.prisma.sync.count({ where: { tenantId } })).toBe(5000);
    const rows = await syncRows(db, tenantId);
    rows.forEach(expectValidSync);
    expect(new Set(rows.map((r) => r.connection_id)).size).toBe(20);
    expect(new Set(rows.map((r) => r.status))).toContain('failed');

    await seedLoad(db, 'bench', { connections: 3, syncs: 10, batchSize: 4 });
    expect(await db.prisma.connection.count({ where: { tenantId } })).toBe(23);
    expect(await db.prisma.sync.count({ where: { tenantId } })).toBe(5010);

    await expect(seedLoad(db, 'bench', { connections: 0, syncs: 1 })).rejects.toThrow(/at least one connection/);
    await expect(seedLoad(db, 'nobody', { connections: 1, syncs: 1 })).rejects.toThrow(/does not exist/);
  });

  test('seedLoad reports the rows it really inserted when several writers insert small batches at once', async () => {
    const tenantId = await createTenant(db, 'bench-small-batches');
    // Small batches: on PostgreSQL the four writers' inserts interleave, and every one must be counted.
    const result = await seedLoad(db, 'bench-small-batches', { connections: 12, syncs: 3000, batchSize: 50, now: NOW });
    const stored = await db.prisma.sync.count({ where: { tenantId } });
    expect(stored).toBe(3000);
    expect(result.syncs).toBe(stored);
  });

  test('a loaded history whose newest run is open leaves it out when the connection has a live run, and fails on a duplicate id', async () => {
    const tenantId = await createTenant(db, 'loader-meets-live-run');
    await seedLoad(db, 'loader-meets-live-run', { connections: 1, syncs: 0 });
    const connection = await db.prisma.connection.findFirstOrThrow({ where: { tenantId } });
    await db.raw.query(`UPDATE connections SET status = 'active' WHERE id = $1`, [connection.id]);
    // The write side opened a run first (as the scheduler or an engine does beside a running `seed load`).
    const live = await triggerSync(db.raw, tenantId, { connectionId: connection.id });
    const history = generateSyncs(createRng('loader-meets-live-run'), {
      tenantId,
      connectionId: connection.id,
      from: new Date(NOW.getTime() - 30 * 86_400_000),
      to: NOW,
      count: 12,
      newest: ['in_progress'],
    });
    expect(await db.raw.transaction((tx) => insertSyncs(tx, tenantId, history))).toBe(11);
    const open = await db.raw.query<{ id: string }>(
      `SELECT id FROM syncs WHERE connection_id = $1 AND status IN ('pending', 'in_progress')`,
      [connection.id],
    );
    expect(open.map((row) => row.id)).toEqual([live.id]);
    expect(await db.prisma.sync.count({ where: { connectionId: connection.id } })).toBe(12);
    // Any other conflict still fails the whole statement.
    await expect(db.raw.transaction((tx) => insertSyncs(tx, tenantId, history.slice(0, 2)))).rejects.toThrow(/duplicate key/);
    expect(await db.prisma.sync.count({ where: { connectionId: connection.id } })).toBe(12);
  });

  test('the database rejects syncs that break the field-condition table', async () => {
    const tenantId = await createTenant(db, 'checks');
    await seedLoad(db, 'checks', { connections: 1, syncs: 0 });
    const connection = await db.prisma.connection.findFirstOrThrow({ where: { tenantId } });
    const insert = (status: string, finishedAt: string | null, errorMessage: string | null, startedAt = '2026-01-01T00:00:00Z') =>
      db.raw.query(
        // Open runs carry what their own CHECKs need (a due time, a lease), so these rows test the table's.
        `INSERT INTO syncs (id, tenant_id, connection_id, status, started_at, finished_at, error_message, due_at, lease_expires_at)
         VALUES ($1, $2, $3, $4::sync_status, $5::timestamptz, $6::timestamptz, $7,
                 CASE WHEN $4 = 'pending' THEN $5::timestamptz END, CASE WHEN $4 = 'in_progress' THEN $5::timestamptz END)`,
        [newId('syn'), tenantId, connection.id, status, startedAt, finishedAt, errorMessage],
      );
    const later = '2026-01-01T00:05:00Z';
    await expect(insert('failed', later, null)).rejects.toThrow(/syncs_error_message_matches_status/);
    await expect(insert('failed', later, '')).rejects.toThrow(/syncs_error_message_matches_status/);
    await expect(insert('pending', later, null)).rejects.toThrow(/syncs_finished_at_matches_status/);
    await expect(insert('in_progress', later, null)).rejects.toThrow(/syncs_finished_at_matches_status/);
    await expect(insert('success', null, null)).rejects.toThrow(/syncs_finished_at_matches_status/);
    await expect(insert('success', later, 'boom')).rejects.toThrow(/syncs_error_message_matches_status/);
    await expect(insert('success', '2025-12-31T23:00:00Z', null)).rejects.toThrow(/syncs_finished_after_started/);
    // The same statement is accepted with consistent values, so the rejections above are the CHECKs at work.
    await insert('success', later, null);
    await insert('failed', later, 'Timeout after 300s');
    await insert('pending', null, null);
    expect(await db.prisma.sync.count({ where: { tenantId } })).toBe(3);
  });
});
