// The benchmark divides the gateway's figures by a baseline's (bench/baseline-server.ts: node:http and pg, the
// same SQL): that ratio means something only while both answer each of the benchmark's requests with the same
// bytes. Checked here for the baseline as measured, with its statements unnamed and prepared.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBaseline } from '../bench/baseline-server.js';
import { loadedTenant, type LoadedTenant, send } from './fixtures/bench-scenarios.js';
import { createTestGateway, type TestGateway } from './fixtures/gateway.js';

describe.skipIf(!process.env.TEST_DATABASE_URL)('the benchmark baseline and the gateway answer alike', () => {
  let t: TestGateway;
  let tenant: LoadedTenant;
  let pool: pg.Pool;
  const servers: Server[] = [];

  async function baseline(prepared: boolean): Promise<string> {
    const handle = createBaseline(pool, { tokenLookup: 'every request', prepared });
    const server = createServer((request, response) => void handle(request, response));
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  beforeAll(async () => {
    t = await createTestGateway('postgres');
    tenant = await loadedTenant(t.db, 'parity', { connections: 20, syncs: 1_000 });
    pool = new pg.Pool({ connectionString: t.db.url, max: 2 });
    // An idle client told to end by the server (the database dropped while pool.end() still waits for it) is an
    // 'error' of the pool; without a listener it would be an uncaught exception of the whole worker.
    pool.on('error', () => {});
  }, 120_000);
  afterAll(async () => {
    for (const server of servers) server.close();
    await pool?.end();
    await t?.dispose();
  });

  it.each([false, true])('with prepared statements: %s', async (prepared) => {
    const origin = await baseline(prepared);
    const differences: string[] = [];
    for (const scenario of tenant.scenarios) {
      const gateway = await send(t.gateway, scenario, tenant.token);
      const response = await fetch(`${origin}${scenario.path}`, {
        method: scenario.method,
        headers: {
          ...(scenario.body === undefined ? {} : { 'content-type': 'application/json' }),
          ...(scenario.auth ? { authorization: `Token ${tenant.token}` } : {}),
        },
        ...(scenario.body === undefined ? {} : { body: scenario.body }),
      });
      const body = await response.text();
      expect(gateway.status, scenario.id).toBe(200);
      if (response.status !== gateway.status || body !== gateway.body) {
        const at = [...body].findIndex((c, i) => c !== gateway.body[i]);
        differences.push(
          `${scenario.id}: ${response.status} vs ${gateway.status}, first difference at ${at}: …${body.slice(Math.max(0, at - 60), at + 60)}…`,
        );
      }
    }
    expect(differences).toEqual([]);
  });
});
