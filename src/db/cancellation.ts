import { AsyncLocalStorage } from 'node:async_hooks';
import pg from 'pg';

// A request's deadline reaches its SQL through the async context rather than through every call: Prisma offers
// no per-query signal, and the hand-written queries go through the same pool. Work started under a signal
// (the whole handling of one request) carries it to every statement it issues.

/** What aborts a piece of work's statements: a request's deadline (admission/deadline.ts). */
export interface StatementSignal {
  readonly aborted: boolean;
  /** Why it aborted: what a statement started or waiting after that fails with. */
  readonly reason: unknown;
  /** Calls `listener` once, when it aborts; returns the function that stops listening. */
  onAbort(listener: () => void): () => void;
}

const statementSignal = new AsyncLocalStorage<StatementSignal>();

/**
 * Runs `work` so that the PostgreSQL statements it issues, however deep, are cancelled in the database when
 * `signal` aborts, and none is started after that.
 */
export function withStatementSignal<T>(signal: StatementSignal, work: () => T): T {
  return statementSignal.run(signal, work);
}

/** A pool's statements made cancellable; `close` ends the connections cancelling takes. */
interface Cancellation {
  close(): Promise<void>;
}

/** Connections kept for cancelling, beside the pool's own: a cancel is one short statement. */
const CANCEL_POOL_SIZE = 2;

/**
 * Wraps `pool.connect` and `pool.query` so that a client checked out under a statement signal is watched while it
 * is out. When the signal aborts, the statement running on its backend is cancelled with pg_cancel_backend() on a
 * connection of a small pool of its own (the request's pool may be exhausted by exactly such statements), and the
 * client is destroyed instead of going back to the pool: a cancel that arrives late must not reach a statement
 * another request runs on that backend. Without a signal (start-up, the CLI) nothing changes.
 */
export function cancelStatementsOnAbort(pool: pg.Pool): Cancellation {
  const connect = pool.connect.bind(pool);
  const query = pool.query.bind(pool);
  let cancelPool: pg.Pool | undefined;

  const cancel = (backendPid: number) => {
    if (!cancelPool) {
      cancelPool = new pg.Pool({ ...pool.options, max: CANCEL_POOL_SIZE, idleTimeoutMillis: 10_000 });
      cancelPool.on('error', () => {});
    }
    // If even this fails (the database is gone), the server's statement_timeout still ends the statement.
    cancelPool.query('SELECT pg_cancel_backend($1)', [backendPid]).catch(() => {});
  };

  async function checkout(signal: StatementSignal): Promise<pg.PoolClient> {
    if (signal.aborted) throw signal.reason;
    const client = await connect();
    if (signal.aborted) {
      client.release();
      throw signal.reason;
    }
    let cancelled = false;
    const stopWatching = signal.onAbort(() => {
      cancelled = true;
      cancel((client as unknown as { processID: number }).processID);
    });
    // pg-pool gives every checkout its own release function; this one stops watching and, after a cancel,
    // destroys the connection.
    const release = client.release;
    client.release = (error?: Error | boolean) => {
      stopWatching();
      release.call(client, error ?? (cancelled || undefined));
    };
    return client;
  }

  pool.connect = ((callback?: Parameters<typeof connect>[0]) => {
    const signal = statementSignal.getStore();
    if (callback || !signal) return connect(callback as never);
    return checkout(signal);
  }) as typeof pool.connect;

  pool.query = ((...args: unknown[]) => {
    const signal = statementSignal.getStore();
    if (!signal || typeof args.at(-1) === 'function') return (query as (...a: unknown[]) => unknown)(...args);
    return (async () => {
      const client = await checkout(signal);
      // As pg-pool's own query does: a connection that dies under the statement fails the statement, not the process.
      const ignore = () => {};
      client.on('error', ignore);
      try {
        const result = await (client.query as (...a: unknown[]) => Promise<unknown>)(...args);
        client.release();
        return result;
      } catch (error) {
        // Also as pg-pool does: a client whose statement failed is not reused.
        client.release(error instanceof Error ? error : true);
        throw error;
      } finally {
        client.removeListener('error', ignore);
      }
    })();
  }) as typeof pool.query;

  return {
    async close() {
      await cancelPool?.end();
    },
  };
}
