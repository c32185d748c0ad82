import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RawSql } from '../src/db/client.js';
import { MIGRATIONS_DIR, migrate, readMigrations } from '../src/db/migrate.js';
import { SYNC_TRANSITIONS } from '../src/domain/sync-lifecycle.js';
import { SyncStatus } from '../src/generated/prisma/enums.js';
import { newId } from '../src/prefixed-ids.js';
import { APPLICATIONS } from '../src/seed/catalog.js';
import { seedDemoTenant } from '../src/seed/demo.js';
import { seedLoad } from '../src/seed/load.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from './fixtures/databases.js';

// The database itself enforces the run lifecycle, for any client: these tests write SQL directly, past the
// data layer.

const WRITE_SIDE = readMigrations().find((m) => m.name.endsWith('_write_side'))!.name;
const STATUSES = Object.values(SyncStatus);

/** The migrations folder up to (not including) the write-side migration. */
function migrationsBeforeWriteSide(): string {
  const dir = mkdtempSync(join(tmpdir(), 'migrations-'));
  for (const migration of readMigrations()) {
    if (migration.name >= WRITE_SIDE) break;
    cpSync(join(MIGRATIONS_DIR, migration.name), join(dir, migration.name), { recursive: true });
  }
  return dir;
}

interface RunRow {
  id: string;
  status: string;
  finished_at: Date | null;
  error_message: string | null;
  summary: Record<string, unknown>;
  due_at: Date | null;
  lease_expires_at: Date | null;
}

async function runsOf(sql: Pick<RawSql, 'query'>, connectionId: string): Promise<RunRow[]> {
  return sql.query<RunRow>(
    `SELECT id, status::text AS status, finished_at, error_message, summary, due_at, lease_expires_at
     FROM syncs WHERE connection_id = $1 ORDER BY started_at, id`,
    [connectionId],
  );
}

/** SQLSTATE of a failed statement, on node-postgres and PGlite alike. */
async function sqlState(statement: Promise<unknown>): Promise<string | null> {
  try {
    await statement;
    return null;
  } catch (error) {
    return (error as { code?: string }).code ?? 'no code';
  }
}

describe.each(databaseKinds)('write-side schema on %s', (kind) => {
  describe('the migration on a database that already holds data', () => {
    let db: TestDatabase;
    let before: string;
    beforeAll(async () => {
      before = migrationsBeforeWriteSide();
      db = await createTestDatabase(kind, { migrationsDir: before });
    });
    afterAll(async () => {
      await db?.dispose();
      rmSync(before, { recursive: true, force: true });
    });

    it('fails all but the newest active run of each connection as superseded, then enforces one', async () => {
      const tenantId = newId('ten');
      await db.raw.query(`INSERT INTO tenants (id, slug, name) VALUES ($1, 'legacy', 'Legacy')`, [tenantId]);
      const app = APPLICATIONS[0]!;
      await db.raw.query(`INSERT INTO categories (id, slug, name) VALUES ($1, 'c', 'C')`, [app.categoryId]);
      await db.raw.query(`INSERT INTO applications (id, slug, name, category_id) VALUES ($1, $2, $3, $4)`, [
        app.id,
        app.slug,
        app.name,
        app.categoryId,
      ]);
      const connections = [newId('con'), newId('con'), newId('con')];
      for (const [index, id] of connections.entries()) {
        await db.raw.query(
          `INSERT INTO connections (id, tenant_id, application_id, name, slug, via, status, settings)
           VALUES ($1, $2, $3, $4, $4, 'manual', 'active', '{"retry_attempts": 1}')`,
          [id, tenantId, app.id, `legacy-${index}`],
        );
      }
      const insert = (connectionId: string, status: string, startedAt: string, summary: object = {}) =>
        db.raw.query(
          `INSERT INTO syncs (id, tenant_id, connection_id, status, started_at, summary) VALUES ($1, $2, $3, $4::sync_status, $5::timestamptz, $6::jsonb)`,
          [newId('syn'), tenantId, connectionId, status, startedAt, JSON.stringify(summary)],
        );
      const [queuedBehindRunning, threeOpen, oneRunning] = connections as [string, string, string];
      // What the earlier demo seed wrote: one run going, one queued behind it.
      await insert(queuedBehindRunning, 'in_progress', '2026-01-01T10:00:00Z', { processed: 5, in_progress: true });
      await insert(queuedBehindRunning, 'pending', '2026-01-01T11:00:00Z', { queued: true });
      await insert(threeOpen, 'pending', '2026-01-01T09:00:00Z');
      await insert(threeOpen, 'pending', '2026-01-01T09:30:00Z');
      await insert(threeOpen, 'in_progress', '2026-01-01T12:00:00Z');
      await insert(oneRunning, 'in_progress', '2026-01-01T08:00:00Z');

      expect((await migrate(db))[0]).toBe(WRITE_SIDE);

      const first = await runsOf(db.raw, queuedBehindRunning);
      expect(first.map((r) => [r.status, r.error_message])).toEqual([
        ['failed', 'superseded'],
        ['pending', null],
      ]);
      expect(first[0]!.finished_at).toBeInstanceOf(Date);
      expect(first[0]!.summary).toEqual({ errors: ['superseded'], processed: 5 });
      expect(first[0]!.lease_expires_at).toBeNull();
      // The run still queued is due since it was queued.
      expect(first[1]!.due_at!.toISOString()).toBe('2026-01-01T11:00:00.000Z');

      expect((await runsOf(db.raw, threeOpen)).map((r) => [r.status, r.error_message])).toEqual([
        ['failed', 'superseded'],
        ['failed', 'superseded'],
        ['in_progress', null],
      ]);
      // A run in progress before the migration has no claimer: its lease is already over, so the reaper takes it.
      const [running] = await runsOf(db.raw, oneRunning);
      expect(running!.status).toBe('in_progress');
      expect(running!.lease_expires_at!.getTime()).toBeLessThanOrEqual(Date.now());

      const queueAnother = db.raw.query(
        `INSERT INTO syncs (id, tenant_id, connection_id, status, started_at, due_at) VALUES ($1, $2, $3, 'pending', now(), now())`,
        [newId('syn'), tenantId, oneRunning],
      );
      expect(await sqlState(queueAnother)).toBe('23505');
    });
  });

  describe('on a migrated database', () => {
    let db: TestDatabase;
    let tenantId: string;
    let connections: string[];
    let next = 0;
    const connection = () => connections[next++]!;
    beforeAll(async () => {
      db = await createTestDatabase(kind);
      const tenant = await db.prisma.tenant.create({ data: { id: newId('ten'), slug: 'guards', name: 'Guards' } });
      tenantId = tenant.id;
      await seedLoad(db, 'guards', { connections: 40, syncs: 0 });
      connections = (await db.raw.query<{ id: string }>('SELECT id FROM connections WHERE tenant_id = $1 ORDER BY id', [tenantId])).map(
        (r) => r.id,
      );
    });
    afterAll(() => db?.dispose());

    /** Columns a row of each status needs to satisfy the CHECK constraints. */
    const fieldsFor = (status: string) => ({
      finished_at: status === 'success' || status === 'failed' ? '2026-01-01T00:10:00Z' : null,
      error_message: status === 'failed' ? 'boom' : null,
      due_at: status === 'pending' ? '2026-01-01T00:00:00Z' : null,
      lease_expires_at: status === 'in_progress' ? '2026-01-01T00:05:00Z' : null,
    });
    const insertRun = async (connectionId: string, status: string): Promise<string> => {
      const id = newId('syn');
      const f = fieldsFor(status);
      await db.raw.query(
        `INSERT INTO syncs (id, tenant_id, connection_id, status, started_at, finished_at, error_message, due_at, lease_expires_at)
         VALUES ($1, $2, $3, $4::sync_status, '2026-01-01T00:00:00Z', $5::timestamptz, $6, $7::timestamptz, $8::timestamptz)`,
        [id, tenantId, connectionId, status, f.finished_at, f.error_message, f.due_at, f.lease_expires_at],
      );
      return id;
    };
    const moveRun = (id: string, status: string) => {
      const f = fieldsFor(status);
      return db.raw.query(
        `UPDATE syncs SET status = $2::sync_status, finished_at = $3::timestamptz, error_message = $4, lease_expires_at = $5::timestamptz,
                          summary = summary || '{"touched": true}'
         WHERE id = $1`,
        [id, status, f.finished_at, f.error_message, f.lease_expires_at],
      );
    };

    it('the trigger allows exactly the lifecycle table’s transitions (and progress on a run in progress)', async () => {
      for (const from of STATUSES) {
        for (const to of STATUSES) {
          const id = await insertRun(connection(), from);
          const allowed = SYNC_TRANSITIONS[from].includes(to) || (from === 'in_progress' && to === 'in_progress');
          const state = await sqlState(moveRun(id, to));
          expect(state, `${from} → ${to}`).toBe(allowed ? null : 'IG409');
          const [row] = await db.raw.query<{ status: string }>('SELECT status::text AS status FROM syncs WHERE id = $1', [id]);
          expect(row!.status, `${from} → ${to}`).toBe(allowed ? to : from);
        }
      }
    });

    it('the trigger names the refused transition, and keeps a run on its tenant and connection', async () => {
      const id = await insertRun(connection(), 'success');
      await expect(moveRun(id, 'failed')).rejects.toThrow(/illegal status transition from success to failed/);
      // A finished run is not changed at all, not even without a status change.
      expect(await sqlState(db.raw.query(`UPDATE syncs SET summary = '{}' WHERE id = $1`, [id]))).toBe('IG409');
      const running = await insertRun(connection(), 'in_progress');
      expect(await sqlState(db.raw.query('UPDATE syncs SET connection_id = $2 WHERE id = $1', [running, connection()]))).toBe('IG409');
    });

    it('deleting a run unlinks the runs that retried it, pending or finished (the foreign key’s SET NULL), and nothing else passes', async () => {
      const target = connection();
      const original = await insertRun(target, 'failed');
      const retryOf = async (status: string): Promise<string> => {
        const id = await insertRun(target, status);
        // Inserted linked: a pending or finished row cannot be updated to link it (the guard).
        await db.raw.query('DELETE FROM syncs WHERE id = $1', [id]);
        const f = fieldsFor(status);
        await db.raw.query(
          `INSERT INTO syncs (id, tenant_id, connection_id, status, started_at, finished_at, error_message, due_at, lease_expires_at, retry_of_id, attempt)
           VALUES ($1, $2, $3, $4::sync_status, '2026-01-01T00:01:00Z', $5::timestamptz, $6, $7::timestamptz, $8::timestamptz, $9, 2)`,
          [id, tenantId, target, status, f.finished_at, f.error_message, f.due_at, f.lease_expires_at, original],
        );
        return id;
      };
      const finished = await retryOf('success');
      const pending = await retryOf('pending');
      const rowsOf = (ids: string[]) =>
        db.raw.query<Record<string, unknown>>('SELECT * FROM syncs WHERE id = ANY($1::text[]) ORDER BY id', [`{${ids.join(',')}}`]);
      const before = await rowsOf([finished, pending]);

      // Unlinking together with any other change is still refused, and so is linking elsewhere.
      expect(await sqlState(db.raw.query(`UPDATE syncs SET retry_of_id = NULL, summary = '{"x": 1}' WHERE id = $1`, [finished]))).toBe(
        'IG409',
      );
      expect(await sqlState(db.raw.query(`UPDATE syncs SET retry_of_id = NULL, due_at = now() WHERE id = $1`, [pending]))).toBe('IG409');
      expect(await sqlState(db.raw.query('UPDATE syncs SET retry_of_id = $2 WHERE id = $1', [pending, finished]))).toBe('IG409');

      await db.raw.query('DELETE FROM syncs WHERE id = $1', [original]);
      const after = await rowsOf([finished, pending]);
      expect(after).toEqual(before.map((row) => ({ ...row, retry_of_id: null })));
    });

    it('the partial unique index allows one pending or in-progress run per connection, any number of finished ones', async () => {
      const target = connection();
      await insertRun(target, 'success');
      await insertRun(target, 'failed');
      await insertRun(target, 'success');
      const pending = await insertRun(target, 'pending');
      expect(await sqlState(insertRun(target, 'pending'))).toBe('23505');
      expect(await sqlState(insertRun(target, 'in_progress'))).toBe('23505');
      await expect(insertRun(target, 'in_progress')).rejects.toThrow(/syncs_one_active_run_per_connection/);
      // Once the active run is finished, the next may be queued.
      await moveRun(pending, 'failed');
      await insertRun(target, 'in_progress');
    });

    it('CHECK constraints: a pending run has a due time, only a run in progress has a lease', async () => {
      const base = (status: string, dueAt: string | null, lease: string | null, finished: string | null, error: string | null) =>
        db.raw.query(
          `INSERT INTO syncs (id, tenant_id, connection_id, status, started_at, finished_at, error_message, due_at, lease_expires_at)
           VALUES ($1, $2, $3, $4::sync_status, '2026-01-01T00:00:00Z', $5::timestamptz, $6, $7::timestamptz, $8::timestamptz)`,
          [newId('syn'), tenantId, connection(), status, finished, error, dueAt, lease],
        );
      const at = '2026-01-01T00:05:00Z';
      await expect(base('pending', null, null, null, null)).rejects.toThrow(/syncs_pending_has_due_at/);
      await expect(base('in_progress', null, null, null, null)).rejects.toThrow(/syncs_lease_while_in_progress/);
      await expect(base('success', null, at, at, null)).rejects.toThrow(/syncs_lease_while_in_progress/);
      await expect(base('pending', at, at, null, null)).rejects.toThrow(/syncs_lease_while_in_progress/);
      await expect(
        db.raw.query(`UPDATE syncs SET attempt = 0 WHERE id = $1`, [await insertRun(connection(), 'in_progress')]),
      ).rejects.toThrow(/syncs_attempt_positive/);
    });

    it('the demo seed and the bulk loader write data that satisfies all of it', async () => {
      await db.prisma.tenant.create({ data: { id: newId('ten'), slug: 'seeded', name: 'Seeded' } });
      await seedDemoTenant(db, 'seeded');
      await seedLoad(db, 'seeded', { connections: 50, syncs: 3000 });
      const [active] = await db.raw.query<{ connections: number; max: number }>(
        `SELECT count(*)::int AS connections, max(n)::int AS max FROM (
           SELECT count(*) AS n FROM syncs s JOIN tenants t ON t.id = s.tenant_id
           WHERE t.slug = 'seeded' AND s.status IN ('pending', 'in_progress') GROUP BY s.connection_id) AS per_connection`,
      );
      expect(active!.connections).toBeGreaterThan(0);
      expect(active!.max).toBe(1);
    });

    it('an idempotency key is unique per tenant', async () => {
      const insertKey = (tenant: string) =>
        db.raw.query(
          `INSERT INTO idempotency_keys (tenant_id, key, method, path, request_hash, expires_at)
           VALUES ($1, 'k-1', 'POST', '/api/v1/integrations/syncs', 'h', now() + interval '1 day')`,
          [tenant],
        );
      await insertKey(tenantId);
      expect(await sqlState(insertKey(tenantId))).toBe('23505');
      const other = await db.prisma.tenant.create({ data: { id: newId('ten'), slug: 'keys-other', name: 'Other' } });
      await insertKey(other.id);
    });
  });
});
