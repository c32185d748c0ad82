import { randomBytes } from 'node:crypto';
import type { RawSql } from './client.js';

// Keys the server signs with (the list cursors), kept in the database so every gateway of one database signs
// and checks alike, and a restart does not invalidate what clients hold. Each is made once, by whichever
// process asks first, and cached for the process.

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
  // An upsert, so the statement returns the row whoever made it. ON CONFLICT DO NOTHING returns nothing on a
  // conflict, and a SELECT beside it in the same statement reads the statement's snapshot, taken before a
  // concurrent first ask committed the row it waited for: two gateways starting at once would read no key.
  // DO UPDATE waits for that row and returns it (its secret untouched).
  const [row] = await db.query<{ secret: string }>(
    `INSERT INTO "public"."server_keys" ("name", "secret") VALUES ($1, $2)
     ON CONFLICT ("name") DO UPDATE SET "name" = EXCLUDED."name" RETURNING "secret"`,
    [name, randomBytes(32).toString('base64')],
  );
  if (!row) throw new Error(`server key ${name} could not be read`);
  return Buffer.from(row.secret, 'base64');
}
