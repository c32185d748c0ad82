import { rmSync, statSync } from 'node:fs';
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
