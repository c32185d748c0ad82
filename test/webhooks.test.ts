// Webhooks, on both databases: endpoints managed by admins on REST and GraphQL (secret shown
// at creation and rotation only, 403 for other roles, 404 across tenants, every body problem listed, the SSRF
// guard), and delivery driven by real runs through the API to a loopback receiver that verifies every
// signature with the `standardwebhooks` library: order, tenant isolation, webhook_enabled, retries after the
// receiver recovers with the failed attempts logged, disabling after consecutive failures, redelivery,
// timeouts, redirects, and the guard at delivery time.
import { spawn } from 'node:child_process';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createServiceUser } from '../src/auth/service-users.js';
import { createToken } from '../src/auth/tokens.js';
import { isBlockedAddress } from '../src/domain/ssrf-guard.js';
import { sendWebhook } from '../src/webhooks/send.js';
import { deleteOldDeliveries } from '../src/db/webhooks.js';
import { DeliveryWorker, type DeliveryWorkerOptions } from '../src/webhooks/delivery-worker.js';
import { createLogger } from '../src/logger.js';
import { databaseKinds } from './fixtures/databases.js';
import { createTestGateway, gatewayOver, graphql, type TestGateway } from './fixtures/gateway.js';
import { BASE, ORIGIN } from './fixtures/rest.js';
import { OK, startReceiver, type WebhookReceiver } from './fixtures/webhook-receiver.js';
import type { Gateway } from '../src/yoga.js';

describe('the SSRF guard', () => {
  it('blocks loopback, private, link-local, metadata and mapped addresses, and lets public ones through', () => {
    for (const address of ['127.0.0.1', '10.1.2.3', '172.16.0.1', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '::1', '::', 'fd00:ec2::254', 'fe80::1', '::ffff:127.0.0.1', '::ffff:7f00:1', '64:ff9b::a9fe:a9fe', '224.0.0.1']) {
      expect(isBlockedAddress(address), address).toBe(true);
    }
    for (const address of ['93.184.216.34', '8.8.8.8', '2606:4700::1111', '::ffff:8.8.8.8']) {
      expect(isBlockedAddress(address), address).toBe(false);
    }
  });

  it('refuses at delivery an address the guard blocks, before any byte is sent', async () => {
    const message = { id: 'msg_test', secret: `whsec_${Buffer.from('k'.repeat(24)).toString('base64')}`, body: '{}' };
    const literal = await sendWebhook({ ...message, url: 'https://127.0.0.1:9/hook' }, { allowPrivate: false });
    expect(literal).toMatchObject({ ok: false, statusCode: null, error: '127.0.0.1 is an address webhooks may not reach' });
    const named = await sendWebhook({ ...message, url: 'https://localhost:9/hook' }, { allowPrivate: false });
    expect(named.ok).toBe(false);
    expect(named.error).toMatch(/localhost resolves to (127\.0\.0\.1|::1), which webhooks may not reach/);
    expect((await sendWebhook({ ...message, url: 'http://93.184.216.34/hook' }, { allowPrivate: false })).error).toBe('url must be an https URL');
  });
});

describe.each(databaseKinds)('webhooks on %s', (kind) => {
  let t: TestGateway;
  /** A gateway whose guard lets endpoints target this machine (WEBHOOK_ALLOW_PRIVATE=1), as the receivers need. */
  let open: Gateway;
  let admin: string;
  let reader: string;
  let engine: string;
  let applicationId: string;
  const receivers: WebhookReceiver[] = [];
  const workers: DeliveryWorker[] = [];

  async function send(gateway: Gateway, method: string, path: string, token: string, body?: unknown, headers: Record<string, string> = {}) {
    const response = await gateway.fetch(`${ORIGIN}${BASE}${path}`, {
      method,
      headers: { authorization: `Token ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : null };
  }

  async function receiver(): Promise<WebhookReceiver> {
    const r = await startReceiver();
    receivers.push(r);
    return r;
  }

  async function worker(options: Partial<DeliveryWorkerOptions> = {}): Promise<DeliveryWorker> {
    const w = new DeliveryWorker({
      db: t.db,
      logger: createLogger('silent'),
      allowPrivate: true,
      retrySchedule: [0.3, 0.3, 0.3],
      disableAfter: 10,
      pollMs: 100,
      ...options,
    });
    await w.start();
    workers.push(w);
    return w;
  }

  /** An endpoint for `r`, its secret given to the receiver to verify with. */
  async function endpointFor(r: WebhookReceiver, body: Record<string, unknown> = {}, token = admin): Promise<string> {
    const created = await send(open, 'POST', '/webhooks', token, { url: r.url, ...body });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    r.secret = created.body.data.secret;
    return created.body.data.id;
  }

  async function connection(settings: Record<string, unknown>, token = admin): Promise<string> {
    const created = await send(t.gateway, 'POST', '/connected', token, { application_id: applicationId, name: `Hooked ${Date.now()} ${Math.random()}`, settings });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body.data.id;
  }

  /** trigger → claim → progress → outcome, through the REST API as an admin and an engine do it. */
  async function run(connectionId: string, outcome: 'success' | 'failed' = 'success'): Promise<string> {
    const queued = await send(t.gateway, 'POST', '/syncs', admin, { connection_id: connectionId });
    expect(queued.status, JSON.stringify(queued.body)).toBe(201);
    const claimed = await send(t.gateway, 'POST', '/syncs/claim', engine, { connection_id: connectionId });
    expect(claimed.status).toBe(200);
    const id = claimed.body.data.id;
    expect((await send(t.gateway, 'PATCH', `/syncs/${id}`, engine, { summary: { processed: 5 } })).status).toBe(200);
    const report = outcome === 'success' ? { status: 'success', summary: { processed: 10, inserted: 1, updated: 9, deleted: 0 } } : { status: 'failed', error_message: 'upstream 500' };
    expect((await send(t.gateway, 'PATCH', `/syncs/${id}`, engine, report)).status).toBe(200);
    return id;
  }

  async function delivery(endpointId: string, deliveryId: string) {
    const read = await send(t.gateway, 'GET', `/webhooks/${endpointId}/deliveries/${deliveryId}`, admin);
    expect(read.status).toBe(200);
    return read.body.data;
  }

  async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 15_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await read();
      if (done(value)) return value;
      if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms: ${JSON.stringify(value)}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  beforeAll(async () => {
    t = await createTestGateway(kind);
    open = gatewayOver(t.db, { config: { WEBHOOK_ALLOW_PRIVATE: '1' } });
    admin = t.tenants.demo.adminToken;
    reader = t.tenants.demo.readerToken;
    const user = await createServiceUser(t.db, { tenantId: t.tenants.demo.id, name: 'webhooks-engine', role: 'engine' });
    engine = (await createToken(t.db, { tenantId: t.tenants.demo.id, serviceUserId: user.id, expiresAt: new Date(Date.now() + 86_400_000) })).token;
    const apps = await send(t.gateway, 'GET', '/available?slug=eq.stripe&select=id', reader);
    applicationId = apps.body.data[0].id;
  });
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop()));
    // Each case starts without endpoints: the next one's receiver must not get this one's events.
    await t.db.raw.query('DELETE FROM webhook_endpoints');
  });
  afterAll(async () => {
    await Promise.all(receivers.map((r) => r.close()));
    await open?.dispose();
    await t?.dispose();
  });

  it('an admin manages endpoints on REST: 201 with the secret once, reads without it, patch, rotate, delete', async () => {
    const r = await receiver();
    const created = await send(open, 'POST', '/webhooks', admin, { url: r.url, description: 'ops', event_types: ['sync.failed', 'sync.success'] });
    expect(created.status).toBe(201);
    const id = created.body.data.id;
    expect(id).toMatch(/^whk_[0-9a-z]+$/);
    expect(created.headers.get('location')).toBe(`${ORIGIN}${BASE}/webhooks/${id}`);
    expect(created.body).toMatchObject({ msg: 'webhook endpoint created', data: { url: r.url, description: 'ops', event_types: ['sync.failed', 'sync.success'], enabled: true, disabled_reason: null, consecutive_failures: 0 } });
    expect(created.body.data.secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);

    const read = await send(t.gateway, 'GET', `/webhooks/${id}`, admin);
    expect(read.body.data.secret).toBeNull();
    expect({ ...read.body.data, secret: created.body.data.secret }).toEqual(created.body.data);
    const listed = await send(t.gateway, 'GET', '/webhooks?select=id,url,enabled', admin);
    expect(listed.status).toBe(200);
    expect(listed.body.data).toEqual([{ id, url: r.url, enabled: true }]);
    expect(JSON.stringify((await send(t.gateway, 'GET', '/webhooks', admin)).body)).not.toContain('whsec_');

    const patched = await send(t.gateway, 'PATCH', `/webhooks/${id}`, admin, { description: null, event_types: null, enabled: false });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body.data).toMatchObject({ description: '', event_types: [], enabled: false });

    const rotated = await send(t.gateway, 'POST', `/webhooks/${id}/rotate-secret`, admin);
    expect(rotated.status, JSON.stringify(rotated.body)).toBe(200);
    expect(rotated.body.data.secret).toMatch(/^whsec_/);
    expect(rotated.body.data.secret).not.toBe(created.body.data.secret);
    // A body is refused there: it takes none.
    expect((await send(t.gateway, 'POST', `/webhooks/${id}/rotate-secret`, admin, { secret: 'mine' })).status).toBe(400);

    const deleted = await send(t.gateway, 'DELETE', `/webhooks/${id}`, admin);
    expect(deleted.body).toEqual({ msg: 'webhook endpoint deleted', data: { id } });
    expect((await send(t.gateway, 'GET', `/webhooks/${id}`, admin)).status).toBe(404);
  });

  it('GraphQL does the same with the same checks, and an Idempotency-Key replays the creation with its secret', async () => {
    const r = await receiver();
    const create = `mutation ($input: CreateWebhookEndpointInput!) { createWebhookEndpoint(input: $input) { id url eventTypes enabled secret } }`;
    const first = await graphql(open, create, { variables: { input: { url: r.url, eventTypes: ['sync.failed'] } }, token: admin, headers: { 'idempotency-key': `hook-${kind}` } });
    expect(first.body.errors).toBeUndefined();
    const endpoint = first.body.data!.createWebhookEndpoint;
    expect(endpoint).toMatchObject({ url: r.url, eventTypes: ['sync.failed'], enabled: true });
    const again = await graphql(open, create, { variables: { input: { url: r.url, eventTypes: ['sync.failed'] } }, token: admin, headers: { 'idempotency-key': `hook-${kind}` } });
    expect(again.body.data!.createWebhookEndpoint).toEqual(endpoint);
    const list = await graphql(t.gateway, '{ webhookEndpoints { totalCount nodes { id secret } } }', { variables: {}, token: admin });
    expect(list.body.data!.webhookEndpoints).toEqual({ totalCount: 1, nodes: [{ id: endpoint.id, secret: null }] });
    const bad = await graphql(t.gateway, create, { variables: { input: { url: 'ftp://x', eventTypes: ['sync.exploded'] } }, token: admin });
    expect(bad.body.errors?.[0]?.extensions?.code).toBe('INVALID_QUERY');
    expect(bad.body.errors?.[0]?.message).toMatch(/url: .*https/);
    expect(bad.body.errors?.[0]?.message).toMatch(/event_types\.0/);
    const denied = await graphql(t.gateway, '{ webhookEndpoints { totalCount } }', { variables: {}, token: reader });
    expect(denied.body.errors?.[0]?.extensions?.code).toBe('UNAUTHORIZED');
  });

  it('only admins: 403 for reader and engine on every webhook route, 404 across tenants, nothing changed', async () => {
    const r = await receiver();
    const id = await endpointFor(r);
    const routes: [string, string, unknown?][] = [
      ['GET', '/webhooks'],
      ['POST', '/webhooks', { url: 'https://example.com/x' }],
      ['GET', `/webhooks/${id}`],
      ['PATCH', `/webhooks/${id}`, { enabled: false }],
      ['DELETE', `/webhooks/${id}`],
      ['POST', `/webhooks/${id}/rotate-secret`],
      ['GET', `/webhooks/${id}/deliveries`],
      ['GET', `/webhooks/${id}/deliveries/msg_x`],
      ['POST', `/webhooks/${id}/deliveries/msg_x/redeliver`],
    ];
    for (const token of [reader, engine]) {
      for (const [method, path, body] of routes) {
        const answer = await send(t.gateway, method, path, token, body);
        expect(answer.status, `${method} ${path}`).toBe(403);
        expect(answer.body.error.code).toBe('UNAUTHORIZED');
      }
    }
    const other = t.tenants.other.adminToken;
    for (const [method, path, body] of routes.slice(2)) {
      expect((await send(t.gateway, method, path, other, body)).status, `${method} ${path}`).toBe(404);
    }
    expect((await send(t.gateway, 'GET', '/webhooks', other)).body.data).toEqual([]);
    const still = await send(t.gateway, 'GET', `/webhooks/${id}`, admin);
    expect(still.body.data).toMatchObject({ enabled: true, url: r.url });
  });

  it('a bad body is a 400 naming every problem, and the guard refuses loopback, private, metadata and plain-http targets', async () => {
    const many = await send(t.gateway, 'POST', '/webhooks', admin, { url: 'http://127.0.0.1/x', event_types: ['sync.done', 'sync.done'], enabled: 'yes', colour: 'red' });
    expect(many.status).toBe(400);
    expect(JSON.stringify(many.body)).toMatch(/url/);
    expect(JSON.stringify(many.body)).toMatch(/event_types/);
    expect(JSON.stringify(many.body)).toMatch(/enabled/);
    expect(JSON.stringify(many.body)).toMatch(/colour/);
    for (const url of [
      'https://127.0.0.1/hook',
      'https://localhost/hook',
      'https://10.0.0.8/hook',
      'https://192.168.1.20/hook',
      'https://169.254.169.254/latest/meta-data',
      'https://[::1]/hook',
      'https://[fd00:ec2::254]/hook',
      'https://[::ffff:127.0.0.1]/hook',
      'http://example.com/hook',
      'https://user:pw@example.com/hook',
      'not a url',
    ]) {
      const refused = await send(t.gateway, 'POST', '/webhooks', admin, { url });
      expect(refused.status, url).toBe(400);
      expect(refused.body.error.code).toBe('INVALID_QUERY');
      expect(refused.body.msg, url).toMatch(/url/);
    }
    // PATCH goes through the same guard.
    const r = await receiver();
    const id = await endpointFor(r);
    expect((await send(t.gateway, 'PATCH', `/webhooks/${id}`, admin, { url: 'https://10.0.0.1/x' })).status).toBe(400);
    expect((await send(t.gateway, 'GET', '/webhooks', admin)).body.data).toHaveLength(1);
  });

  it("delivers every change of a run, in order, signed, to the tenant's endpoints only, while webhook_enabled", async () => {
    const mine = await receiver();
    const theirs = await receiver();
    const endpointId = await endpointFor(mine);
    await endpointFor(theirs, {}, t.tenants.other.adminToken);
    await worker();
    const hooked = await connection({ webhook_enabled: true });
    const quiet = await connection({ webhook_enabled: false });
    await run(quiet);
    const runId = await run(hooked);
    const received = await mine.waitFor((all) => all.some((w) => w.message.type === 'connection.updated'));
    expect(received.every((w) => w.verified)).toBe(true);
    expect(received.map((w) => w.message.type)).toEqual(['connection.created', 'sync.pending', 'sync.in_progress', 'sync.progress', 'sync.success', 'connection.updated']);
    const ids = received.map((w) => w.message.event_id);
    expect([...ids].sort((a, b) => a - b)).toEqual(ids);
    expect(received.every((w) => w.message.data.id === hooked || w.message.data.connection_id === hooked)).toBe(true);
    const success = received.find((w) => w.message.type === 'sync.success')!.message;
    expect(success.data).toMatchObject({ id: runId, connection_id: hooked, status: 'success', tenant_id: t.tenants.demo.id });
    expect(JSON.parse(success.data.summary)).toEqual({ processed: 10, inserted: 1, updated: 9, deleted: 0 });
    // The same shape as the REST sync record, plus attempt.
    const rest = await send(t.gateway, 'GET', `/syncs/${runId}`, admin);
    expect({ ...success.data, attempt: undefined }).toEqual({ ...rest.body.data, attempt: undefined });
    expect(received.every((w) => /^msg_[0-9a-f]{32}$/.test(w.id))).toBe(true);
    expect(theirs.received).toEqual([]);
    // The delivery log says the same.
    const log = await until(
      () => send(t.gateway, 'GET', `/webhooks/${endpointId}/deliveries?limit=100`, admin),
      (answer) => answer.body.data.filter((d: { status: string }) => d.status === 'succeeded').length === 6,
    );
    expect(log.body.data.map((d: { event_type: string }) => d.event_type)).toEqual(['connection.updated', 'sync.success', 'sync.progress', 'sync.in_progress', 'sync.pending', 'connection.created']);
    const one = await delivery(endpointId, received[0]!.id);
    expect(one).toMatchObject({ status: 'succeeded', attempts: 1, last_status_code: 200, next_attempt_at: null });
    expect(one.attempt_log).toEqual([expect.objectContaining({ attempt: 1, status_code: 200, response_body: 'ok', error: null, next_retry_at: null })]);
    expect(one.payload).toEqual(received[0]!.message);
    // event_types narrows what is sent.
    const narrow = await receiver();
    await endpointFor(narrow, { event_types: ['sync.failed'] });
    await run(hooked, 'failed');
    await narrow.waitFor((all) => all.length === 1);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(narrow.received.map((w) => w.message.type)).toEqual(['sync.failed']);
  });

  it('a receiver down for its first attempts gets the event once it recovers, with the failed attempts in the log', async () => {
    const r = await receiver();
    let answered = 0;
    r.answer = (_request, _body, response) => {
      answered += 1;
      if (answered <= 2) response.writeHead(503, { 'content-type': 'text/plain' }).end(`down ${'x'.repeat(2000)}`);
      else OK(_request, _body, response);
    };
    const endpointId = await endpointFor(r, { event_types: ['connection.created'] });
    await worker();
    await connection({ webhook_enabled: true });
    await r.waitFor((all) => all.length === 3);
    const [first, , third] = r.received;
    expect(third!.id).toBe(first!.id);
    expect(third!.body).toBe(first!.body);
    expect(r.received.every((w) => w.verified)).toBe(true);
    const done = await until(() => delivery(endpointId, first!.id), (d) => d.status === 'succeeded');
    expect(done.attempts).toBe(3);
    expect(done.attempt_log.map((a: { status_code: number }) => a.status_code)).toEqual([503, 503, 200]);
    expect(done.attempt_log[0].response_body).toHaveLength(1024);
    expect(done.attempt_log[0].response_body.startsWith('down xxx')).toBe(true);
    expect(done.attempt_log[0].error).toBe('HTTP 503');
    expect(done.attempt_log[0].next_retry_at).not.toBeNull();
    expect(done.attempt_log[2].next_retry_at).toBeNull();
    const endpoint = await send(t.gateway, 'GET', `/webhooks/${endpointId}`, admin);
    expect(endpoint.body.data.consecutive_failures).toBe(0);
  });

  it('consecutive failed deliveries disable the endpoint and tell the tenant; redelivery is 409 until it is enabled again', async () => {
    const broken = await receiver();
    broken.answer = (_request, _body, response) => response.writeHead(500).end('boom');
    const watcher = await receiver();
    const brokenId = await endpointFor(broken, { event_types: ['connection.created'] });
    await endpointFor(watcher, { event_types: ['webhook.endpoint_disabled'] });
    await worker({ retrySchedule: [0.1], disableAfter: 2 });
    await connection({ webhook_enabled: true });
    await connection({ webhook_enabled: true });
    const [notice] = await watcher.waitFor((all) => all.length === 1);
    expect(notice!.verified).toBe(true);
    expect(notice!.message).toMatchObject({ type: 'webhook.endpoint_disabled', data: { id: brokenId, url: broken.url, reason: 'disabled after 2 consecutive failed deliveries' } });
    const endpoint = (await send(t.gateway, 'GET', `/webhooks/${brokenId}`, admin)).body.data;
    expect(endpoint).toMatchObject({ enabled: false, consecutive_failures: 2, disabled_reason: 'disabled after 2 consecutive failed deliveries' });
    expect(broken.hits).toBe(4);
    const log = (await send(t.gateway, 'GET', `/webhooks/${brokenId}/deliveries?status=eq.failed`, admin)).body;
    expect(log.meta.pagination.total ?? log.data.length).toBe(2);
    const deliveryId = log.data[0].id;
    const refused = await send(t.gateway, 'POST', `/webhooks/${brokenId}/deliveries/${deliveryId}/redeliver`, admin);
    expect(refused.status).toBe(409);
    // Fixed and enabled again: a redelivery goes out with the same webhook-id.
    broken.answer = OK;
    const enabled = await send(t.gateway, 'PATCH', `/webhooks/${brokenId}`, admin, { enabled: true });
    expect(enabled.body.data).toMatchObject({ enabled: true, consecutive_failures: 0, disabled_reason: null });
    const queued = await send(t.gateway, 'POST', `/webhooks/${brokenId}/deliveries/${deliveryId}/redeliver`, admin);
    expect(queued.status, JSON.stringify(queued.body)).toBe(200);
    expect(queued.body.data.status).toBe('pending');
    const done = await until(() => delivery(brokenId, deliveryId), (d) => d.status === 'succeeded');
    expect(done.attempts).toBe(3);
    expect(broken.received.at(-1)!.id).toBe(deliveryId);
    expect(broken.received.at(-1)!.verified).toBe(true);
  });

  it('an attempt ends after the time limit, a redirect is not followed, and the guard is applied again at delivery', async () => {
    const slow = await receiver();
    slow.answer = () => {
      // never answers
    };
    const redirecting = await receiver();
    redirecting.answer = (_request, _body, response) => response.writeHead(302, { location: 'http://169.254.169.254/' }).end();
    const slowId = await endpointFor(slow, { event_types: ['connection.created'] });
    const redirectId = await endpointFor(redirecting, { event_types: ['connection.created'] });
    // Created while private targets were allowed; this worker does not allow them (DNS may change after creation).
    const guarded = await receiver();
    guarded.answer = (_request, _body, response) => response.writeHead(500).end();
    const guardedId = await endpointFor(guarded, { event_types: ['connection.created'] });
    await worker({ timeoutMs: 300, retrySchedule: [60] });
    await connection({ webhook_enabled: true });
    const firstAttempt = async (endpointId: string) => {
      const list = await until(
        () => send(t.gateway, 'GET', `/webhooks/${endpointId}/deliveries`, admin),
        (answer) => answer.body.data[0]?.attempts >= 1,
      );
      return (await delivery(endpointId, list.body.data[0].id)).attempt_log[0];
    };
    const timedOut = await firstAttempt(slowId);
    expect(timedOut).toMatchObject({ status_code: null, error: 'no answer within 0.3 s' });
    expect(timedOut.latency_ms).toBeGreaterThanOrEqual(250);
    const redirected = await firstAttempt(redirectId);
    expect(redirected).toMatchObject({ status_code: 302, error: 'redirect to http://169.254.169.254/ not followed' });
    expect(redirecting.hits).toBe(1);
    await firstAttempt(guardedId);
    expect(guarded.hits).toBe(1);
    // Now a worker with the guard on: the same target is refused before any byte is sent.
    await Promise.all(workers.splice(0).map((w) => w.stop()));
    await t.db.raw.query(`UPDATE webhook_deliveries SET next_attempt_at = now() WHERE endpoint_id = $1`, [guardedId]);
    await worker({ allowPrivate: false, retrySchedule: [60] });
    const list = await until(
      () => send(t.gateway, 'GET', `/webhooks/${guardedId}/deliveries`, admin),
      (answer) => answer.body.data[0]?.attempts >= 2,
    );
    const refused = (await delivery(guardedId, list.body.data[0].id)).attempt_log[1];
    expect(refused).toMatchObject({ status_code: null });
    expect(refused.error).toBe('url must be an https URL');
    expect(guarded.hits).toBe(1);
  });
  it('the ten-line receiver of the docs (examples/webhook-receiver.mjs) verifies real deliveries and refuses a forged one', async () => {
    const port = await new Promise<number>((resolve) => {
      const probe = createNetServer().listen(0, '127.0.0.1', () => {
        const { port: free } = probe.address() as AddressInfo;
        probe.close(() => resolve(free));
      });
    });
    const url = `http://127.0.0.1:${port}/`;
    const created = await send(open, 'POST', '/webhooks', admin, { url, event_types: ['connection.created'] });
    const child = spawn(process.execPath, ['examples/webhook-receiver.mjs'], {
      env: { PATH: process.env.PATH ?? '', PORT: String(port), WEBHOOK_SECRET: created.body.data.secret },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    try {
      await until(() => fetch(url, { method: 'POST', body: '{}' }).then((r) => r.status, () => 0), (status) => status === 400);
      await until(async () => err, (text) => text.includes('refused:'));
      await worker();
      const connectionId = await connection({ webhook_enabled: true });
      await until(async () => out, (text) => text.includes(connectionId));
      expect(out).toContain(`connection.created ${connectionId} pending`);
    } finally {
      child.kill();
    }
  });
  it('retention deletes finished deliveries older than the window with their attempts, and keeps pending ones', async () => {
    const r = await receiver();
    const endpointId = await endpointFor(r);
    const insert = async (status: string, hoursAgo: number) => {
      const id = `msg_${Math.random().toString(16).slice(2).padEnd(32, '0')}`;
      await t.db.raw.query(
        `INSERT INTO webhook_deliveries (id, tenant_id, endpoint_id, event_id, event_type, payload, status, attempts, next_attempt_at, updated_at)
         VALUES ($1, $2, $3, $4, 'sync.failed', '{}', $5, 1, CASE WHEN $5 = 'pending' THEN now() + interval '1 day' END, now() - make_interval(hours => $6))`,
        [id, t.tenants.demo.id, endpointId, Math.floor(Math.random() * 1e9), status, hoursAgo],
      );
      await t.db.raw.query(`INSERT INTO webhook_attempts (tenant_id, delivery_id, attempt, started_at, latency_ms) VALUES ($1, $2, 1, now(), 5)`, [t.tenants.demo.id, id]);
      return id;
    };
    const oldSucceeded = await insert('succeeded', 80);
    const oldFailed = await insert('failed', 80);
    const oldPending = await insert('pending', 80);
    const recent = await insert('succeeded', 1);
    expect(await deleteOldDeliveries(t.db.raw, 72, { batch: 1 })).toBe(2);
    const left = await t.db.raw.query<{ id: string }>('SELECT id FROM webhook_deliveries WHERE endpoint_id = $1 ORDER BY id', [endpointId]);
    expect(left.map((row) => row.id).sort()).toEqual([oldPending, recent].sort());
    const attempts = await t.db.raw.query<{ id: string }>('SELECT delivery_id AS id FROM webhook_attempts WHERE delivery_id = ANY($1::text[])', [[oldSucceeded, oldFailed]]);
    expect(attempts).toEqual([]);
  });
});
