import { AsyncLocalStorage } from 'node:async_hooks';
import pg from 'pg';

// Read replicas (DATABASE_READ_URL): the read-only work of a request goes to a replica when that replica is
// known to hold what the request must see, and to the primary otherwise.
//
// - A request runs inside a scope (`withReadScope`). Its reads may leave the primary only when the scope is
//   read-only: a GET or HEAD that is no event stream, or a GraphQL query (`markReadOnly`). A statement goes to
//   a replica only when it is a plain read (`isPlainRead`) outside any transaction; everything else, and every
//   statement of a write request, runs on the primary.
// - Read-your-writes: every commit made inside a scope reports the primary's WAL flush position after it (the
//   commit's LSN or later) to the scope, which sends it as the `Consistency-Token` response header. A request
//   that presents that token is served by a replica only once that replica's `pg_last_wal_replay_lsn()` has
//   reached it, checked on the very connection that runs the read (the read port may lead to several servers);
//   otherwise by the primary.
// - Without a token, a replica serves a read while its replay lag is at most `maxLagMs`: 0 when it has replayed
//   everything it received, else the age of the last transaction it replayed. What a connection's server
//   reported is trusted for STATE_TTL_MS, so such a read lags by at most `maxLagMs` + STATE_TTL_MS.
// - A replica that cannot be reached, or that cancels a read for a recovery conflict, hands the read to the
//   primary: reads go on while a replica is lost, and (through the read port) while the primary is.

/** The response header carrying a write's consistency token, and the request header presenting it. */
export const CONSISTENCY_TOKEN_HEADER = 'consistency-token';

/** The replay lag up to which a replica serves a read without a consistency token (DATABASE_READ_MAX_LAG_MS). */
export const DEFAULT_READ_MAX_LAG_MS = 1000;

/** How long what a connection's server reported about its replay is trusted before it is asked again. */
export const STATE_TTL_MS = 250;

export interface ReadScope {
  /** The request may read from a replica. */
  readOnly: boolean;
  /** The position a replica must have replayed to serve this request (from its Consistency-Token), if any. */
  minLsn: bigint | undefined;
  /** Called with the primary's WAL position after each commit made in this scope. */
  onCommit?: (lsn: string) => void;
}

const scopes = new AsyncLocalStorage<ReadScope>();

/** Runs `work` (a request) in a scope of its own; see the module's comment. */
export function withReadScope<T>(scope: ReadScope, work: () => T): T {
  return scopes.run(scope, work);
}

/** The running request may read from a replica (its GraphQL operation is a query). */
export function markReadOnly(): void {
  const scope = scopes.getStore();
  if (scope) scope.readOnly = true;
}

export function currentReadScope(): ReadScope | undefined {
  return scopes.getStore();
}

/** A PostgreSQL LSN (`16/B374D848`) as a number; undefined when `text` is none. */
export function parseLsn(text: string | null | undefined): bigint | undefined {
  const match = /^([0-9A-F]{1,8})\/([0-9A-F]{1,8})$/i.exec(text?.trim() ?? '');
  if (!match) return undefined;
  return (BigInt(`0x${match[1]}`) << 32n) + BigInt(`0x${match[2]}`);
}

/** Statements that write, lock or have side effects even inside a SELECT. */
const NOT_A_PLAIN_READ =
  /\b(insert|update|delete|merge|for\s+(update|share|no\s+key\s+update|key\s+share)|nextval|setval|pg_notify|pg_advisory\w*|pg_try_advisory\w*|set_config|pg_current_wal\w*)\b/i;

/** Whether `sql` only reads, so a replica may run it. */
export function isPlainRead(sql: string): boolean {
  return /^\s*(select|with)\b/i.test(sql) && !NOT_A_PLAIN_READ.test(sql);
}

function textOf(config: unknown): string {
  if (typeof config === 'string') return config;
  const text = (config as { text?: unknown } | null)?.text;
  return typeof text === 'string' ? text : '';
}

/** What a replica connection's server last reported. */
export interface ServerState {
  /** It is a standby; a primary (the read port's fallback) has every commit. */
  inRecovery: boolean;
  replayLsn: bigint | undefined;
  lagMs: number;
  at: number;
}

const STATE_SQL = `SELECT pg_is_in_recovery() AS in_recovery, pg_last_wal_replay_lsn()::text AS replay_lsn,
  CASE WHEN NOT pg_is_in_recovery() OR pg_last_wal_receive_lsn() IS NULL OR pg_last_wal_receive_lsn() <= pg_last_wal_replay_lsn() THEN 0
       ELSE coalesce(extract(epoch FROM clock_timestamp() - pg_last_xact_replay_timestamp()) * 1000, 0) END AS lag_ms`;

/** Reads served, by where: for metrics. */
export interface ReadRoutingStats {
  replica: number;
  /** Reads a replica could have served but did not: behind the token or the lag bound, or unreachable. */
  primaryFallback: number;
}

/**
 * The read side: a pool on DATABASE_READ_URL, and the rule for each read whether a connection of it may serve
 * the read. `maxLagMs` bounds a read without a token (see the module's comment).
 */
export class ReadReplicas {
  readonly stats: ReadRoutingStats = { replica: 0, primaryFallback: 0 };
  /** What a replica connection's server reported last (for metrics). */
  latest: ServerState | undefined;
  private readonly states = new WeakMap<pg.PoolClient, ServerState>();

  constructor(
    readonly pool: pg.Pool,
    private readonly maxLagMs: number,
  ) {}

  /**
   * Runs a plain read on a replica when one may serve `scope`, else returns undefined (the caller runs it on
   * the primary). Errors of the read itself are thrown; a lost replica is not an error here.
   */
  async read(scope: ReadScope, config: unknown, values: unknown): Promise<pg.QueryResult | undefined> {
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch {
      this.stats.primaryFallback += 1;
      return undefined;
    }
    let broken = false;
    const onError = () => {
      broken = true;
    };
    client.on('error', onError);
    try {
      if (!(await this.serves(client, scope))) {
        this.stats.primaryFallback += 1;
        return undefined;
      }
      const result = await (client.query as (config: unknown, values: unknown) => Promise<pg.QueryResult>)(config, values);
      this.stats.replica += 1;
      return result;
    } catch (error) {
      if (!handsToPrimary(error)) throw error;
      broken ||= !(error instanceof pg.DatabaseError);
      this.stats.primaryFallback += 1;
      return undefined;
    } finally {
      client.off('error', onError);
      client.release(broken);
    }
  }

  /** Whether the server behind `client` may serve `scope`'s reads, asking it when what it said is stale. */
  private async serves(client: pg.PoolClient, scope: ReadScope): Promise<boolean> {
    let state = this.states.get(client);
    const now = Date.now();
    if (!state || now - state.at > STATE_TTL_MS || !this.accepts(state, scope)) {
      state = await this.ask(client);
    }
    return this.accepts(state, scope);
  }

  private accepts(state: ServerState, scope: ReadScope): boolean {
    if (!state.inRecovery) return true;
    if (scope.minLsn !== undefined) return state.replayLsn !== undefined && state.replayLsn >= scope.minLsn;
    return state.lagMs <= this.maxLagMs;
  }

  private async ask(client: pg.PoolClient): Promise<ServerState> {
    const { rows } = await client.query<{ in_recovery: boolean; replay_lsn: string | null; lag_ms: string | number }>(STATE_SQL);
    const row = rows[0]!;
    const state = { inRecovery: row.in_recovery, replayLsn: parseLsn(row.replay_lsn), lagMs: Number(row.lag_ms), at: Date.now() };
    this.states.set(client, state);
    this.latest = state;
    return state;
  }
}

/**
 * Errors after which the primary should run the read instead: the replica is unreachable or went away, is
 * shutting down or starting, or cancelled the read for a conflict with recovery (40001).
 */
function handsToPrimary(error: unknown): boolean {
  if (!(error instanceof pg.DatabaseError)) return true;
  return error.code === '40001' || error.code?.startsWith('57P') === true || error.code?.startsWith('08') === true;
}

type QueryFunction = (config: unknown, values?: unknown, callback?: unknown) => unknown;

/**
 * The primary's pool, routing once `routeTo` is called: `query` (a statement outside a transaction, Prisma's and
 * RawSql's alike) sends the plain reads of a read-only scope to the replicas when they may serve it;
 * transactions (`connect`) and everything else run here. Commits made inside a scope report the WAL position
 * after them (`onCommit`).
 */
export class RoutingPool extends pg.Pool {
  constructor(config: pg.PoolConfig) {
    super(config);
    // A transaction's COMMIT, on a connection of this pool, reports its position to the request's scope. Sent
    // right behind the COMMIT, so a pipelined connection spends no extra round trip on it.
    this.on('connect', (client) => {
      const query = client.query.bind(client) as QueryFunction;
      (client as unknown as { query: QueryFunction }).query = (config, values, callback) => {
        const scope = scopes.getStore();
        if (!scope?.onCommit || callback !== undefined || textOf(config).trim().toUpperCase() !== 'COMMIT')
          return query(config, values, callback);
        const committed = query(config, values) as Promise<pg.QueryResult>;
        const position = query(FLUSH_LSN_SQL) as Promise<pg.QueryResult<{ lsn: string }>>;
        position.catch(() => {});
        // The token is handed over before the statement's caller goes on to answer the request.
        return committed.then(async (result) => {
          const lsn = await position.then(
            ({ rows }) => rows[0]?.lsn,
            () => undefined,
          );
          if (lsn) scope.onCommit?.(lsn);
          return result;
        });
      };
    });
  }

  /**
   * From now on `query` routes (see the class comment). Call it after anything else that wraps this pool's
   * `query` (the cancellation at a request's deadline): routing comes first, and either pool's statements are
   * then cancelled alike.
   */
  routeTo(replicas: ReadReplicas): void {
    const base = this.query.bind(this) as QueryFunction;
    const run = (config: unknown, values: unknown) => base(config, values) as Promise<pg.QueryResult>;
    (this as unknown as { query: QueryFunction }).query = (config, values, callback) => {
      const scope = scopes.getStore();
      if (typeof values === 'function' || callback !== undefined || !scope) return base(config, values, callback);
      if (!isPlainRead(textOf(config))) return this.write(scope, run(config, values), () => run(FLUSH_LSN_SQL, undefined));
      if (!scope.readOnly) return run(config, values);
      return replicas.read(scope, config, values).then((result) => result ?? run(config, values));
    };
  }

  /** A statement that may write, outside a transaction: its commit's position goes to the scope. */
  private async write(
    scope: ReadScope,
    statement: Promise<pg.QueryResult>,
    position: () => Promise<pg.QueryResult>,
  ): Promise<pg.QueryResult> {
    const result = await statement;
    if (scope.onCommit) {
      const lsn = await position().then(
        ({ rows }) => (rows[0] as { lsn?: string } | undefined)?.lsn,
        () => undefined,
      );
      if (lsn) scope.onCommit(lsn);
    }
    return result;
  }
}

const FLUSH_LSN_SQL = 'SELECT pg_current_wal_flush_lsn()::text AS lsn';
