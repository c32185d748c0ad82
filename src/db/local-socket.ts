import { chmodSync, existsSync, mkdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { PGlite } from '@electric-sql/pglite';

// A server on PGlite holds its data directory: PGlite keeps the database in the process. Other local
// processes (the CLI) reach that database through the server, over the PostgreSQL protocol on a Unix socket
// inside the data directory. @electric-sql/pglite-socket speaks the protocol; what this module adds is that
// the socket's sessions and the server's own queries never interleave inside one another's work.

/** pg addresses a Unix socket by directory and port: `<dir>/.s.PGSQL.<port>`, as PostgreSQL names its own. */
const LOCAL_SOCKET_PORT = 5432;

/**
 * Connections the socket serves at once (pglite-socket's default is 1, and a connection over the limit is
 * closed unanswered). Their statements are queued and run one unit at a time; each CLI command opens one.
 */
const LOCAL_SOCKET_MAX_CONNECTIONS = 8;

/**
 * A socket session that stops sending in the middle of its work (an open transaction) holds every other
 * query of the server; after this long without a message its connection is closed and its work rolled back.
 */
const LOCAL_SOCKET_IDLE_TIMEOUT_MS = 30_000;

/** The directory (mode 0700: only the owner may enter it, so only the owner may connect) holding the socket. */
export function localSocketDir(dataDir: string): string {
  return resolve(dataDir, 'socket');
}

export function localSocketPath(dataDir: string): string {
  return join(localSocketDir(dataDir), `.s.PGSQL.${LOCAL_SOCKET_PORT}`);
}

/** Whether a server on this data directory offers its socket (it may still have stopped without removing it). */
export function hasLocalSocket(dataDir: string): boolean {
  return existsSync(localSocketPath(dataDir));
}

/** A connection URL for pg that reaches the server's PGlite through its socket. */
export function localSocketUrl(dataDir: string): string {
  return `postgresql://postgres@localhost/postgres?host=${encodeURIComponent(localSocketDir(dataDir))}&port=${LOCAL_SOCKET_PORT}`;
}

/** How long a CLI command waits for one of the socket's connections before giving up. */
const LOCAL_SOCKET_ADMISSION_TIMEOUT_MS = 30_000;

/** The server kept refusing this process a connection (all of them in use), or stopped meanwhile. */
class LocalSocketUnavailableError extends Error {
  constructor(dataDir: string, cause: unknown) {
    super(
      `the server holding the PGlite data directory ${dataDir} did not admit a connection on its socket within ` +
        `${LOCAL_SOCKET_ADMISSION_TIMEOUT_MS / 1000} s: it serves ${LOCAL_SOCKET_MAX_CONNECTIONS} local connections at once ` +
        `(other CLI commands are running), or it is stopping (${cause instanceof Error ? cause.message : String(cause)}). Try again.`,
    );
    this.name = 'LocalSocketUnavailableError';
  }
}

function isConnectionFailure(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && ['EPIPE', 'ECONNRESET', 'ECONNREFUSED', 'ENOENT'].includes(code)) return true;
  return error instanceof Error && /Connection terminated/i.test(error.message);
}

/**
 * Runs `probe` (a first query, which opens the connection) until the server admits it. Over its connection
 * limit the socket closes new connections at once, so this retries, with a growing pause, for a bounded time.
 */
export async function admittedByLocalSocket(dataDir: string, probe: () => Promise<unknown>): Promise<void> {
  const deadline = Date.now() + LOCAL_SOCKET_ADMISSION_TIMEOUT_MS;
  for (let pause = 50; ; pause = Math.min(pause * 2, 1_000)) {
    try {
      await probe();
      return;
    } catch (error) {
      if (!isConnectionFailure(error)) throw error;
      if (Date.now() + pause > deadline) throw new LocalSocketUnavailableError(dataDir, error);
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }
}

const READY_FOR_QUERY = 0x5a; // 'Z', length 5, then the transaction status: 'I' idle, 'T' in a transaction, 'E' failed one
const IDLE = 0x49; // 'I'

/**
 * PGlite is one PostgreSQL session. The server's queries take PGlite's transaction mutex (a transaction holds
 * it throughout), but pglite-socket runs each protocol message on its own under the query mutex only, so a
 * server query could land between a client's Parse and Bind (replacing its unnamed statement) or inside its
 * BEGIN … COMMIT (and be rolled back with it), and a client message inside one of the server's transactions.
 * This view of the PGlite instance, handed to pglite-socket instead of the instance, holds the transaction
 * mutex from a socket session's first message until PGlite answers ReadyForQuery with status idle, so a unit
 * of the client's work and a query of the server each run whole.
 */
function exclusiveSessionView(db: PGlite, onNotification?: NotificationHandler): PGlite {
  let releaseSession: (() => void) | null = null;
  let tail = Buffer.alloc(0);

  const acquireSession = () =>
    new Promise<void>((held) => {
      void db._runExclusiveTransaction(
        () =>
          new Promise<void>((release) => {
            releaseSession = release;
            held();
          }),
      );
    });
  const endSession = () => {
    const release = releaseSession;
    releaseSession = null;
    release?.();
  };
  /** A Sync, then a ROLLBACK as a simple query: ends whatever the departed client left open. */
  const rollbackMessages = () => {
    const query = Buffer.from('ROLLBACK\0');
    const queryMessage = Buffer.alloc(5 + query.length);
    queryMessage.write('Q', 0);
    queryMessage.writeInt32BE(4 + query.length, 1);
    query.copy(queryMessage, 5);
    return Buffer.concat([Buffer.from([0x53, 0, 0, 0, 4]), queryMessage]);
  };

  const view = {
    waitReady: db.waitReady,
    // pglite-socket asks this to keep serving the connection whose transaction is open; here "open" means
    // that connection holds the session, which also covers an extended-protocol unit not yet synced.
    isInTransaction: () => releaseSession !== null,
    async runExclusive<T>(work: () => Promise<T>): Promise<T> {
      if (!releaseSession) await acquireSession();
      tail = Buffer.alloc(0);
      const result = await db.runExclusive(work);
      const idle = tail.length === 6 && tail[0] === READY_FOR_QUERY && tail.readInt32BE(1) === 5 && tail[5] === IDLE;
      if (idle) endSession();
      return result;
    },
    execProtocolRawStream(message: Uint8Array, options: { onRawData: (data: Uint8Array) => void }) {
      const notifications = onNotification ? notificationReader(onNotification) : undefined;
      return db.execProtocolRawStream(message, {
        onRawData: (data) => {
          tail = Buffer.concat([tail, data]).subarray(-6);
          notifications?.(data);
          options.onRawData(data);
        },
      });
    },
    // pglite-socket calls this only to roll back the work of a client that disconnected holding the session.
    async exec(): Promise<unknown[]> {
      if (!releaseSession) return [];
      try {
        await db.runExclusive(() => db.execProtocolRaw(rollbackMessages()));
      } finally {
        endSession();
      }
      return [];
    },
  };
  return view as unknown as PGlite;
}

/** A NOTIFY seen on its way to a socket client: (channel, payload). */
type NotificationHandler = (channel: string, payload: string) => void;

const NOTIFICATION_RESPONSE = 0x41; // 'A'

/**
 * PGlite is one backend, so a NOTIFY a socket client sends (the CLI beside the server) comes back in that
 * client's own output, and PGlite's in-process listeners never see it. This reads the NotificationResponse
 * messages ('A': pid, channel, payload) out of one execution's output, across chunk boundaries, and hands them
 * to the server's listeners too.
 */
function notificationReader(onNotification: NotificationHandler): (data: Uint8Array) => void {
  let pending = Buffer.alloc(0);
  return (data) => {
    pending = pending.length === 0 ? Buffer.from(data) : Buffer.concat([pending, data]);
    let at = 0;
    while (pending.length - at >= 5) {
      const length = pending.readInt32BE(at + 1);
      if (pending.length - at < 1 + length) break;
      if (pending[at] === NOTIFICATION_RESPONSE) {
        const body = pending.subarray(at + 9, at + 1 + length);
        const channelEnd = body.indexOf(0);
        const payloadEnd = body.indexOf(0, channelEnd + 1);
        if (channelEnd >= 0 && payloadEnd >= 0) {
          onNotification(body.subarray(0, channelEnd).toString('utf8'), body.subarray(channelEnd + 1, payloadEnd).toString('utf8'));
        }
      }
      at += 1 + length;
    }
    pending = pending.subarray(at);
  };
}

/**
 * Serves the PGlite instance on `<dataDir>/socket/.s.PGSQL.5432` for the user running the server; returns
 * the function that stops it and removes the socket.
 */
export async function serveLocalSocket(
  db: PGlite,
  dataDir: string,
  {
    maxConnections = LOCAL_SOCKET_MAX_CONNECTIONS,
    idleTimeoutMs = LOCAL_SOCKET_IDLE_TIMEOUT_MS,
    onNotification,
  }: { maxConnections?: number; idleTimeoutMs?: number; onNotification?: NotificationHandler } = {},
): Promise<() => Promise<void>> {
  const dir = localSocketDir(dataDir);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  const path = localSocketPath(dataDir);
  // The caller holds the data directory, so a socket file left here belongs to a server that died.
  rmSync(path, { force: true });
  // Imported here, where a server on PGlite serves its directory: a server on PostgreSQL never loads it.
  const { PGLiteSocketServer } = await import('@electric-sql/pglite-socket');
  const server = new PGLiteSocketServer({
    db: exclusiveSessionView(db, onNotification),
    path,
    maxConnections,
    idleTimeout: idleTimeoutMs,
  });
  await server.start();
  chmodSync(path, 0o600);
  return async () => {
    await server.stop();
    rmSync(path, { force: true });
  };
}
