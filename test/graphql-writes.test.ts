// The write side through GraphQL, on both databases: connect → trigger → claim → progress → finish, the state
// machines' refusals (409, row unchanged), input problems (400 listing each, nothing written), roles (403) and
// tenants (404), and deletion failing the active runs.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseKinds } from './fixtures/databases.js';
import { writeFingerprint } from './fixtures/fingerprint.js';
import { createTestGateway, graphql, type TestGateway } from './fixtures/gateway.js';
import { BASE, rest } from './fixtures/rest.js';

const CONNECTION_FIELDS = 'id name slug status applicationId applicationName settings { syncInterval retryAttempts webhookEnabled }';
const SYNC_FIELDS =
  'id status connectionId startedAt finishedAt errorMessage attempt retryOfId workerId leaseExpiresAt summary { queued processed inserted updated deleted estimatedItems errors }';

describe.each(databaseKinds)('GraphQL writes on %s', (kind) => {
  let t: TestGateway;
  let admin: string;
  let reader: string;
  let engine: string;
  let applicationId: string;
  let otherConnectionId: string;

  async function ok<T = any>(query: string, variables: Record<string, unknown>, token: string): Promise<T> {
    const { body } = await graphql<T>(t.gateway, query, { token, variables, expectOk: true });
    return body.data as T;
  }

  async function refused(query: string, variables: Record<string, unknown>, token: string) {
    const { status, body } = await graphql(t.gateway, query, { token, variables });
    return {
      status,
      code: body.errors?.[0]?.extensions?.code as string | undefined,
      message: body.errors?.[0]?.message ?? '',
      details: body.errors?.[0]?.extensions?.details as unknown,
    };
  }

  const fingerprint = () => writeFingerprint(t.db);

  beforeAll(async () => {
    t = await createTestGateway(kind);
    admin = t.tenants.demo.adminToken;
    reader = t.tenants.demo.readerToken;
    const user = await ok<{ createServiceUser: { id: string } }>(
      'mutation { createServiceUser(name: "writes-test-engine", role: engine) { id } }',
      {},
      admin,
    );
    const token = await ok<{ createToken: { token: string } }>(
      'mutation($u: ID!, $e: DateTime!) { createToken(serviceUserId: $u, expiresAt: $e) { token } }',
      { u: user.createServiceUser.id, e: new Date(Date.now() + 86_400_000).toISOString() },
      admin,
    );
    engine = token.createToken.token;
    const apps = await rest(t.gateway, `${BASE}/available?slug=eq.stripe&select=id`, { token: reader, expectStatus: 200 });
    applicationId = apps.body.data[0].id;
    const other = await rest(t.gateway, `${BASE}/connected?limit=1&select=id`, { token: t.tenants.other.adminToken, expectStatus: 200 });
    otherConnectionId = other.body.data[0].id;
  });
  afterAll(() => t?.dispose());

  const CREATE = `mutation($input: CreateConnectionInput!) { createConnection(input: $input) { ${CONNECTION_FIELDS} } }`;
  const UPDATE = `mutation($id: ID!, $input: UpdateConnectionInput!) { updateConnection(id: $id, input: $input) { ${CONNECTION_FIELDS} } }`;
  const TRIGGER = `mutation($c: ID!) { triggerSync(connectionId: $c, estimatedItems: 40) { ${SYNC_FIELDS} } }`;
  const CLAIM = `mutation($c: ID, $lease: Int) { claimSync(connectionId: $c, leaseSeconds: $lease) { ${SYNC_FIELDS} } }`;
  const PROGRESS = `mutation($id: ID!, $summary: JSONObject!) { reportSyncProgress(id: $id, summary: $summary) { ${SYNC_FIELDS} } }`;
  const FINISH = `mutation($id: ID!, $input: FinishSyncInput!) { finishSync(id: $id, input: $input) { ${SYNC_FIELDS} } }`;

  it('runs connect → trigger → claim → progress → finish, and the run reads on REST like a seeded one', async () => {
    const name = `Stripe writes ${kind} ${Date.now()}`;
    const { createConnection: created } = await ok(
      CREATE,
      { input: { applicationId, name, settings: { syncInterval: '1h', retryAttempts: 2 } } },
      admin,
    );
    expect(created).toMatchObject({ name, status: 'pending', applicationId, settings: { syncInterval: '1h', retryAttempts: 2 } });

    const { triggerSync: queued } = await ok(TRIGGER, { c: created.id }, admin);
    expect(queued).toMatchObject({
      status: 'pending',
      connectionId: created.id,
      attempt: 1,
      finishedAt: null,
      summary: { queued: true, estimatedItems: 40 },
    });
    const second = await refused(TRIGGER, { c: created.id }, admin);
    expect(second).toMatchObject({ status: 409, code: 'CONFLICT' });
    expect(second.message).toContain(queued.id);

    const { claimSync: claimed } = await ok(CLAIM, { c: created.id, lease: 60 }, engine);
    expect(claimed).toMatchObject({
      id: queued.id,
      status: 'in_progress',
      workerId: expect.any(String),
      leaseExpiresAt: expect.any(String),
    });
    expect((await ok(CLAIM, { c: created.id }, engine)).claimSync).toBeNull();

    const { reportSyncProgress: progressed } = await ok(
      PROGRESS,
      { id: queued.id, summary: { processed: 10, estimatedItems: 42 } },
      engine,
    );
    expect(progressed.summary).toMatchObject({ processed: 10, estimatedItems: 42 });
    expect(Date.parse(progressed.leaseExpiresAt)).toBeGreaterThanOrEqual(Date.parse(claimed.leaseExpiresAt));

    const { finishSync: finished } = await ok(
      FINISH,
      { id: queued.id, input: { status: 'success', summary: { processed: 42, inserted: 30, updated: 10, deleted: 2 } } },
      engine,
    );
    expect(finished).toMatchObject({
      status: 'success',
      finishedAt: expect.any(String),
      leaseExpiresAt: null,
      summary: { processed: 42, inserted: 30, updated: 10, deleted: 2 },
    });

    // The connection's first success makes it active.
    const connection = await rest(t.gateway, `${BASE}/connected/${created.id}`, { token: reader, expectStatus: 200 });
    expect(connection.body.data[0]?.status ?? connection.body.data.status).toBe('active');
    // A run written through the API has exactly the keys of a seeded run on REST.
    const viaApi = await rest(t.gateway, `${BASE}/syncs/${queued.id}`, { token: reader, expectStatus: 200 });
    const seeded = await rest(t.gateway, `${BASE}/syncs?limit=1&status=eq.success`, { token: reader, expectStatus: 200 });
    const item = (body: any) => (Array.isArray(body.data) ? body.data[0] : body.data);
    expect(Object.keys(item(viaApi.body)).sort()).toEqual(Object.keys(seeded.body.data[0]).sort());
    expect(JSON.parse(item(viaApi.body).summary)).toEqual({ processed: 42, inserted: 30, updated: 10, deleted: 2 });

    // Nothing leaves success: a second outcome is a CONFLICT naming the status, and the row stays.
    const before = await fingerprint();
    const again = await refused(FINISH, { id: queued.id, input: { status: 'failed', errorMessage: 'late' } }, engine);
    expect(again).toMatchObject({ status: 409, code: 'CONFLICT' });
    expect(again.message).toMatch(/success/);
    expect(await fingerprint()).toEqual(before);
  });

  it('refuses bad input with 400 listing every problem, and writes nothing', async () => {
    const before = await fingerprint();
    const bad = await refused(
      CREATE,
      { input: { applicationId, settings: { syncInterval: '2h', retryAttempts: 11, colour: 'red' }, metadata: { nope: 1 } } },
      admin,
    );
    expect(bad).toMatchObject({ status: 400, code: 'INVALID_QUERY' });
    // Problems name the GraphQL path of each member, camelCase as the inputs are.
    for (const field of ['input.settings.syncInterval', 'input.settings.retryAttempts', 'input.settings.colour', 'input.metadata.nope'])
      expect(bad.message).toContain(field);
    expect(bad.details).toContainEqual({ field: 'input.settings.retryAttempts', message: expect.any(String) });
    // A shape problem (an empty name) and member problems together: one error naming all of them.
    const both = await refused(
      CREATE,
      { input: { applicationId, name: '  ', settings: { retryAttempts: 11 }, metadata: { nope: 1 } } },
      admin,
    );
    expect(both).toMatchObject({ status: 400, code: 'INVALID_QUERY' });
    for (const field of ['input.name', 'input.settings.retryAttempts', 'input.metadata.nope']) expect(both.message).toContain(field);
    const unknownApp = await refused(CREATE, { input: { applicationId: 'app_doesnotexist' } }, admin);
    expect(unknownApp).toMatchObject({ status: 400, code: 'INVALID_QUERY' });
    expect(unknownApp.message).toContain('input.applicationId');
    expect(unknownApp.message).not.toContain('application_id');
    // A member in the REST body's snake_case is refused, with the camelCase name to write instead.
    const snake = await refused(CREATE, { input: { applicationId, settings: { sync_interval: '1h' } } }, admin);
    expect(snake).toMatchObject({ status: 400, code: 'INVALID_QUERY' });
    expect(snake.message).toContain('write syncInterval');
    const badReport = await refused(FINISH, { id: 'syn_x', input: { status: 'failed' } }, engine);
    expect(badReport).toMatchObject({ status: 400, code: 'INVALID_QUERY' });
    expect(badReport.message).toContain('input.errorMessage');
    expect(await fingerprint()).toEqual(before);
  });

  it('enforces the connection state machine with 409, leaving the row unchanged', async () => {
    const { createConnection: created } = await ok(CREATE, { input: { applicationId, name: `SM ${kind} ${Date.now()}` } }, admin);
    const before = await fingerprint();
    for (const status of ['active', 'paused', 'error']) {
      const refusedChange = await refused(UPDATE, { id: created.id, input: { status } }, admin);
      expect({ to: status, ...refusedChange }).toMatchObject({ to: status, status: 409, code: 'CONFLICT' });
      expect(refusedChange.message).toMatch(/pending/);
    }
    expect(await fingerprint()).toEqual(before);
    // A merge patch: null removes a settings member; other members stay.
    const { updateConnection: patched } = await ok(
      UPDATE,
      { id: created.id, input: { description: null, settings: { retryAttempts: 5 } } },
      admin,
    );
    expect(patched.settings.retryAttempts).toBe(5);
  });

  it('checks permissions per role (403) and scopes every write to the tenant (404)', async () => {
    const before = await fingerprint();
    expect(await refused(CREATE, { input: { applicationId } }, reader)).toMatchObject({ status: 403, code: 'UNAUTHORIZED' });
    expect(await refused(CREATE, { input: { applicationId } }, engine)).toMatchObject({ status: 403, code: 'UNAUTHORIZED' });
    expect(await refused(TRIGGER, { c: otherConnectionId }, engine)).toMatchObject({ status: 403, code: 'UNAUTHORIZED' });
    // claimSync is nullable (null: nothing due), so its refusal is a field error in a 200 (GraphQL over HTTP).
    expect(await refused(CLAIM, {}, reader)).toMatchObject({ status: 200, code: 'UNAUTHORIZED' });
    expect(await refused('mutation($id: ID!) { deleteConnection(id: $id) { id } }', { id: otherConnectionId }, engine)).toMatchObject({
      status: 403,
    });
    // Another tenant's ids are not found, for every write that takes one.
    expect(await refused(UPDATE, { id: otherConnectionId, input: { name: 'x' } }, admin)).toMatchObject({ status: 404, code: 'NOT_FOUND' });
    expect(await refused(TRIGGER, { c: otherConnectionId }, admin)).toMatchObject({ status: 404, code: 'NOT_FOUND' });
    expect((await ok(CLAIM, { c: otherConnectionId }, engine)).claimSync).toBeNull();
    expect(await refused('mutation($id: ID!) { deleteConnection(id: $id) { id } }', { id: otherConnectionId }, admin)).toMatchObject({
      status: 404,
    });
    expect(await fingerprint()).toEqual(before);
  });

  it('deleting a connection fails its active runs; a late report on one is a CONFLICT', async () => {
    const { createConnection: created } = await ok(CREATE, { input: { applicationId, name: `Del ${kind} ${Date.now()}` } }, admin);
    const { triggerSync: queued } = await ok(TRIGGER, { c: created.id }, admin);
    await ok(CLAIM, { c: created.id }, engine);
    await ok('mutation($id: ID!) { deleteConnection(id: $id) { id } }', { id: created.id }, admin);
    const run = await rest(t.gateway, `${BASE}/syncs/${queued.id}`, { token: reader, expectStatus: 200 });
    const item = Array.isArray(run.body.data) ? run.body.data[0] : run.body.data;
    expect([item.status, item.error_message]).toEqual(['failed', 'connection deleted']);
    const late = await refused(PROGRESS, { id: queued.id, summary: { processed: 1 } }, engine);
    expect(late).toMatchObject({ status: 409, code: 'CONFLICT' });
  });

  it("says when the scheduler queues a connection's next run, and none while a run is under way or it is paused", async () => {
    const NEXT = 'query($id: ID!) { connection(id: $id) { status nextScheduledRunAt syncs(limit: 1) { startedAt } } }';
    const next = async (id: string) => (await ok(NEXT, { id }, reader)).connection;
    const { createConnection: created } = await ok(
      CREATE,
      { input: { applicationId, name: `Scheduled ${kind} ${Date.now()}`, settings: { syncInterval: '6h' } } },
      admin,
    );
    // Never ran: due now, at the scheduler's next tick.
    const before = Date.now();
    const fresh = await next(created.id);
    expect(Math.abs(Date.parse(fresh.nextScheduledRunAt) - before)).toBeLessThan(60_000);
    // A run queued, then under way: none, the next counts from its start.
    const { triggerSync: queued } = await ok(TRIGGER, { c: created.id }, admin);
    expect((await next(created.id)).nextScheduledRunAt).toBeNull();
    await ok(CLAIM, { c: created.id }, engine);
    expect((await next(created.id)).nextScheduledRunAt).toBeNull();
    await ok(FINISH, { id: queued.id, input: { status: 'success', summary: { processed: 1 } } }, engine);
    // Finished: six hours after it started.
    const finished = await next(created.id);
    expect(Date.parse(finished.nextScheduledRunAt)).toBe(Date.parse(finished.syncs[0].startedAt) + 6 * 3_600_000);
    // Without a sync interval, and while paused: none.
    await ok(UPDATE, { id: created.id, input: { settings: { syncInterval: null } } }, admin);
    expect((await next(created.id)).nextScheduledRunAt).toBeNull();
    await ok(UPDATE, { id: created.id, input: { settings: { syncInterval: '15m' }, status: 'paused' } }, admin);
    expect(await next(created.id)).toMatchObject({ status: 'paused', nextScheduledRunAt: null });
    await ok(UPDATE, { id: created.id, input: { status: 'active' } }, admin);
    // Resumed with a shorter interval: 15 minutes after the last start, still ahead.
    const resumed = await next(created.id);
    expect(Date.parse(resumed.nextScheduledRunAt)).toBe(Date.parse(resumed.syncs[0].startedAt) + 15 * 60_000);
  });

  it("a run keeps its connection's name once the connection is deleted (GraphQL only; REST keeps the spec's fields)", async () => {
    const name = `Renamed away ${kind} ${Date.now()}`;
    const { createConnection: created } = await ok(CREATE, { input: { applicationId, name: `Before ${name}` } }, admin);
    const { triggerSync: queued } = await ok(TRIGGER, { c: created.id }, admin);
    await ok(UPDATE, { id: created.id, input: { name } }, admin);
    const RUN = 'query($id: ID!) { sync(id: $id) { connectionId connectionName connection { id name } } }';
    expect((await ok(RUN, { id: queued.id }, reader)).sync).toEqual({
      connectionId: created.id,
      connectionName: name,
      connection: { id: created.id, name },
    });
    await ok('mutation($id: ID!) { deleteConnection(id: $id) { id } }', { id: created.id }, admin);
    expect((await ok(RUN, { id: queued.id }, reader)).sync).toEqual({ connectionId: created.id, connectionName: name, connection: null });
    // In a list too, with a live connection's run beside it: one statement names them all.
    const listed = await ok<{ syncs: { nodes: { id: string; connectionName: string; connection: { name: string } | null }[] } }>(
      'query($c: ID) { syncs(connectionId: $c, limit: 5) { nodes { id connectionName connection { name } } } }',
      { c: created.id },
      reader,
    );
    expect(listed.syncs.nodes.map((node) => [node.id, node.connectionName, node.connection])).toEqual([[queued.id, name, null]]);
    const record = await rest(t.gateway, `${BASE}/syncs/${queued.id}`, { token: reader, expectStatus: 200 });
    const item = Array.isArray(record.body.data) ? record.body.data[0] : record.body.data;
    expect(item).not.toHaveProperty('connection_name');
  });
});
