// Runs each scenario once in-process (createGateway + Prisma's query events) and records the SQL statements it
// issues, with their parameters, for the statement counts and for EXPLAIN.

import { openDatabase } from '../src/db/client.js';
import { parseConfig } from '../src/env.js';
import { createLogger } from '../src/logger.js';
import { createGateway } from '../src/yoga.js';
import type { Scenario } from './scenarios.js';

/** `nested`: the latest syncs of a whole page of connections, one statement (Connection.syncs). */
export type StatementKind = 'auth' | 'count' | 'rows' | 'nested';

export interface Statement {
  kind: StatementKind;
  sql: string;
  params: unknown[];
}

export interface StatementCount {
  scenario: string;
  status: number;
  /** Every statement the request issued (the throttled last_used_at bookkeeping write excluded). */
  total: number;
  auth: number;
  data: number;
  statements: Statement[];
}

function kindOf(sql: string): StatementKind | 'bookkeeping' {
  if (/^UPDATE "public"\."tokens"/.test(sql)) return 'bookkeeping';
  // Prisma qualifies and quotes; the token lookup (src/auth/tokens.ts) is hand-written.
  if (/FROM ("public"\."tokens"|tokens )/.test(sql)) return 'auth';
  if (/^SELECT "page"\.\*/.test(sql)) return 'nested';
  // A list total counts rows, or sums sync_counts (src/db/sync-queries.ts).
  return /^SELECT (COUNT\(|COALESCE\(sum\()/i.test(sql) ? 'count' : 'rows';
}

export async function countStatements(databaseUrl: string, scenarios: Scenario[], token: string): Promise<StatementCount[]> {
  const db = await openDatabase({ databaseUrl });
  try {
    const config = parseConfig({ DATABASE_URL: databaseUrl, SEED: 'none', LOG_LEVEL: 'silent', RATE_LIMIT_PER_MINUTE: '0' });
    const gateway = createGateway({ db, config, logger: createLogger('silent') });
    let sink: Statement[] | null = null;
    db.onQuery((event) => {
      const kind = kindOf(event.query);
      if (sink && kind !== 'bookkeeping') sink.push({ kind, sql: event.query, params: JSON.parse(event.params) as unknown[] });
    });
    const send = async (scenario: Scenario) => {
      const response = await gateway.fetch(`http://127.0.0.1${scenario.path}`, {
        method: scenario.method,
        headers: {
          ...(scenario.body === undefined ? {} : { 'content-type': 'application/json' }),
          ...(scenario.auth ? { authorization: `Token ${token}` } : {}),
        },
        ...(scenario.body === undefined ? {} : { body: scenario.body }),
      });
      await response.text();
      return response.status;
    };
    const counts: StatementCount[] = [];
    for (const scenario of scenarios) {
      await send(scenario); // warm: caches, the first last_used_at write
      const statements: Statement[] = [];
      sink = statements;
      const status = await send(scenario);
      // Query events are emitted after the statement returns; let the last ones arrive.
      await new Promise((resolve) => setTimeout(resolve, 50));
      sink = null;
      const auth = statements.filter((s) => s.kind === 'auth').length;
      counts.push({ scenario: scenario.id, status, total: statements.length, auth, data: statements.length - auth, statements });
    }
    return counts;
  } finally {
    await db.close();
  }
}
