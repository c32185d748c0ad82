// A typed client as an outside user generates it: openapi-typescript over the served OpenAPI document, openapi-fetch
// to call it. A program calls every operation's happy path, reading the answers through the generated types with no
// cast; it must typecheck under `strict` and then run against a real gateway (every answer also checked against the
// document by the contract hook).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import openapiTS, { astToString } from 'openapi-typescript';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServiceUser } from '../src/auth/service-users.js';
import { createToken } from '../src/auth/tokens.js';
import { createLogger } from '../src/logger.js';
import { DeliveryWorker } from '../src/webhooks/delivery-worker.js';
import { createTestGateway, testSecretKeys, type TestGateway } from './fixtures/gateway.js';
import { ORIGIN } from './fixtures/rest.js';
import { ROOT } from './fixtures/server-process.js';
import { startReceiver, type WebhookReceiver } from './fixtures/webhook-receiver.js';
import { storedApproval } from './fixtures/oauth-approval.js';
import { TestIdentityProvider } from './fixtures/oidc-provider.js';

/** The program a user writes: no `as`, no `any`, no `!`; each answer is read through its generated type. */
const PROGRAM = `import createClient from 'openapi-fetch';
import type { paths } from './schema.js';

const BASE = '/api/v1/integrations';

/** Fails with the answer when a call did not succeed. */
function ok<T>(result: { data?: T; error?: unknown; response: Response }, what: string): T {
  if (result.data === undefined) throw new Error(what + ': HTTP ' + result.response.status + ' ' + JSON.stringify(result.error));
  return result.data;
}

/** Where a browser navigation is sent (a 303, no body); fails on any other answer. */
function redirectedTo(result: { response: Response }, what: string): string {
  const location = result.response.headers.get('location');
  if (result.response.status !== 303 || location === null) throw new Error(what + ': HTTP ' + result.response.status);
  return location;
}

/** The status of a call that answers no body to read (or one not needed); fails when it did not succeed. */
function answered(result: { error?: unknown; response: Response }, what: string): number {
  if (result.error !== undefined || !result.response.ok) throw new Error(what + ': HTTP ' + result.response.status + ' ' + JSON.stringify(result.error));
  return result.response.status;
}

export async function run(baseUrl: string, token: string, engineToken: string, receiverUrl: string, issuer: string, serviceUserId: string, approvalId: string, fetchImpl: typeof fetch): Promise<string[]> {
  const headers = { Authorization: 'Token ' + token };
  const client = createClient<paths>({ baseUrl, headers, fetch: fetchImpl });
  const engine = createClient<paths>({ baseUrl, headers: { Authorization: 'Token ' + engineToken }, fetch: fetchImpl });
  const seen: string[] = [];

  const categories = ok(await client.GET('/api/v1/integrations/categories'), 'listCategories');
  const categoryName: string = categories.data[0]?.name ?? '';
  seen.push('listCategories ' + categoryName);

  const available = ok(await client.GET('/api/v1/integrations/available', { params: { query: { limit: 5 } } }), 'listAvailableApplications');
  const applicationId: string = available.data[0]?.id ?? '';
  const pagination = available.meta.pagination;
  seen.push('listAvailableApplications ' + applicationId + ' ' + ('total' in pagination ? pagination.total : 0));
  const application = ok(await client.GET('/api/v1/integrations/available/{id}', { params: { path: { id: applicationId } } }), 'getAvailableApplication');
  const applicationName: string = application.data[0]?.name ?? '';
  seen.push('getAvailableApplication ' + applicationName);

  const endpoint = ok(
    await client.POST('/api/v1/integrations/webhooks', { body: { url: receiverUrl, event_types: ['connection.created'] } }),
    'createWebhookEndpoint',
  );
  // null only on an Idempotency-Key replay, which keeps no secret.
  const secret: string = endpoint.data.secret ?? '';
  const endpointId: string = endpoint.data.id;
  seen.push('createWebhookEndpoint ' + secret.slice(0, 6));

  const created = ok(
    await client.POST('/api/v1/integrations/connected', { body: { application_id: applicationId, name: 'Typed client', settings: { sync_interval: '1h', webhook_enabled: true } } }),
    'createConnection',
  );
  const connectionId: string = created.data.id;
  const createdStatus: 'pending' | 'active' | 'paused' | 'error' = created.data.status;
  seen.push('createConnection ' + createdStatus);
  const connection = ok(await client.GET('/api/v1/integrations/connected/{id}', { params: { path: { id: connectionId } } }), 'getConnection');
  seen.push('getConnection ' + connection.data.name);
  const patched = ok(
    await client.PATCH('/api/v1/integrations/connected/{id}', { params: { path: { id: connectionId } }, body: { description: 'typed' } }),
    'updateConnection',
  );
  seen.push('updateConnection ' + (patched.data.description ?? ''));
  const connections = ok(await client.GET('/api/v1/integrations/connected', { params: { query: { limit: 100 } } }), 'listConnections');
  seen.push('listConnections ' + connections.data.map((c) => c.id).includes(connectionId));
  // With select an item carries the selected members only: the type says each may be missing.
  const selected = ok(await client.GET('/api/v1/integrations/connected', { params: { query: { select: 'status,name' } } }), 'listConnections');
  const selectedName: string | undefined = selected.data[0]?.name;
  const selectedId: string | undefined = selected.data[0]?.id;
  seen.push('selected ' + (selectedName !== undefined) + ' ' + (selectedId === undefined));

  const queued = ok(await client.POST('/api/v1/integrations/syncs', { body: { connection_id: connectionId } }), 'triggerSync');
  const queuedStatus: 'pending' | 'in_progress' | 'success' | 'failed' = queued.data.status;
  seen.push('triggerSync ' + queuedStatus);
  const claimed = ok(await engine.POST('/api/v1/integrations/syncs/claim', { body: { connection_id: connectionId } }), 'claimSync');
  // 204 (nothing due) has no body: the type says so.
  if (claimed === undefined) throw new Error('claimSync: nothing was due');
  seen.push('claimSync ' + claimed.data.status);
  const reported = ok(
    await engine.PATCH('/api/v1/integrations/syncs/{id}', {
      params: { path: { id: claimed.data.id } },
      body: { status: 'success', summary: { processed: 3, inserted: 1, updated: 2, deleted: 0 } },
    }),
    'reportSync',
  );
  const finishedAt: string | null = reported.data.finished_at;
  seen.push('reportSync ' + reported.data.status + ' ' + (finishedAt !== null));
  const sync = ok(await client.GET('/api/v1/integrations/syncs/{id}', { params: { path: { id: queued.data.id } } }), 'getSync');
  seen.push('getSync ' + sync.data.status);
  const syncs = ok(await client.GET('/api/v1/integrations/syncs', { params: { query: { connection_id: connectionId } } }), 'listSyncs');
  seen.push('listSyncs ' + syncs.meta.pagination.total_items);
  const slashed = ok(await client.GET('/api/v1/integrations/syncs/', { params: { query: { limit: 1 } } }), 'listSyncsTrailingSlash');
  seen.push('listSyncsTrailingSlash ' + slashed.meta.pagination.per_page);

  // A finished run's stream sends its state and ends; the tenant's stream stays open until it is cancelled.
  const runStream = ok(await client.GET('/api/v1/integrations/syncs/{id}/events', { params: { path: { id: queued.data.id } }, parseAs: 'text' }), 'streamSync');
  seen.push('streamSync ' + runStream.includes('event: sync'));
  const tenantStream = ok(await client.GET('/api/v1/integrations/syncs/events', { params: { query: {} }, parseAs: 'stream' }), 'streamSyncs');
  await tenantStream?.cancel();
  seen.push('streamSyncs open');

  const endpoints = ok(await client.GET('/api/v1/integrations/webhooks'), 'listWebhookEndpoints');
  seen.push('listWebhookEndpoints ' + endpoints.data.length);
  const read = ok(await client.GET('/api/v1/integrations/webhooks/{id}', { params: { path: { id: endpointId } } }), 'getWebhookEndpoint');
  seen.push('getWebhookEndpoint ' + read.data.url);
  const changed = ok(
    await client.PATCH('/api/v1/integrations/webhooks/{id}', { params: { path: { id: endpointId } }, body: { description: 'typed' } }),
    'updateWebhookEndpoint',
  );
  seen.push('updateWebhookEndpoint ' + (changed.data.description ?? ''));
  const rotated = ok(await client.POST('/api/v1/integrations/webhooks/{id}/rotate-secret', { params: { path: { id: endpointId } } }), 'rotateWebhookSecret');
  const newSecret: string = rotated.data.secret ?? '';
  seen.push('rotateWebhookSecret ' + (newSecret !== secret));

  let deliveryId = '';
  for (let i = 0; i < 100 && deliveryId === ''; i++) {
    const deliveries = ok(await client.GET('/api/v1/integrations/webhooks/{id}/deliveries', { params: { path: { id: endpointId } } }), 'listWebhookDeliveries');
    deliveryId = deliveries.data[0]?.id ?? '';
    if (deliveryId === '') await new Promise((resolve) => setTimeout(resolve, 100));
  }
  if (deliveryId === '') throw new Error('listWebhookDeliveries: no delivery of connection.created');
  seen.push('listWebhookDeliveries true');
  const delivery = ok(
    await client.GET('/api/v1/integrations/webhooks/{id}/deliveries/{delivery_id}', { params: { path: { id: endpointId, delivery_id: deliveryId } } }),
    'getWebhookDelivery',
  );
  seen.push('getWebhookDelivery ' + delivery.data.event_type);
  // The payload is the message sent, typed by its event type: the connection's settings read with no cast.
  const payload = delivery.data.payload;
  if (payload.type === 'connection.created') {
    const interval: string | undefined = payload.data.settings.sync_interval;
    seen.push('payload ' + payload.data.name + ' ' + interval);
  }
  const redelivered = ok(
    await client.POST('/api/v1/integrations/webhooks/{id}/deliveries/{delivery_id}/redeliver', { params: { path: { id: endpointId, delivery_id: deliveryId } } }),
    'redeliverWebhook',
  );
  seen.push('redeliverWebhook ' + redelivered.data.id);

  const email = 'typed-' + Date.now() + '@example.com';
  const invited = ok(await client.POST('/api/v1/integrations/members', { body: { email, role: 'admin' } }), 'inviteMember');
  // Null only in the replay of a request with an Idempotency-Key, which this one is not.
  if (invited.data.code === null) throw new Error('inviteMember answered no code');
  const memberId: string = invited.data.member.id;
  seen.push('inviteMember ' + invited.data.member.role);
  const resent = ok(await client.POST('/api/v1/integrations/members/{id}/invitation', { params: { path: { id: memberId } } }), 'resendInvitation');
  const code = resent.data.code;
  if (code === null) throw new Error('resendInvitation answered no code');
  seen.push('resendInvitation ' + (code !== invited.data.code));
  const holder = ok(await client.GET('/api/v1/auth/invitations/{code}', { params: { path: { code } } }), 'readInvitation');
  seen.push('readInvitation ' + holder.data.purpose + ' ' + (holder.data.email === email));
  const password = 'a long typed-client password';
  const accepted = answered(await client.POST('/api/v1/auth/invitations/{code}', { params: { path: { code } }, body: { password } }), 'acceptInvitation');
  seen.push('acceptInvitation ' + accepted);
  const login = await client.POST('/api/v1/auth/login', { body: { email, password } });
  const signedIn = ok(login, 'signIn');
  const cookie: string = (login.response.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
  seen.push('signIn ' + signedIn.data.role);
  const signedOut = answered(await client.POST('/api/v1/auth/logout', { headers: { 'X-Requested-With': 'typed-client', cookie } }), 'signOut');
  seen.push('signOut ' + signedOut);
  const reset = ok(await client.POST('/api/v1/integrations/members/{id}/password-reset', { params: { path: { id: memberId } } }), 'createPasswordReset');
  seen.push('createPasswordReset ' + reset.data.path?.startsWith('/console/reset/'));
  // A second member to change and remove: the first stays the organization's admin who can sign in.
  const second = ok(await client.POST('/api/v1/integrations/members', { body: { email: 'second-' + email, role: 'reader' } }), 'inviteMember');
  const secondId: string = second.data.member.id;
  const members = ok(await client.GET('/api/v1/integrations/members'), 'listMembers');
  seen.push('listMembers ' + members.data.some((member) => member.id === memberId && member.email === email));
  const promoted = ok(await client.PATCH('/api/v1/integrations/members/{id}', { params: { path: { id: secondId } }, body: { role: 'admin' } }), 'changeMemberRole');
  seen.push('changeMemberRole ' + promoted.data.role);
  const removed = ok(await client.DELETE('/api/v1/integrations/members/{id}', { params: { path: { id: secondId } } }), 'removeMember');
  seen.push('removeMember ' + removed.data.id);
  const activity = ok(await client.GET('/api/v1/integrations/activity', { params: { query: { limit: 5 } } }), 'listActivity');
  seen.push('listActivity ' + activity.data.some((entry) => entry.action === 'member.removed' && entry.target_id === secondId));

  const configured = ok(
    await client.PATCH('/api/v1/integrations/identity-provider', {
      body: { issuer, client_id: 'typed-client', client_secret: 'a typed-client secret', email_domains: ['typed.example'] },
    }),
    'configureIdentityProvider',
  );
  const firstSignIn: 'invitation' | 'reader' | 'claim' = configured.data.first_sign_in;
  seen.push('configureIdentityProvider ' + firstSignIn);
  const provider = ok(await client.GET('/api/v1/integrations/identity-provider'), 'getIdentityProvider');
  seen.push('getIdentityProvider ' + (provider.data.issuer === issuer));
  const toProvider = redirectedTo(await client.GET('/api/v1/auth/sso/start', { params: { query: { organization: 'demo' } } }), 'startSingleSignOn');
  seen.push('startSingleSignOn ' + toProvider.startsWith(issuer));
  const back = redirectedTo(await client.GET('/api/v1/auth/sso/callback', { params: { query: { state: 'unknown' } } }), 'finishSingleSignOn');
  seen.push('finishSingleSignOn ' + back);
  const unset = ok(await client.DELETE('/api/v1/integrations/identity-provider'), 'removeIdentityProvider');
  seen.push('removeIdentityProvider ' + unset.data.removed);

  const partner = ok(
    await client.POST('/api/v1/integrations/oauth-applications', {
      body: { name: 'Typed partner', redirect_uris: ['https://partner.example/callback'], scope: 'read' },
    }),
    'createOAuthApplication',
  );
  const clientId: string = partner.data.client_id;
  seen.push('createOAuthApplication ' + clientId.startsWith('oaa_'));
  const applications = ok(await client.GET('/api/v1/integrations/oauth-applications', { params: { query: { limit: 5 } } }), 'listOAuthApplications');
  seen.push('listOAuthApplications ' + applications.data.some((entry) => entry.id === clientId));
  const deletedApplication = ok(
    await client.DELETE('/api/v1/integrations/oauth-applications/{id}', { params: { path: { id: clientId } } }),
    'deleteOAuthApplication',
  );
  seen.push('deleteOAuthApplication ' + (deletedApplication.data.id === clientId));
  const backend = ok(
    await client.POST('/api/v1/integrations/oauth-clients', { body: { service_user_id: serviceUserId, name: 'typed backend', scope: 'engine' } }),
    'createOAuthClient',
  );
  const backendId: string = backend.data.client_id;
  seen.push('createOAuthClient ' + (backend.data.auth_method === 'client_secret_basic'));
  const clients = ok(await client.GET('/api/v1/integrations/oauth-clients', { params: { query: { limit: 5 } } }), 'listOAuthClients');
  seen.push('listOAuthClients ' + clients.data.some((entry) => entry.id === backendId && entry.service_user_id === serviceUserId));
  const deletedClient = ok(
    await client.DELETE('/api/v1/integrations/oauth-clients/{id}', { params: { path: { id: backendId } } }),
    'deleteOAuthClient',
  );
  seen.push('deleteOAuthClient ' + (deletedClient.data.id === backendId));
  const approvals = ok(await client.GET('/api/v1/integrations/oauth-approvals', { params: { query: { limit: 5 } } }), 'listOAuthApprovals');
  seen.push('listOAuthApprovals ' + approvals.data.some((entry) => entry.id === approvalId && entry.scope === 'read'));
  const revoked = ok(
    await client.DELETE('/api/v1/integrations/oauth-approvals/{id}', { params: { path: { id: approvalId } } }),
    'revokeOAuthApproval',
  );
  seen.push('revokeOAuthApproval ' + (revoked.data.id === approvalId));

  const deletedEndpoint = ok(await client.DELETE('/api/v1/integrations/webhooks/{id}', { params: { path: { id: endpointId } } }), 'deleteWebhookEndpoint');
  seen.push('deleteWebhookEndpoint ' + deletedEndpoint.data.id);
  const deleted = ok(await client.DELETE('/api/v1/integrations/connected/{id}', { params: { path: { id: connectionId } } }), 'deleteConnection');
  seen.push('deleteConnection ' + deleted.data.id);
  return seen;
}
`;

describe('a client generated from the served document', () => {
  let t: TestGateway;
  let dir: string;
  let engineToken: string;
  let engineUserId: string;
  let receiver: WebhookReceiver;
  let idp: TestIdentityProvider;
  let worker: DeliveryWorker;

  beforeAll(async () => {
    t = await createTestGateway('pglite', { config: { WEBHOOK_ALLOW_PRIVATE: '1', SSO_ALLOW_PRIVATE_ISSUERS: '1' } });
    idp = await TestIdentityProvider.start([
      { clientId: 'typed-client', clientSecret: 'a typed-client secret', redirectUris: [`${ORIGIN}/api/v1/auth/sso/callback`] },
    ]);
    const cache = join(ROOT, 'node_modules', '.cache');
    mkdirSync(cache, { recursive: true });
    // Inside the project, so the program resolves openapi-fetch as a user's would.
    dir = mkdtempSync(join(cache, 'typed-client-'));
    const user = await createServiceUser(t.db, { tenantId: t.tenants.demo.id, name: 'typed-client-engine', role: 'engine' });
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
  });

  afterAll(async () => {
    await worker?.stop();
    await receiver?.close();
    await idp?.close();
    await t?.dispose();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('typechecks a program calling every operation with no cast, which then runs against the server', async () => {
    const served = await t.gateway.fetch(`${ORIGIN}/api/v1/openapi.json`);
    const document = (await served.json()) as Record<string, any>;
    writeFileSync(join(dir, 'schema.ts'), astToString(await openapiTS(JSON.stringify(document))));
    writeFileSync(join(dir, 'program.ts'), PROGRAM);

    // Every operation of the document is called by the program.
    const operations = Object.entries(document.paths as Record<string, Record<string, { operationId: string }>>).flatMap(([, ops]) =>
      Object.values(ops).map((op) => op.operationId),
    );
    const called = [...PROGRAM.matchAll(/'([a-zA-Z]+)',?\s*\)/g)].map((m) => m[1]);
    expect(operations.filter((id) => !called.includes(id))).toEqual([]);
    expect(PROGRAM).not.toMatch(/ as |<any>|: any\b|!\./);

    const program = ts.createProgram([join(dir, 'program.ts')], {
      strict: true,
      noUncheckedIndexedAccess: true,
      exactOptionalPropertyTypes: true,
      noEmit: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      lib: ['lib.es2022.d.ts', 'lib.dom.d.ts'],
      skipLibCheck: true,
      types: [],
    });
    const diagnostics = ts.getPreEmitDiagnostics(program).map((d) => {
      const where =
        d.file && d.start !== undefined
          ? `${d.file.fileName.split('/').pop()}:${d.file.getLineAndCharacterOfPosition(d.start).line + 1}`
          : '';
      return `${where} ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
    });
    expect(diagnostics).toEqual([]);

    // The same program, run: each operation answers its happy path.
    const compiled = ts.transpileModule(PROGRAM.replace("'./schema.js'", "'./schema.mjs'"), {
      compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
    });
    writeFileSync(join(dir, 'program.mjs'), compiled.outputText);
    writeFileSync(join(dir, 'schema.mjs'), 'export {};\n');
    const { run } = (await import(pathToFileURL(join(dir, 'program.mjs')).href)) as {
      run: (
        baseUrl: string,
        token: string,
        engine: string,
        receiverUrl: string,
        issuer: string,
        serviceUserId: string,
        approvalId: string,
        fetchImpl: typeof fetch,
      ) => Promise<string[]>;
    };
    const approval = await storedApproval(t.db, t.tenants.demo.id, 'typed-client-approval');
    const seen = await run(
      ORIGIN,
      t.tenants.demo.adminToken,
      engineToken,
      receiver.url,
      idp.issuer,
      engineUserId,
      approval.id,
      (input, init) => t.gateway.fetch(input as Request, init),
    );
    expect(seen.filter((line) => !/^(payload|selected) /.test(line))).toHaveLength(operations.length);
    expect(seen).toEqual(
      expect.arrayContaining([
        'selected true true',
        'payload Typed client 1h',
        'createConnection pending',
        'triggerSync pending',
        'claimSync in_progress',
        'reportSync success true',
        'streamSync true',
        'rotateWebhookSecret true',
        'listWebhookDeliveries true',
        'listActivity true',
        'resendInvitation true',
        'readInvitation invitation true',
        'createPasswordReset true',
        'configureIdentityProvider invitation',
        'getIdentityProvider true',
        'startSingleSignOn true',
        'finishSingleSignOn /console/?sso_error=state',
        'removeIdentityProvider true',
        'createOAuthApplication true',
        'listOAuthApplications true',
        'deleteOAuthApplication true',
        'createOAuthClient true',
        'listOAuthClients true',
        'deleteOAuthClient true',
        'listOAuthApprovals true',
        'revokeOAuthApproval true',
      ]),
    );
  });
});
