import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withinTransaction } from '../src/db/write-transactions.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from './fixtures/databases.js';

// The write path's transactions (src/db/client.ts `transaction`): on PostgreSQL the connection pipelines, so BEGIN
// goes out with the first statement and COMMIT with the last (`queryThenCommit`). Each is still one transaction:
// all of it or nothing, on both databases.

/**
 * Runs `code` (an async module body with `client`, a connected pg.Client on `url`) in another Node process, and
 * returns what it wrote to stdout. This process is blocked meanwhile: it reads nothing from its own sockets.
 */
function inAnotherProcess(url: string, code: string): string {
  const script = `import pg from 'pg';
    const client = new pg.Client({ connectionString: process.env.URL });
    await client.connect();
    ${code}
    await client.end();`;
  return execFileSync(process.execPath, ['--input-type=module', '-e', script], { env: { ...process.env, URL: url }, encoding: 'utf8' });
}

const TABLE = `CREATE TABLE IF NOT EXISTS "tx_probe" ("id" int PRIMARY KEY, "note" text NOT NULL)`;

describe.each(databaseKinds)('write transactions on %s', (kind) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase(kind, { poolSize: 3 });
    await db.raw.exec(TABLE);
  });
  afterAll(() => db?.dispose());

  const notes = async () =>
    (await db.raw.query<{ id: number; note: string }>('SELECT "id", "note" FROM "tx_probe" ORDER BY "id"')).map((r) => `${r.id}:${r.note}`);

  it('queryThenCommit returns its rows and commits everything before it', async () => {
    const result = await db.raw.transaction(async (tx) => {
      await tx.query('INSERT INTO "tx_probe" VALUES ($1, $2)', [1, 'first']);
      return tx.queryThenCommit<{ id: number }>('INSERT INTO "tx_probe" VALUES ($1, $2) RETURNING "id"', [2, 'last']);
    });
    expect(result).toEqual([{ id: 2 }]);
    expect(await notes()).toEqual(['1:first', '2:last']);
  });

  it('a failing last statement commits nothing of the transaction, and the connection stays usable', async () => {
    await expect(
      db.raw.transaction(async (tx) => {
        await tx.query('INSERT INTO "tx_probe" VALUES ($1, $2)', [3, 'lost']);
        return tx.queryThenCommit('INSERT INTO "tx_probe" VALUES ($1, $2)', [1, 'duplicate id']);
      }),
    ).rejects.toMatchObject({ code: '23505' });
    // A failing first statement (sent right behind BEGIN) as well.
    await expect(db.raw.transaction((tx) => tx.query('INSERT INTO "tx_probe" VALUES ($1, $2)', [1, 'duplicate id']))).rejects.toMatchObject(
      {
        code: '23505',
      },
    );
    expect(await notes()).toEqual(['1:first', '2:last']);
    for (let i = 0; i < 5; i++)
      expect(await db.raw.transaction((tx) => tx.query<{ n: number }>('SELECT $1::int AS n', [i]))).toEqual([{ n: i }]);
  });

  it('a transaction that throws after its statements rolls them back', async () => {
    await expect(
      db.raw.transaction(async (tx) => {
        await tx.query('INSERT INTO "tx_probe" VALUES ($1, $2)', [4, 'rolled back']);
        throw new Error('refused');
      }),
    ).rejects.toThrow('refused');
    expect(await notes()).toEqual(['1:first', '2:last']);
  });

  it('work joined to a transaction does not commit it: the one that opened it does', async () => {
    await expect(
      db.raw.transaction(async (tx) => {
        await withinTransaction(tx).transaction((joined) =>
          joined.queryThenCommit('INSERT INTO "tx_probe" VALUES ($1, $2)', [5, 'joined']),
        );
        await tx.query('INSERT INTO "tx_probe" VALUES ($1, $2)', [6, 'after']);
        throw new Error('refused after the joined work');
      }),
    ).rejects.toThrow('refused after the joined work');
    expect(await notes()).toEqual(['1:first', '2:last']);
  });

  it.runIf(kind === 'postgres')('nothing runs in a transaction after queryThenCommit', async () => {
    await expect(
      db.raw.transaction(async (tx) => {
        await tx.queryThenCommit('INSERT INTO "tx_probe" VALUES ($1, $2)', [7, 'committed']);
        await tx.query('INSERT INTO "tx_probe" VALUES ($1, $2)', [8, 'too late']);
      }),
    ).rejects.toThrow(/queryThenCommit must be its last statement/);
    expect(await notes()).toEqual(['1:first', '2:last', '7:committed']);
  });

  it.runIf(kind === 'postgres')(
    'a connection lost before BEGIN answers fails the transaction, whatever the work did, and the pool recovers',
    async () => {
      const url = (db as TestDatabase & { url: string }).url;
      const pids = await Promise.all(
        [1, 2, 3].map(() =>
          db.raw.transaction(async (tx) => (await tx.query<{ pid: number }>('SELECT pg_backend_pid() AS "pid"'))[0]!.pid),
        ),
      );
      // Every pooled connection's backend is ended from outside; each transaction below meets a dead one.
      // From another process, while this one is blocked: the pool cannot see the connections close before the
      // transactions below take them.
      inAnotherProcess(
        url,
        `await client.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid = ANY($1::int[])', [${JSON.stringify(pids)}]);
      await new Promise((resolve) => setTimeout(resolve, 200));`,
      );
      const failed = await Promise.allSettled([
        db.raw.transaction(async () => {
          throw new Error('refused before any statement');
        }),
        db.raw.transaction(async () => 'no statement at all'),
        db.raw.transaction((tx) => tx.query('SELECT 1')),
      ]);
      expect(failed.map((result) => result.status)).toEqual(['rejected', 'rejected', 'rejected']);
      // The dead connections are not reused.
      for (let i = 0; i < 4; i++)
        expect(await db.raw.transaction((tx) => tx.queryThenCommit<{ n: number }>('SELECT $1::int AS n', [i]))).toEqual([{ n: i }]);
    },
  );

  it.runIf(kind === 'postgres')('PostgreSQL commits without waiting for this process to read the last statement’s result', async () => {
    const url = (db as TestDatabase & { url: string }).url;
    await db.raw.transaction(async (tx) => {
      const [{ pid }] = (await tx.query<{ pid: number }>('SELECT pg_backend_pid() AS "pid"')) as [{ pid: number }];
      const committing = tx.queryThenCommit('UPDATE "tx_probe" SET "note" = $2 WHERE "id" = $1', [1, 'first, again']);
      // This process is blocked from here until the child exits: it reads nothing meanwhile. Another process
      // watches this transaction's backend until it is idle (committed), not "idle in transaction".
      const state = inAnotherProcess(
        url,
        `let state;
         for (let i = 0; i < 100; i++) {
           const { rows } = await client.query('SELECT state FROM pg_stat_activity WHERE pid = $1', [${pid}]);
           state = rows[0]?.state;
           if (state === 'idle') break;
           await new Promise((resolve) => setTimeout(resolve, 20));
         }
         process.stdout.write(String(state));`,
      );
      expect(state).toBe('idle');
      await committing;
    });
    expect(await notes()).toEqual(['1:first, again', '2:last', '7:committed']);
  });
});
