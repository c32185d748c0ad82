import { chmodSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../src/db/client.js';
import { preloadedPGlite, preloadPGlite } from '../src/db/pglite-preload.js';
import { createTestDatabase, migratedPgliteDataDir } from './fixtures/databases.js';

// How PGlite starts here (src/db/client.ts pgliteOptions, src/db/pglite-preload.ts): a small buffer pool, small
// log segments for a new database, and PGlite's files loaded ahead of the open when the server preloads them.

describe('PGlite as the server opens it', () => {
  const cleanups: Array<() => Promise<void> | void> = [];
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  it('preloads the Wasm module and the file bundle PGlite would otherwise load itself, and opens with them', async () => {
    expect(await preloadedPGlite()).toBeNull();
    preloadPGlite();
    const files = await preloadedPGlite();
    expect(files?.pgliteWasmModule).toBeInstanceOf(WebAssembly.Module);
    const bundle = fileURLToPath(import.meta.resolve('@electric-sql/pglite/pglite.data'));
    expect(files?.fsBundle.size).toBe(statSync(bundle).size);

    const dataDir = migratedPgliteDataDir('gw-preloaded-');
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
    const db: Database = await openDatabase({ dataDir, pgliteFiles: files });
    cleanups.push(() => db.close());
    const [applied] = await db.raw.query<{ n: number }>('SELECT count(*)::int AS n FROM "_prisma_migrations"');
    expect(applied!.n).toBeGreaterThan(0);
  });

  it('keeps its data directory private: the directory 0700, every file in it 0600, while open and after closing', async () => {
    const dataDir = migratedPgliteDataDir('gw-private-');
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
    // As an older version left it: world-readable.
    chmodSync(dataDir, 0o755);
    chmodSync(join(dataDir, 'PG_VERSION'), 0o666);
    /** Each path under the directory whose mode is not private, with that mode. */
    const open = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
        const path = join(dir, entry.name);
        const mode = statSync(path).mode & 0o777;
        if (entry.isDirectory()) return [...(mode === 0o700 ? [] : [`${path} ${mode.toString(8)}`]), ...open(path)];
        return entry.isFile() && mode !== 0o600 ? [`${path} ${mode.toString(8)}`] : [];
      });
    const db = await openDatabase({ dataDir });
    try {
      expect((statSync(dataDir).mode & 0o777).toString(8)).toBe('700');
      expect(open(dataDir)).toEqual([]);
      // Enough writes for PostgreSQL to create new files (log segments, a table's relation files).
      await db.raw.exec(
        'CREATE TABLE "filler" ("n" int, "t" text); INSERT INTO "filler" SELECT g, repeat(\'x\', 200) FROM generate_series(1, 20000) AS g; CHECKPOINT;',
      );
    } finally {
      await db.close();
    }
    expect((statSync(dataDir).mode & 0o777).toString(8)).toBe('700');
    expect(open(dataDir)).toEqual([]);
    expect(readdirSync(join(dataDir, 'pg_wal')).length).toBeGreaterThan(0);
  });

  it('starts with a 16 MB buffer pool, on a database initialised with 1 MB log segments', async () => {
    // A copy of the migrated database the global setup initialised through openDatabase.
    const db = await createTestDatabase('pglite');
    cleanups.push(() => db.dispose());
    const [settings] = await db.raw.query<Record<string, string>>(
      "SELECT current_setting('shared_buffers') AS shared_buffers, current_setting('max_connections') AS max_connections, current_setting('wal_segment_size') AS wal_segment_size",
    );
    expect(settings).toEqual({ shared_buffers: '16MB', max_connections: '10', wal_segment_size: '1MB' });
  });
});
