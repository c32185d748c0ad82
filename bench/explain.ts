// EXPLAIN (ANALYZE, BUFFERS) of the SQL Prisma issued for the scenarios, parameters inlined, written to
// bench/explain/*.txt; each plan is checked for an index path on syncs (no Seq Scan on syncs).

import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type pg from 'pg';
import type { Scenario } from './scenarios.js';
import type { Statement, StatementCount } from './sql-counts.js';

export interface ExplainResult {
  file: string;
  scenario: string;
  kind: string;
  /** Index names the plan uses. */
  indexes: string[];
  seqScans: string[];
  /** A plan that reads syncs without an index. */
  seqScanOnSyncs: boolean;
  executionMs: number | null;
}

/** A SQL literal for a Prisma parameter (PostgreSQL infers the type from the context, as it does for $n). */
function literal(value: unknown): string {
  if (value === null) return 'NULL';
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return `'${text.replace(/'/g, "''")}'`;
}

export function inlineParams(sql: string, params: unknown[]): string {
  return sql.replace(/\$(\d+)/g, (match, n: string) => (Number(n) - 1 < params.length ? literal(params[Number(n) - 1]) : match));
}

/** The statements worth a plan: per scenario, the last statement of each kind (the deepest page). */
function statementsToExplain(counts: StatementCount[]): { scenario: string; kind: string; statement: Statement }[] {
  const picked = new Map<string, { scenario: string; kind: string; statement: Statement }>();
  let auth: Statement | undefined;
  for (const count of counts) {
    for (const statement of count.statements) {
      if (statement.kind === 'auth') auth ??= statement;
      else picked.set(`${count.scenario}.${statement.kind}`, { scenario: count.scenario, kind: statement.kind, statement });
    }
  }
  const list = [...picked.values()];
  if (auth) list.push({ scenario: 'auth', kind: 'token-lookup', statement: auth });
  return list;
}

export async function explainAll(
  client: pg.Client,
  counts: StatementCount[],
  scenarios: Scenario[],
  options: { dir: string; header: string },
): Promise<ExplainResult[]> {
  mkdirSync(options.dir, { recursive: true });
  for (const file of readdirSync(options.dir)) if (file.endsWith('.txt')) rmSync(join(options.dir, file));
  const results: ExplainResult[] = [];
  for (const { scenario, kind, statement } of statementsToExplain(counts)) {
    const sql = inlineParams(statement.sql, statement.params);
    const { rows } = await client.query(`EXPLAIN (ANALYZE, BUFFERS) ${sql}`);
    const plan = (rows as { 'QUERY PLAN': string }[]).map((row) => row['QUERY PLAN']);
    const text = plan.join('\n');
    const indexes = [...new Set([...text.matchAll(/(?:Index Only Scan|Index Scan|Bitmap Index Scan)(?: Backward)? (?:using|on) (\S+)/g)].map((m) => m[1]!))];
    const seqScans = [...new Set([...text.matchAll(/Seq Scan on (\S+)/g)].map((m) => m[1]!))];
    const execution = /Execution Time: ([\d.]+) ms/.exec(text);
    const file = `${scenario}.${kind}.txt`;
    const described = scenarios.find((s) => s.id === scenario);
    writeFileSync(
      join(options.dir, file),
      [
        `-- ${described ? `${described.title}\n-- ${described.method} ${described.path.length > 300 ? `${described.path.slice(0, 300)}…` : described.path}` : 'token lookup (every authenticated request)'}`,
        `-- ${options.header}`,
        '-- Statement as the gateway sent it, parameters inlined:',
        sql,
        '',
        text,
        '',
      ].join('\n'),
    );
    results.push({
      file,
      scenario,
      kind,
      indexes,
      seqScans,
      seqScanOnSyncs: seqScans.some((table) => table === 'syncs' || table.endsWith('.syncs') || table === '"syncs"'),
      executionMs: execution ? Number(execution[1]) : null,
    });
  }
  return results;
}
