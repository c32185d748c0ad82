// Webhooks across real server processes (`node dist/server.js`, what `npm start` runs) on one PostgreSQL
// database:
// - two servers, each running its delivery worker: every message is attempted exactly once, in event order;
// - the server restarts between attempts: the delivery queued before the restart is still made after it.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from './fixtures/databases.js';
import { WEBHOOK_TEST_KEY, type TestTenants } from './fixtures/gateway.js';
import { ROOT, startServer, type RunningServer } from './fixtures/server-process.js';
import { OK, startReceiver, type WebhookReceiver } from './fixtures/webhook-receiver.js';

const BASE = '/api/v1/integrations';
/** pino's level number of a warning. */
const WARN = 40;

describe.skipIf(!process.env.TEST_DATABASE_URL)('webhooks across server processes on one PostgreSQL database', () => {
  let db: TestDatabase;
  let tenants: TestTenants;
  let receiver: WebhookReceiver;
  const servers: RunningServer[] = [];
  // Both servers seal and open the secrets with the same key, as every replica of a deployment must.
  const env = () => ({
    DATABASE_URL: db.url!,
    SEED: 'none',
    SCHEDULER: 'off',
    WEBHOOK_ALLOW_PRIVATE: '1',
    WEBHOOK_POLL_MS: '100',
    RATE_LIMIT_PER_MINUTE: '0',
    WEBHOOK_SECRET_KEY: WEBHOOK_TEST_KEY,
  });

  async function api(server: RunningServer, method: string, path: string, body?: unknown) {
    const response = await fetch(`${server.url}${BASE}${path}`, {
      method,
      headers: { authorization: `Token ${tenants.demo.adminToken}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : null };
  }

  async function start(): Promise<RunningServer> {
    const server = await startServer(env());
    servers.push(server);
    return server;
  }

  async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 30_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await read();
      if (done(value)) return value;
      if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms: ${JSON.stringify(value).slice(0, 2000)}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  beforeAll(async () => {
    const seeded = inject('seededDatabases').postgres!;
    tenants = seeded.tenants;
    db = await createTestDatabase('postgres', { template: seeded.template });
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await Promise.all(servers.map((server) => server.kill()));
    await receiver?.close();
    await db?.dispose();
  });

  it('two servers send each message exactly once, in event order', async () => {
    const [a, b] = await Promise.all([start(), start()]);
    const created = await api(a, 'POST', '/webhooks', { url: receiver.url, event_types: ['connection.created', 'connection.updated'] });
    expect(created.status).toBe(201);
    receiver.secret = created.body.data.secret;
    const apps = await api(a, 'GET', '/available?slug=eq.stripe&select=id');
    const applicationId = apps.body.data[0].id;
    // Writes through both servers, interleaved; both workers are awake (their NOTIFY) and compete for the endpoint.
    const ids: string[] = [];
    for (let i = 0; i < 15; i++) {
      const server = i % 2 === 0 ? a : b;
      const connection = await api(server, 'POST', '/connected', {
        application_id: applicationId,
        name: `Twice ${i}`,
        settings: { webhook_enabled: true },
      });
      expect(connection.status).toBe(201);
      ids.push(connection.body.data.id);
      expect(
        (await api(i % 2 === 0 ? b : a, 'PATCH', `/connected/${connection.body.data.id}`, { description: `changed ${i}` })).status,
      ).toBe(200);
    }
    await receiver.waitFor((all) => all.length >= 30, 30_000);
    // Let a duplicate, if there were one, arrive.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(receiver.received).toHaveLength(30);
    expect(new Set(receiver.received.map((w) => w.id)).size).toBe(30);
    expect(receiver.received.every((w) => w.verified)).toBe(true);
    const eventIds = receiver.received.map((w) => w.message.event_id);
    expect(eventIds).toEqual([...eventIds].sort((x, y) => x - y));
    const attempts = await db.raw.query<{ n: string }>('SELECT count(*)::text AS n FROM webhook_attempts');
    expect(Number(attempts[0]!.n)).toBe(30);
    expect((await api(a, 'DELETE', `/webhooks/${created.body.data.id}`)).status).toBe(200);
    await Promise.all([a.kill(), b.kill()]);
    servers.length = 0;
  });

  it('a delivery whose first attempt failed is made after the server restarts', async () => {
    receiver.received.length = 0;
    receiver.hits = 0;
    receiver.answer = (_request, _body, response) => response.writeHead(503).end('not yet');
    const server = await startServer({ ...env(), WEBHOOK_RETRY_SCHEDULE: '3' });
    servers.push(server);
    const endpoint = await api(server, 'POST', '/webhooks', { url: receiver.url, event_types: ['connection.created'] });
    receiver.secret = endpoint.body.data.secret;
    const endpointId = endpoint.body.data.id;
    const apps = await api(server, 'GET', '/available?slug=eq.stripe&select=id');
    const connection = await api(server, 'POST', '/connected', {
      application_id: apps.body.data[0].id,
      name: 'Restarted',
      settings: { webhook_enabled: true },
    });
    expect(connection.status).toBe(201);
    await receiver.waitFor((all) => all.length === 1);
    // Down: SIGTERM, as an orchestrator stops it, right after the failed attempt, before its retry is due.
    process.kill(server.nodePid, 'SIGTERM');
    await server.exited;
    servers.length = 0;
    receiver.answer = OK;
    const restarted = await start();
    await receiver.waitFor((all) => all.length === 2, 30_000);
    const [first, second] = receiver.received;
    expect(second!.id).toBe(first!.id);
    expect(second!.verified).toBe(true);
    const log = await until(
      () => api(restarted, 'GET', `/webhooks/${endpointId}/deliveries/${first!.id}`),
      (answer) => answer.body.data?.status === 'succeeded',
    );
    expect(log.body.data.attempt_log.map((a: { status_code: number }) => a.status_code)).toEqual([503, 200]);
  });

  it('without WEBHOOK_SECRET_KEY, warns at start in the words docs/how-to/run-on-postgresql.md quotes', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'gw-no-webhook-key-'));
    try {
      const { WEBHOOK_SECRET_KEY: _key, ...withoutKey } = env();
      const server = await startServer({ ...withoutKey, DATA_DIR: dataDir });
      servers.push(server);
      const howTo = readFileSync(join(ROOT, 'docs', 'how-to', 'run-on-postgresql.md'), 'utf8');
      const quoted = /\(`(WEBHOOK_SECRET_KEY[^`…]*)…`\)/.exec(howTo)?.[1];
      expect(quoted, 'the how-to quotes the start warning').toBeDefined();
      const warnings = server.logs.filter((line) => line.level === WARN).map((line) => line.msg ?? '');
      expect(warnings).toContainEqual(expect.stringMatching(new RegExp(`^${quoted}`)));
      // Every setting a start warning names, the how-to explains.
      for (const setting of new Set(warnings.join(' ').match(/\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b/g))) expect(howTo).toContain(setting);
      // Only this one: the server the restart test left running is killed with the others after all.
      await server.kill();
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
