import { databaseEnvironment, startApp } from './start-app.js';
import { loadConfigOrExit } from '../env.js';
import { createHttpServer } from './http-server.js';
import { attachGraphqlWebSocket } from './graphql-ws.js';
import { createLogger } from '../logger.js';
import { DataDirectoryInUseError, recordListeningAddress } from '../db/client.js';

const config = loadConfigOrExit();
const logger = createLogger(config.LOG_LEVEL);

/** Longest wait for in-flight requests on shutdown before connections are cut. */
const DRAIN_TIMEOUT_MS = 10_000;

const app = await startApp(config, logger).catch((error: unknown) => {
  // A refusal the user can act on is said once, as text; anything else is logged with its stack as well.
  if (!(error instanceof DataDirectoryInUseError)) logger.fatal({ err: error }, 'start failed');
  process.stderr.write(`start failed: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});

const server = createHttpServer(app.gateway, { logger });
const closeWebSockets = attachGraphqlWebSocket(server, app.gateway, logger, {
  perCredential: config.WEBSOCKETS_PER_CREDENTIAL,
  perAddress: config.WEBSOCKETS_PER_ADDRESS,
});
server.listen(config.PORT, config.HOST, () => {
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.PORT;
  const base = `http://${config.HOST}:${port}`;
  logger.info({ url: base, database: app.db.kind, pid: process.pid }, 'listening');
  if (app.db.kind === 'pglite') recordListeningAddress(config.DATA_DIR, base);
  if (app.demoToken) {
    process.stderr.write(
      `\nDemo tenant "demo" is ready. Admin token (shown once, valid 90 days):\n\n  ${app.demoToken}\n\n` +
        `  curl -H "Authorization: Token ${app.demoToken}" ${base}/api/v1/integrations/connected\n` +
        `  GraphiQL: ${base}/graphql\n\n`,
    );
  }
  if (app.demoTokenAdvice) process.stderr.write(app.demoTokenAdvice);
  if (app.demoToken || app.demoTokenAdvice) process.stderr.write(engineAdvice(base));
});

/** How to start the simulated sync engine beside this server (README, "Write side"). */
function engineAdvice(base: string): string {
  const cli = `${databaseEnvironment(config)}npm run --silent cli --`;
  const expires = new Date(Date.now() + 7 * 86_400_000).toISOString().slice(0, 10);
  return (
    `Simulated sync engine, in another terminal: it claims the due runs, reports progress and finishes them\n` +
    `(the first command once; the service user stays):\n\n` +
    `  ${cli} service-user create --tenant demo --name engine --role engine\n` +
    // The token goes through the environment: on a command line npm would echo it and ps would show it.
    `  export ENGINE_TOKEN="$(${cli} token create --tenant demo --service-user engine --expires ${expires})"\n` +
    `  npm run engine -- --simulate --url ${base}\n\n`
  );
}

let stopping = false;
async function shutdown(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  logger.info({ signal, delay_ms: config.SHUTDOWN_DELAY_MS }, 'shutting down');
  // Behind a load balancer: /readyz answers 503 from now on, and requests are still served for
  // SHUTDOWN_DELAY_MS, long enough for the balancer's health check to take this process out of rotation.
  app.gateway.startDraining();
  if (config.SHUTDOWN_DELAY_MS > 0) await new Promise((resolve) => setTimeout(resolve, config.SHUTDOWN_DELAY_MS));
  // Streams never finish by themselves: end them first (their clients reconnect, to another replica behind a
  // balancer, and resume from Last-Event-ID), and close the WebSockets.
  app.gateway.live.endStreams();
  await closeWebSockets().catch((error: unknown) => logger.warn({ err: error }, 'closing websockets failed'));
  // Stop accepting, let in-flight requests finish, then close idle keep-alive sockets.
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  // close() only closes the connections idle at that moment. A keep-alive connection whose request finishes
  // during the drain would stay open until its keep-alive timeout, delaying the exit and taking new requests.
  server.closeIdleConnections();
  const sweep = setInterval(() => server.closeIdleConnections(), 50);
  const drained = await Promise.race([
    closed.then(() => true),
    new Promise<boolean>((resolve) => setTimeout(resolve, DRAIN_TIMEOUT_MS, false).unref()),
  ]);
  clearInterval(sweep);
  if (!drained) {
    logger.warn('drain timeout: closing remaining connections');
    server.closeAllConnections();
  }
  await app.scheduler?.stop();
  await app.webhooks?.stop();
  await app.gateway.dispose();
  await app.db.close().catch((error: unknown) => logger.error({ err: error }, 'closing the database failed'));
  logger.info('stopped');
  process.exit(0);
}

process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));
