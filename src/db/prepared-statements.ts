import type pg from 'pg';

// On PostgreSQL the server's own statements (RawSql: the hot-path reads and the write path) run as named,
// prepared statements once their text repeats. Each pooled connection then parses and analyses a statement once,
// and PostgreSQL's plan cache (plan_cache_mode = auto, its default) may reuse a generic plan after five runs
// instead of planning every run. For the REST sync list that was 0.73× → 0.92× the node+pg baseline, which sends
// the same statements unnamed (bench/analysis.md, "Prepared statements").
//
// The statements' texts are fixed per kind of request; their values are parameters. Filters do build texts of
// their own, so the names are bounded: a text is named on its second run, at most MAX_NAMED texts per process
// (a connection keeps a prepared statement until it closes), and the texts seen once are forgotten in bulk past
// MAX_SEEN. Not used through a server's local socket (PGlite runs one session for every client of the socket)
// nor by Prisma, whose statements stay unnamed.

/** Texts that run as named statements, per process. */
const MAX_NAMED = 200;
/** Texts seen once and remembered until their second run. */
const MAX_SEEN = 2_000;

export class PreparedStatements {
  private readonly named = new Map<string, string>();
  private readonly seenOnce = new Set<string>();
  /** Part of every name: after forget(), no name is reused for another text on a connection that parsed it. */
  private generation = 0;

  /** The query as pg runs it: named once `sql` has run before and there is room. */
  query(sql: string, values: unknown[]): pg.QueryConfig {
    const name = this.nameOf(sql);
    return name === undefined ? { text: sql, values } : { name, text: sql, values };
  }

  private nameOf(sql: string): string | undefined {
    const name = this.named.get(sql);
    if (name !== undefined) return name;
    if (!this.seenOnce.has(sql)) {
      if (this.seenOnce.size >= MAX_SEEN) this.seenOnce.clear();
      this.seenOnce.add(sql);
      return undefined;
    }
    if (this.named.size >= MAX_NAMED) return undefined;
    this.seenOnce.delete(sql);
    const fresh = `gw${this.generation}_${this.named.size}`;
    this.named.set(sql, fresh);
    return fresh;
  }

  /**
   * After a migration changed what a prepared statement returns, PostgreSQL refuses to run it on the connections
   * that prepared it ("cached plan must not change result type"). On that error every name is dropped: the
   * statements are prepared again, under new names, and the failed one may run again unnamed. True when it was
   * that error.
   */
  forgetOnStalePlan(error: unknown): boolean {
    if (!isStalePlan(error)) return false;
    this.generation += 1;
    this.named.clear();
    this.seenOnce.clear();
    return true;
  }

  /** How many texts run named (tests). */
  get size(): number {
    return this.named.size;
  }
}

function isStalePlan(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  return code === '0A000' && typeof message === 'string' && message.includes('cached plan must not change result type');
}
