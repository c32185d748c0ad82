import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { schemaDriftSql } from '../src/db/drift.js';
import { migrate, readMigrations } from '../src/db/migrate.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from './fixtures/databases.js';

describe.each(databaseKinds)('migrations on %s', (kind) => {
  let db: TestDatabase;
  beforeAll(async () => {
    // Migrated here, on an empty database: the migrations are what is tested.
    db = await createTestDatabase(kind, { migrateHere: true });
  });
  afterAll(() => db?.dispose());

  // Drift is a property of the migrations folder against schema.prisma, so one database answers it. It is
  // checked on PGlite: through @prisma/adapter-pg the Wasm engine cannot read PostgreSQL's `"char"` catalog
  // columns (attgenerated), which the generated search_text columns make it look at.
  const driftIt = kind === 'pglite' ? it : it.skip;

  driftIt('leaves no drift between the migrations folder and schema.prisma', async () => {
    expect(await schemaDriftSql(db)).toBeNull();
  });

  it('records every migration the way Prisma Migrate does, and re-running applies nothing', async () => {
    const rows = await db.raw.query<{ migration_name: string; checksum: string; finished_at: Date | null }>(
      'SELECT migration_name, checksum, finished_at FROM "_prisma_migrations" ORDER BY migration_name',
    );
    expect(rows.map((r) => [r.migration_name, r.checksum])).toEqual(readMigrations().map((m) => [m.name, m.checksum]));
    expect(rows.every((r) => r.finished_at !== null)).toBe(true);
    expect(await migrate(db)).toEqual([]);
  });

  driftIt('detects a model change that has no migration', async () => {
    const changed = (await import('node:fs'))
      .readFileSync('prisma/schema.prisma', 'utf8')
      .replace('model Tenant {', 'model Tenant {\n  plan String @default("free")');
    expect(await schemaDriftSql(db, changed)).toMatch(/ALTER TABLE "tenants" ADD COLUMN\s+"plan"/);
  });
});
