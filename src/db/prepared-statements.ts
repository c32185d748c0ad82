import type pg from 'pg';

// On PostgreSQL the server's own statements (RawSql: the hot-path reads and the write path) run as named,
// prepared statements once their text repeats. Each pooled connection then parses and analyses a statement once,
// and PostgreSQL's plan cache (plan_cache_mode = auto, its default) may reuse a generic plan after five runs
// instead of planning every run: for a small read, planning is much of what PostgreSQL spends on it.
//
// The statements' texts are fixed per kind of request, their values parameters, but filters build texts of their
// own and a page's LIMIT and OFFSET are written into its text. So the names are bounded: a text is named on its
// second run, and once MAX_NAMED texts have names, a new generation starts: every name is dropped, and each
// pooled connection, the next time it is checked out, deallocates what it prepared before its next statement
// (the statements still in use are named again on their next runs). A connection so holds at most MAX_NAMED
// prepared statements. Not used through a server's local socket (PGlite runs one session for every client of the
// socket) nor by Prisma, whose statements stay unnamed.

/** Texts named per generation, and so the most a connection keeps prepared. */
const MAX_NAMED = 200;
/** Texts seen once and remembered until their second run. */
const MAX_SEEN = 2_000;

/** What pg's connection keeps of the statements it has prepared (pg/lib/connection.js). */
interface PgConnectionState {
  parsedStatements: Record<string, string>;
  submittedNamedStatements?: Record<string, string>;
}

export class PreparedStatements {
  private readonly named = new Map<string, string>();
  private readonly seenOnce = new Set<string>();
  /** Part of every name, so that no name is reused for another text on a connection that prepared it. */
  private generation = 0;
  /** The generation each pooled connection last prepared statements in. */
  private readonly connectionGenerations = new WeakMap<pg.ClientBase, number>();

  /** Keeps `pool`'s connections within the current generation: call once, before the pool is used. */
  attach(pool: pg.Pool): void {
    pool.on('connect', (client) => this.connectionGenerations.set(client, this.generation));
    pool.on('acquire', (client) => this.renew(client));
  }

  /**
   * Runs `sql` on `target` (the pool, or the connection of a transaction), named once it has run before. After a
   * migration changed what a prepared statement returns, PostgreSQL refuses to run it on the connections that
   * prepared it ("cached plan must not change result type"): a new generation starts, so the statements are
   * prepared again under new names, and a statement run `alone` (on the pool) runs again, unnamed. Inside a
   * transaction the error has aborted the transaction: it is thrown, as any other.
   */
  async run(target: pg.Pool | pg.ClientBase, sql: string, values: unknown[], alone: boolean): Promise<pg.QueryResult> {
    const name = this.nameOf(sql);
    try {
      return await target.query(name === undefined ? { text: sql, values } : { name, text: sql, values });
    } catch (error) {
      if (!isStalePlan(error)) throw error;
      this.nextGeneration();
      this.seenOnce.clear();
      if (!alone) throw error;
      return target.query(sql, values);
    }
  }

  private nameOf(sql: string): string | undefined {
    const name = this.named.get(sql);
    if (name !== undefined) return name;
    if (!this.seenOnce.has(sql)) {
      if (this.seenOnce.size >= MAX_SEEN) this.seenOnce.clear();
      this.seenOnce.add(sql);
      return undefined;
    }
    if (this.named.size >= MAX_NAMED) this.nextGeneration();
    this.seenOnce.delete(sql);
    const fresh = `gw${this.generation}_${this.named.size}`;
    this.named.set(sql, fresh);
    return fresh;
  }

  private nextGeneration(): void {
    this.generation += 1;
    this.named.clear();
  }

  /**
   * A connection checked out (pg-pool's 'acquire', before the statement it is taken for): one of an earlier
   * generation first deallocates its statements. pg runs a connection's queries in order, so DEALLOCATE ALL goes
   * first; pg's own record of what the connection prepared is cleared with it.
   */
  private renew(client: pg.PoolClient): void {
    if (this.connectionGenerations.get(client) === this.generation) return;
    this.connectionGenerations.set(client, this.generation);
    // A failure (the connection lost) is the next statement's to report.
    client.query('DEALLOCATE ALL').catch(() => {});
    const state = (client as unknown as { connection: PgConnectionState }).connection;
    state.parsedStatements = {};
    if (state.submittedNamedStatements) state.submittedNamedStatements = {};
  }
}

function isStalePlan(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  return code === '0A000' && typeof message === 'string' && message.includes('cached plan must not change result type');
}
