// The keys the server signs with (src/db/server-keys.ts), made by whichever gateway asks first: several gateways
// starting at once on a database that has no key yet all get the one key, on each database. On PostgreSQL also
// the interleaving that lost the row: a gateway asks while another's first ask holds the new row uncommitted.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import pg from 'pg';
import { openDatabase, type Database } from '../src/db/client.js';
import { serverKey } from '../src/db/server-keys.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from './fixtures/databases.js';

const GATEWAYS = 8;
const NAME = 'list-cursor';

describe.each(databaseKinds)('server keys made by concurrent gateways (%s)', (kind) => {
  let db: TestDatabase;
  const opened: Database[] = [];

  beforeEach(async () => {
    db = await createTestDatabase(kind);
  });

  afterEach(async () => {
    await Promise.all(opened.splice(0).map((gateway) => gateway.close()));
    await db.dispose();
  });

  /** Each gateway's own handle on the database: a pool of its own on PostgreSQL, the one PGlite otherwise. */
  async function gatewayHandles(): Promise<Pick<Database['raw'], 'query'>[]> {
    if (kind === 'pglite') return Array.from({ length: GATEWAYS }, () => ({ query: db.raw.query.bind(db.raw) }));
    const handles = await Promise.all(Array.from({ length: GATEWAYS }, () => openDatabase({ databaseUrl: db.url!, poolSize: 1 })));
    opened.push(...handles);
    // Connected before the race, so the asks reach the server together rather than one connect apart.
    await Promise.all(handles.map((handle) => handle.raw.query('SELECT 1')));
    return handles.map((handle) => handle.raw);
  }

  it('gives every gateway starting at once the same key, stored once', async () => {
    for (let round = 0; round < 5; round++) {
      await db.raw.query('DELETE FROM "server_keys"');
      const keys = await Promise.all((await gatewayHandles()).map((handle) => serverKey(handle, NAME)));
      const [stored] = await db.raw.query<{ secret: string }>('SELECT "secret" FROM "server_keys" WHERE "name" = $1', [NAME]);
      expect(stored).toBeDefined();
      expect(new Set(keys.map((key) => key.toString('base64')))).toEqual(new Set([stored!.secret]));
      expect(keys[0]).toHaveLength(32);
      await Promise.all(opened.splice(0).map((gateway) => gateway.close()));
    }
  });

  it.runIf(kind === 'postgres')('returns the row a concurrent first ask commits while this ask waits for it', async () => {
    const first = new pg.Client({ connectionString: db.url! });
    await first.connect();
    try {
      await first.query('BEGIN');
      const made = Buffer.alloc(32, 9).toString('base64');
      await first.query('INSERT INTO "server_keys" ("name", "secret") VALUES ($1, $2)', [NAME, made]);
      const waiting = (await gatewayHandles()).map((handle) => serverKey(handle, NAME));
      // The others' statements have begun and wait on the uncommitted row before it commits.
      const deadline = Date.now() + 10_000;
      for (;;) {
        const [{ count }] = (await db.raw.query<{ count: string }>(
          `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
        )) as [{ count: string }];
        if (Number(count) === GATEWAYS) break;
        if (Date.now() > deadline) throw new Error(`only ${count} of ${GATEWAYS} asks waited on the row`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await first.query('COMMIT');
      const keys = await Promise.all(waiting);
      expect(keys.map((key) => key.toString('base64'))).toEqual(Array(GATEWAYS).fill(made));
    } finally {
      await first.end();
    }
  });
});
