// The write side on REST, on both databases: POST/PATCH /connected, POST /syncs, POST /syncs/claim, PATCH
// /syncs/{id} run the same mutations as GraphQL; bodies are checked by one schema (400 listing every problem,
// 415, 413, broken JSON), a refused write changes nothing, and created items answer 201 with Location.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServiceUser } from '../src/auth/service-users.js';
import { createToken } from '../src/auth/tokens.js';
import { databaseKinds } from './fixtures/databases.js';
import { writeFingerprint, writeFingerprinter } from './fixtures/fingerprint.js';
import { createTestGateway, type TestGateway } from './fixtures/gateway.js';
import { BASE, ORIGIN, rest } from './fixtures/rest.js';

describe.each(databaseKinds)('REST writes on %s', (kind) => {
  let t: TestGateway;
  let admin: string;
  let reader: string;
  let engine: string;
  let applicationId: string;

  async function send(method: string, path: string, token: string, body: unknown, contentType = 'application/json') {
    const response = await t.gateway.fetch(`${ORIGIN}${BASE}${path}`, {
      method,
      headers: { authorization: `Token ${token}`, 'content-type': contentType },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await response.text();
    return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : null };
  }

  const fingerprint = () => writeFingerprint(t.db);

  beforeAll(async () => {
    t = await createTestGateway(kind);
    admin = t.tenants.demo.adminToken;
    reader = t.tenants.demo.readerToken;
    const user = await createServiceUser(t.db, { tenantId: t.tenants.demo.id, name: 'rest-writes-engine', role: 'engine' });
    engine = (
      await createToken(t.db, { tenantId: t.tenants.demo.id, serviceUserId: user.id, expiresAt: new Date(Date.now() + 86_400_000) })
    ).token;
    const apps = await rest(t.gateway, `${BASE}/available?slug=eq.stripe&select=id`, { token: reader, expectStatus: 200 });
    applicationId = apps.body.data[0].id;
  });
  afterAll(() => t?.dispose());

  it('connects, triggers, claims, reports and finishes, with the spec shapes and 201/204 where they belong', async () => {
    const name = `REST Stripe ${kind} ${Date.now()}`;
    const created = await send('POST', '/connected', admin, {
      application_id: applicationId,
      name,
      settings: { sync_interval: '6h', retry_attempts: 1 },
    });
    expect(created.status).toBe(201);
    const connectionId = created.body.data.id;
    expect(created.headers.get('location')).toBe(`${ORIGIN}${BASE}/connected/${connectionId}`);
    expect(created.body.msg).toBe('connection created');
    // The same shape as GET /connected/{id}.
    const read = await rest(t.gateway, `${BASE}/connected/${connectionId}`, { token: reader, expectStatus: 200 });
    expect(created.body.data).toEqual(read.body.data);
    expect(read.body.data).toMatchObject({ name, status: 'pending', settings: { sync_interval: '6h', retry_attempts: 1 } });

    const patched = await send(
      'PATCH',
      `/connected/${connectionId}`,
      admin,
      { description: 'EU account', settings: { sync_interval: null } },
      'application/merge-patch+json',
    );
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body.data.description).toBe('EU account');
    expect(patched.body.data.settings.sync_interval).toBeUndefined();
    expect(patched.body.data.settings.retry_attempts).toBe(1);

    const queued = await send('POST', '/syncs', admin, { connection_id: connectionId, estimated_items: 10 });
    expect(queued.status).toBe(201);
    const syncId = queued.body.data.id;
    expect(queued.headers.get('location')).toBe(`${ORIGIN}${BASE}/syncs/${syncId}`);
    expect(queued.body.data).toMatchObject({ status: 'pending', connection_id: connectionId, finished_at: null });
    expect(JSON.parse(queued.body.data.summary)).toEqual({ queued: true, estimated_items: 10 });
    const again = await send('POST', '/syncs', admin, { connection_id: connectionId });
    expect([again.status, again.body.error.code]).toEqual([409, 'CONFLICT']);
    expect(again.body.msg).toContain(syncId);

    const claimed = await send('POST', '/syncs/claim', engine, { connection_id: connectionId, lease_seconds: 60 });
    expect(claimed.status).toBe(200);
    expect(claimed.body.data).toMatchObject({ id: syncId, status: 'in_progress' });
    const nothing = await send('POST', '/syncs/claim', engine, { connection_id: connectionId });
    expect([nothing.status, nothing.body]).toEqual([204, null]);

    const progress = await send('PATCH', `/syncs/${syncId}`, engine, { summary: { processed: 4 } });
    expect(progress.status).toBe(200);
    expect(JSON.parse(progress.body.data.summary)).toMatchObject({ processed: 4, in_progress: true });
    const finished = await send('PATCH', `/syncs/${syncId}`, engine, {
      status: 'success',
      summary: { processed: 10, inserted: 10, updated: 0, deleted: 0 },
    });
    expect(finished.status).toBe(200);
    expect(finished.body.data).toMatchObject({ status: 'success', error_message: null });
    expect(finished.body.data.finished_at).not.toBeNull();
    // Exactly the keys of a seeded record.
    const seeded = await rest(t.gateway, `${BASE}/syncs?limit=1`, { token: reader, expectStatus: 200 });
    expect(Object.keys(finished.body.data).sort()).toEqual(Object.keys(seeded.body.data[0]).sort());

    const before = await fingerprint();
    const late = await send('PATCH', `/syncs/${syncId}`, engine, { status: 'failed', error_message: 'too late' });
    expect([late.status, late.body.error.code]).toEqual([409, 'CONFLICT']);
    expect(late.body.msg).toMatch(/success/);
    expect(await fingerprint()).toEqual(before);
  });

  it('the fuzz test’s fingerprinter reads the tables again after a committed write, and only then', async () => {
    const fingerprinter = writeFingerprinter(t.db);
    const before = await fingerprinter();
    // Reads and refused writes commit nothing: the snapshot, and so the digest, stay.
    await rest(t.gateway, `${BASE}/connected?limit=2`, { token: reader, expectStatus: 200 });
    expect((await send('POST', '/connected', reader, { application_id: applicationId, name: 'refused' })).status).toBe(403);
    expect(await fingerprinter()).toBe(before);
    // A write commits: its digest differs, and is what writeFingerprint reads.
    const created = await send('POST', '/connected', admin, { application_id: applicationId, name: 'fingerprinted' });
    expect(created.status).toBe(201);
    const after = await fingerprinter();
    expect(after).not.toBe(before);
    expect(after).toBe(await writeFingerprint(t.db));
    // And so does a write that changes a row in place.
    expect((await send('PATCH', `/connected/${created.body.data.id}`, admin, { name: 'fingerprinted again' })).status).toBe(200);
    const updated = await fingerprinter();
    expect(updated).not.toBe(after);
    // And a transaction that only deletes (no newer row version; the count drops).
    const user = await createServiceUser(t.db, { tenantId: t.tenants.demo.id, name: 'fingerprinted-user', role: 'reader' });
    const withUser = await fingerprinter();
    expect(withUser).not.toBe(updated);
    await t.db.raw.query('DELETE FROM "public"."service_users" WHERE "id" = $1', [user.id]);
    const deleted = await fingerprinter();
    expect(deleted).not.toBe(withUser);
    expect(deleted).toBe(updated);
    expect(deleted).toBe(await writeFingerprint(t.db));
  });

  it('refuses bad bodies with the spec error body, and writes nothing', async () => {
    const before = await fingerprint();
    const cases: Array<[string, string, unknown, string, number, string]> = [
      [
        'POST',
        '/connected',
        { application_id: applicationId, colour: 'red', settings: { sync_interval: '2h' } },
        'application/json',
        400,
        'INVALID_QUERY',
      ],
      ['POST', '/connected', '{"application_id": ', 'application/json', 400, 'INVALID_QUERY'],
      ['POST', '/connected', '', 'application/json', 400, 'INVALID_QUERY'],
      ['POST', '/connected', '[1, 2]', 'application/json', 400, 'INVALID_QUERY'],
      ['POST', '/connected', `application_id=${applicationId}`, 'application/x-www-form-urlencoded', 415, 'UNSUPPORTED_MEDIA_TYPE'],
      ['POST', '/connected', { application_id: 'app_nope' }, 'text/plain', 415, 'UNSUPPORTED_MEDIA_TYPE'],
      ['POST', '/connected', { application_id: 'app_nope' }, 'application/json', 400, 'INVALID_QUERY'],
      ['POST', '/syncs', { connection_id: 'con_nope' }, 'application/json', 404, 'NOT_FOUND'],
      ['POST', '/syncs', {}, 'application/json', 400, 'INVALID_QUERY'],
      ['POST', '/syncs/claim', { lease_seconds: 0 }, 'application/json', 400, 'INVALID_QUERY'],
      ['PATCH', '/syncs/syn_nope', { status: 'done' }, 'application/json', 400, 'INVALID_QUERY'],
      ['PATCH', '/syncs/syn_nope', { summary: { processed: 1 } }, 'application/json', 404, 'NOT_FOUND'],
      ['PATCH', '/connected/con_nope', { name: 'x' }, 'application/merge-patch+json', 404, 'NOT_FOUND'],
    ];
    for (const [method, path, body, type, status, code] of cases) {
      const token = path.startsWith('/syncs/claim') || (method === 'PATCH' && path.startsWith('/syncs')) ? engine : admin;
      const response = await send(method, path, token, body, type);
      expect({ method, path, body, status: response.status, code: response.body?.error?.code }).toEqual({
        method,
        path,
        body,
        status,
        code,
      });
      expect(Object.keys(response.body).sort()).toEqual(['error', 'msg']);
    }
    // Every problem of the body's shape at once; then every problem of the members the application's kind takes.
    const listed = await send('POST', '/connected', admin, { application_id: applicationId, colour: 'red', name: 5, via: 'fax' });
    expect(listed.body.error.details.map((d: { parameter: string }) => d.parameter).sort()).toEqual(['colour', 'name', 'via']);
    const members = await send('POST', '/connected', admin, {
      application_id: applicationId,
      settings: { sync_interval: '2h', retry_attempts: 99, colour: 1 },
    });
    expect(members.body.error.details.map((d: { parameter: string }) => d.parameter).sort()).toEqual([
      'settings.colour',
      'settings.retry_attempts',
      'settings.sync_interval',
    ]);
    // Wrong in both ways at once: one 400 lists the shape's problems and the members' together.
    const both = await send('POST', '/connected', admin, {
      application_id: applicationId,
      name: 5,
      colour: 'red',
      settings: { retry_attempts: 99 },
      metadata: { currency: 'euro' },
    });
    expect(both.status).toBe(400);
    expect(both.body.error.details.map((d: { parameter: string }) => d.parameter).sort()).toEqual([
      'colour',
      'metadata.currency',
      'name',
      'settings.retry_attempts',
    ]);
    // An application the catalog does not have, with a shape problem and members no kind takes or types right.
    const unknown = await send('POST', '/connected', admin, {
      application_id: 'app_nope',
      via: 'fax',
      settings: { retry_attempts: 'x', colour: 1 },
    });
    expect(unknown.body.error.details.map((d: { parameter: string }) => d.parameter).sort()).toEqual([
      'application_id',
      'settings.colour',
      'settings.retry_attempts',
      'via',
    ]);
    // A container with a shape problem is not judged member by member as well.
    const notObject = await send('POST', '/connected', admin, { application_id: applicationId, via: 'fax', settings: [1] });
    expect(notObject.body.error.details.map((d: { parameter: string }) => d.parameter).sort()).toEqual(['settings', 'via']);
    const huge = await send('POST', '/connected', admin, { application_id: applicationId, description: 'x'.repeat(1_100_000) });
    expect([huge.status, huge.body.error.code]).toEqual([413, 'PAYLOAD_TOO_LARGE']);
    // Roles: a reader writes nothing, an engine changes no connection.
    expect((await send('POST', '/connected', reader, { application_id: applicationId })).status).toBe(403);
    expect((await send('POST', '/syncs/claim', reader, {})).status).toBe(403);
    expect((await send('PATCH', `/connected/con_nope`, engine, { name: 'x' }, 'application/merge-patch+json')).status).toBe(403);
    // No credential: 401 before the body is read.
    const anonymous = await t.gateway.fetch(`${ORIGIN}${BASE}/connected`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: 'x',
    });
    expect(anonymous.status).toBe(401);
    expect(await fingerprint()).toEqual(before);
  });
});

describe.each(databaseKinds)('Idempotency-Key on %s', (kind) => {
  let t: TestGateway;
  let admin: string;
  let engine: string;
  let applicationId: string;
  const fingerprint = () => writeFingerprint(t.db);

  async function post(path: string, token: string, body: unknown, key?: string) {
    const headers: Record<string, string> = { authorization: `Token ${token}`, 'content-type': 'application/json' };
    if (key !== undefined) headers['idempotency-key'] = key;
    const response = await t.gateway.fetch(`${ORIGIN}${BASE}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
    const text = await response.text();
    return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : null };
  }

  beforeAll(async () => {
    t = await createTestGateway(kind);
    admin = t.tenants.demo.adminToken;
    const user = await createServiceUser(t.db, { tenantId: t.tenants.demo.id, name: 'idempotency-engine', role: 'engine' });
    engine = (
      await createToken(t.db, { tenantId: t.tenants.demo.id, serviceUserId: user.id, expiresAt: new Date(Date.now() + 86_400_000) })
    ).token;
    const apps = await rest(t.gateway, `${BASE}/available?slug=eq.stripe&select=id`, { token: admin, expectStatus: 200 });
    applicationId = apps.body.data[0].id;
  });
  afterAll(() => t?.dispose());

  it('does a POST once per key: the repeat answers the same, a different body is 422, and nothing is written twice', async () => {
    const key = `create-${kind}-${Date.now()}`;
    const body = { application_id: applicationId, name: `Idempotent ${kind} ${Date.now()}` };
    const first = await post('/connected', admin, body, key);
    expect(first.status).toBe(201);
    const second = await post('/connected', admin, { name: body.name, application_id: applicationId }, key);
    expect([second.status, second.headers.get('idempotent-replayed'), second.headers.get('location')]).toEqual([
      201,
      'true',
      first.headers.get('location'),
    ]);
    expect(second.body).toEqual(first.body);
    const rows = await t.db.prisma.connection.count({ where: { name: body.name } });
    expect(rows).toBe(1);

    const before = await fingerprint();
    const reused = await post('/connected', admin, { ...body, description: 'another body' }, key);
    expect([reused.status, reused.body.error.code]).toEqual([422, 'IDEMPOTENCY_KEY_REUSED']);
    const otherRoute = await post('/syncs', admin, { connection_id: first.body.data.id }, key);
    expect([otherRoute.status, otherRoute.body.error.code]).toEqual([422, 'IDEMPOTENCY_KEY_REUSED']);
    const malformed = await post('/syncs', admin, { connection_id: first.body.data.id }, 'not a key with spaces');
    expect([malformed.status, malformed.body.error.code]).toEqual([400, 'INVALID_QUERY']);
    expect(await fingerprint()).toEqual(before);

    // A refused request leaves no key behind: fixed, the same key does the work.
    const refusedKey = `refused-${kind}-${Date.now()}`;
    expect((await post('/syncs', admin, { connection_id: 'con_nope' }, refusedKey)).status).toBe(404);
    const triggered = await post('/syncs', admin, { connection_id: first.body.data.id }, refusedKey);
    expect(triggered.status).toBe(201);
    const replayed = await post('/syncs', admin, { connection_id: first.body.data.id }, refusedKey);
    expect([replayed.status, replayed.body]).toEqual([201, triggered.body]);

    // A claim replays its run; a claim that found nothing replays nothing (204).
    const claimKey = `claim-${kind}-${Date.now()}`;
    const claimed = await post('/syncs/claim', engine, { connection_id: first.body.data.id }, claimKey);
    expect(claimed.status).toBe(200);
    expect(await post('/syncs/claim', engine, { connection_id: first.body.data.id }, claimKey)).toMatchObject({
      status: 200,
      body: claimed.body,
    });
    const emptyKey = `empty-${kind}-${Date.now()}`;
    expect((await post('/syncs/claim', engine, { connection_id: first.body.data.id }, emptyKey)).status).toBe(204);
    expect((await post('/syncs/claim', engine, { connection_id: first.body.data.id }, emptyKey)).status).toBe(204);
  });

  it('invites a member once per key: the repeat answers it without its code, another body is 422', async () => {
    const key = `invite-${kind}-${Date.now()}`;
    const email = `idempotent-${kind}-${Date.now()}@example.com`;
    const first = await post('/members', admin, { email, role: 'reader' }, key);
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    const replayed = await post('/members', admin, { role: 'reader', email }, key);
    expect([replayed.status, replayed.headers.get('idempotent-replayed')]).toEqual([200, 'true']);
    expect(replayed.body).toEqual({ ...first.body, data: { ...first.body.data, code: null, path: null } });
    // The repeat invited nobody again: the first code is the member's one invitation, and it still works.
    expect(await t.db.prisma.memberInvitation.count({ where: { member: { email } } })).toBe(1);

    const before = await fingerprint();
    const invitations = () => t.db.prisma.memberInvitation.findMany({ where: { member: { email } }, orderBy: { id: 'asc' } });
    const beforeInvitations = await invitations();
    const reused = await post('/members', admin, { email, role: 'admin' }, key);
    expect([reused.status, reused.body.error.code]).toEqual([422, 'IDEMPOTENCY_KEY_REUSED']);
    const elsewhere = await post('/connected', admin, { application_id: applicationId, name: `Invite key ${Date.now()}` }, key);
    expect([elsewhere.status, elsewhere.body.error.code]).toEqual([422, 'IDEMPOTENCY_KEY_REUSED']);
    expect(await fingerprint()).toEqual(before);
    expect(await invitations()).toEqual(beforeInvitations);

    const accepted = await t.gateway.fetch(`${ORIGIN}/api/v1/auth/invitations/${first.body.data.code}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ password: 'correct horse battery staple' }),
    });
    expect(accepted.status).toBe(200);
    const member = await t.db.prisma.member.findUniqueOrThrow({ where: { tenantId_email: { tenantId: t.tenants.demo.id, email } } });
    expect([member.role, member.passwordHash === null]).toEqual(['reader', false]);
  });

  it('lets concurrent requests with one key do the work once', async () => {
    const key = `concurrent-${kind}-${Date.now()}`;
    const body = { application_id: applicationId, name: `Concurrent ${kind} ${Date.now()}` };
    const answers = await Promise.all(Array.from({ length: 8 }, () => post('/connected', admin, body, key)));
    expect(answers.map((a) => a.status)).toEqual(Array(8).fill(201));
    expect(new Set(answers.map((a) => a.body.data.id)).size).toBe(1);
    expect(await t.db.prisma.connection.count({ where: { name: body.name } })).toBe(1);
  });

  it('keys are per tenant, and GraphQL mutations take the header too', async () => {
    const key = `shared-${kind}-${Date.now()}`;
    const mine = await post('/connected', admin, { application_id: applicationId, name: `Mine ${Date.now()}` }, key);
    const theirs = await post(
      '/connected',
      t.tenants.other.adminToken,
      { application_id: applicationId, name: `Theirs ${Date.now()}` },
      key,
    );
    expect([mine.status, theirs.status]).toEqual([201, 201]);
    expect(theirs.body.data.id).not.toBe(mine.body.data.id);
    const graphqlKey = `graphql-${kind}-${Date.now()}`;
    const run = async () => {
      const response = await t.gateway.fetch(`${ORIGIN}/graphql`, {
        method: 'POST',
        headers: { authorization: `Token ${admin}`, 'content-type': 'application/json', 'idempotency-key': graphqlKey },
        body: JSON.stringify({ query: 'mutation($c: ID!) { triggerSync(connectionId: $c) { id } }', variables: { c: mine.body.data.id } }),
      });
      return (await response.json()) as { data?: { triggerSync: { id: string } }; errors?: unknown };
    };
    const first = await run();
    const second = await run();
    expect(second.data?.triggerSync.id).toBe(first.data?.triggerSync.id);
    expect(second.errors).toBeUndefined();
  });
});
