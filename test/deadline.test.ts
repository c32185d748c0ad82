// The request time limit ends the work: a statement still running at a request's deadline is cancelled in
// PostgreSQL, the answer is 503 at the deadline whatever the resolvers are doing, and the server's own
// connections carry a statement_timeout no longer than the deadline.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { SERVER_STATEMENT_TIMEOUT_MS, startApp } from '../src/http/start-app.js';
import { openDatabase } from '../src/db/client.js';
import { parseConfig } from '../src/env.js';
import { createLogger } from '../src/logger.js';
import { DEFAULT_REQUEST_LIMITS } from '../src/admission/request-limits.js';
import { startDeadline, withinDeadline } from '../src/admission/deadline.js';
import type { Gateway } from '../src/http/yoga.js';
import { databaseKinds } from './fixtures/databases.js';
import { createTestGateway, gatewayOver, graphql, type TestGateway } from './fixtures/gateway.js';
import { BASE, rest } from './fixtures/rest.js';

/** PGlite is slower per row: fewer rows, and a deadline well below what they take (~1 s). */
const DEADLINE_MS = { postgres: 1_000, pglite: 300 };
/** Runs of a 2,000-character error message that an 1,000-character `ilike` must scan at every offset. */
const SLOW_ROWS = { postgres: 10_000, pglite: 500 };
const SLOW_PATTERN = `*${'a'.repeat(1000)}b*`;

describe.each(databaseKinds)('request deadline on %s', (kind) => {
  let t: TestGateway;
  let gateway: Gateway;
  let token: string;

  beforeAll(async () => {
    t = await createTestGateway(kind);
    gateway = gatewayOver(t.db, { limits: { timeoutMs: DEADLINE_MS[kind] }, config: { RATE_LIMIT_PER_MINUTE: 0 } });
    token = t.tenants.demo.readerToken;
    const [connection] = await t.db.raw.query<{ id: string }>('SELECT id FROM connections WHERE tenant_id = $1 LIMIT 1', [
      t.tenants.demo.id,
    ]);
    await t.db.raw.query(
      `INSERT INTO syncs (id, tenant_id, connection_id, status, started_at, finished_at, error_message)
       SELECT 'syn_slow' || g, $1, $2, 'failed', now() - interval '1 day', now() - interval '1 day', repeat('a', 2000)
       FROM generate_series(1, $3::int) AS g`,
      [t.tenants.demo.id, connection!.id, SLOW_ROWS[kind]],
    );
  });
  afterAll(() => t?.dispose());

  /** Backends of the test database doing anything, other than the one asking. */
  async function busyBackends(): Promise<Array<{ state: string; query: string }>> {
    const client = new pg.Client({ connectionString: t.db.url });
    await client.connect();
    try {
      const { rows } = await client.query<{ state: string; query: string }>(
        `SELECT state, left(query, 120) AS query FROM pg_stat_activity
         WHERE datname = current_database() AND pid <> pg_backend_pid() AND state IS NOT NULL AND state <> 'idle'`,
      );
      return rows;
    } finally {
      await client.end();
    }
  }

  const slowRequests: Array<[string, () => Promise<{ status: number; code: unknown; retryAfter: string | null }>]> = [
    [
      'GraphQL',
      async () => {
        const { status, body, headers } = await graphql(
          gateway,
          'query($p: String!) { syncs(filter: { errorMessage: { ilike: $p } }) { totalCount } }',
          {
            token,
            variables: { p: SLOW_PATTERN },
          },
        );
        return { status, code: body.errors?.[0]?.extensions?.code, retryAfter: headers.get('retry-after') };
      },
    ],
    [
      'REST',
      async () => {
        const { status, body, headers } = await rest(gateway, `${BASE}/syncs?error_message=ilike.${SLOW_PATTERN}&select=id`, { token });
        return { status, code: body.error?.code, retryAfter: headers.get('retry-after') };
      },
    ],
  ];

  it.each(slowRequests)('%s: a statement running past the deadline answers 503, and is not left running', async (_surface, send) => {
    const started = performance.now();
    const { status, code, retryAfter } = await send();
    const elapsed = performance.now() - started;
    // Like every 503, it says when to retry.
    expect({ status, code, retryAfter }).toEqual({ status: 503, code: 'UNAVAILABLE', retryAfter: '5' });
    if (kind === 'pglite') {
      // The embedded database runs its statement in this thread: nothing can cut it, so the answer comes when it
      // returns. It is still 503, never the 200 of a request that finished late.
      return;
    }
    expect(elapsed).toBeGreaterThanOrEqual(DEADLINE_MS.postgres - 20);
    expect(elapsed).toBeLessThan(DEADLINE_MS.postgres + 1_000);
    // Cancelled, not left to finish: idle within a second (the statement itself runs far longer).
    await vi.waitFor(async () => expect(await busyBackends()).toEqual([]), { timeout: 1_000, interval: 50 });
    // The pool is fine afterwards.
    expect((await graphql(gateway, '{ syncs(limit: 1) { totalCount } }', { token, expectOk: true })).status).toBe(200);
  });

  it('ends a statement at statement_timeout by the server itself, answered as 503', async () => {
    if (kind === 'pglite') return;
    const server = await openDatabase({ databaseUrl: t.db.url, statementTimeoutMs: 300 });
    try {
      const [setting] = await server.raw.query<{ statement_timeout: string }>('SHOW statement_timeout');
      expect(setting?.statement_timeout).toBe('300ms');
      // Prisma's statements run on the same pool, so under the same setting.
      const [viaPrisma] = await server.prisma.$queryRaw<Array<{ statement_timeout: string }>>`SHOW statement_timeout`;
      expect(viaPrisma?.statement_timeout).toBe('300ms');
      // A gateway whose own deadline is far away: the server's bound ends the statement, and the caller gets
      // the time limit's 503, not a 500.
      const patient = gatewayOver(server, { config: { RATE_LIMIT_PER_MINUTE: 0 } });
      for (const query of [
        'query($p: String!) { syncs(filter: { errorMessage: { ilike: $p } }) { totalCount } }',
        'query($p: String!) { connections { nodes { syncCount(filter: { errorMessage: { ilike: $p } }) } } }',
      ]) {
        const started = performance.now();
        const { status, body, headers } = await graphql(patient, query, { token, variables: { p: SLOW_PATTERN } });
        expect({ query, status, codes: body.errors?.map((e) => e.extensions?.code), retryAfter: headers.get('retry-after') }).toEqual({
          query,
          status: 503,
          codes: ['UNAVAILABLE'],
          retryAfter: '5',
        });
        expect(performance.now() - started).toBeLessThan(3_000);
      }
    } finally {
      await server.close();
    }
  });
});

describe.runIf(databaseKinds.includes('postgres'))('statement_timeout of the connections the server opens', () => {
  let t: TestGateway;
  beforeAll(async () => {
    t = await createTestGateway('postgres');
  });
  afterAll(() => t?.dispose());

  it('is the request deadline on the server, and unset for the CLI (a migration may take long)', async () => {
    expect(SERVER_STATEMENT_TIMEOUT_MS).toBeLessThanOrEqual(DEFAULT_REQUEST_LIMITS.timeoutMs);
    const app = await startApp(parseConfig({ DATABASE_URL: t.db.url, SEED: 'none', LOG_LEVEL: 'silent' }), createLogger('silent'));
    try {
      const [setting] = await app.db.raw.query<{ statement_timeout: string }>('SHOW statement_timeout');
      expect(setting?.statement_timeout).toBe(`${SERVER_STATEMENT_TIMEOUT_MS / 1000}s`);
    } finally {
      await app.db.close();
    }
    // The CLI opens the database with the defaults.
    const cli = await openDatabase({ databaseUrl: t.db.url });
    try {
      const [setting] = await cli.raw.query<{ statement_timeout: string }>('SHOW statement_timeout');
      expect(setting?.statement_timeout).toBe('0');
    } finally {
      await cli.close();
    }
  });
});

describe('a deadline once its work has ended', () => {
  it('keeps nothing that raced it alive, though it outlives the request', async () => {
    // A request's deadline is the async context's store, which every timer started under it keeps (a pool's
    // idle timer, for seconds): what it holds must not include the request's results.
    setFlagsFromString('--expose-gc');
    const collectGarbage = runInNewContext('gc') as () => void;
    const deadline = startDeadline(60_000);
    const raced = async (): Promise<WeakRef<object>> => {
      const result = { rows: new Array(1000).fill('row') };
      expect(await withinDeadline(deadline, Promise.resolve(result))).toBe(result);
      return new WeakRef(result);
    };
    const held = await raced();
    deadline.end();
    await new Promise((resolve) => setTimeout(resolve, 10));
    collectGarbage();
    expect(held.deref()).toBeUndefined();
    expect(deadline.ended).toBe(true);
  });
});
