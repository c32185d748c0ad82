import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { openDatabase, type Database } from '../src/db/client.js';
import { createTestDatabase, type TestDatabase } from './fixtures/databases.js';
import { gatewayOver } from './fixtures/gateway.js';
import type { Gateway } from '../src/http/yoga.js';

// The server's statements as named, prepared statements on PostgreSQL (src/db/prepared-statements.ts): a text is
// prepared on its second run, the names are bounded, a migration that changes a statement's result does not break
// it, and DATABASE_PREPARED_STATEMENTS=off sends every statement unnamed.

const postgres = process.env.TEST_DATABASE_URL ? describe : describe.skip;

interface PreparedRow {
  name: string;
  statement: string;
  generic_plans: number;
  custom_plans: number;
}

/** The statements prepared on the (one) pooled connection, this query's own left out. */
async function prepared(db: Database): Promise<PreparedRow[]> {
  const rows = await db.raw.query<PreparedRow>(
    "SELECT name, statement, generic_plans::int, custom_plans::int FROM pg_prepared_statements WHERE statement NOT LIKE '%pg_prepared_statements%' ORDER BY prepare_time",
  );
  return rows;
}

postgres('prepared statements on PostgreSQL', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase('postgres', { poolSize: 1 });
  });
  afterAll(() => db?.dispose());

  it('prepares a text on its second run, and runs it by name from then on', async () => {
    const sql = 'SELECT $1::int + 1 AS n';
    expect(await db.raw.query(sql, [1])).toEqual([{ n: 2 }]);
    expect((await prepared(db)).map((row) => row.statement)).not.toContain(sql);
    expect(await db.raw.query(sql, [2])).toEqual([{ n: 3 }]);
    for (let i = 0; i < 8; i++) expect(await db.raw.query(sql, [i])).toEqual([{ n: i + 1 }]);
    const [row] = (await prepared(db)).filter((r) => r.statement === sql);
    expect(row?.name).toMatch(/^gw\d+_\d+$/);
    // Prepared once, run nine times by name: after five custom plans PostgreSQL may use its generic plan.
    expect(row!.generic_plans + row!.custom_plans).toBe(9);
    // Inside a transaction too.
    await db.raw.transaction(async (tx) => expect(await tx.query(sql, [41])).toEqual([{ n: 42 }]));
  });

  it('survives a migration that changes what a prepared statement returns', async () => {
    await db.raw.exec("CREATE TABLE prepared_probe (id int PRIMARY KEY, a text); INSERT INTO prepared_probe VALUES (1, 'x')");
    const sql = 'SELECT * FROM prepared_probe WHERE id = $1';
    for (let i = 0; i < 3; i++) expect(await db.raw.query(sql, [1])).toEqual([{ id: 1, a: 'x' }]);
    expect((await prepared(db)).map((row) => row.statement)).toContain(sql);
    // PostgreSQL now refuses the prepared statement ("cached plan must not change result type"): it runs again.
    await db.raw.exec("ALTER TABLE prepared_probe ADD COLUMN b text NOT NULL DEFAULT 'y'");
    expect(await db.raw.query(sql, [1])).toEqual([{ id: 1, a: 'x', b: 'y' }]);
    for (let i = 0; i < 3; i++) expect(await db.raw.query(sql, [1])).toEqual([{ id: 1, a: 'x', b: 'y' }]);

    // Inside a transaction the refusal aborts the transaction (nothing of it is written); the statements after run.
    expect((await prepared(db)).map((row) => row.statement)).toContain(sql);
    await db.raw.exec("ALTER TABLE prepared_probe ADD COLUMN c text NOT NULL DEFAULT 'z'");
    await expect(
      db.raw.transaction(async (tx) => {
        await tx.query("INSERT INTO prepared_probe (id, a) VALUES (2, 'w')");
        return tx.query(sql, [1]);
      }),
    ).rejects.toMatchObject({ code: '0A000' });
    expect(await db.raw.query('SELECT count(*)::int AS n FROM prepared_probe')).toEqual([{ n: 1 }]);
    expect(await db.raw.query(sql, [1])).toEqual([{ id: 1, a: 'x', b: 'y', c: 'z' }]);
    await db.raw.transaction(async (tx) => expect(await tx.query(sql, [1])).toEqual([{ id: 1, a: 'x', b: 'y', c: 'z' }]));
  });

  it('keeps at most 200 statements prepared on a connection: a new generation deallocates the old ones', async () => {
    const hot = 'SELECT $1::int - 1 AS n';
    for (let i = 0; i < 2; i++) expect(await db.raw.query(hot, [1])).toEqual([{ n: 0 }]);
    // 450 texts run twice each (pages at every OFFSET, say): each is named on its second run.
    for (let i = 0; i < 450; i++) {
      for (let round = 0; round < 2; round++) expect(await db.raw.query(`SELECT $1::int * ${i} AS n`, [2])).toEqual([{ n: 2 * i }]);
      if (i % 50 === 0) expect(await db.raw.query(hot, [i])).toEqual([{ n: i - 1 }]);
    }
    const rows = await prepared(db);
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.length).toBeLessThanOrEqual(200);
    // Only the current generation is left, and the hot statement, run since, is in it again.
    expect(new Set(rows.map((row) => /^gw(\d+)_/.exec(row.name)?.[1])).size).toBe(1);
    expect(await db.raw.query(hot, [5])).toEqual([{ n: 4 }]);
    expect(await db.raw.query(hot, [6])).toEqual([{ n: 5 }]);
    expect((await prepared(db)).map((row) => row.statement)).toContain(hot);
  });

  it('sends every statement unnamed when turned off (DATABASE_PREPARED_STATEMENTS=off)', async () => {
    const off = await openDatabase({ databaseUrl: db.url, poolSize: 1, preparedStatements: false });
    try {
      for (let i = 0; i < 4; i++) expect(await off.raw.query('SELECT $1::int AS n', [i])).toEqual([{ n: i }]);
      expect(await off.raw.query('SELECT count(*)::int AS n FROM pg_prepared_statements')).toEqual([{ n: 0 }]);
    } finally {
      await off.close();
    }
  });
});

postgres('the gateway on prepared statements', () => {
  let db: TestDatabase;
  let gateway: Gateway;
  const seeded = inject('seededDatabases').postgres;
  beforeAll(async () => {
    // One pooled connection, so the statements the requests prepared are this connection's to list.
    db = await createTestDatabase('postgres', { template: seeded?.template, poolSize: 1 });
    gateway = gatewayOver(db);
  });
  afterAll(async () => {
    await gateway?.dispose();
    await db?.dispose();
  });

  it('answers a REST page the same on every run, its statements prepared after the first', async () => {
    const token = seeded!.tenants.demo.readerToken;
    const get = async (path: string) => {
      const response = await gateway.fetch(`http://gateway${path}`, { headers: { authorization: `Token ${token}` } });
      const body = await response.json();
      expect(response.status, JSON.stringify(body)).toBe(200);
      return body;
    };
    const path = '/api/v1/integrations/syncs?limit=5&status=eq.failed';
    const first = await get(path);
    for (let i = 0; i < 7; i++) expect(await get(path)).toEqual(first);
    const statements = (await db.raw.query<{ statement: string }>('SELECT statement FROM pg_prepared_statements')).map(
      (row) => row.statement,
    );
    // The page and its total (from the maintained counts), each prepared once on this connection.
    expect(statements.filter((statement) => statement.includes('FROM "public"."syncs"'))).toHaveLength(1);
    expect(statements.filter((statement) => statement.includes('FROM "public"."sync_counts"'))).toHaveLength(1);
  });

  it('runs every statement of the hot reads prepared from their second request on', async () => {
    const token = seeded!.tenants.demo.readerToken;
    const [connection] = await db.raw.query<{ id: string }>(
      "SELECT c.id FROM connections c JOIN tenants t ON t.id = c.tenant_id WHERE t.slug = 'demo' AND c.deleted_at IS NULL ORDER BY c.id LIMIT 1",
    );
    const requests: { path: string; init?: RequestInit }[] = [
      { path: `/api/v1/integrations/syncs?connection_id=${connection!.id}` },
      { path: '/api/v1/integrations/connected' },
      { path: `/api/v1/integrations/connected/${connection!.id}` },
      {
        path: '/graphql',
        init: {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            query:
              '{ connections(limit: 5) { nodes { name application { name category { name } } syncs(limit: 3) { status startedAt } } } }',
          }),
        },
      },
    ];
    for (const { path, init } of requests) {
      const send = () =>
        gateway.fetch(`http://gateway${path}`, { ...init, headers: { ...init?.headers, authorization: `Token ${token}` } });
      expect((await send()).status).toBe(200);
      const sent: string[] = [];
      const stop = db.onQuery((event) => sent.push(event.query));
      try {
        const response = await send();
        const body = await response.text();
        expect([response.status, body.includes('"errors"')], body).toEqual([200, false]);
      } finally {
        stop();
      }
      expect(sent.length, path).toBeGreaterThan(0);
      const prepared = new Set(
        (await db.raw.query<{ statement: string }>('SELECT statement FROM pg_prepared_statements')).map((row) => row.statement),
      );
      expect(
        sent.filter((statement) => !prepared.has(statement)),
        path,
      ).toEqual([]);
    }
  });
});
