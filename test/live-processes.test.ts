// Live across processes: two real servers (`node dist/server.js`, what `npm start` runs) on one
// PostgreSQL database. Subscribers on process A (REST event stream, GraphQL over SSE, graphql-ws) see runs
// written through process B, in order; a token revoked while its streams are open on A closes them within 5 s.
import { createClient } from 'graphql-ws';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import WebSocket from 'ws';
import { createServiceUser } from '../src/auth/service-users.js';
import { createToken, revokeToken } from '../src/auth/tokens.js';
import { createTestDatabase, type TestDatabase } from './fixtures/databases.js';
import type { TestTenants } from './fixtures/gateway.js';
import { startServer, type RunningServer } from './fixtures/server-process.js';
import { readSse, type SseReader } from './fixtures/sse.js';

const BASE = '/api/v1/integrations';

describe.skipIf(!process.env.TEST_DATABASE_URL)('live across two server processes on one PostgreSQL database', () => {
  let db: TestDatabase;
  let tenants: TestTenants;
  let a: RunningServer;
  let b: RunningServer;
  let engine: string;
  const streams: SseReader[] = [];

  async function api(server: RunningServer, method: string, path: string, token: string, body?: unknown) {
    const response = await fetch(`${server.url}${BASE}${path}`, {
      method,
      headers: { authorization: `Token ${token}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : null };
  }

  async function sse(url: string, token: string, init: RequestInit = {}): Promise<SseReader> {
    const response = await fetch(url, {
      ...init,
      headers: { accept: 'text/event-stream', authorization: `Token ${token}`, ...(init.headers ?? {}) },
    });
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const reader = readSse(response);
    streams.push(reader);
    return reader;
  }

  beforeAll(async () => {
    const seeded = inject('seededDatabases').postgres!;
    tenants = seeded.tenants;
    db = await createTestDatabase('postgres', { template: seeded.template });
    const env = { DATABASE_URL: db.url!, SEED: 'none', SCHEDULER: 'off' };
    [a, b] = await Promise.all([startServer(env), startServer(env)]);
    const user = await createServiceUser(db, { tenantId: tenants.demo.id, name: 'processes-engine', role: 'engine' });
    engine = (await createToken(db, { tenantId: tenants.demo.id, serviceUserId: user.id, expiresAt: new Date(Date.now() + 86_400_000) }))
      .token;
  });
  afterAll(async () => {
    await Promise.all(streams.map((stream) => stream.close()));
    await Promise.all([a?.kill(), b?.kill()]);
    await db?.dispose();
  });

  it('subscribers on one process see, in order, the runs written through the other', async () => {
    const admin = tenants.demo.adminToken;
    const reader = tenants.demo.readerToken;
    const apps = await api(b, 'GET', '/available?slug=eq.stripe&select=id', reader);
    const created = await api(b, 'POST', '/connected', admin, {
      application_id: apps.body.data[0].id,
      name: `Two processes ${Date.now()}`,
    });
    const connectionId = created.body.data.id;

    const rest = await sse(`${a.url}${BASE}/syncs?connection_id=${connectionId}`, reader);
    const graphql = await sse(`${a.url}/graphql`, reader, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: `subscription { syncChanged(connectionId: "${connectionId}") { id status } }` }),
    });
    const wsStatuses: string[] = [];
    const ws = createClient({
      url: `${a.url.replace('http', 'ws')}/graphql`,
      webSocketImpl: WebSocket,
      connectionParams: { Authorization: `Token ${reader}` },
      retryAttempts: 0,
    });
    const wsAcked = new Promise<void>((resolve) => ws.on('connected', () => resolve()));
    ws.subscribe<{ syncChanged: { status: string } }>(
      { query: `subscription { syncChanged(connectionId: "${connectionId}") { status } }` },
      { next: (result) => void wsStatuses.push(result.data!.syncChanged.status), error: () => {}, complete: () => {} },
    );
    await wsAcked;
    // graphql-ws acknowledges the connection, not the subscription: the three streams are in place (each has read
    // where it starts, so it replays whatever commits after) once A counts them open.
    await vi.waitFor(async () => expect(await (await fetch(`${a.url}/metrics`)).text()).toContain('live_open_streams{kind="streams"} 3'), {
      timeout: 10_000,
      interval: 50,
    });
    // A first run, written through B.
    const warmUp = await api(b, 'POST', '/syncs', admin, { connection_id: connectionId });
    expect(warmUp.status).toBe(201);
    for (let i = 0; i < 100 && wsStatuses.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(wsStatuses).toEqual(['pending']);

    // The run's life, written through B.
    const id = warmUp.body.data.id;
    expect((await api(b, 'POST', '/syncs/claim', engine, { connection_id: connectionId })).status).toBe(200);
    expect((await api(b, 'PATCH', `/syncs/${id}`, engine, { summary: { processed: 5 } })).status).toBe(200);
    expect(
      (
        await api(b, 'PATCH', `/syncs/${id}`, engine, {
          status: 'failed',
          error_message: 'boom',
          summary: { errors: ['boom'], processed: 5 },
        })
      ).status,
    ).toBe(200);
    // The failed run has retries left (retry_attempts 3): its retry is queued in the same transaction.
    const expected = ['pending', 'in_progress', 'in_progress', 'failed', 'pending'];
    const restMessages = await rest.waitFor(expected.length);
    expect(restMessages.map((m) => JSON.parse(m.data).status)).toEqual(expected);
    const graphqlMessages = await graphql.waitFor(expected.length);
    expect(graphqlMessages.map((m) => JSON.parse(m.data).data.syncChanged.status)).toEqual(expected);
    for (let i = 0; i < 100 && wsStatuses.length < expected.length; i++) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(wsStatuses).toEqual(expected);
    await ws.dispose();
  });

  it('closes the streams of a token revoked elsewhere within 5 s', async () => {
    const user = await createServiceUser(db, { tenantId: tenants.demo.id, name: `processes-revoked-${Date.now()}`, role: 'reader' });
    const created = await createToken(db, {
      tenantId: tenants.demo.id,
      serviceUserId: user.id,
      expiresAt: new Date(Date.now() + 86_400_000),
    });
    const onA = await sse(`${a.url}${BASE}/syncs`, created.token);
    const onB = await sse(`${b.url}${BASE}/syncs`, created.token);
    const revokedAt = performance.now();
    expect(await revokeToken(db, created.id)).toBe('revoked');
    await Promise.all([onA.ended, onB.ended]);
    expect(performance.now() - revokedAt).toBeLessThan(5000);
    for (const stream of [onA, onB]) expect(JSON.parse(stream.messages.at(-1)!.data)).toMatchObject({ error: { code: 'UNAUTHORIZED' } });
  });
});
