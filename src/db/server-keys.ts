import { randomBytes } from 'node:crypto';
import type { RawSql } from './client.js';

// Keys the server signs with (the list cursors), kept in the database so every gateway of one database signs
// and checks alike, and a restart does not invalidate what clients hold. Each is made once, by whichever
// process asks first (a concurrent first ask keeps the one row that won), and cached for the process.

const cache = new WeakMap<object, Map<string, Promise<Buffer>>>();

/** The key named `name`: 32 random bytes, created on first use. */
export function serverKey(db: Pick<RawSql, 'query'>, name: string): Promise<Buffer> {
  let keys = cache.get(db);
  if (!keys) {
    keys = new Map();
    cache.set(db, keys);
  }
  let key = keys.get(name);
  if (!key) {
    key = loadKey(db, name);
    keys.set(name, key);
    // A failed load (database away) is tried again at the next ask, not cached.
    key.catch(() => keys.delete(name));
  }
  return key;
}

async function loadKey(db: Pick<RawSql, 'query'>, name: string): Promise<Buffer> {
  const [row] = await db.query<{ secret: string }>(
    `WITH "made" AS (INSERT INTO "public"."server_keys" ("name", "secret") VALUES ($1, $2) ON CONFLICT ("name") DO NOTHING RETURNING "secret")
     SELECT "secret" FROM "made" UNION ALL SELECT "secret" FROM "public"."server_keys" WHERE "name" = $1`,
    [name, randomBytes(32).toString('base64')],
  );
  if (!row) throw new Error(`server key ${name} could not be read`);
  return Buffer.from(row.secret, 'base64');
}
