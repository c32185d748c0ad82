// The live surfaces, on both databases, driven by real runs through the REST API: GraphQL
// subscriptions over SSE, REST event streams (one run, one connection's runs), resumption with Last-Event-ID
// and the retention error, revoked credentials closing streams, the caps on open streams, heartbeats, and
// tenant isolation (another tenant's subscriber sees nothing).
import type { AddressInfo } from 'node:net';
import { createClient } from 'graphql-ws';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import WebSocket from 'ws';
import { createServiceUser } from '../src/auth/service-users.js';
import { createToken, revokeToken } from '../src/auth/tokens.js';
import { createHttpServer } from '../src/http/http-server.js';
import { attachGraphqlWebSocket } from '../src/http/graphql-ws.js';
import { createLogger } from '../src/logger.js';
import { databaseKinds } from './fixtures/databases.js';
import { createTestGateway, gatewayOver, type TestGateway } from './fixtures/gateway.js';
import { BASE, ORIGIN } from './fixtures/rest.js';
import { readSse, type SseReader } from './fixtures/sse.js';

describe.each(databaseKinds)('live on %s', (kind) => {
  let t: TestGateway;
  let admin: string;
  let reader: string;
  let engine: string;
  let applicationId: string;
  const open: SseReader[] = [];

  async function api(method: string, path: string, token: string, body?: unknown) {
    const response = await t.gateway.fetch(`${ORIGIN}${BASE}${path}`, {
      method,
      headers: { authorization: `Token ${token}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : null };
  }

  async function restStream(path: string, token: string | null, headers: Record<string, string> = {}, gateway = t.gateway) {
    const response = await gateway.fetch(`${ORIGIN}${BASE}${path}`, {
      headers: { accept: 'text/event-stream', ...(token ? { authorization: `Token ${token}` } : {}), ...headers },
    });
    if (!(response.headers.get('content-type') ?? '').startsWith('text/event-stream')) return { response, body: await response.json() };
    const reader = readSse(response);
    open.push(reader);
    return { response, reader };
  }

  async function graphqlStream(query: string, token: string) {
    const response = await t.gateway.fetch(`${ORIGIN}/graphql`, {
      method: 'POST',
      headers: { authorization: `Token ${token}`, 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ query }),
    });
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const reader = readSse(response);
    open.push(reader);
    return reader;
  }

  async function connect(name: string): Promise<string> {
    const created = await api('POST', '/connected', admin, {
      application_id: applicationId,
      name: `${name} ${kind} ${Date.now()}`,
      settings: { sync_interval: null, retry_attempts: 0 },
    });
    expect(created.status).toBe(201);
    return created.body.data.id;
  }

  /** trigger → claim → two progress reports → finish (success or failed); the run's id. */
  async function runOnce(connectionId: string, outcome: 'success' | 'failed' = 'success'): Promise<string> {
    const queued = await api('POST', '/syncs', admin, { connection_id: connectionId });
    expect(queued.status).toBe(201);
    const id = queued.body.data.id;
    expect((await api('POST', '/syncs/claim', engine, { connection_id: connectionId })).status).toBe(200);
    expect((await api('PATCH', `/syncs/${id}`, engine, { summary: { processed: 10, estimated_items: 40 } })).status).toBe(200);
    // Past the hub's progress coalescing window, so both reports are delivered.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await api('PATCH', `/syncs/${id}`, engine, { summary: { processed: 30, estimated_items: 40 } })).status).toBe(200);
    const finish =
      outcome === 'success'
        ? { status: 'success', summary: { processed: 40, inserted: 1, updated: 38, deleted: 1 } }
        : { status: 'failed', error_message: 'upstream 500', summary: { errors: ['upstream 500'], processed: 30 } };
    expect((await api('PATCH', `/syncs/${id}`, engine, finish)).status).toBe(200);
    return id;
  }

  beforeAll(async () => {
    t = await createTestGateway(kind, { live: { heartbeatMs: 200 } });
    admin = t.tenants.demo.adminToken;
    reader = t.tenants.demo.readerToken;
    const user = await createServiceUser(t.db, { tenantId: t.tenants.demo.id, name: 'live-engine', role: 'engine' });
    engine = (
      await createToken(t.db, { tenantId: t.tenants.demo.id, serviceUserId: user.id, expiresAt: new Date(Date.now() + 86_400_000) })
    ).token;
    const apps = await api('GET', '/available?slug=eq.stripe&select=id', reader);
    applicationId = apps.body.data[0].id;
  });
  afterAll(async () => {
    await Promise.all(open.map((stream) => stream.close()));
    await t?.dispose();
  });

  it('delivers every change in order to a GraphQL SSE subscriber and a REST connection stream, and nothing to another tenant', async () => {
    const connectionId = await connect('Live A');
    const subscriber = await graphqlStream(
      `subscription { syncChanged(connectionId: "${connectionId}") { id connectionId status summary { processed } finishedAt } }`,
      reader,
    );
    const stream = await restStream(`/syncs?connection_id=${connectionId}`, reader);
    const outsider = await graphqlStream('subscription { syncChanged { id status } }', t.tenants.other.readerToken);
    const outsiderRest = await restStream('/syncs', t.tenants.other.readerToken);

    const first = await runOnce(connectionId, 'success');
    const second = await runOnce(connectionId, 'failed');
    const expected = [
      [first, 'pending', null],
      [first, 'in_progress', 0],
      [first, 'in_progress', 10],
      [first, 'in_progress', 30],
      [first, 'success', 40],
      [second, 'pending', null],
      [second, 'in_progress', 0],
      [second, 'in_progress', 10],
      [second, 'in_progress', 30],
      [second, 'failed', 30],
    ];
    const graphqlMessages = await subscriber.waitFor(expected.length);
    const seen = graphqlMessages.map((m) => JSON.parse(m.data).data.syncChanged).map((s) => [s.id, s.status, s.summary.processed]);
    expect(seen).toEqual(expected);
    expect(graphqlMessages.every((m) => m.event === 'next')).toBe(true);

    const restMessages = (await stream.reader!.waitFor(expected.length)).slice(0, expected.length);
    expect(restMessages.map((m) => m.event)).toEqual(expected.map(() => 'sync'));
    const records = restMessages.map((m) => JSON.parse(m.data));
    expect(records.map((r) => [r.id, r.status])).toEqual(expected.map(([id, status]) => [id, status]));
    // Ids are the event log's: increasing, one per message.
    const ids = restMessages.map((m) => Number(m.id));
    expect(ids.every((id, i) => i === 0 || id > ids[i - 1]!)).toBe(true);
    // Each message is the REST sync record, exactly: the last one equals GET /syncs/{id}.
    const read = await api('GET', `/syncs/${second}`, reader);
    expect(records.at(-1)).toEqual(read.body.data);
    expect(Object.keys(records[0]).sort()).toEqual(Object.keys(read.body.data).sort());

    // Another tenant's subscribers saw none of it.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(outsider.messages).toEqual([]);
    expect(outsiderRest.reader!.messages).toEqual([]);
    // Heartbeats keep idle streams open.
    expect(outsiderRest.reader!.comments).toContain('heartbeat');
  });

  it('streams one run from its current state to its terminal status, then ends', async () => {
    const connectionId = await connect('Live B');
    const queued = await api('POST', '/syncs', admin, { connection_id: connectionId });
    const id = queued.body.data.id;
    const stream = await restStream(`/syncs/${id}`, reader);
    expect(stream.response.status).toBe(200);
    const [snapshot] = await stream.reader!.waitFor(1);
    expect(JSON.parse(snapshot!.data)).toEqual(queued.body.data);
    expect((await api('POST', '/syncs/claim', engine, { connection_id: connectionId })).status).toBe(200);
    expect(
      (await api('PATCH', `/syncs/${id}`, engine, { status: 'success', summary: { processed: 1, inserted: 1, updated: 0, deleted: 0 } }))
        .status,
    ).toBe(200);
    await stream.reader!.ended;
    expect(stream.reader!.messages.map((m) => JSON.parse(m.data).status)).toEqual(['pending', 'in_progress', 'success']);
    // A finished run: its state, and the stream ends at once.
    const again = await restStream(`/syncs/${id}`, reader);
    await again.reader!.ended;
    expect(again.reader!.messages.map((m) => JSON.parse(m.data).status)).toEqual(['success']);
    // GraphQL: the same run, ended after its terminal status.
    const subscriber = await graphqlStream(`subscription { syncChanged(syncId: "${id}") { status } }`, reader);
    await subscriber.ended;
    expect(subscriber.messages.filter((m) => m.event === 'next').map((m) => JSON.parse(m.data).data.syncChanged.status)).toEqual([
      'success',
    ]);
    // Without the header the same request is the usual JSON.
    expect((await api('GET', `/syncs/${id}`, reader)).body.data.status).toBe('success');
  });

  it('resumes after Last-Event-ID from the event log, and says so when retention deleted what it would replay', async () => {
    const connectionId = await connect('Live C');
    const stream = await restStream(`/syncs?connection_id=${connectionId}`, reader);
    await runOnce(connectionId);
    const all = await stream.reader!.waitFor(5);
    await stream.reader!.close();
    const resumed = await restStream(`/syncs?connection_id=${connectionId}`, reader, { 'last-event-id': all[1]!.id! });
    const replay = await resumed.reader!.waitFor(3);
    expect(replay.map((m) => [m.id, m.data])).toEqual(all.slice(2, 5).map((m) => [m.id, m.data]));
    await resumed.reader!.close();

    // A Last-Event-ID no event has yet, or not an id: 400 before any stream.
    const future = await restStream(`/syncs?connection_id=${connectionId}`, reader, { 'last-event-id': '999999999' });
    expect([future.response.status, future.body?.error?.code]).toEqual([400, 'INVALID_QUERY']);
    const malformed = await restStream(`/syncs/${all[0] && JSON.parse(all[0].data).id}`, reader, { 'last-event-id': 'abc' });
    expect([malformed.response.status, malformed.body?.error?.code]).toEqual([400, 'INVALID_QUERY']);

    // Retention deleted the events after the resume point: an error event, then the end.
    await t.db.raw.query('DELETE FROM events WHERE tenant_id = $1 AND id <= $2', [t.tenants.demo.id, Number(all[3]!.id)]);
    const expired = await restStream(`/syncs?connection_id=${connectionId}`, reader, { 'last-event-id': all[1]!.id! });
    await expired.reader!.ended;
    expect(expired.reader!.messages.map((m) => m.event)).toEqual(['error']);
    expect(JSON.parse(expired.reader!.messages[0]!.data)).toMatchObject({ error: { code: 'EVENTS_EXPIRED' } });
  });

  it('closes the streams of a revoked credential within 5 s', async () => {
    const user = await createServiceUser(t.db, { tenantId: t.tenants.demo.id, name: `live-revoked-${Date.now()}`, role: 'reader' });
    const created = await createToken(t.db, {
      tenantId: t.tenants.demo.id,
      serviceUserId: user.id,
      expiresAt: new Date(Date.now() + 86_400_000),
    });
    const stream = await restStream('/syncs', created.token);
    const subscriber = await graphqlStream('subscription { syncChanged { id } }', created.token);
    const revokedAt = performance.now();
    expect(await revokeToken(t.db, created.id)).toBe('revoked');
    await Promise.all([stream.reader!.ended, subscriber.ended]);
    expect(performance.now() - revokedAt).toBeLessThan(5000);
    expect(stream.reader!.messages.at(-1)).toMatchObject({ event: 'error' });
    expect(JSON.parse(stream.reader!.messages.at(-1)!.data)).toMatchObject({ error: { code: 'UNAUTHORIZED' } });
    expect(JSON.parse(subscriber.messages.find((m) => m.event === 'next')!.data)).toMatchObject({
      errors: [{ extensions: { code: 'UNAUTHORIZED' } }],
    });
    // And it cannot open another one.
    const refused = await restStream('/syncs', created.token);
    expect(refused.response.status).toBe(401);
  });

  it("refuses what a stream cannot serve: no credential, another tenant's ids, unknown parameters", async () => {
    const anonymous = await restStream('/syncs', null);
    expect([anonymous.response.status, anonymous.body.error.code]).toEqual([401, 'UNAUTHORIZED']);
    const theirs = await api('GET', '/syncs?limit=1', t.tenants.other.readerToken);
    const foreign = await restStream(`/syncs/${theirs.body.data[0].id}`, reader);
    expect([foreign.response.status, foreign.body.error.code]).toEqual([404, 'NOT_FOUND']);
    const foreignConnection = await restStream(`/syncs?connection_id=${theirs.body.data[0].connection_id}`, reader);
    expect([foreignConnection.response.status, foreignConnection.body.error.code]).toEqual([404, 'NOT_FOUND']);
    const unknownParam = await restStream('/syncs?status=eq.failed&limit=5', reader);
    expect([unknownParam.response.status, unknownParam.body.error.code]).toEqual([400, 'INVALID_QUERY']);
    expect(unknownParam.body.msg).toContain("'status'");
    const gql = await t.gateway.fetch(`${ORIGIN}/graphql`, {
      method: 'POST',
      headers: { authorization: `Token ${reader}`, 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ query: `subscription { syncChanged(syncId: "${theirs.body.data[0].id}") { id } }` }),
    });
    const text = await gql.text();
    expect(text).toContain('NOT_FOUND');
    expect(text).not.toContain(theirs.body.data[0].connection_id);
  });

  it('caps open streams per credential (429) and per process (503)', async () => {
    // In-process, a closed reader is noticed at the stream's next write: heartbeats every 50 ms.
    const capped = gatewayOver(t.db, { live: { limits: { stream: { perCredential: 2, perProcess: 3 } }, heartbeatMs: 50 } });
    try {
      const a = await restStream('/syncs', reader, {}, capped);
      const b = await restStream('/syncs', reader, {}, capped);
      const third = await restStream('/syncs', reader, {}, capped);
      expect([third.response.status, third.body.error.code]).toEqual([429, 'RATE_LIMITED']);
      expect(third.response.headers.get('retry-after')).toBe('5');
      const c = await restStream('/syncs', admin, {}, capped);
      const full = await restStream('/syncs', admin, {}, capped);
      expect([full.response.status, full.body.error.code]).toEqual([503, 'UNAVAILABLE']);
      const metrics = await (await capped.fetch(`${ORIGIN}/metrics`)).text();
      expect(metrics).toContain('live_open_streams{kind="streams"} 3');
      // A closed stream gives its slot back.
      await a.reader!.close();
      await vi.waitFor(
        async () => expect(await (await capped.fetch(`${ORIGIN}/metrics`)).text()).toContain('live_open_streams{kind="streams"} 2'),
        {
          timeout: 5_000,
        },
      );
      const d = await restStream('/syncs', reader, {}, capped);
      expect(d.response.status).toBe(200);
      await Promise.all([b, c, d].map((s) => s.reader!.close()));
    } finally {
      await capped.dispose();
    }
  });

  it('serves the same subscriptions over graphql-ws: every change in order, the credential from connection_init, a refused one closed with 4401', async () => {
    const server = createHttpServer(t.gateway, { logger: createLogger('silent') });
    const closeSockets = attachGraphqlWebSocket(server, t.gateway, createLogger('silent'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}/graphql`;
    const client = (authorization: string) =>
      createClient({ url, webSocketImpl: WebSocket, connectionParams: { Authorization: authorization }, retryAttempts: 0, lazy: true });
    const ws = client(`Token ${reader}`);
    try {
      const connectionId = await connect('Live WS');
      const received: Array<{ id: string; status: string }> = [];
      let completed!: () => void;
      const done = new Promise<void>((resolve) => (completed = resolve));
      // Subscribed once the hub counts one more subscriber: the stream's start is fixed before that.
      const before = t.gateway.live.hub.stats().subscribers;
      const subscribed = (async () => {
        while (t.gateway.live.hub.stats().subscribers <= before) await new Promise((resolve) => setTimeout(resolve, 20));
      })();
      const unsubscribe = ws.subscribe<{ syncChanged: { id: string; status: string } }>(
        { query: `subscription { syncChanged(connectionId: "${connectionId}") { id status } }` },
        {
          next: (result) => {
            received.push(result.data!.syncChanged);
            if (result.data!.syncChanged.status === 'success') completed();
          },
          error: (error) => {
            throw error;
          },
          complete: () => {},
        },
      );
      await subscribed;
      const id = await runOnce(connectionId);
      await Promise.race([done, new Promise((resolve) => setTimeout(resolve, 10_000))]);
      unsubscribe();
      expect(received.map((r) => [r.id, r.status])).toEqual([
        [id, 'pending'],
        [id, 'in_progress'],
        [id, 'in_progress'],
        [id, 'in_progress'],
        [id, 'success'],
      ]);

      // An unknown credential: the connection is refused at connection_init (4401), before any operation.
      const refusedClient = client('Token igw_pat_unknown_000000000000000000000000');
      const refused = await new Promise<unknown>((resolve) => {
        refusedClient.subscribe(
          { query: 'subscription { syncChanged { id } }' },
          { next: resolve, error: resolve, complete: () => resolve(null) },
        );
      });
      expect((refused as { code?: number }).code).toBe(4401);
      await refusedClient.dispose();
    } finally {
      await ws.dispose();
      await closeSockets();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it('documents the streams in the OpenAPI document', async () => {
    const response = await t.gateway.fetch(`${ORIGIN}/api/v1/openapi.json`);
    const document = await response.json();
    // Each stream is an operation of its own (`…/events`), so that the JSON operation's 200 is JSON only and a
    // generated client types it as such; the JSON operation names it for the Accept form of the same path.
    for (const path of [`${BASE}/syncs`, `${BASE}/syncs/{id}`]) {
      const json = document.paths[path].get;
      expect(Object.keys(json.responses['200'].content)).toEqual(['application/json']);
      const stream = document.paths[`${path}/events`].get;
      expect(json['x-event-stream-operation']).toBe(stream.operationId);
      expect(Object.keys(stream.responses['200'].content)).toEqual(['text/event-stream']);
      expect(stream.parameters.map((p: { name: string }) => p.name)).toContain('Last-Event-ID');
    }
  });
});
