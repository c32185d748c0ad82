// The reference engine against a real HTTP server on both databases: it claims the due runs, reports progress
// and finishes them through the REST API alone, and a bad token stops it with a clear error.
import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServiceUser } from '../src/auth/service-users.js';
import { createToken } from '../src/auth/tokens.js';
import { triggerSync } from '../src/db/sync-runs.js';
import { EngineStopped, runEngine } from '../src/engine/simulated-engine.js';
import { createHttpServer } from '../src/http/http-server.js';
import { createLogger } from '../src/logger.js';
import { databaseKinds } from './fixtures/databases.js';
import { createTestGateway, type TestGateway } from './fixtures/gateway.js';

describe.each(databaseKinds)('simulated engine on %s', (kind) => {
  let t: TestGateway;
  let server: Server;
  let baseUrl: string;
  let engineToken: string;

  beforeAll(async () => {
    t = await createTestGateway(kind);
    server = createHttpServer(t.gateway, { logger: createLogger('silent') });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    baseUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
    const user = await createServiceUser(t.db, { tenantId: t.tenants.demo.id, name: 'engine-test', role: 'engine' });
    engineToken = (
      await createToken(t.db, { tenantId: t.tenants.demo.id, serviceUserId: user.id, expiresAt: new Date(Date.now() + 86_400_000) })
    ).token;
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => server?.close(() => resolve()));
    await t?.dispose();
  });

  async function queueRuns(count: number): Promise<string[]> {
    const connections = await t.db.raw.query<{ id: string }>(
      `SELECT c.id FROM connections c WHERE c.tenant_id = $1 AND c.deleted_at IS NULL AND c.status IN ('active', 'pending', 'error')
         AND NOT EXISTS (SELECT 1 FROM syncs s WHERE s.connection_id = c.id AND s.status IN ('pending', 'in_progress'))
       ORDER BY c.id LIMIT $2`,
      [t.tenants.demo.id, count],
    );
    expect(connections.length).toBe(count);
    const runs = [];
    for (const { id } of connections)
      runs.push((await triggerSync(t.db.raw, t.tenants.demo.id, { connectionId: id, estimatedItems: 100 })).id);
    return runs;
  }

  it('moves due runs through claim → progress → finish over HTTP, with failures at the configured rate', async () => {
    // Whatever else was due in the seed is claimed too; the engine stops once these are done.
    const runs = await queueRuns(3);
    const stop = new AbortController();
    const lines: string[] = [];
    const watcher = setInterval(async () => {
      const rows = await t.db.raw.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM syncs WHERE id = ANY($1::text[]) AND finished_at IS NOT NULL`,
        [runs],
      );
      if ((rows[0]?.n ?? 0) === runs.length) stop.abort();
    }, 100);
    const tally = await runEngine({
      baseUrl,
      token: engineToken,
      workers: 2,
      heartbeatMs: 30,
      idleMs: 50,
      failureRate: 0,
      signal: stop.signal,
      log: (l) => lines.push(l),
    });
    clearInterval(watcher);
    expect(tally.succeeded).toBeGreaterThanOrEqual(3);
    expect(tally.abandoned).toBe(0);
    const rows = await t.db.raw.query<{
      status: string;
      summary: { processed: number; inserted: number; updated: number; deleted: number };
    }>(`SELECT status::text AS status, summary FROM syncs WHERE id = ANY($1::text[])`, [runs]);
    expect(rows).toHaveLength(runs.length);
    for (const row of rows) {
      expect(row.status).toBe('success');
      expect(row.summary.inserted + row.summary.updated + row.summary.deleted).toBe(row.summary.processed);
    }
    expect(lines.some((line) => line.includes(`claimed ${runs[0]}`))).toBe(true);

    const failing = await queueRuns(1);
    const stopFailing = new AbortController();
    const watchFailing = setInterval(async () => {
      const [row] = await t.db.raw.query<{ done: boolean }>(`SELECT finished_at IS NOT NULL AS done FROM syncs WHERE id = $1`, [
        failing[0],
      ]);
      if (row?.done) stopFailing.abort();
    }, 100);
    await runEngine({ baseUrl, token: engineToken, workers: 1, heartbeatMs: 20, idleMs: 50, failureRate: 1, signal: stopFailing.signal });
    clearInterval(watchFailing);
    const [failed] = await t.db.raw.query<{ status: string; error_message: string }>(
      `SELECT status::text AS status, error_message FROM syncs WHERE id = $1`,
      [failing[0]],
    );
    expect(failed).toEqual({ status: 'failed', error_message: expect.stringContaining('simulated') });
  });

  it('stops with a clear error on a token that may not run syncs', async () => {
    await expect(runEngine({ baseUrl, token: t.tenants.demo.readerToken, workers: 2 })).rejects.toThrow(EngineStopped);
    await expect(runEngine({ baseUrl, token: 'igw_pat_nope', workers: 1 })).rejects.toThrow(/401/);
  });
});
