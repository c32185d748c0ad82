// SQL statements per request do not grow with the data: each of the benchmark's requests (bench/scenarios.ts) is
// sent for a small tenant and for one with ten times the connections and many times the runs, and must issue
// the same number of statements for both. An N+1 (a statement per connection or per run) fails here.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { statementsOf, loadedTenant, type LoadedTenant } from './fixtures/bench-scenarios.js';
import { databaseKinds } from './fixtures/databases.js';
import { createTestGateway, type TestGateway } from './fixtures/gateway.js';

describe.each(databaseKinds)('statements per request on %s', (kind) => {
  let t: TestGateway;
  let small: LoadedTenant;
  let large: LoadedTenant;

  beforeAll(async () => {
    t = await createTestGateway(kind);
    small = await loadedTenant(t.db, 'counts-small', { connections: 5, syncs: 200 });
    large = await loadedTenant(t.db, 'counts-large', { connections: 50, syncs: 3_000 });
  }, 120_000);
  afterAll(() => t?.dispose());

  it('are the same for a tenant with ten times the connections and fifteen times the runs', async () => {
    const counts = [];
    for (const [i, scenario] of small.scenarios.entries()) {
      const few = await statementsOf(t.db, t.gateway, scenario, small.token);
      const many = await statementsOf(t.db, t.gateway, large.scenarios[i]!, large.token);
      expect([few.status, many.status], scenario.id).toEqual([200, 200]);
      counts.push({ scenario: scenario.id, small: few.statements.length, large: many.statements.length });
    }
    expect(counts.filter((c) => c.small !== c.large)).toEqual([]);
    // A read is a handful of statements: the token, the rows, the related rows of the page, the total.
    expect(counts.filter((c) => c.large > 4)).toEqual([]);
  });
});
