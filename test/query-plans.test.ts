// Every statement the benchmark's requests issue reads `syncs` through an index, on PostgreSQL: with sequential
// scans priced out (`enable_seqscan = off`), the planner must find an index path, and the generic plan a
// prepared statement may reuse (the gateway prepares its statements) must find one too. A statement that can
// only read the history whole, a missing index or a condition no index serves, fails here at any data size.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inlineParams, loadedTenant, type LoadedTenant, type Statement, statementsOf } from './fixtures/bench-scenarios.js';
import { createTestGateway, type TestGateway } from './fixtures/gateway.js';

const seqScanOnSyncs = (plan: string) => /Seq Scan on (?:"?public"?\.)?"?syncs"?\b/.test(plan);

async function plan(client: pg.Client, statement: Statement, generic: boolean): Promise<string> {
  await client.query('BEGIN');
  try {
    await client.query('SET LOCAL enable_seqscan = off');
    if (!generic) return planText(await client.query(`EXPLAIN ${inlineParams(statement.sql, statement.params)}`));
    await client.query('SET LOCAL plan_cache_mode = force_generic_plan');
    await client.query(`PREPARE plan_check AS ${statement.sql}`);
    return planText(await client.query(`EXPLAIN EXECUTE plan_check(${statement.params.map((p) => inlineParams('$1', [p])).join(', ')})`));
  } finally {
    await client.query('ROLLBACK');
    await client.query('DEALLOCATE ALL');
  }
}

const planText = (result: pg.QueryResult) => (result.rows as { 'QUERY PLAN': string }[]).map((row) => row['QUERY PLAN']).join('\n');

describe.skipIf(!process.env.TEST_DATABASE_URL)('query plans of the hot reads on PostgreSQL', () => {
  let t: TestGateway;
  let tenant: LoadedTenant;
  let client: pg.Client;

  beforeAll(async () => {
    t = await createTestGateway('postgres');
    tenant = await loadedTenant(t.db, 'plans', { connections: 50, syncs: 3_000 });
    client = new pg.Client({ connectionString: t.db.url });
    await client.connect();
    await client.query('ANALYZE');
  }, 120_000);
  afterAll(async () => {
    await client?.end();
    await t?.dispose();
  });

  it('read syncs through an index, as planned for the values and as a generic plan', async () => {
    const wholeReads: string[] = [];
    let checked = 0;
    for (const scenario of tenant.scenarios) {
      const { status, statements } = await statementsOf(t.db, t.gateway, scenario, tenant.token);
      expect(status, scenario.id).toBe(200);
      for (const statement of statements.filter((s) => /\bsyncs\b/.test(s.sql))) {
        for (const generic of statement.params.length > 0 ? [false, true] : [false]) {
          checked += 1;
          const text = await plan(client, statement, generic);
          if (seqScanOnSyncs(text)) wholeReads.push(`${scenario.id}${generic ? ' (generic plan)' : ''}: ${statement.sql}\n${text}`);
        }
      }
    }
    expect(checked).toBeGreaterThan(10);
    expect(wholeReads).toEqual([]);
  });
});
