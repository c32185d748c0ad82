import { adminsWithUsableToken, createServiceUser } from '../auth/service-users.js';
import { createToken } from '../auth/tokens.js';
import { openDatabase, type Database } from '../db/client.js';
import { migrate } from '../db/migrate.js';
import { preloadedPGlite } from '../db/pglite-preload.js';
import { seedOf, type Config } from '../env.js';
import type { Governor } from '../governor/governor.js';
import type { Logger } from '../logger.js';
import { DEFAULT_REQUEST_LIMITS } from '../admission/request-limits.js';
import { startScheduler, type Scheduler } from '../scheduler.js';
import { ensureCatalog } from '../seed/catalog.js';
import { DEMO_TENANT_SLUG, ensureDemo } from '../seed/demo.js';
import { seedDemoMembersAndWebhooks } from '../seed/demo-members-webhooks.js';
import { sealPlaintextSecrets } from '../webhooks/reseal.js';
import { DeliveryWorker } from '../webhooks/delivery-worker.js';
import { webhookSecretKeysOf, type WebhookSecretKeys } from '../webhooks/secret-keys.js';
import { signInSettingsOf } from '../auth/sessions.js';
import { createGateway, type Gateway } from './yoga.js';

interface App {
  db: Database;
  gateway: Gateway;
  /** Set only on the first start of a new database: the demo admin token, shown once. */
  demoToken?: string;
  /** Set on later starts with the demo tenant: how to get an admin token for it, for a person to read. */
  demoTokenAdvice?: string;
  /** Queues due runs and expires leases (unless SCHEDULER=off); stop it before closing the database. */
  scheduler?: Scheduler | undefined;
  /** Sends the webhooks (unless WEBHOOKS=off); stop it before closing the database. */
  webhooks?: DeliveryWorker | undefined;
}

/** The webhook delivery worker the configuration asks for, not yet started; its slots leased from `governor`. */
function deliveryWorkerOf(db: Database, config: Config, logger: Logger, secretKeys: WebhookSecretKeys, governor: Governor): DeliveryWorker {
  return new DeliveryWorker({
    db,
    logger,
    secretKeys,
    governor,
    allowPrivate: config.WEBHOOK_ALLOW_PRIVATE === '1',
    retrySchedule: config.WEBHOOK_RETRY_SCHEDULE,
    disableAfter: config.WEBHOOK_DISABLE_AFTER,
    pollMs: config.WEBHOOK_POLL_MS,
  });
}

/**
 * The server's bound on one statement (PostgreSQL): past it the connection is presumed dead and dropped, so
 * a database host that vanished without closing its connections cannot hold the pool. It applies to the
 * migrations at start too; a longer one is applied beforehand with `cli db migrate`, which has no bound.
 */
const SERVER_QUERY_TIMEOUT_MS = 15_000;

/**
 * PostgreSQL's own `statement_timeout` on every connection the server opens: the request time limit, so even a
 * statement whose cancellation at the deadline failed ends by itself. The CLI sets none.
 */
export const SERVER_STATEMENT_TIMEOUT_MS = DEFAULT_REQUEST_LIMITS.timeoutMs;

/** Days the printed demo token stays valid. */
const DEMO_TOKEN_DAYS = 90;

/** The name of the demo tenant's admin service user, created with the database. */
const DEMO_ADMIN_NAME = 'demo-admin';

/** The environment a CLI command needs to reach the same database as this server, as shell assignments. */
export function databaseEnvironment(config: Config): string {
  if (config.DATABASE_URL) {
    const url = new URL(config.DATABASE_URL);
    if (url.password) url.password = '<password>';
    return `DATABASE_URL='${url.toString()}' `;
  }
  return config.DATA_DIR === './.data' ? '' : `DATA_DIR='${config.DATA_DIR}' `;
}

/**
 * The demo token is printed once, when the database is created. On every later start this says how to make
 * another admin token for `demo` (the CLI works beside the running server), and whether one is still usable.
 */
export async function demoTokenAdvice(db: Database, config: Config): Promise<string | undefined> {
  const now = Date.now();
  const admins = await adminsWithUsableToken(db, DEMO_TENANT_SLUG, new Date(now));
  if (!admins) return undefined;
  const usable = admins.some((admin) => admin.usable);
  const cli = `${databaseEnvironment(config)}npm run --silent cli --`;
  const expires = new Date(now + DEMO_TOKEN_DAYS * 86_400_000).toISOString().slice(0, 10);
  const admin = admins.find((user) => user.name === DEMO_ADMIN_NAME) ?? admins[0];
  const commands = admin
    ? [`${cli} token create --tenant ${DEMO_TENANT_SLUG} --service-user ${admin.name} --expires ${expires}`]
    : [
        `${cli} service-user create --tenant ${DEMO_TENANT_SLUG} --name ${DEMO_ADMIN_NAME}-${expires} --role admin`,
        `${cli} token create --tenant ${DEMO_TENANT_SLUG} --service-user ${DEMO_ADMIN_NAME}-${expires} --expires ${expires}`,
      ];
  const lead = usable
    ? `Demo tenant "${DEMO_TENANT_SLUG}": its admin token was printed when this database was created. Lost it? Create another one (the server keeps running):`
    : `Demo tenant "${DEMO_TENANT_SLUG}" has no usable admin token (expired, revoked or deleted). Create one (the server keeps running):`;
  return `\n${lead}\n\n${commands.map((command) => `  ${command}`).join('\n')}\n\n`;
}

/**
 * Opens the database, applies pending migrations, seeds a new database (seedOf) and builds the gateway.
 * Listening is the caller's business.
 */
export async function startApp(config: Config, logger: Logger): Promise<App> {
  const db = await openDatabase({
    databaseUrl: config.DATABASE_URL,
    dataDir: config.DATA_DIR,
    poolSize: config.DATABASE_POOL_SIZE,
    exportConnections: config.EXPORTS_PER_PROCESS,
    readUrl: config.DATABASE_READ_URL,
    readMaxLagMs: config.DATABASE_READ_MAX_LAG_MS,
    preparedStatements: config.DATABASE_PREPARED_STATEMENTS === 'on',
    queryTimeoutMs: SERVER_QUERY_TIMEOUT_MS,
    statementTimeoutMs: SERVER_STATEMENT_TIMEOUT_MS,
    localSocket: 'serve',
    pgliteFiles: await preloadedPGlite(),
  });
  try {
    const applied = await migrate(db);
    if (applied.length > 0) logger.info({ migrations: applied }, 'applied migrations');
    let demoToken: string | undefined;
    let advice: string | undefined;
    if (seedOf(config) === 'demo') {
      const tenantId = await ensureDemo(db);
      if (tenantId) {
        await seedDemoMembersAndWebhooks(db, tenantId);
        const user = await createServiceUser(db, { tenantId, name: DEMO_ADMIN_NAME, role: 'admin' });
        const expiresAt = new Date(Date.now() + DEMO_TOKEN_DAYS * 86_400_000);
        demoToken = (await createToken(db, { tenantId, serviceUserId: user.id, expiresAt })).token;
        logger.info('seeded the demo tenant');
      } else {
        advice = await demoTokenAdvice(db, config);
      }
    } else if (await ensureCatalog(db)) {
      logger.info('seeded the catalog');
    }
    const secretKeys = webhookSecretKeysOf(config, db);
    await sealPlaintextSecrets(db, secretKeys, logger);
    if (db.kind === 'postgres' && !config.WEBHOOK_SECRET_KEY && secretKeys.currentKeyId) {
      logger.warn(
        { key: secretKeys.currentKeyId, data_dir: config.DATA_DIR },
        'WEBHOOK_SECRET_KEY is not set: webhook secrets are sealed with the key kept in DATA_DIR; replicas on other hosts must be given WEBHOOK_SECRET_KEY',
      );
    }
    const gateway = createGateway({ db, config, logger });
    const scheduler =
      config.SCHEDULER === 'on'
        ? startScheduler({
            db,
            logger,
            tickMs: config.SCHEDULER_TICK_MS,
            stepBudgetMs: config.SCHEDULER_STEP_BUDGET_MS,
            eventRetentionHours: config.EVENT_RETENTION_HOURS,
            sessionPolicy: signInSettingsOf(config),
            syncRetentionDays: config.SYNC_RETENTION_DAYS,
            activityRetentionDays: config.ACTIVITY_RETENTION_DAYS,
          })
        : undefined;
    const webhooks = config.WEBHOOKS === 'on' ? deliveryWorkerOf(db, config, logger, secretKeys, gateway.live.governor) : undefined;
    await webhooks?.start();
    return { db, gateway, demoToken, demoTokenAdvice: advice, scheduler, webhooks };
  } catch (error) {
    await db.close().catch(() => {});
    throw error;
  }
}
