// The published contract as an outside tool checks it: Prism (@stoplight/prism-cli), which this project did not
// write, as a validating proxy in front of a real gateway. Every operation is called through it, on its happy path
// and on documented errors, and Prism's verdict on each answer (its `sl-violations` header) must name nothing
// about the response. The request side is checked both ways: each documented constraint, broken by one value,
// is flagged by Prism as off the document, and refused by the server with the documented error.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installOwnDependencies } from '../scripts/own-dependencies.js';
import { createServiceUser } from '../src/auth/service-users.js';
import { createToken } from '../src/auth/tokens.js';
import { createLogger } from '../src/logger.js';
import { DeliveryWorker } from '../src/webhooks/delivery-worker.js';
import { createTestGateway, listenOnLoopback, testSecretKeys, type TestGateway } from './fixtures/gateway.js';
import { BASE, ORIGIN } from './fixtures/rest.js';
import { ROOT } from './fixtures/server-process.js';
import { startReceiver, type WebhookReceiver } from './fixtures/webhook-receiver.js';
import { storedApproval } from './fixtures/oauth-approval.js';
import { TestIdentityProvider } from './fixtures/oidc-provider.js';

interface Violation {
  location: string[];
  severity: string;
  code: string | number;
  message: string;
}

interface Call {
  method?: string;
  token?: string | null;
  body?: unknown;
  contentType?: string;
  headers?: Record<string, string>;
}

interface Answer {
  status: number;
  body: any;
  headers: Headers;
  requestViolations: Violation[];
  responseViolations: Violation[];
}

/** Prism's dependency set, apart from the project's (see test/prism/package.json). */
const PRISM_DIR = join(ROOT, 'test', 'prism');

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

describe('Prism as a validating proxy over every operation', () => {
  let t: TestGateway;
  const servers: Server[] = [];
  let prism: ChildProcess;
  let prismOutput = '';
  let proxy: string;
  let dir: string;
  let receiver: WebhookReceiver;
  let worker: DeliveryWorker;
  let idp: TestIdentityProvider;
  let engineToken: string;
  let engineUserId: string;
  /** Every answer Prism gave, by operation, for the count at the end. */
  const answered: Array<{ what: string; status: number; responseViolations: Violation[] }> = [];

  beforeAll(async () => {
    t = await createTestGateway('pglite', {
      config: { WEBHOOK_ALLOW_PRIVATE: '1', RATE_LIMIT_PER_MINUTE: 100_000, SSO_ALLOW_PRIVATE_ISSUERS: '1' },
    });
    idp = await TestIdentityProvider.start([
      { clientId: 'prism', clientSecret: 'a prism client secret', redirectUris: ['http://127.0.0.1/api/v1/auth/sso/callback'] },
    ]);
    const upstream = await listenOnLoopback(t.gateway, servers);
    dir = mkdtempSync(join(tmpdir(), 'gw-prism-'));
    const document = await (await fetch(`${upstream}/api/v1/openapi.json`)).text();
    writeFileSync(join(dir, 'openapi.json'), document);
    const port = await freePort();
    installOwnDependencies(PRISM_DIR);
    // Prism's own entry point on this Node (its bin's `env node` may find an older one on PATH).
    prism = spawn(
      process.execPath,
      [
        join(PRISM_DIR, 'node_modules', '@stoplight', 'prism-cli', 'dist', 'index.js'),
        'proxy',
        join(dir, 'openapi.json'),
        upstream,
        '--port',
        String(port),
        '--host',
        '127.0.0.1',
        '--errors',
        'false',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    prism.stdout!.on('data', (chunk: Buffer) => {
      prismOutput += chunk.toString();
    });
    prism.stderr!.on('data', (chunk: Buffer) => {
      prismOutput += chunk.toString();
    });
    proxy = `http://127.0.0.1:${port}`;
    const started = Date.now();
    while (!/Prism is listening/.test(prismOutput)) {
      if (prism.exitCode !== null || Date.now() - started > 90_000) throw new Error(`Prism did not start:\n${prismOutput}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const user = await createServiceUser(t.db, { tenantId: t.tenants.demo.id, name: 'prism-engine', role: 'engine' });
    engineUserId = user.id;
    engineToken = (
      await createToken(t.db, { tenantId: t.tenants.demo.id, serviceUserId: user.id, expiresAt: new Date(Date.now() + 86_400_000) })
    ).token;
    receiver = await startReceiver();
    worker = new DeliveryWorker({
      db: t.db,
      secretKeys: testSecretKeys(t.db),
      logger: createLogger('silent'),
      allowPrivate: true,
      retrySchedule: [60],
      disableAfter: 10,
      pollMs: 100,
    });
    await worker.start();
  }, 300_000);

  afterAll(async () => {
    prism?.kill('SIGTERM');
    await worker?.stop();
    await receiver?.close();
    await idp?.close();
    for (const server of servers) await new Promise<void>((resolve) => server.close(() => resolve()));
    await t?.dispose();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** A request through Prism; its verdict split into what it says of the request and of the response. */
  async function call(what: string, path: string, options: Call = {}): Promise<Answer> {
    const headers: Record<string, string> = { ...options.headers };
    const token = options.token === undefined ? t.tenants.demo.adminToken : options.token;
    if (token) headers.authorization = `Token ${token}`;
    let body: string | undefined;
    if (options.body !== undefined) {
      headers['content-type'] = options.contentType ?? 'application/json';
      body = typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
    }
    const response = await fetch(`${proxy}${path}`, { method: options.method ?? 'GET', headers, body });
    const text = await response.text();
    const violations = JSON.parse(response.headers.get('sl-violations') ?? '[]') as Violation[];
    const answer: Answer = {
      status: response.status,
      body: text && /json/.test(response.headers.get('content-type') ?? '') ? JSON.parse(text) : text,
      headers: response.headers,
      requestViolations: violations.filter((v) => v.location[0] === 'request'),
      responseViolations: violations.filter((v) => v.location[0] !== 'request'),
    };
    answered.push({ what, status: answer.status, responseViolations: answer.responseViolations });
    expect(answer.responseViolations, `${what}: ${answer.status} ${text.slice(0, 300)}`).toEqual([]);
    return answer;
  }

  /** A happy path: 2xx, and Prism finds nothing off the document on either side. */
  async function ok(what: string, path: string, options: Call = {}): Promise<any> {
    const answer = await call(what, path, options);
    expect(answer.status, `${what}: ${JSON.stringify(answer.body).slice(0, 300)}`).toBeGreaterThanOrEqual(200);
    expect(answer.status, `${what}: ${JSON.stringify(answer.body).slice(0, 300)}`).toBeLessThan(300);
    expect(answer.requestViolations, what).toEqual([]);
    return answer.body;
  }

  /** A documented error: its status and code, the response on the document. */
  async function refused(what: string, path: string, status: number, code: string, options: Call = {}): Promise<Answer> {
    const answer = await call(what, path, options);
    expect(answer.status, `${what}: ${JSON.stringify(answer.body).slice(0, 300)}`).toBe(status);
    expect(answer.body.error.code, what).toBe(code);
    return answer;
  }

  it('answers every operation on its happy path and its documented errors with 0 responses off the document', async () => {
    const reader = t.tenants.demo.readerToken;
    const categories = await ok('listCategories', `${BASE}/categories?select=name,id`);
    expect(Object.keys(categories.data[0])).toEqual(['name', 'id']);
    const available = await ok('listAvailableApplications', `${BASE}/available?limit=5&select=id,name`);
    const applicationId: string = available.data[0].id;
    await ok('getAvailableApplication', `${BASE}/available/${applicationId}`);
    // A plain name with a dot is a search, not a filter.
    await ok('listConnections', `${BASE}/connected?name=Shop.com&select=name,status,via`, { token: reader });
    await ok('listConnections', `${BASE}/connected?limit=2`, { token: reader });
    const endpoint = await ok('createWebhookEndpoint', `${BASE}/webhooks`, {
      method: 'POST',
      body: { url: receiver.url, event_types: ['connection.created'] },
    });
    const endpointId: string = endpoint.data.id;
    const created = await ok('createConnection', `${BASE}/connected`, {
      method: 'POST',
      body: { application_id: applicationId, name: 'Through Prism', settings: { sync_interval: '1h', webhook_enabled: true } },
    });
    const connectionId: string = created.data.id;
    await ok('getConnection', `${BASE}/connected/${connectionId}`);
    await ok('updateConnection', `${BASE}/connected/${connectionId}`, {
      method: 'PATCH',
      body: { description: 'checked by Prism' },
      contentType: 'application/merge-patch+json',
    });
    const queued = await ok('triggerSync', `${BASE}/syncs`, { method: 'POST', body: { connection_id: connectionId } });
    await refused('triggerSync again', `${BASE}/syncs`, 409, 'CONFLICT', { method: 'POST', body: { connection_id: connectionId } });
    const claimed = await ok('claimSync', `${BASE}/syncs/claim`, {
      method: 'POST',
      body: { connection_id: connectionId },
      token: engineToken,
    });
    await ok('reportSync', `${BASE}/syncs/${claimed.data.id}`, {
      method: 'PATCH',
      body: { status: 'success', summary: { processed: 3, inserted: 1, updated: 2, deleted: 0 } },
      token: engineToken,
    });
    await ok('getSync', `${BASE}/syncs/${queued.data.id}`);
    await ok('listSyncs', `${BASE}/syncs?connection_id=${connectionId}&select=status,id`);
    await ok('listSyncsTrailingSlash', `${BASE}/syncs/?limit=1`);
    await ok('streamSync', `${BASE}/syncs/${queued.data.id}/events`, { headers: { accept: 'text/event-stream' } });
    // The tenant's stream never ends by itself: its documented refusal instead.
    await refused('streamSyncs', `${BASE}/syncs/events?connection_id=con_nothing`, 404, 'NOT_FOUND');

    await ok('listWebhookEndpoints', `${BASE}/webhooks`);
    await ok('getWebhookEndpoint', `${BASE}/webhooks/${endpointId}`);
    await ok('updateWebhookEndpoint', `${BASE}/webhooks/${endpointId}`, {
      method: 'PATCH',
      body: { description: 'checked' },
      contentType: 'application/merge-patch+json',
    });
    await ok('rotateWebhookSecret', `${BASE}/webhooks/${endpointId}/rotate-secret`, { method: 'POST' });
    let deliveryId = '';
    for (let i = 0; i < 100 && deliveryId === ''; i++) {
      const deliveries = await ok('listWebhookDeliveries', `${BASE}/webhooks/${endpointId}/deliveries`);
      deliveryId = deliveries.data[0]?.id ?? '';
      if (deliveryId === '') await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(deliveryId).not.toBe('');
    const delivery = await ok('getWebhookDelivery', `${BASE}/webhooks/${endpointId}/deliveries/${deliveryId}`);
    expect(delivery.data.payload.type).toBe('connection.created');
    await ok('redeliverWebhook', `${BASE}/webhooks/${endpointId}/deliveries/${deliveryId}/redeliver`, { method: 'POST' });

    const invited = await ok('inviteMember', `${BASE}/members`, { method: 'POST', body: { email: 'prism@example.com', role: 'admin' } });
    const resent = await ok('resendInvitation', `${BASE}/members/${invited.data.member.id}/invitation`, { method: 'POST' });
    await ok('readInvitation', `/api/v1/auth/invitations/${resent.data.code}`, { token: null });
    await ok('acceptInvitation', `/api/v1/auth/invitations/${resent.data.code}`, {
      method: 'POST',
      body: { password: 'a long prism password' },
      token: null,
    });
    await ok('createPasswordReset', `${BASE}/members/${invited.data.member.id}/password-reset`, { method: 'POST' });
    const signedIn = await call('signIn', '/api/v1/auth/login', {
      method: 'POST',
      body: { email: 'prism@example.com', password: 'a long prism password' },
      token: null,
    });
    expect(signedIn.status).toBe(200);
    const cookie = (signedIn.headers.get('set-cookie') ?? '').split(';')[0]!;
    await ok('signOut', '/api/v1/auth/logout', { method: 'POST', token: null, headers: { cookie, 'x-requested-with': 'prism' } });
    const second = await ok('inviteMember', `${BASE}/members`, { method: 'POST', body: { email: 'prism-2@example.com', role: 'reader' } });
    await ok('listMembers', `${BASE}/members`);
    await ok('listActivity', `${BASE}/activity`);
    await ok('changeMemberRole', `${BASE}/members/${second.data.member.id}`, {
      method: 'PATCH',
      body: { role: 'admin' },
      contentType: 'application/merge-patch+json',
    });
    await ok('removeMember', `${BASE}/members/${second.data.member.id}`, { method: 'DELETE' });
    await ok('configureIdentityProvider', `${BASE}/identity-provider`, {
      method: 'PATCH',
      body: { issuer: idp.issuer, client_id: 'prism', client_secret: 'a prism client secret', email_domains: ['prism.example'] },
      contentType: 'application/merge-patch+json',
    });
    await ok('getIdentityProvider', `${BASE}/identity-provider`);
    // Browser navigations, answered with a 303: Prism follows a redirect upstream, so these two are asked of the
    // gateway itself, whose in-process answers the contract hook checks against the document as Prism would.
    const navigate = async (what: string, path: string) => {
      const response = await t.gateway.fetch(new Request(`${ORIGIN}${path}`));
      answered.push({ what, status: response.status, responseViolations: [] });
      return { status: response.status, location: response.headers.get('location') };
    };
    const started = await navigate('startSingleSignOn', '/api/v1/auth/sso/start?organization=demo');
    expect([started.status, started.location?.startsWith(idp.issuer)]).toEqual([303, true]);
    const back = await navigate('finishSingleSignOn', '/api/v1/auth/sso/callback?state=unknown&code=x');
    expect(back).toEqual({ status: 303, location: '/console/?sso_error=state' });
    await ok('removeIdentityProvider', `${BASE}/identity-provider`, { method: 'DELETE' });
    const application = await ok('createOAuthApplication', `${BASE}/oauth-applications`, {
      method: 'POST',
      body: { name: 'Prism partner', redirect_uris: ['https://partner.example/callback'], scope: 'read' },
    });
    await ok('listOAuthApplications', `${BASE}/oauth-applications`);
    await ok('deleteOAuthApplication', `${BASE}/oauth-applications/${application.data.client_id}`, { method: 'DELETE' });
    const backend = await ok('createOAuthClient', `${BASE}/oauth-clients`, {
      method: 'POST',
      body: { service_user_id: engineUserId, name: 'prism backend', scope: 'engine' },
    });
    await ok('listOAuthClients', `${BASE}/oauth-clients`);
    await ok('deleteOAuthClient', `${BASE}/oauth-clients/${backend.data.client_id}`, { method: 'DELETE' });
    const approval = await storedApproval(t.db, t.tenants.demo.id, 'prism-approval');
    await ok('listOAuthApprovals', `${BASE}/oauth-approvals`);
    await ok('revokeOAuthApproval', `${BASE}/oauth-approvals/${approval.id}`, { method: 'DELETE' });
    await ok('deleteWebhookEndpoint', `${BASE}/webhooks/${endpointId}`, { method: 'DELETE' });
    await ok('deleteConnection', `${BASE}/connected/${connectionId}`, { method: 'DELETE' });

    // Documented errors of each kind.
    await refused('no credential', `${BASE}/connected`, 401, 'UNAUTHORIZED', { token: null });
    await refused('a reader on the webhooks', `${BASE}/webhooks`, 403, 'UNAUTHORIZED', { token: reader });
    await refused('an id that names nothing', `${BASE}/connected/con_nothing`, 404, 'NOT_FOUND');
    await refused('a body as text', `${BASE}/syncs`, 415, 'UNSUPPORTED_MEDIA_TYPE', {
      method: 'POST',
      body: 'connection_id=x',
      contentType: 'text/plain',
    });
    const key = { 'idempotency-key': `prism-${Date.now()}` };
    const keyed = { application_id: applicationId, name: 'Prism keyed' };
    await ok('createConnection with a key', `${BASE}/connected`, { method: 'POST', body: keyed, headers: key });
    await refused('the key again, another body', `${BASE}/connected`, 422, 'IDEMPOTENCY_KEY_REUSED', {
      method: 'POST',
      body: { ...keyed, description: 'another body' },
      headers: key,
    });
    await refused('sign-in without fields', '/api/v1/auth/login', 400, 'INVALID_QUERY', { method: 'POST', body: {}, token: null });

    const operations = new Set(answered.map((a) => a.what));
    const documented = Object.values(
      (
        JSON.parse(await (await fetch(`${proxy}/api/v1/openapi.json`)).text()) as {
          paths: Record<string, Record<string, { operationId: string }>>;
        }
      ).paths,
    ).flatMap((methods) => Object.values(methods).map((operation) => operation.operationId));
    expect(documented.filter((id) => !operations.has(id))).toEqual([]);
    expect(answered.filter((a) => a.responseViolations.length > 0)).toEqual([]);
  });

  it('docs/reference/rest.md lists every operation of the served document, and no other', async () => {
    const document = JSON.parse(readFileSync(join(dir, 'openapi.json'), 'utf8')) as {
      paths: Record<string, Record<string, { operationId: string }>>;
    };
    const served = Object.entries(document.paths)
      .flatMap(([path, methods]) => Object.entries(methods).map(([method, op]) => `${method.toUpperCase()} ${path} ${op.operationId}`))
      .sort();
    const listed = [
      ...readFileSync(join(ROOT, 'docs', 'reference', 'rest.md'), 'utf8').matchAll(/^\| ([A-Z]+) \| `([^`]+)` \| `(\w+)` \|/gm),
    ]
      .map((m) => `${m[1]} ${m[2]} ${m[3]}`)
      .sort();
    expect(listed).toEqual(served);
  });

  it('flags each documented body and parameter constraint, broken by one value, and the server refuses it with 400', async () => {
    const connected = await ok('listConnections', `${BASE}/connected?limit=1&select=id`);
    const connectionId: string = connected.data[0].id;
    const cases: Array<{ what: string; path: string; options: Call; member: string }> = [
      {
        what: 'webhook url not absolute http(s)',
        path: `${BASE}/webhooks`,
        member: 'url',
        options: { method: 'POST', body: { url: 'ftp://example.com/hook' } },
      },
      {
        what: 'webhook event_types repeated',
        path: `${BASE}/webhooks`,
        member: 'event_types',
        options: { method: 'POST', body: { url: receiver.url, event_types: ['sync.failed', 'sync.failed'] } },
      },
      {
        what: 'webhook event_types unknown',
        path: `${BASE}/webhooks`,
        member: 'event_types.0',
        options: { method: 'POST', body: { url: receiver.url, event_types: ['sync.nothing'] } },
      },
      {
        what: 'webhook unknown member',
        path: `${BASE}/webhooks`,
        member: 'secret',
        options: { method: 'POST', body: { url: receiver.url, secret: 'x' } },
      },
      {
        what: 'invitation email not an address',
        path: `${BASE}/members`,
        member: 'email',
        options: { method: 'POST', body: { email: 'nobody', role: 'reader' } },
      },
      {
        what: 'invitation role not a member role',
        path: `${BASE}/members`,
        member: 'role',
        options: { method: 'POST', body: { email: 'a@example.com', role: 'engine' } },
      },
      {
        what: 'connection settings member of another kind',
        path: `${BASE}/connected/${connectionId}`,
        member: 'settings',
        options: { method: 'PATCH', contentType: 'application/merge-patch+json', body: { settings: { no_such_setting: true } } },
      },
      {
        what: 'connection metadata member of no kind',
        path: `${BASE}/connected/${connectionId}`,
        member: 'metadata',
        options: { method: 'PATCH', contentType: 'application/merge-patch+json', body: { metadata: { colour: 'blue' } } },
      },
      {
        what: 'connection name blank',
        path: `${BASE}/connected/${connectionId}`,
        member: 'name',
        options: { method: 'PATCH', contentType: 'application/merge-patch+json', body: { name: '   ' } },
      },
      { what: 'trigger without connection_id', path: `${BASE}/syncs`, member: 'connection_id', options: { method: 'POST', body: {} } },
      {
        what: 'claim lease out of range',
        path: `${BASE}/syncs/claim`,
        member: 'lease_seconds',
        options: { method: 'POST', body: { lease_seconds: 0 }, token: engineToken },
      },
      {
        what: 'sign-in email mistyped',
        path: '/api/v1/auth/login',
        member: 'email',
        options: { method: 'POST', body: { email: 5, password: {} }, token: null },
      },
      { what: 'limit above its maximum', path: `${BASE}/connected?limit=101`, member: 'limit', options: {} },
      { what: 'offset with page', path: `${BASE}/connected?offset=1&page=2`, member: 'page|offset', options: {} },
      { what: 'select of an unknown field', path: `${BASE}/connected?select=colour`, member: 'select', options: {} },
      { what: 'filter operator unknown', path: `${BASE}/connected?status=like.x`, member: 'status', options: {} },
    ];
    for (const { what, path, options, member } of cases) {
      const answer = await refused(what, path, 400, 'INVALID_QUERY', options);
      const named = (answer.body.error.details as Array<{ parameter: string }>).map((d) => d.parameter);
      const members = member.split('|');
      expect(
        named.some((parameter) => members.some((m) => parameter === m || parameter.startsWith(`${m}.`) || m.startsWith(`${parameter}.`))),
        `${what}: ${named.join(', ')}`,
      ).toBe(true);
      // The document says it too: a validator that follows it refuses the request before it is sent. (That two
      // parameters exclude each other, JSON Schema cannot say: the parameters' descriptions do.)
      if (members.length === 1)
        expect(answer.requestViolations.length, `${what}: Prism found the request off the document`).toBeGreaterThan(0);
    }
    // A short password: the server says why, and the document's minLength says so first.
    const invited = await ok('inviteMember', `${BASE}/members`, { method: 'POST', body: { email: 'short@example.com', role: 'reader' } });
    const short = await refused('password too short', `/api/v1/auth/invitations/${invited.data.code}`, 400, 'INVALID_QUERY', {
      method: 'POST',
      body: { password: 'eleven char' },
      token: null,
    });
    expect(short.requestViolations.length).toBeGreaterThan(0);
  });
});
