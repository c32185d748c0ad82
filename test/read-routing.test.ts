// Read routing (DATABASE_READ_URL, src/db/read-routing.ts) without a replica: which statements and requests may
// leave the primary, and the Consistency-Token a write answers. The "replica" here is the same PostgreSQL
// database through a pool of its own (a primary has every commit, so it may serve any read); what a real standby
// behind or ahead of a token does is test/high-availability.test.ts's (Patroni, etcd, HAProxy).
import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../src/db/client.js';
import { isPlainRead, parseLsn } from '../src/db/read-routing.js';
import type { Gateway } from '../src/http/yoga.js';
import { createTestGateway, gatewayOver, listenOnLoopback, type TestGateway } from './fixtures/gateway.js';

const BASE = '/api/v1/integrations';

describe('read routing: statements', () => {
  it('reads PostgreSQL LSNs, and nothing else', () => {
    expect(parseLsn('0/30F7528')).toBe(0x30f7528n);
    expect(parseLsn('16/B374D848')).toBe((0x16n << 32n) + 0xb374d848n);
    expect(parseLsn(' 1/0 ')).toBe(1n << 32n);
    for (const bad of ['', '30F7528', '0/', 'G/1', '0/123456789', '1/2/3', undefined, null])
      expect(parseLsn(bad), String(bad)).toBeUndefined();
  });

  it('lets only plain reads go to a replica', () => {
    for (const read of [
      'SELECT 1',
      ' select * from "public"."connections" where "updated_at" > $1',
      'WITH x AS (SELECT 1) SELECT * FROM x',
    ]) {
      expect(isPlainRead(read), read).toBe(true);
    }
    for (const other of [
      'INSERT INTO t VALUES (1)',
      'UPDATE t SET a = 1',
      'WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d',
      'SELECT * FROM t FOR UPDATE',
      'SELECT * FROM t FOR NO KEY UPDATE SKIP LOCKED',
      'SELECT pg_notify($1, $2)',
      'SELECT nextval($1)',
      'SELECT pg_advisory_xact_lock(1)',
      'SELECT pg_current_wal_flush_lsn()',
      'BEGIN',
      'SET statement_timeout = 0',
    ]) {
      expect(isPlainRead(other), other).toBe(false);
    }
  });
});

describe.skipIf(!process.env.TEST_DATABASE_URL)('read routing: requests (PostgreSQL)', () => {
  let fixture: TestGateway;
  let db: Database;
  let gateway: Gateway;
  let url: string;
  const servers: Server[] = [];
  let admin: Record<string, string>;

  beforeAll(async () => {
    fixture = await createTestGateway('postgres');
    db = await openDatabase({ databaseUrl: fixture.db.url!, readUrl: fixture.db.url!, poolSize: 3 });
    gateway = gatewayOver(db);
    url = await listenOnLoopback(gateway, servers);
    admin = { authorization: `Token ${fixture.tenants.demo.adminToken}` };
  });

  afterAll(async () => {
    for (const server of servers) server.close();
    await gateway?.dispose();
    await db?.close();
    await fixture?.dispose();
  });

  const served = () => ({ ...db.readReplicas!.stats });

  it('sends the reads of a GET and of a GraphQL query to the replica, and nothing of a write', async () => {
    // A token's first use in a while records it (a write, fire-and-forget): the answers after it have nothing
    // written to report.
    expect((await fetch(`${url}${BASE}/connected?limit=1`, { headers: admin })).status).toBe(200);
    let before = served();
    const list = await fetch(`${url}${BASE}/connected?limit=2`, { headers: admin });
    expect(list.status).toBe(200);
    expect(list.headers.get('consistency-token')).toBeNull();
    expect(served().replica).toBeGreaterThan(before.replica);

    before = served();
    const query = await fetch(`${url}/graphql`, {
      method: 'POST',
      headers: { ...admin, 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ connections(limit: 1) { totalCount } }' }),
    });
    expect(query.status).toBe(200);
    expect(served().replica).toBeGreaterThan(before.replica);

    const application = await db.raw.query<{ id: string }>('SELECT id FROM applications ORDER BY id LIMIT 1');
    before = served();
    const created = await fetch(`${url}${BASE}/connected`, {
      method: 'POST',
      headers: { ...admin, 'content-type': 'application/json', 'idempotency-key': 'read-routing-1' },
      body: JSON.stringify({ application_id: application[0]!.id, name: 'routed' }),
    });
    expect(created.status).toBe(201);
    expect(served()).toEqual(before);
    // The write's position: at or after the commit, so a replica that replayed it holds the write.
    const token = parseLsn(created.headers.get('consistency-token'));
    expect(token).toBeDefined();
    const [{ lsn }] = (await db.raw.query<{ lsn: string }>('SELECT pg_current_wal_flush_lsn()::text AS lsn')) as [{ lsn: string }];
    expect(token! <= parseLsn(lsn)!).toBe(true);

    // A GraphQL mutation stays on the primary as well, and answers its token.
    before = served();
    const id = ((await created.json()) as { data: { id: string } }).data.id;
    const renamed = await fetch(`${url}/graphql`, {
      method: 'POST',
      headers: { ...admin, 'content-type': 'application/json' },
      body: JSON.stringify({
        query: 'mutation ($id: ID!) { updateConnection(id: $id, input: { name: "renamed" }) { name } }',
        variables: { id },
      }),
    });
    expect(renamed.status).toBe(200);
    expect(((await renamed.json()) as { data?: { updateConnection: { name: string } } }).data?.updateConnection.name).toBe('renamed');
    expect(served()).toEqual(before);
    expect(parseLsn(renamed.headers.get('consistency-token'))! >= token!).toBe(true);

    // A read presenting the token is served (here by the "replica", which is the primary and so has it).
    const read = await fetch(`${url}${BASE}/connected/${id}`, {
      headers: { ...admin, 'consistency-token': created.headers.get('consistency-token')! },
    });
    expect(read.status).toBe(200);
  });

  it('keeps event streams, and requests served in-process (no HTTP request), on the primary', async () => {
    const before = served();
    const controller = new AbortController();
    const stream = await fetch(`${url}${BASE}/syncs`, { headers: { ...admin, accept: 'text/event-stream' }, signal: controller.signal });
    expect(stream.status).toBe(200);
    controller.abort();
    const inProcess = await gateway.fetch(`http://gateway${BASE}/connected?limit=1`, { headers: admin });
    expect(inProcess.status).toBe(200);
    expect(served().replica).toBe(before.replica);
  });
});
