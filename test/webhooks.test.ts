// Webhooks, on both databases: endpoints managed by admins on REST and GraphQL (secret shown
// at creation and rotation only, 403 for other roles, 404 across tenants, every body problem listed, the SSRF
// guard), and delivery driven by real runs through the API to a loopback receiver that verifies every
// signature with the `standardwebhooks` library: order, tenant isolation, webhook_enabled, retries after the
// receiver recovers with the failed attempts logged, disabling after consecutive failures, redelivery,
// timeouts, redirects, and the guard at delivery time.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseConfig } from '../src/env.js';
import { createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createServiceUser } from '../src/auth/service-users.js';
import { createToken } from '../src/auth/tokens.js';
import { isBlockedAddress, targetProblem, urlProblem } from '../src/domain/ssrf-guard.js';
import { sendWebhook } from '../src/webhooks/send.js';
import { createWebhookEndpoint, deleteOldDeliveries, dueEndpoints, leaseEndpoints } from '../src/db/webhooks.js';
import { withinTransaction } from '../src/db/write-transactions.js';
import { DeliveryWorker, type DeliveryWorkerOptions } from '../src/webhooks/delivery-worker.js';
import { createLogger } from '../src/logger.js';
import { databaseKinds } from './fixtures/databases.js';
import { createTenant } from './fixtures/write-side.js';
import { Governor } from '../src/governor/governor.js';
import { createTestGateway, gatewayOver, graphql, testSecretKeys, WEBHOOK_TEST_KEY, type TestGateway } from './fixtures/gateway.js';
import { runCli } from '../src/cli.js';
import { sealPlaintextSecrets } from '../src/webhooks/reseal.js';
import { webhookSecretKeysOf } from '../src/webhooks/secret-keys.js';
import { BASE, ORIGIN } from './fixtures/rest.js';
import { OK, startReceiver, type WebhookReceiver } from './fixtures/webhook-receiver.js';
import type { Gateway } from '../src/http/yoga.js';

describe('the SSRF guard', () => {
  // Address → refused? One row per range the guard knows, with a neighbour on the other side where it has one.
  const ADDRESSES: [string, boolean][] = [
    ['127.0.0.1', true],
    ['10.1.2.3', true],
    ['172.16.0.1', true],
    ['192.168.1.1', true],
    ['169.254.169.254', true],
    ['100.64.0.1', true],
    ['0.0.0.0', true],
    ['224.0.0.1', true],
    ['192.88.99.1', true],
    ['93.184.216.34', false],
    ['8.8.8.8', false],
    ['::1', true],
    ['::', true],
    ['fd00:ec2::254', true],
    ['fe80::1', true],
    // IPv4-mapped: judged by the IPv4 address it holds, in any spelling.
    ['::ffff:127.0.0.1', true],
    ['::ffff:7f00:1', true],
    ['0:0:0:0:0:ffff:a9fe:a9fe', true],
    ['::ffff:8.8.8.8', false],
    // IPv4-compatible (::/96): refused whole.
    ['::8.8.8.8', true],
    ['::7f00:1', true],
    // IPv4-translated (::ffff:0:0:0/96): refused whole.
    ['::ffff:0:808:808', true],
    ['::ffff:0:7f00:1', true],
    // NAT64 (64:ff9b::/96, 64:ff9b:1::/48): refused whole.
    ['64:ff9b::808:808', true],
    ['64:ff9b::a9fe:a9fe', true],
    ['64:ff9b:1::808:808', true],
    ['64:ff9b:1:ffff::1', true],
    // 6to4 (2002::/16) and Teredo (2001::/32).
    ['2002:7f00:1::1', true],
    ['2002:808:808::1', true],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', true],
    ['2001:1::1', false],
    // Site-local (fec0::/10), deprecated.
    ['fec0::1', true],
    ['feff::1', true],
    ['2606:4700::1111', false],
    ['2a00:1450:4001:80b::200e', false],
    ['not an address', true],
  ];
  it.each(ADDRESSES)('%s refused: %s', (address, refused) => {
    expect(isBlockedAddress(address)).toBe(refused);
  });

  // URL → its problem (without resolving it), guard on.
  const URLS: [string, string | null][] = [
    ['https://example.com/hook', null],
    ['https://example.com:443/hook', null],
    ['https://example.com:8443/hook', null],
    ['https://example.com:1024/hook', null],
    ['https://example.com:65535/hook', null],
    ['https://example.com:80/hook', null],
    ['https://example.com:22/hook', 'must use port 443, 80 or one of 1024-65535'],
    ['https://example.com:25/hook', 'must use port 443, 80 or one of 1024-65535'],
    ['https://example.com:1023/hook', 'must use port 443, 80 or one of 1024-65535'],
    ['http://example.com/hook', 'must be an https URL'],
    ['https://user:pw@example.com/hook', 'must not carry credentials (user:password@)'],
  ];
  it.each(URLS)('%s: %s', (url, problem) => {
    expect(urlProblem(url, { allowPrivate: false })).toBe(problem);
  });

  it('with WEBHOOK_ALLOW_PRIVATE=1 the port and scheme rules are lifted', () => {
    expect(urlProblem('http://127.0.0.1:22/hook', { allowPrivate: true })).toBeNull();
  });

  it('refuses at creation and at delivery without saying what a name resolves to', async () => {
    expect(await targetProblem('https://localhost/hook', { allowPrivate: false })).toBe(
      'resolves to an address webhooks may not reach (loopback, private, link-local, metadata, translated or reserved)',
    );
    expect(await targetProblem('https://[64:ff9b::a9fe:a9fe]/hook', { allowPrivate: false })).toMatch(
      /^resolves to an address webhooks may not reach/,
    );
    const message = { id: 'msg_test', secret: `whsec_${Buffer.from('k'.repeat(24)).toString('base64')}`, body: '{}' };
    const literal = await sendWebhook({ ...message, url: 'https://127.0.0.1:9999/hook' }, { allowPrivate: false });
    expect(literal).toMatchObject({ ok: false, statusCode: null, error: '127.0.0.1 is an address webhooks may not reach' });
    const named = await sendWebhook({ ...message, url: 'https://localhost:9999/hook' }, { allowPrivate: false });
    expect(named.ok).toBe(false);
    expect(named.error).toContain('localhost resolves to an address webhooks may not reach');
    expect(named.error).not.toMatch(/127\.0\.0\.1|::1/);
    expect((await sendWebhook({ ...message, url: 'http://93.184.216.34/hook' }, { allowPrivate: false })).error).toBe(
      'url must be an https URL',
    );
    expect((await sendWebhook({ ...message, url: 'https://93.184.216.34:25/hook' }, { allowPrivate: false })).error).toBe(
      'url must use port 443, 80 or one of 1024-65535',
    );
  });
});

describe('webhook secrets at rest', () => {
  const key = (byte: number) => Buffer.alloc(32, byte).toString('base64');
  const owner = { tenantId: 'ten_a', id: 'whk_a' };
  const memory = { kind: 'pglite' as const };

  it('seal and open with AES-256-GCM, bound to the endpoint; a changed byte or another endpoint does not open', () => {
    const keys = webhookSecretKeysOf({ WEBHOOK_SECRET_KEY: key(1) }, memory);
    const sealed = keys.seal('whsec_abc', owner);
    expect(sealed).toMatch(new RegExp(`^v1\\.${keys.currentKeyId}\\.`));
    expect(sealed).not.toContain('abc');
    expect(keys.seal('whsec_abc', owner)).not.toBe(sealed);
    expect(keys.open(sealed, owner)).toBe('whsec_abc');
    expect(() => keys.open(sealed, { ...owner, id: 'whk_b' })).toThrow(/does not open/);
    expect(() => keys.open(sealed, { ...owner, tenantId: 'ten_b' })).toThrow(/does not open/);
    const parts = sealed.split('.');
    parts[3] = Buffer.from(`x${Buffer.from(parts[3]!, 'base64url').toString('latin1').slice(1)}`, 'latin1').toString('base64url');
    expect(() => keys.open(parts.join('.'), owner)).toThrow(/does not open/);
    // A secret stored before sealing existed opens as it is, and asks to be sealed.
    expect(keys.open('whsec_plain', owner)).toBe('whsec_plain');
    expect(keys.needsResealing('whsec_plain')).toBe(true);
    expect(keys.needsResealing(sealed)).toBe(false);
  });

  it('rotation: a previous key opens what it sealed, only the current key seals, a missing key is named', () => {
    const old = webhookSecretKeysOf({ WEBHOOK_SECRET_KEY: key(1) }, memory);
    const sealed = old.seal('whsec_abc', owner);
    const rotated = webhookSecretKeysOf({ WEBHOOK_SECRET_KEY: key(2), WEBHOOK_SECRET_PREVIOUS_KEYS: [key(1)] }, memory);
    expect(rotated.open(sealed, owner)).toBe('whsec_abc');
    expect(rotated.needsResealing(sealed)).toBe(true);
    expect(rotated.seal('whsec_abc', owner)).toMatch(new RegExp(`^v1\\.${rotated.currentKeyId}\\.`));
    const newOnly = webhookSecretKeysOf({ WEBHOOK_SECRET_KEY: key(2) }, memory);
    expect(() => newOnly.open(sealed, owner)).toThrow(new RegExp(`key ${old.currentKeyId}, which is not configured`));
  });

  it('without a key: both databases keep one in the data directory (0600); without a directory PostgreSQL seals nothing', () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'gw-keyfile-'));
    try {
      const first = webhookSecretKeysOf({ DATA_DIR: dataDir }, memory);
      const file = join(dataDir, 'webhook-secret.key');
      expect((statSync(file).mode & 0o777).toString(8)).toBe('600');
      const again = webhookSecretKeysOf({ DATA_DIR: dataDir }, memory);
      expect(again.currentKeyId).toBe(first.currentKeyId);
      expect(again.open(first.seal('whsec_x', owner), owner)).toBe('whsec_x');
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
    const postgresDir = join(mkdtempSync(join(tmpdir(), 'gw-keyfile-')), 'data');
    try {
      const onDisk = webhookSecretKeysOf({ DATABASE_URL: 'postgres://x@localhost/db', DATA_DIR: postgresDir }, { kind: 'postgres' });
      expect((statSync(postgresDir).mode & 0o777).toString(8)).toBe('700');
      expect((statSync(join(postgresDir, 'webhook-secret.key')).mode & 0o777).toString(8)).toBe('600');
      expect(onDisk.open(onDisk.seal('whsec_x', owner), owner)).toBe('whsec_x');
    } finally {
      rmSync(join(postgresDir, '..'), { recursive: true, force: true });
    }
    const postgres = webhookSecretKeysOf({ DATABASE_URL: 'postgres://x@localhost/db' }, { kind: 'postgres' });
    expect(() => postgres.seal('whsec_x', owner)).toThrow(/set WEBHOOK_SECRET_KEY/);
    expect(postgres.open('whsec_legacy', owner)).toBe('whsec_legacy');
  });

  it('the configuration checks the keys', () => {
    expect(() => parseConfig({ WEBHOOK_SECRET_KEY: 'short' })).toThrow(/WEBHOOK_SECRET_KEY: must be 32 bytes/);
    expect(() => parseConfig({ WEBHOOK_SECRET_PREVIOUS_KEYS: `${key(1)},nope` })).toThrow(/WEBHOOK_SECRET_PREVIOUS_KEYS/);
    expect(parseConfig({ WEBHOOK_SECRET_KEY: Buffer.alloc(32, 1).toString('hex') }).WEBHOOK_SECRET_KEY).toBeDefined();
    expect(parseConfig({}).WEBHOOK_ENDPOINTS_PER_TENANT).toBe(100);
    expect(() => parseConfig({ WEBHOOK_ENDPOINTS_PER_TENANT: '1001' })).toThrow(/WEBHOOK_ENDPOINTS_PER_TENANT/);
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
      secretKeys: testSecretKeys(t.db),
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

  /** A new tenant, empty, and a token of an admin of it. */
  async function newTenant(slug: string): Promise<{ tenantId: string; adminToken: string }> {
    const tenantId = await createTenant(t.db, slug);
    const user = await createServiceUser(t.db, { tenantId, name: 'admin-bot', role: 'admin' });
    const expiresAt = new Date(Date.now() + 86_400_000);
    return { tenantId, adminToken: (await createToken(t.db, { tenantId, serviceUserId: user.id, expiresAt })).token };
  }

  async function connection(settings: Record<string, unknown>, token = admin): Promise<string> {
    const created = await send(t.gateway, 'POST', '/connected', token, {
      application_id: applicationId,
      name: `Hooked ${Date.now()} ${Math.random()}`,
      settings,
    });
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
    const report =
      outcome === 'success'
        ? { status: 'success', summary: { processed: 10, inserted: 1, updated: 9, deleted: 0 } }
        : { status: 'failed', error_message: 'upstream 500' };
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
    engine = (
      await createToken(t.db, { tenantId: t.tenants.demo.id, serviceUserId: user.id, expiresAt: new Date(Date.now() + 86_400_000) })
    ).token;
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
    const created = await send(open, 'POST', '/webhooks', admin, {
      url: r.url,
      description: 'ops',
      event_types: ['sync.failed', 'sync.success'],
    });
    expect(created.status).toBe(201);
    const id = created.body.data.id;
    expect(id).toMatch(/^whk_[0-9a-z]+$/);
    expect(created.headers.get('location')).toBe(`${ORIGIN}${BASE}/webhooks/${id}`);
    expect(created.body).toMatchObject({
      msg: 'webhook endpoint created',
      data: {
        url: r.url,
        description: 'ops',
        event_types: ['sync.failed', 'sync.success'],
        enabled: true,
        disabled_reason: null,
        consecutive_failures: 0,
      },
    });
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

  it('GraphQL does the same with the same checks, and an Idempotency-Key replays the creation without any secret', async () => {
    const r = await receiver();
    const create = `mutation ($input: CreateWebhookEndpointInput!) { createWebhookEndpoint(input: $input) { id url eventTypes enabled secret } }`;
    const first = await graphql(open, create, {
      variables: { input: { url: r.url, eventTypes: ['sync.failed'] } },
      token: admin,
      headers: { 'idempotency-key': `hook-${kind}` },
    });
    expect(first.body.errors).toBeUndefined();
    const endpoint = first.body.data!.createWebhookEndpoint;
    expect(endpoint).toMatchObject({ url: r.url, eventTypes: ['sync.failed'], enabled: true });
    expect(endpoint.secret).toMatch(/^whsec_/);
    const again = await graphql(open, create, {
      variables: { input: { url: r.url, eventTypes: ['sync.failed'] } },
      token: admin,
      headers: { 'idempotency-key': `hook-${kind}` },
    });
    // A replay never shows a secret: not the first (it was shown once), and not one a later rotation gave.
    expect(again.body.data!.createWebhookEndpoint).toEqual({ ...endpoint, secret: null });
    const rotate = `mutation ($id: ID!) { rotateWebhookSecret(id: $id) { id secret } }`;
    const rotated = await graphql(open, rotate, {
      variables: { id: endpoint.id },
      token: admin,
      headers: { 'idempotency-key': `rotate-${kind}` },
    });
    expect(rotated.body.data!.rotateWebhookSecret.secret).toMatch(/^whsec_/);
    const rotatedAgain = await graphql(open, rotate, {
      variables: { id: endpoint.id },
      token: admin,
      headers: { 'idempotency-key': `rotate-${kind}` },
    });
    expect(rotatedAgain.body.data!.rotateWebhookSecret).toEqual({ id: endpoint.id, secret: null });
    const afterRotation = await graphql(open, create, {
      variables: { input: { url: r.url, eventTypes: ['sync.failed'] } },
      token: admin,
      headers: { 'idempotency-key': `hook-${kind}` },
    });
    expect(afterRotation.body.data!.createWebhookEndpoint.secret).toBeNull();
    expect(JSON.stringify(afterRotation.body)).not.toContain(rotated.body.data!.rotateWebhookSecret.secret);
    const list = await graphql(t.gateway, '{ webhookEndpoints { totalCount nodes { id secret } } }', { variables: {}, token: admin });
    expect(list.body.data!.webhookEndpoints).toEqual({ totalCount: 1, nodes: [{ id: endpoint.id, secret: null }] });
    const bad = await graphql(t.gateway, create, { variables: { input: { url: 'ftp://x', eventTypes: ['sync.exploded'] } }, token: admin });
    expect(bad.body.errors?.[0]?.extensions?.code).toBe('INVALID_QUERY');
    expect(bad.body.errors?.[0]?.message).toMatch(/input\.url: .*https/);
    expect(bad.body.errors?.[0]?.message).toMatch(/input\.eventTypes\.0/);
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
    const many = await send(t.gateway, 'POST', '/webhooks', admin, {
      url: 'http://127.0.0.1/x',
      event_types: ['sync.done', 'sync.done'],
      enabled: 'yes',
      colour: 'red',
    });
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
    expect(received.map((w) => w.message.type)).toEqual([
      'connection.created',
      'sync.pending',
      'sync.in_progress',
      'sync.progress',
      'sync.success',
      'connection.updated',
    ]);
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
    expect(log.body.data.map((d: { event_type: string }) => d.event_type)).toEqual([
      'connection.updated',
      'sync.success',
      'sync.progress',
      'sync.in_progress',
      'sync.pending',
      'connection.created',
    ]);
    const one = await delivery(endpointId, received[0]!.id);
    expect(one).toMatchObject({ status: 'succeeded', attempts: 1, last_status_code: 200, next_attempt_at: null });
    expect(one.attempt_log).toEqual([
      expect.objectContaining({ attempt: 1, status_code: 200, response_body: 'ok', error: null, next_retry_at: null }),
    ]);
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
    const done = await until(
      () => delivery(endpointId, first!.id),
      (d) => d.status === 'succeeded',
    );
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
    expect(notice!.message).toMatchObject({
      type: 'webhook.endpoint_disabled',
      data: { id: brokenId, url: broken.url, reason: 'disabled after 2 consecutive failed deliveries' },
    });
    const endpoint = (await send(t.gateway, 'GET', `/webhooks/${brokenId}`, admin)).body.data;
    expect(endpoint).toMatchObject({
      enabled: false,
      consecutive_failures: 2,
      disabled_reason: 'disabled after 2 consecutive failed deliveries',
    });
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
    const done = await until(
      () => delivery(brokenId, deliveryId),
      (d) => d.status === 'succeeded',
    );
    expect(done.attempts).toBe(3);
    expect(broken.received.at(-1)!.id).toBe(deliveryId);
    expect(broken.received.at(-1)!.verified).toBe(true);
  });

  it("an endpoint's latest delivery shows the failed attempts being retried, which the count of failed deliveries does not", async () => {
    const broken = await receiver();
    broken.answer = (_request, _body, response) => response.writeHead(500).end('boom');
    const endpointId = await endpointFor(broken, { event_types: ['connection.created'] });
    const ENDPOINTS = '{ webhookEndpoints { nodes { id consecutiveFailures latestDelivery { id eventType status attempts } } } }';
    type Endpoints = {
      webhookEndpoints: {
        nodes: {
          id: string;
          consecutiveFailures: number;
          latestDelivery: { id: string; eventType: string; status: string; attempts: number } | null;
        }[];
      };
    };
    const read = async () => {
      const response = await graphql<Endpoints>(t.gateway, ENDPOINTS, { token: admin, expectOk: true });
      return response.body.data!.webhookEndpoints.nodes.find((node) => node.id === endpointId)!;
    };
    expect(await read()).toEqual({ id: endpointId, consecutiveFailures: 0, latestDelivery: null });

    // Two deliveries, each failed for good after its 3 attempts (one try and two retries).
    const first = await worker({ retrySchedule: [0.1, 0.1] });
    await connection({ webhook_enabled: true });
    await connection({ webhook_enabled: true });
    const failed = await until(read, (endpoint) => endpoint.consecutiveFailures === 2);
    expect(broken.hits).toBe(6);
    const log = (await send(t.gateway, 'GET', `/webhooks/${endpointId}/deliveries?order=created_at.desc`, admin)).body.data;
    expect(failed.latestDelivery).toEqual({ id: log[0].id, eventType: 'connection.created', status: 'failed', attempts: 3 });
    await first.stop();

    // A third, still retrying after 2 failed attempts: its attempts show, the count of failed deliveries stays.
    await worker({ retrySchedule: [0.1, 3600] });
    await connection({ webhook_enabled: true });
    const retrying = await until(read, (endpoint) => endpoint.latestDelivery?.attempts === 2);
    expect(retrying.latestDelivery).toMatchObject({ status: 'pending', attempts: 2 });
    expect(retrying.latestDelivery!.id).not.toBe(failed.latestDelivery!.id);
    expect(retrying.consecutiveFailures).toBe(2);
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
    // A limit long enough for the redirect's answer on a busy machine, short enough for the test.
    await worker({ timeoutMs: 2000, retrySchedule: [60] });
    await connection({ webhook_enabled: true });
    const firstAttempt = async (endpointId: string) => {
      const list = await until(
        () => send(t.gateway, 'GET', `/webhooks/${endpointId}/deliveries`, admin),
        (answer) => answer.body.data[0]?.attempts >= 1,
      );
      return (await delivery(endpointId, list.body.data[0].id)).attempt_log[0];
    };
    const timedOut = await firstAttempt(slowId);
    expect(timedOut).toMatchObject({ status_code: null, error: 'no answer within 2 s' });
    expect(timedOut.latency_ms).toBeGreaterThanOrEqual(1950);
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
      await until(
        () =>
          fetch(url, { method: 'POST', body: '{}' }).then(
            (r) => r.status,
            () => 0,
          ),
        (status) => status === 400,
      );
      await until(
        async () => err,
        (text) => text.includes('refused:'),
      );
      await worker();
      const connectionId = await connection({ webhook_enabled: true });
      await until(
        async () => out,
        (text) => text.includes(connectionId),
      );
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
      await t.db.raw.query(
        `INSERT INTO webhook_attempts (tenant_id, delivery_id, attempt, started_at, latency_ms) VALUES ($1, $2, 1, now(), 5)`,
        [t.tenants.demo.id, id],
      );
      return id;
    };
    const oldSucceeded = await insert('succeeded', 80);
    const oldFailed = await insert('failed', 80);
    const oldPending = await insert('pending', 80);
    const recent = await insert('succeeded', 1);
    expect(await deleteOldDeliveries(t.db.raw, 72, { batch: 1 })).toBe(2);
    const left = await t.db.raw.query<{ id: string }>('SELECT id FROM webhook_deliveries WHERE endpoint_id = $1 ORDER BY id', [endpointId]);
    expect(left.map((row) => row.id).sort()).toEqual([oldPending, recent].sort());
    const attempts = await t.db.raw.query<{ id: string }>(
      'SELECT delivery_id AS id FROM webhook_attempts WHERE delivery_id = ANY($1::text[])',
      [[oldSucceeded, oldFailed]],
    );
    expect(attempts).toEqual([]);
  });
  it('secrets are sealed at rest; an Idempotency-Key replay on REST keeps and answers no secret', async () => {
    const r = await receiver();
    const key = `rest-hook-${kind}-${Date.now()}`;
    const first = await send(
      open,
      'POST',
      '/webhooks',
      admin,
      { url: r.url, event_types: ['connection.created'] },
      { 'idempotency-key': key },
    );
    expect(first.status).toBe(201);
    const secret: string = first.body.data.secret;
    expect(secret).toMatch(/^whsec_/);
    const [row] = await t.db.raw.query<{ secret: string }>('SELECT secret FROM webhook_endpoints WHERE id = $1', [first.body.data.id]);
    expect(row!.secret).toMatch(/^v1\.[0-9a-f]{8}\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    expect(row!.secret).not.toContain(secret.slice(6));
    const stored = await t.db.raw.query<{ body: string }>('SELECT response_body::text AS body FROM idempotency_keys WHERE key = $1', [key]);
    expect(stored[0]!.body).not.toContain('whsec_');
    const replay = await send(
      open,
      'POST',
      '/webhooks',
      admin,
      { url: r.url, event_types: ['connection.created'] },
      { 'idempotency-key': key },
    );
    expect([replay.status, replay.headers.get('idempotent-replayed')]).toEqual([201, 'true']);
    expect(replay.body).toEqual({ ...first.body, data: { ...first.body.data, secret: null } });

    const rotateKey = `rest-rotate-${kind}-${Date.now()}`;
    const rotated = await send(t.gateway, 'POST', `/webhooks/${first.body.data.id}/rotate-secret`, admin, undefined, {
      'idempotency-key': rotateKey,
    });
    expect(rotated.body.data.secret).toMatch(/^whsec_/);
    const rotatedReplay = await send(t.gateway, 'POST', `/webhooks/${first.body.data.id}/rotate-secret`, admin, undefined, {
      'idempotency-key': rotateKey,
    });
    expect(rotatedReplay.body.data.secret).toBeNull();
    expect(
      JSON.stringify(
        (await send(open, 'POST', '/webhooks', admin, { url: r.url, event_types: ['connection.created'] }, { 'idempotency-key': key }))
          .body,
      ),
    ).not.toContain('whsec_');
    // Deliveries are signed with the secret in force (the rotated one): the receiver verifies with it.
    r.secret = rotated.body.data.secret;
    await worker();
    await connection({ webhook_enabled: true });
    const [delivered] = await r.waitFor((all) => all.length === 1);
    expect(delivered!.verified).toBe(true);
  });

  it('a secret stored in plaintext (before sealing) is sealed at start and still signs; a key rotation re-seals every secret', async () => {
    const r = await receiver();
    const legacy = `whsec_${Buffer.alloc(24, 3).toString('base64')}`;
    await t.db.raw.query(
      `INSERT INTO webhook_endpoints (id, tenant_id, url, secret, event_types) VALUES ('whk_legacy', $1, $2, $3, '{connection.created}')`,
      [t.tenants.demo.id, r.url, legacy],
    );
    r.secret = legacy;
    const oldKeys = testSecretKeys(t.db);
    const logged: unknown[][] = [];
    const log = {
      info: (fields: unknown, message?: string) => void logged.push(['info', fields, message]),
      warn: (fields: unknown, message?: string) => void logged.push(['warn', fields, message]),
    };
    await sealPlaintextSecrets(t.db, oldKeys, log);
    // The start log says what was done, in words an operator reads at once.
    expect(logged).toEqual([['info', { secrets: 1, key: oldKeys.currentKeyId }, 'sealed the webhook secrets that were stored unsealed']]);
    const sealedRow = async () =>
      (await t.db.raw.query<{ secret: string }>(`SELECT secret FROM webhook_endpoints WHERE id = 'whk_legacy'`))[0]!.secret;
    expect(await sealedRow()).toMatch(new RegExp(`^v1\\.${oldKeys.currentKeyId}\\.`));

    // Rotation: a new current key, the old one kept for opening; `cli webhooks reseal`; then the old key goes.
    const newKey = Buffer.alloc(32, 9).toString('base64');
    let output = '';
    const io = (env: Record<string, string>) => ({
      env,
      stdout: () => {},
      stderr: (text: string) => {
        output += text;
      },
      openDatabase: async () => ({ ...t.db, close: async () => {} }),
    });
    expect(
      await runCli(
        ['webhooks', 'reseal'],
        io({ SEED: 'none', WEBHOOK_SECRET_KEY: newKey, WEBHOOK_SECRET_PREVIOUS_KEYS: WEBHOOK_TEST_KEY }),
      ),
    ).toBe(0);
    const newKeys = webhookSecretKeysOf({ WEBHOOK_SECRET_KEY: newKey }, t.db);
    expect(output).toContain(`with key ${newKeys.currentKeyId}`);
    expect(await sealedRow()).toMatch(new RegExp(`^v1\\.${newKeys.currentKeyId}\\.`));
    // A worker still on the old key alone cannot open it: the delivery is held, no attempt spent, the endpoint backed off.
    const stale = await worker({ secretKeys: oldKeys });
    await connection({ webhook_enabled: true });
    const held = await until(
      async () =>
        (
          await t.db.raw.query<{ backoff: boolean; attempts: number }>(
            `SELECT w.backoff_until > now() AS backoff, (SELECT coalesce(sum(attempts), 0)::int FROM webhook_deliveries WHERE endpoint_id = w.id) AS attempts
         FROM webhook_endpoints w WHERE id = 'whk_legacy'`,
          )
        )[0]!,
      (row) => row.backoff === true,
    );
    expect(held.attempts).toBe(0);
    await stale.stop();
    await t.db.raw.query(`UPDATE webhook_endpoints SET backoff_until = NULL WHERE id = 'whk_legacy'`);
    // Without the old key, nothing is left that needs it: the new key alone opens every secret and signs.
    await worker({ secretKeys: newKeys });
    const [delivered] = await r.waitFor((all) => all.length === 1);
    expect(delivered!.verified).toBe(true);
    // A key that opens nothing: the CLI names the endpoints it could not open, and fails.
    output = '';
    expect(await runCli(['webhooks', 'reseal'], io({ SEED: 'none', WEBHOOK_SECRET_KEY: WEBHOOK_TEST_KEY }))).toBe(1);
    expect(output).toContain('whk_legacy');
  });

  it("WEBHOOK_ENDPOINTS_PER_TENANT caps a tenant's endpoints: 409 past it, the other tenant unaffected", async () => {
    const capped = gatewayOver(t.db, { config: { WEBHOOK_ALLOW_PRIVATE: '1', WEBHOOK_ENDPOINTS_PER_TENANT: 2 } });
    try {
      const r = await receiver();
      for (let i = 0; i < 2; i++) expect((await send(capped, 'POST', '/webhooks', admin, { url: `${r.url}${i}` })).status).toBe(201);
      const refused = await send(capped, 'POST', '/webhooks', admin, { url: `${r.url}x` });
      expect(refused.status).toBe(409);
      expect(refused.body.error.code).toBe('CONFLICT');
      expect(refused.body.msg).toMatch(/WEBHOOK_ENDPOINTS_PER_TENANT is 2/);
      const viaGraphql = await graphql(
        capped,
        `mutation ($input: CreateWebhookEndpointInput!) { createWebhookEndpoint(input: $input) { id } }`,
        { variables: { input: { url: `${r.url}y` } }, token: admin },
      );
      expect(viaGraphql.body.errors?.[0]?.extensions?.code).toBe('CONFLICT');
      expect((await send(capped, 'POST', '/webhooks', t.tenants.other.adminToken, { url: `${r.url}z` })).status).toBe(201);
      expect((await send(capped, 'GET', '/webhooks', admin)).body.data).toHaveLength(2);
    } finally {
      await capped.dispose();
    }
  });

  it.runIf(kind === 'postgres')(
    'PostgreSQL without WEBHOOK_SECRET_KEY stores no secret: creating an endpoint is 503 and says what to set',
    async () => {
      const keyless = gatewayOver(t.db, { config: { WEBHOOK_ALLOW_PRIVATE: '1', WEBHOOK_SECRET_KEY: undefined } });
      try {
        const refused = await send(keyless, 'POST', '/webhooks', admin, { url: 'https://example.com/hook' });
        expect(refused.status).toBe(503);
        expect(refused.body.msg).toMatch(/WEBHOOK_SECRET_KEY/);
        expect((await send(keyless, 'GET', '/webhooks', admin)).body.data).toEqual([]);
      } finally {
        await keyless.dispose();
      }
    },
  );

  it('due endpoints are offered in turns by tenant, the tenants holding fewer slots first; of two workers one leases an endpoint', async () => {
    const r = await receiver();
    const demo = t.tenants.demo.id;
    const other = t.tenants.other.id;
    for (let i = 0; i < 5; i++) await endpointFor(r, { event_types: ['connection.created'] });
    const served = await endpointFor(r, { event_types: ['connection.created'] }, t.tenants.other.adminToken);
    // The other tenant's endpoint has been served before (its lease ended a minute ago); none of the demo tenant's has.
    await t.db.raw.query(`UPDATE webhook_endpoints SET lease_until = now() - interval '1 minute' WHERE id = $1`, [served]);
    await connection({ webhook_enabled: true });
    await connection({ webhook_enabled: true }, t.tenants.other.adminToken);
    const tenantsOf = async (limit: number, skip: string[] = [], held = new Map<string, number>()) =>
      (await dueEndpoints(t.db.raw, limit, skip, held)).map((endpoint) => endpoint.tenantId);
    expect(await tenantsOf(2)).toEqual([demo, other]);
    expect(await tenantsOf(10)).toEqual([demo, other, demo, demo, demo, demo]);
    expect(await tenantsOf(2, [], new Map([[demo, 2]]))).toEqual([other, demo]);
    expect(await tenantsOf(10, [demo])).toEqual([other]);

    const ids = (await dueEndpoints(t.db.raw, 10, [], new Map())).map((endpoint) => endpoint.id);
    const [first, second] = await Promise.all([leaseEndpoints(t.db.raw, 'worker_a', ids), leaseEndpoints(t.db.raw, 'worker_b', ids)]);
    expect([...first!, ...second!].map((endpoint) => endpoint.id).sort()).toEqual([...ids].sort());
    expect(await leaseEndpoints(t.db.raw, 'worker_c', ids)).toEqual([]);
    expect(await dueEndpoints(t.db.raw, 10, [], new Map())).toEqual([]);
  });

  // The most slots the hostile tenants hold together as they come one after another: the first, alone, its share
  // of 4; the second 2, its share with room kept for one more tenant; a third 2 more, filling the process until a
  // tenant below its share (the fourth, fifth, and the healthy one) takes a slot from the tenant furthest above.
  describe.each([
    { hostileTenants: 2, mostSlots: 6 },
    { hostileTenants: 5, mostSlots: 8 },
  ])('$hostileTenants hostile tenants', ({ hostileTenants, mostSlots }) => {
    it("with 100 endpoints each that accept and never answer, a third tenant's delivery arrives in under 3 s", async () => {
      // One listener for every hostile endpoint: it accepts, reads the request line (which names the tenant) and
      // never answers. Each open socket is an attempt under way, so a slot held.
      const hanging = new Map<string, Set<Socket>>();
      let mostHanging = 0;
      let mostOfOneTenant = 0;
      const tarpit = createNetServer((socket) => {
        socket.once('data', (chunk: Buffer) => {
          const tenant = /^POST \/hook\/(\d+)\//.exec(chunk.toString('latin1'))?.[1] ?? 'unknown';
          const sockets = hanging.get(tenant) ?? new Set<Socket>();
          hanging.set(tenant, sockets.add(socket));
          mostOfOneTenant = Math.max(mostOfOneTenant, sockets.size);
          mostHanging = Math.max(
            mostHanging,
            [...hanging.values()].reduce((sum, sockets) => sum + sockets.size, 0),
          );
          socket.once('close', () => sockets.delete(socket));
        });
      });
      await new Promise<void>((resolve) => tarpit.listen(0, '127.0.0.1', resolve));
      const tarpitUrl = `http://127.0.0.1:${(tarpit.address() as AddressInfo).port}/hook`;
      const governor = new Governor();
      try {
        // The third tenant's endpoint was served before the hostile tenants came: its lease has an end time, where
        // theirs have none (an order that once put it behind every never-served endpoint).
        const healthy = await receiver();
        await endpointFor(healthy, { event_types: ['connection.created'] }, t.tenants.other.adminToken);
        // The production attempt time limit (10 s), so no hanging attempt ends during the test, and poll interval.
        await worker({ governor, retrySchedule: [60], pollMs: 1000 });
        await connection({ webhook_enabled: true }, t.tenants.other.adminToken);
        await healthy.waitFor((all) => all.length === 1);

        // The hostile endpoints are made through the data layer: the API's way to them is tested above.
        const settings = { secretKeys: testSecretKeys(t.db), endpointsPerTenant: 100 };
        const admins: string[] = [];
        for (let i = 0; i < hostileTenants; i++) {
          const { tenantId, adminToken } = await newTenant(`hostile-${hostileTenants}-${i}`);
          await t.db.raw.transaction(async (tx) => {
            for (let n = 0; n < 100; n++) {
              const url = `${tarpitUrl}/${i}/${n}`;
              await createWebhookEndpoint(withinTransaction(tx), tenantId, { url, eventTypes: ['connection.created'] }, settings);
            }
          });
          admins.push(adminToken);
        }
        // The hostile tenants' events come one after another: each event is due at its tenant's 100 endpoints.
        for (const token of admins) await connection({ webhook_enabled: true }, token);
        await until(
          async () => admins.map((_, i) => hanging.get(String(i))?.size ?? 0),
          (slots) => slots.every((n) => n > 0),
        );

        const started = performance.now();
        await connection({ webhook_enabled: true }, t.tenants.other.adminToken);
        const [, delivered] = await healthy.waitFor((all) => all.length === 2, 15_000);
        const elapsed = Math.round(performance.now() - started);
        const hostileSlots = admins.map((_, i) => hanging.get(String(i))?.size ?? 0);
        const { ended } = governor.stats('webhook-delivery');
        console.info(
          `${kind}: beside ${hostileTenants} hostile tenants (100 hanging endpoints each, holding ${hostileSlots.join('+')} slots), ` +
            `the third tenant's delivery arrived ${elapsed} ms after its event; slots taken for fairness: ${ended['taken-for-fairness']}`,
        );
        expect(delivered!.verified).toBe(true);
        expect(elapsed).toBeLessThan(3000);
        // Every attempt under way held a slot of the governor: no tenant more than its share alone (half), all
        // together no more than the shares allow.
        expect(mostOfOneTenant).toBeLessThanOrEqual(4);
        expect(mostHanging).toBeLessThanOrEqual(mostSlots);
        // An attempt cut to give its slot away is not an attempt of the endpoint: nothing recorded for it.
        const cut = await t.db.raw.query(`SELECT 1 FROM webhook_attempts WHERE error = 'cancelled'`);
        expect(cut).toEqual([]);
      } finally {
        for (const sockets of hanging.values()) for (const socket of sockets) socket.destroy();
        tarpit.close();
        await Promise.all(workers.splice(0).map((w) => w.stop()));
        // Every slot's lease ended with its slot.
        expect(governor.stats('webhook-delivery').held).toBe(0);
        governor.close();
      }
    });
  });

  it('an endpoint that times out is backed off on its own, its deliveries kept pending; an answer ends the back-off', async () => {
    const slow = await receiver();
    let hang = true;
    slow.answer = (request, body, response) => {
      if (!hang) OK(request, body, response);
    };
    const slowId = await endpointFor(slow, { event_types: ['connection.created'] });
    const governor = new Governor();
    await worker({ governor, timeoutMs: 500, retrySchedule: [0.1, 0.1, 0.1, 0.1] });
    await connection({ webhook_enabled: true });
    await connection({ webhook_enabled: true });
    const state = async () =>
      (
        await t.db.raw.query<{ timeouts: number; backoff: boolean; pending: number }>(
          `SELECT consecutive_timeouts AS timeouts, backoff_until > now() AS backoff,
                (SELECT count(*)::int FROM webhook_deliveries d WHERE d.endpoint_id = w.id AND d.status = 'pending') AS pending
         FROM webhook_endpoints w WHERE id = $1`,
          [slowId],
        )
      )[0]!;
    const backedOff = await until(state, (s) => s.timeouts >= 1 && s.backoff);
    // Its slot's lease ended as stalled, and no other slot is held.
    expect(
      await until(
        async () => governor.stats('webhook-delivery'),
        (stats) => stats.ended.stalled === 1,
      ),
    ).toMatchObject({ held: 0 });
    // One attempt, then the back-off: the second delivery is not tried meanwhile (both still pending).
    expect(backedOff.pending).toBe(2);
    const hits = slow.hits;
    expect(hits).toBeLessThanOrEqual(1);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(slow.hits).toBe(hits);
    expect((await state()).pending).toBe(2);
    // It answers again: the next attempt after the back-off delivers both, and the back-off ends.
    hang = false;
    await t.db.raw.query('UPDATE webhook_endpoints SET backoff_until = now() WHERE id = $1', [slowId]);
    await slow.waitFor((all) => all.filter((w) => w.verified).length >= 2);
    expect(await until(state, (s) => s.pending === 0)).toMatchObject({ timeouts: 0, backoff: null });
  });

  it('an idle worker polls less and less often; a new event and a redelivery still wake it at once', async () => {
    // Nothing pending in this database (the last test of the file): what earlier tests left waiting is settled.
    await t.db.raw.query('UPDATE webhook_endpoints SET enabled = false');
    await t.db.raw.query(`UPDATE webhook_deliveries SET status = 'failed', next_attempt_at = NULL WHERE status = 'pending'`);
    const r = await receiver();
    const endpointId = await endpointFor(r, { event_types: ['connection.created'] });
    const passes: number[] = [];
    const stop = t.db.onQuery((event) => {
      if (event.query.includes('row_number() OVER (PARTITION BY "e"."tenant_id"')) passes.push(performance.now());
    });
    const idle = () => new Promise((resolve) => setTimeout(resolve, 1500));
    try {
      await worker({ pollMs: 50 });
      await idle();
      // Every 50 ms would be some 30 passes; the interval doubling from 50 ms, about 6. The next is a second away.
      expect(passes.length).toBeGreaterThanOrEqual(2);
      expect(passes.length).toBeLessThanOrEqual(10);
      const created = performance.now();
      await connection({ webhook_enabled: true });
      const [first] = await r.waitFor((all) => all.length === 1);
      expect(performance.now() - created).toBeLessThan(1000);
      await idle();
      const redelivered = performance.now();
      const queued = await send(t.gateway, 'POST', `/webhooks/${endpointId}/deliveries/${first!.id}/redeliver`, admin);
      expect(queued.status).toBe(200);
      await r.waitFor((all) => all.length === 2);
      expect(performance.now() - redelivered).toBeLessThan(1000);
    } finally {
      stop();
    }
  });
});
