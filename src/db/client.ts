import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createPrivateDirectory, keepDirectoryPrivate } from './data-dir-permissions.js';
import { join } from 'node:path';
import type { PGlite, PGliteOptions } from '@electric-sql/pglite';
import { PrismaPg } from '@prisma/adapter-pg';
import type { SqlMigrationAwareDriverAdapterFactory } from '@prisma/driver-adapter-utils';
import pg from 'pg';
import { PrismaClient } from '../generated/prisma/client.js';
import { cancelStatementsOnAbort } from './cancellation.js';
import { CopyOutQuery, copyStatement } from './copy-binary.js';
import type { Sql } from '../query/sql.js';
import type { PGliteFiles } from './pglite-preload.js';
import { PreparedStatements } from './prepared-statements.js';
import { admittedByLocalSocket, hasLocalSocket, localSocketUrl, serveLocalSocket } from './local-socket.js';
import { DEFAULT_READ_MAX_LAG_MS, ReadReplicas, RoutingPool } from './read-routing.js';

export type DatabaseKind = 'pglite' | 'postgres';

/** Runs SQL outside Prisma: migrations, health checks, bulk loads. */
export interface RawSql {
  /** Runs a script of one or more statements without parameters. */
  exec(script: string): Promise<void>;
  query<Row = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<Row[]>;
  /**
   * Runs a select as a binary COPY of its rows (copy-binary.ts) and hands over the output in chunks as it
   * arrives, cut anywhere, keeping none of it: for a large read whose rows are turned into bytes (an export's
   * lines) without becoming strings or objects. On PostgreSQL it runs on the primary and is cancelled as any
   * statement when the request's time is up; on PGlite, in this process, the output is one chunk.
   */
  copyRows(select: Sql, onChunk: (chunk: Buffer) => void, room?: RoomForMore): Promise<void>;
  /** Runs `work` on one connection inside BEGIN/COMMIT, rolling back when it throws. */
  transaction<T>(work: (tx: TransactionSql) => Promise<T>): Promise<T>;
}

/**
 * Asked after each chunk of a streamed read: null while the consumer has room for more, else a promise that
 * settles when it has (the read waits until then).
 */
export type RoomForMore = () => Promise<void> | null;

/** A statement runner inside an open transaction. */
export interface TransactionSql extends Omit<RawSql, 'transaction' | 'copyRows'> {
  /**
   * Runs the transaction's last statement and commits: on PostgreSQL the COMMIT is sent with the statement, so
   * the locks it takes are released without waiting for this process to read its result (see `openPostgres`).
   * Nothing may run in the transaction after it. When the statement fails, the transaction commits nothing.
   */
  queryThenCommit<Row = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<Row[]>;
}

interface QueryEvent {
  query: string;
  durationMs: number;
  /** The statement's parameters as a JSON array (Prisma's own rendering for its statements). */
  params: string;
}

export interface Database {
  kind: DatabaseKind;
  prisma: PrismaClient;
  raw: RawSql;
  /** The driver adapter factory Prisma runs on; the schema engine uses it for migration diffs. */
  adapterFactory: SqlMigrationAwareDriverAdapterFactory;
  /**
   * Subscribes to every SQL statement Prisma issues, and to each `raw.query` (the hot-path reads and the
   * write path, written by hand, inside transactions too); returns the unsubscribe function.
   */
  onQuery(listener: (event: QueryEvent) => void): () => void;
  /**
   * Reads of the event log for live delivery (the event hub, src/live/): on PostgreSQL a pool of its own of
   * LIVE_POOL_SIZE connections, opened on first use, so a delivery never waits for a connection behind the
   * requests and writes that fill the main pool; on PGlite the one connection, as everything else.
   */
  liveReads: Pick<RawSql, 'query'>;
  /** Connection pool occupancy, for metrics; PostgreSQL only (PGlite is one in-process connection). */
  poolStats?(): PoolStats;
  /** The same of the pool behind `liveReads`; PostgreSQL only. */
  livePoolStats?(): PoolStats;
  /** With a read URL (DATABASE_READ_URL): the replicas read-only work goes to (src/db/read-routing.ts). */
  readReplicas?: ReadReplicas;
  /**
   * LISTENs on `channel`: PGlite through its own listen API, PostgreSQL on a dedicated connection outside the
   * pool that is reopened (with `onReconnect` called once it listens again) whenever it is lost; notifications
   * sent while it was away are lost, which is what `onReconnect` is for. Returns the function that stops.
   */
  listen(channel: string, onNotify: (payload: string) => void, onReconnect?: () => void): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

export interface PoolStats {
  /** Open connections, idle ones, and queries waiting for a connection; `max` is the pool size. */
  total: number;
  idle: number;
  waiting: number;
  max: number;
}

interface DatabaseOptions {
  /** postgres:// URL; without it the embedded PGlite is used. */
  databaseUrl?: string | undefined;
  /** PGlite data directory, or `memory://` for a throwaway in-memory database. */
  dataDir?: string | undefined;
  /** PostgreSQL pool size. */
  poolSize?: number;
  /**
   * PostgreSQL: connections of the exports' pool, one per export under way: the governor's `export` leases
   * (EXPORTS_PER_PROCESS), so an export never waits for one (default: `poolSize`).
   */
  exportConnections?: number | undefined;
  /**
   * PostgreSQL: where read-only work may go (a read replica, or a balancer in front of several), with a pool of
   * `poolSize` of its own; see src/db/read-routing.ts.
   */
  readUrl?: string | undefined;
  /** With `readUrl`: the replay lag up to which a replica serves a read that presents no consistency token. */
  readMaxLagMs?: number;
  /** PostgreSQL: longest wait for a new connection or for a free pooled one (default 5 s). */
  connectTimeoutMs?: number;
  /**
   * PostgreSQL: longest wait for a statement's answer, measured here rather than by the server, so it also
   * ends statements on a connection whose server hung or vanished; that connection is then discarded.
   * Unbounded by default (the CLI's bulk loads and migrations may legitimately run long).
   */
  queryTimeoutMs?: number;
  /**
   * PostgreSQL: the server's `statement_timeout` on every connection of the pool, so the server itself ends a
   * statement nobody cancelled. Unset by default, for the same reason as `queryTimeoutMs`. (PGlite runs its
   * statements in this process's thread, where PostgreSQL's timers cannot fire: it has no such bound.)
   */
  statementTimeoutMs?: number;
  /**
   * PostgreSQL: RawSql's statements run as named, prepared statements once their text repeats
   * (db/prepared-statements.ts). Default true; `DATABASE_PREPARED_STATEMENTS=off` for a pooler that cannot keep them.
   */
  preparedStatements?: boolean;
  /**
   * PGlite data directories only. `serve` (the server): expose the database to local processes on a Unix
   * socket in the directory. `join` (the CLI): when a running server holds the directory, work through that
   * socket instead of refusing.
   */
  localSocket?: 'serve' | 'join';
  /** PGlite only: its Wasm module and file bundle, already loaded (db/pglite-preload.ts); else PGlite loads them. */
  pgliteFiles?: PGliteFiles | null;
  /** PGlite only: start from this `dumpDataDir()` archive instead of an empty database (the tests' seeded copy). */
  pgliteDump?: Blob;
}

/** Opens PGlite (no URL) or PostgreSQL (postgres:// URL) behind one Prisma client. */
export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  return options.databaseUrl
    ? openPostgres(options.databaseUrl, options.poolSize ?? 10, options)
    : openPGlite(options.dataDir ?? 'memory://', options.localSocket, options.pgliteDump, options.pgliteFiles);
}

/** What a driver (PGlite, PostgreSQL) hands withQueryEvents to make a Database of. */
interface Driver {
  kind: DatabaseKind;
  adapterFactory: SqlMigrationAwareDriverAdapterFactory;
  raw: RawSql;
  liveReads: Pick<RawSql, 'query'>;
  close: () => Promise<void>;
  listen: Database['listen'];
}

function withQueryEvents({ kind, adapterFactory, raw, liveReads, close: closeDriver, listen }: Driver): Database {
  const prisma = new PrismaClient({
    adapter: adapterFactory,
    log: [{ emit: 'event', level: 'query' }],
  });
  const listeners = new Set<(event: QueryEvent) => void>();
  prisma.$on('query', (event) => {
    for (const listener of listeners) listener({ query: event.query, durationMs: event.duration, params: event.params });
  });
  /** Runs one statement, reporting its text, time and parameters to the listeners when there are any. */
  const observe = async <T>(sql: string, params: unknown[], run: () => Promise<T>): Promise<T> => {
    if (listeners.size === 0) return run();
    const started = performance.now();
    const result = await run();
    const event = { query: sql, durationMs: performance.now() - started, params: JSON.stringify(params) };
    for (const listener of listeners) listener(event);
    return result;
  };
  const observed =
    (query: RawSql['query']): RawSql['query'] =>
    <Row>(sql: string, params: unknown[] = []): Promise<Row[]> =>
      observe(sql, params, () => query<Row>(sql, params));
  return {
    kind,
    prisma,
    raw: {
      ...raw,
      query: observed(raw.query.bind(raw)),
      copyRows: (select, onChunk, room) => observe(select.text, select.values, () => raw.copyRows(select, onChunk, room)),
      // Statements inside a transaction (the write path) are observed as well.
      transaction: (work) =>
        raw.transaction((tx) =>
          work({ ...tx, query: observed(tx.query.bind(tx)), queryThenCommit: observed(tx.queryThenCommit.bind(tx)) }),
        ),
    },
    liveReads: { query: observed(liveReads.query.bind(liveReads)) },
    adapterFactory,
    listen,
    onQuery(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async close() {
      await prisma.$disconnect();
      await closeDriver();
    },
  };
}

/** A PGlite data directory that another process holds open. */
export class DataDirectoryInUseError extends Error {
  constructor(dataDir: string, pid: number, address: string | undefined) {
    super(
      (address
        ? `a running server (pid ${pid}, listening on ${address}) holds the PGlite data directory ${dataDir}: `
        : `the PGlite data directory ${dataDir} is in use by process ${pid} (a server still starting, or another CLI command): `) +
        `embedded PGlite serves one process at a time, and a second one would overwrite its changes. A running server ` +
        `lets the CLI in through its socket; stop that process first, use another DATA_DIR, or run both on PostgreSQL (DATABASE_URL). ` +
        `If no such process runs, delete ${join(dataDir, LOCK_FILE)}.`,
    );
    this.name = 'DataDirectoryInUseError';
  }
}

/** `<pid>\n[<url the server listens on>\n]`: who holds the directory, and where a server holding it answers. */
const LOCK_FILE = 'gateway.pid';

/**
 * Claims a PGlite data directory for this process: PGlite keeps its pages in the process, so two processes on
 * one directory silently overwrite each other's writes. The claim is a file holding the pid, created
 * exclusively; one left by a process that no longer runs is taken over. Returns the release function.
 */
function claimDataDirectory(dataDir: string): () => void {
  const path = join(dataDir, LOCK_FILE);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(path, `${process.pid}\n`, { flag: 'wx', mode: 0o600 });
      return () => rmSync(path, { force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const [pidLine, address] = readFileSync(path, 'utf8').split('\n');
      const holder = Number(pidLine?.trim());
      if (Number.isInteger(holder) && holder > 0 && isRunning(holder))
        throw new DataDirectoryInUseError(dataDir, holder, address?.trim() || undefined);
      rmSync(path, { force: true });
    }
  }
  throw new Error(`could not claim the PGlite data directory ${dataDir}`);
}

/** Adds where this server listens to its claim on the data directory, for a second server's refusal to name. */
export function recordListeningAddress(dataDir: string, url: string): void {
  const path = join(dataDir, LOCK_FILE);
  try {
    if (Number(readFileSync(path, 'utf8').split('\n')[0]) === process.pid) writeFileSync(path, `${process.pid}\n${url}\n`);
  } catch {
    // No claim (not on PGlite): nothing to add to.
  }
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it runs, under another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * How every PGlite here starts (the server, the CLI, the tests' databases, the migration script): PGlite's own
 * start parameters with a buffer pool sized for an embedded database, and how a new directory is initialised.
 * - PostgreSQL's default of 128 MB of shared buffers is one block of memory PGlite zeroes at every start:
 *   close to half of a `PGlite.create` of an existing directory, and as much resident memory, before any
 *   query. 16 MB holds the demo data many times over; PGlite reads what does not
 *   fit from the directory's files, which the OS caches.
 * - max_connections sizes the shared lock and process tables: PGlite runs one backend (the local socket queues
 *   its clients onto it).
 * - A new directory gets 1 MB write-ahead log segments instead of 16 MB: the log's current segment is written
 *   whole, mostly zeros, so a new directory is 15 MB smaller, and so is every archive of one (`dumpDataDir`)
 *   that PGlite reads back whole (the tests' copies: 0.2 s less to open each). Existing directories keep theirs.
 */
export async function pgliteOptions(): Promise<Pick<PGliteOptions, 'startParams' | 'initDbStartParams'>> {
  const { PGlite } = await loadPGlite();
  return {
    startParams: [...PGlite.defaultStartParams, ...['shared_buffers=16MB', 'max_connections=10'].flatMap((setting) => ['-c', setting])],
    initDbStartParams: ['--wal-segsize=1'],
  };
}

/** PGlite, imported by the PGlite path only (its Prisma adapter too, in openPGlite): a server on PostgreSQL never loads them. */
function loadPGlite() {
  return import('@electric-sql/pglite');
}

async function openPGlite(dataDir: string, localSocket?: 'serve' | 'join', dump?: Blob, files?: PGliteFiles | null): Promise<Database> {
  let release = () => {};
  let stopSocket = async () => {};
  if (!dataDir.startsWith('memory://')) {
    createPrivateDirectory(dataDir);
    try {
      release = claimDataDirectory(dataDir);
    } catch (error) {
      // The holder is a running server that shares its database: go through it (PGlite speaking PostgreSQL).
      if (error instanceof DataDirectoryInUseError && localSocket === 'join' && hasLocalSocket(dataDir)) {
        const db = await openPostgres(localSocketUrl(dataDir), 1, {}, 'pglite');
        try {
          await admittedByLocalSocket(dataDir, () => db.raw.query('SELECT 1'));
        } catch (refused) {
          await db.close().catch(() => {});
          throw refused;
        }
        return db;
      }
      throw error;
    }
  }
  let client: PGlite;
  let adapterFactory: SqlMigrationAwareDriverAdapterFactory;
  try {
    const [{ PGlite }, { PrismaPGlite }, options] = await Promise.all([loadPGlite(), import('pglite-prisma-adapter'), pgliteOptions()]);
    client = await PGlite.create(dataDir, { ...options, ...files, ...(dump ? { loadDataDir: dump } : {}) });
    adapterFactory = new PrismaPGlite(client);
  } catch (error) {
    release();
    throw error;
  }
  const stopSweeping = dataDir.startsWith('memory://') ? () => {} : keepDirectoryPrivate(dataDir);
  // Listeners by channel, so NOTIFYs sent by local socket clients reach them too (see serveLocalSocket).
  const listeners = new Map<string, Set<(payload: string) => void>>();
  if (localSocket === 'serve' && !dataDir.startsWith('memory://')) {
    try {
      stopSocket = await serveLocalSocket(client, dataDir, {
        onNotification: (channel, payload) => {
          for (const listener of listeners.get(channel) ?? []) listener(payload);
        },
      });
    } catch (error) {
      await client.close().catch(() => {});
      release();
      throw error;
    }
  }
  const raw: RawSql = {
    async exec(script) {
      await client.exec(script);
    },
    async query<Row>(sql: string, params: unknown[] = []) {
      return (await client.query<Row>(sql, params)).rows;
    },
    async copyRows(select, onChunk) {
      // PGlite answers in this process with the whole output at once: nothing to stream.
      const { blob } = await client.query(copyStatement(select, "'/dev/blob'"));
      if (!blob) throw new Error('COPY wrote no output');
      onChunk(Buffer.from(await blob.arrayBuffer()));
    },
    transaction(work) {
      return client.transaction((tx) => {
        const query = async <Row>(sql: string, params: unknown[] = []) => (await tx.query<Row>(sql, params)).rows;
        return work({
          async exec(script) {
            await tx.exec(script);
          },
          query,
          // PGlite runs in this process: no round trip to save; the transaction commits when `work` returns.
          queryThenCommit: query,
        });
      });
    },
  };
  const listen: Database['listen'] = async (channel, onNotify) => {
    const unlisten = await client.listen(channel, onNotify);
    let set = listeners.get(channel);
    if (!set) {
      set = new Set();
      listeners.set(channel, set);
    }
    set.add(onNotify);
    return async () => {
      set.delete(onNotify);
      if (!client.closed) await unlisten();
    };
  };
  return withQueryEvents({
    kind: 'pglite',
    adapterFactory,
    raw,
    liveReads: raw,
    async close() {
      try {
        await stopSocket();
        await client.close();
      } finally {
        stopSweeping();
        release();
      }
    },
    listen,
  });
}

/** Connections of the pool for live delivery's reads (Database.liveReads), per process, beside the main pool. */
const LIVE_POOL_SIZE = 2;

async function openPostgres(
  url: string,
  poolSize: number,
  {
    connectTimeoutMs = 5_000,
    queryTimeoutMs,
    statementTimeoutMs,
    preparedStatements = true,
    readUrl,
    readMaxLagMs = DEFAULT_READ_MAX_LAG_MS,
    exportConnections = poolSize,
  }: Pick<
    DatabaseOptions,
    'connectTimeoutMs' | 'queryTimeoutMs' | 'statementTimeoutMs' | 'preparedStatements' | 'readUrl' | 'readMaxLagMs' | 'exportConnections'
  >,
  /** What answers on the other end: PostgreSQL, or a server's PGlite through its local socket. */
  kind: DatabaseKind = 'postgres',
): Promise<Database> {
  // Without both bounds a connection to a host that stopped answering (failover, partition) is never given
  // up: requests wait on it forever, and once every pooled connection is such a one, the pool never recovers.
  // Pipeline mode (pg's own): a connection sends each query at once instead of after the previous one's
  // answer. Every statement still runs in order, and the server's code awaits each; a transaction uses it to
  // send BEGIN with its first statement and COMMIT with its last (`transaction` below), so a write takes two
  // round trips instead of four and the event log's per-tenant lock is released by PostgreSQL itself at commit,
  // not after a round trip through this process (src/db/events.ts). Not through a server's local socket: PGlite
  // answers one message at a time there.
  const pipelined = kind === 'postgres';
  const poolOf = (max: number, connectionString = url, Pool: typeof pg.Pool = pg.Pool, pipeline = pipelined) => {
    const created = new Pool({
      connectionString,
      max,
      pipeline,
      connectionTimeoutMillis: connectTimeoutMs,
      ...(queryTimeoutMs === undefined ? {} : { query_timeout: queryTimeoutMs }),
      // Sent as a startup parameter, so it holds for every connection the pool opens, Prisma's statements included.
      ...(statementTimeoutMs === undefined ? {} : { statement_timeout: statementTimeoutMs }),
    });
    // An idle client that loses its server (restart, failover) must not crash the process.
    created.on('error', () => {});
    return created;
  };
  // With replicas, the main pool routes the plain reads of read-only requests to them.
  const pool = poolOf(poolSize, url, readUrl ? RoutingPool : pg.Pool);
  const readReplicas = readUrl ? new ReadReplicas(poolOf(poolSize, readUrl), readMaxLagMs) : undefined;
  // pg.Pool opens its connections on demand: a process without live subscribers never opens these.
  const livePool = poolOf(LIVE_POOL_SIZE);
  // COPY takes its connection whole, which pipeline mode cannot give: the exports' reads have a pool of their own,
  // opened on demand, so a long transfer does not hold one of the requests' connections either.
  const copyPool = poolOf(exportConnections, url, pg.Pool, false);
  const cancellation = cancelStatementsOnAbort(pool);
  const copyCancellation = cancelStatementsOnAbort(copyPool);
  const replicaCancellation = readReplicas ? cancelStatementsOnAbort(readReplicas.pool) : undefined;
  if (readReplicas) (pool as RoutingPool).routeTo(readReplicas);
  /** How statements run on `of`'s connections (and on `alsoOf`'s, where `of` routes some): prepared, or unnamed. */
  const runnerOf = (of: pg.Pool, alsoOf?: pg.Pool) => {
    // Never through a server's local socket: PGlite runs one session for every client of it.
    const statements = preparedStatements && kind === 'postgres' ? new PreparedStatements() : null;
    statements?.attach(of);
    if (alsoOf) statements?.attach(alsoOf);
    return (target: pg.Pool | pg.PoolClient, sql: string, params: unknown[], alone: boolean) =>
      statements ? statements.run(target, sql, params, alone) : target.query(sql, params);
  };
  const run = runnerOf(pool, readReplicas?.pool);
  const runLive = runnerOf(livePool);
  const statsOf = (of: pg.Pool, max: number) => (): PoolStats => ({
    total: of.totalCount,
    idle: of.idleCount,
    waiting: of.waitingCount,
    max,
  });
  const raw: RawSql = {
    async exec(script) {
      await pool.query(script);
    },
    async query<Row>(sql: string, params: unknown[] = []) {
      return (await run(pool, sql, params, true)).rows as Row[];
    },
    async copyRows(select, onChunk, room) {
      // A checkout (copyPool.connect, which the cancellation watches), and pg's own Query, which hands each
      // CopyData message it parses to handleCopyData: the chunk is a view of what pg read from the socket. A
      // COPY cut short leaves the connection mid-protocol: it is destroyed rather than returned to the pool.
      // While the consumer has no room for more, the connection's socket is not read: PostgreSQL's sends then
      // wait, and what this process holds of the output is bounded by the consumer's queue and one socket read.
      const client = await copyPool.connect();
      const socket = (client as unknown as { connection: { stream: { pause(): void; resume(): void } } }).connection.stream;
      let failed = false;
      try {
        await new Promise<void>((resolve, reject) => {
          let thrown: unknown;
          const query = new CopyOutQuery(copyStatement(select, 'STDOUT'), (chunk) => {
            if (thrown !== undefined) return;
            try {
              onChunk(chunk);
            } catch (error) {
              thrown = error;
              return;
            }
            const waiting = room?.();
            if (waiting) {
              socket.pause();
              void waiting.finally(() => socket.resume());
            }
          });
          query.on('error', reject);
          query.on('end', () => (thrown === undefined ? resolve() : reject(thrown)));
          client.query(query);
        });
      } catch (error) {
        failed = true;
        throw error;
      } finally {
        client.release(failed);
      }
    },
    async transaction(work) {
      const client = await pool.connect();
      // A connection that dies while checked out (the server went away) emits 'error' on the client, which
      // nothing else listens to: unheard, it would crash the process. The failing statement reports it.
      let broken = false;
      const onError = () => {
        broken = true;
      };
      client.on('error', onError);
      let committed = false;
      const open = () => {
        if (committed) throw new Error('the transaction has committed: queryThenCommit must be its last statement');
      };
      try {
        // Pipelined, BEGIN goes out now and the first statement right behind it: one round trip for both. pg
        // sends a connection's queries in order, so nothing can run before BEGIN; its own failure (the connection
        // lost) fails the statements behind it too, and is awaited with the first of them.
        let begun: Promise<unknown> | undefined = client.query('BEGIN');
        // Awaited with the first statement; a work that fails before any (or never runs one) leaves it unawaited,
        // and its failure must not surface as an unhandled rejection.
        begun.catch(() => {});
        if (!pipelined) await begun;
        const afterBegin = async <T>(statement: Promise<T>): Promise<T> => {
          if (begun === undefined) return statement;
          const [, result] = await Promise.all([begun, statement]);
          begun = undefined;
          return result;
        };
        const result = await work({
          async exec(script) {
            open();
            await afterBegin(client.query(script));
          },
          async query<Row>(sql: string, params: unknown[] = []) {
            open();
            return (await afterBegin(run(client, sql, params, false))).rows as Row[];
          },
          async queryThenCommit<Row>(sql: string, params: unknown[] = []) {
            open();
            committed = true;
            if (!pipelined) {
              const { rows } = await afterBegin(run(client, sql, params, false));
              await client.query('COMMIT');
              return rows as Row[];
            }
            // After a failed statement PostgreSQL answers this COMMIT with a rollback: nothing is written.
            const [{ rows }] = await afterBegin(Promise.all([run(client, sql, params, false), client.query('COMMIT')]));
            return rows as Row[];
          },
        });
        if (!committed) await afterBegin(client.query('COMMIT'));
        return result;
      } catch (error) {
        if (!broken) {
          await client.query('ROLLBACK').catch(() => {
            broken = true;
          });
        }
        throw error;
      } finally {
        client.off('error', onError);
        // A broken connection is destroyed rather than returned to the pool.
        client.release(broken);
      }
    },
  };
  const listen: Database['listen'] = (channel, onNotify, onReconnect) =>
    listenOnDedicatedClient(
      { connectionString: url, connectionTimeoutMillis: connectTimeoutMs, keepAlive: true },
      channel,
      onNotify,
      onReconnect,
    );
  const liveReads: Database['liveReads'] = {
    async query<Row>(sql: string, params: unknown[] = []) {
      return (await runLive(livePool, sql, params, true)).rows as Row[];
    },
  };
  const database = withQueryEvents({
    kind,
    adapterFactory: new PrismaPg(pool),
    raw,
    liveReads,
    async close() {
      await Promise.all([pool.end(), livePool.end(), copyPool.end(), readReplicas?.pool.end()]);
      await Promise.all([cancellation.close(), copyCancellation.close(), replicaCancellation?.close()]);
    },
    listen,
  });
  return Object.assign(database, {
    poolStats: statsOf(pool, poolSize),
    livePoolStats: statsOf(livePool, LIVE_POOL_SIZE),
    ...(readReplicas ? { readReplicas } : {}),
  });
}

/**
 * The longest pause between two attempts to listen again: short, so that after a failover (a few seconds of a
 * write address that refuses) live delivery resumes within about a second of the new primary taking over.
 */
const MAX_LISTEN_PAUSE_MS = 1000;

/**
 * LISTEN on a client of its own (a pooled one would hand the session to others). When the connection is
 * lost it is reopened after a pause growing from 100 ms to MAX_LISTEN_PAUSE_MS; `onReconnect` runs once it
 * listens again.
 */
async function listenOnDedicatedClient(
  config: pg.ClientConfig,
  channel: string,
  onNotify: (payload: string) => void,
  onReconnect?: () => void,
): Promise<() => Promise<void>> {
  let stopped = false;
  let current: pg.Client | undefined;
  let retryTimer: NodeJS.Timeout | undefined;
  let pause = 100;
  const open = async (): Promise<void> => {
    const client = new pg.Client(config);
    client.on('notification', (message) => {
      if (message.channel === channel) onNotify(message.payload ?? '');
    });
    const lost = () => {
      if (current !== client) return;
      current = undefined;
      client.end().catch(() => {});
      reopen();
    };
    client.on('error', lost);
    client.on('end', lost);
    await client.connect();
    await client.query(`LISTEN "${channel.replace(/"/g, '""')}"`);
    if (stopped) {
      await client.end().catch(() => {});
      return;
    }
    current = client;
    pause = 100;
  };
  const reopen = () => {
    if (stopped) return;
    retryTimer = setTimeout(() => {
      open().then(
        () => onReconnect?.(),
        () => {
          pause = Math.min(pause * 2, MAX_LISTEN_PAUSE_MS);
          reopen();
        },
      );
    }, pause);
    retryTimer.unref();
  };
  await open();
  return async () => {
    stopped = true;
    clearTimeout(retryTimer);
    const client = current;
    current = undefined;
    await client?.end().catch(() => {});
  };
}
