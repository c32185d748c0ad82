// EXPLAIN (ANALYZE, BUFFERS) of the SQL the gateway sent for the scenarios, parameters inlined, written to
// bench/explain/*.txt; each plan is checked for an index path on syncs (no Seq Scan on syncs). A plan that
// reads some table whole (the planner's choice on small tables) is explained a second time with sequential
// scans disabled, in the same file: that shows the index path exists and what it would cost. The gateway runs its
// statements prepared on PostgreSQL (src/db/prepared-statements.ts), where PostgreSQL may reuse a generic plan, made
// without the parameters' values: each statement with parameters is explained as that plan too (PREPARE, then
// EXECUTE with plan_cache_mode = force_generic_plan), in the same file, and checked the same way.

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
  /** For a plan with a Seq Scan: the same statement with `enable_seqscan = off` (null when the plan had none). */
  indexPath: { indexes: string[]; seqScans: string[]; executionMs: number | null } | null;
  /** The generic plan of the statement prepared (null: it has no parameters). */
  generic: { indexes: string[]; seqScans: string[]; seqScanOnSyncs: boolean; executionMs: number | null } | null;
}

const readsSyncsWhole = (seqScans: string[]) => seqScans.some((table) => table === 'syncs' || table.endsWith('.syncs') || table === '"syncs"');

/** One EXPLAIN (ANALYZE, BUFFERS): its text, the indexes it walks, the tables it reads whole, its time. */
async function explain(client: pg.Client, sql: string): Promise<{ text: string; indexes: string[]; seqScans: string[]; executionMs: number | null }> {
  const { rows } = await client.query(`EXPLAIN (ANALYZE, BUFFERS) ${sql}`);
  const text = (rows as { 'QUERY PLAN': string }[]).map((row) => row['QUERY PLAN']).join('\n');
  const indexes = [...new Set([...text.matchAll(/(?:Index Only Scan|Index Scan|Bitmap Index Scan)(?: Backward)? (?:using|on) (\S+)/g)].map((m) => m[1]!))];
  const seqScans = [...new Set([...text.matchAll(/Seq Scan on (\S+)/g)].map((m) => m[1]!))];
  const execution = /Execution Time: ([\d.]+) ms/.exec(text);
  return { text, indexes, seqScans, executionMs: execution ? Number(execution[1]) : null };
}

/** The plan PostgreSQL makes when it may not read a table whole (for this statement only: SET LOCAL). */
async function explainWithoutSeqScans(client: pg.Client, sql: string): ReturnType<typeof explain> {
  await client.query('BEGIN');
  try {
    await client.query('SET LOCAL enable_seqscan = off');
    return await explain(client, sql);
  } finally {
    await client.query('ROLLBACK');
  }
}

/** The generic plan PostgreSQL may reuse for the statement prepared, run with these parameters. */
async function explainGeneric(client: pg.Client, sql: string, params: unknown[]): ReturnType<typeof explain> {
  await client.query('BEGIN');
  try {
    await client.query('SET LOCAL plan_cache_mode = force_generic_plan');
    await client.query(`PREPARE gw_explain_generic AS ${sql}`);
    return await explain(client, `EXECUTE gw_explain_generic(${params.map(literal).join(', ')})`);
  } finally {
    await client.query('ROLLBACK');
    // A prepared statement outlives the transaction.
    await client.query('DEALLOCATE ALL');
  }
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
    const { text, indexes, seqScans, executionMs } = await explain(client, sql);
    const indexPath = seqScans.length > 0 ? await explainWithoutSeqScans(client, sql) : null;
    const generic = statement.params.length > 0 ? await explainGeneric(client, statement.sql, statement.params) : null;
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
        ...(indexPath
          ? [
              `-- The planner read ${seqScans.join(', ')} whole. The same statement with SET LOCAL enable_seqscan = off, for comparison:`,
              '',
              indexPath.text,
              '',
            ]
          : []),
        ...(generic ? ['-- The generic plan (the statement prepared, plan_cache_mode = force_generic_plan), these parameters:', '', generic.text, ''] : []),
      ].join('\n'),
    );
    results.push({
      file,
      scenario,
      kind,
      indexes,
      seqScans,
      seqScanOnSyncs: readsSyncsWhole(seqScans),
      executionMs,
      indexPath: indexPath && { indexes: indexPath.indexes, seqScans: indexPath.seqScans, executionMs: indexPath.executionMs },
      generic: generic && { indexes: generic.indexes, seqScans: generic.seqScans, seqScanOnSyncs: readsSyncsWhole(generic.seqScans), executionMs: generic.executionMs },
    });
  }
  return results;
}
