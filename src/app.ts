import { createServiceUser } from './auth/service-users.js';
import { createToken } from './auth/tokens.js';
import { openDatabase, type Database } from './db/client.js';
import { migrate } from './db/migrate.js';
import type { Config } from './env.js';
import type { Logger } from './logger.js';
import { DEFAULT_REQUEST_LIMITS } from './plugins/use-limits.js';
import { startScheduler, type Scheduler } from './scheduler.js';
import { ensureDemo } from './seed/demo.js';
import { createGateway, type Gateway } from './yoga.js';

export interface App {
  db: Database;
  gateway: Gateway;
  /** Set only on the first start of a new database: the demo admin token, shown once. */
  demoToken?: string;
  /** Queues due runs and expires leases (unless SCHEDULER=off); stop it before closing the database. */
  scheduler?: Scheduler | undefined;
}

/**
 * The server's bound on one statement (PostgreSQL): past it the connection is presumed dead and dropped, so
 * a database host that vanished without closing its connections cannot hold the pool. It applies to the
 * migrations at start too; a longer one is applied beforehand with `cli db migrate`, which has no bound.
 */
export const SERVER_QUERY_TIMEOUT_MS = 15_000;

/**
 * PostgreSQL's own `statement_timeout` on every connection the server opens: the request time limit, so even a
 * statement whose cancellation at the deadline failed ends by itself. The CLI sets none.
 */
export const SERVER_STATEMENT_TIMEOUT_MS = DEFAULT_REQUEST_LIMITS.timeoutMs;

/** Days the printed demo token stays valid. */
export const DEMO_TOKEN_DAYS = 90;

/**
 * Opens the database, applies pending migrations, seeds a new database with the demo tenant (unless
 * SEED=none) and builds the gateway. Listening is the caller's business.
 */
export async function startApp(config: Config, logger: Logger): Promise<App> {
  const db = await openDatabase({
    databaseUrl: config.DATABASE_URL,
    dataDir: config.DATA_DIR,
    queryTimeoutMs: SERVER_QUERY_TIMEOUT_MS,
    statementTimeoutMs: SERVER_STATEMENT_TIMEOUT_MS,
  });
  try {
    const applied = await migrate(db);
    if (applied.length > 0) logger.info({ migrations: applied }, 'applied migrations');
    let demoToken: string | undefined;
    if (config.SEED === 'demo') {
      const tenantId = await ensureDemo(db);
      if (tenantId) {
        const user = await createServiceUser(db, { tenantId, name: 'demo-admin', role: 'admin' });
        const expiresAt = new Date(Date.now() + DEMO_TOKEN_DAYS * 86_400_000);
        demoToken = (await createToken(db, { tenantId, serviceUserId: user.id, expiresAt })).token;
        logger.info('seeded the demo tenant');
      }
    }
    const gateway = createGateway({ db, config, logger });
    const scheduler = config.SCHEDULER === 'on' ? startScheduler({ db, logger, tickMs: config.SCHEDULER_TICK_MS }) : undefined;
    return { db, gateway, demoToken, scheduler };
  } catch (error) {
    await db.close().catch(() => {});
    throw error;
  }
}
