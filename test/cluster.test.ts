// Several replicas behave as one service: two gateway processes (dist/server.js) on one PostgreSQL
// database and one Redis, behind HAProxy with deploy/haproxy.cfg, started by scripts/cluster.ts as
// `npm run cluster` starts them. Checked through the balancer and the replicas directly:
// - shared state: a credential's rate-limit budget and an Idempotency-Key hold across replicas;
// - a rolling restart (SIGTERM, drain, start; one replica at a time) under steady load fails no request;
// - kill -9 of a replica under load (reads, and writes with Idempotency-Keys retried through the balancer)
//   loses no acknowledged write and duplicates none, its run lease is reaped by the other replica, and event
//   streams opened through the balancer resume from Last-Event-ID on the other replica without a missed event.
// Needs PostgreSQL (TEST_DATABASE_URL), haproxy and redis-server (.ci/run installs them).
import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createServiceUser } from '../src/auth/service-users.js';
import { createToken } from '../src/auth/tokens.js';
import { startCluster, type Cluster } from '../scripts/cluster.js';
import { createTestDatabase, type TestDatabase } from './fixtures/databases.js';
import type { TestTenants } from './fixtures/gateway.js';

const BASE = '/api/v1/integrations';

function installed(command: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

const enabled = Boolean(process.env.TEST_DATABASE_URL) && installed('haproxy') && installed('redis-server');
if (process.env.CI && process.env.TEST_DATABASE_URL && !enabled)
  throw new Error('CI must install haproxy and redis-server for the cluster test');

interface Tally {
  requests: number;
  failures: string[];
}

describe.skipIf(!enabled)('two replicas behind HAProxy, one PostgreSQL, one Redis', () => {
  let db: TestDatabase;
  let tenants: TestTenants;
  let cluster: Cluster;
  let admin: string;
  let engine: string;
  let applicationId: string;
  let run = 0;

  async function call(base: string, method: string, path: string, token: string, body?: unknown, headers: Record<string, string> = {}) {
    const response = await fetch(`${base}${BASE}${path}`, {
      method,
      headers: { authorization: `Token ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(20_000),
    });
    const text = await response.text();
    return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : null };
  }

  /** A write retried through the balancer until it is acknowledged (2xx), with the same Idempotency-Key. */
  async function acknowledged(method: string, path: string, body: unknown, key: string, tally: Tally) {
    for (let attempt = 0; attempt < 100; attempt++) {
      tally.requests += 1;
      const answer = await call(cluster.url, method, path, admin, body, { 'idempotency-key': key }).catch((error: Error) => ({
        status: 0,
        error,
        body: null,
        headers: new Headers(),
      }));
      if (answer.status >= 200 && answer.status < 300) return answer;
      tally.failures.push(`${method} ${path}: ${answer.status}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`${method} ${path} was never acknowledged`);
  }

  /** Client loops through the balancer until `stop` resolves: reads, and writes that create a connection. */
  function load(clients: number, { retry }: { retry: boolean }) {
    const tally: Tally = { requests: 0, failures: [] };
    const written: { name: string; id: string; runId?: string }[] = [];
    let stopped = false;
    const loops = Array.from({ length: clients }, async (_, client) => {
      for (let i = 0; !stopped; i++) {
        if (i % 3 === 2) {
          const name = `cluster ${run} ${client} ${i}`;
          const body = { application_id: applicationId, name, settings: { sync_interval: null, retry_attempts: 0 } };
          if (retry) {
            const created = await acknowledged('POST', '/connected', body, `c-${run}-${client}-${i}`, tally);
            const queued = await acknowledged('POST', '/syncs', { connection_id: created.body.data.id }, `s-${run}-${client}-${i}`, tally);
            written.push({ name, id: created.body.data.id, runId: queued.body.data.id });
          } else {
            tally.requests += 1;
            const created = await call(cluster.url, 'POST', '/connected', admin, body, {
              'idempotency-key': `c-${run}-${client}-${i}`,
            }).catch(() => ({ status: 0, body: null }));
            if (created.status === 201) written.push({ name, id: created.body.data.id });
            else tally.failures.push(`POST /connected: ${created.status}`);
          }
        } else {
          const path = i % 3 === 0 ? '/connected?limit=5' : '/syncs?limit=5';
          for (let attempt = 0; ; attempt++) {
            tally.requests += 1;
            const answer = await call(cluster.url, 'GET', path, admin).catch(() => ({ status: 0 }));
            if (answer.status === 200) break;
            tally.failures.push(`GET ${path}: ${answer.status}`);
            if (!retry || attempt > 50) break;
            await new Promise((resolve) => setTimeout(resolve, 100));
          }
        }
      }
    });
    return {
      tally,
      written,
      stop: async () => {
        stopped = true;
        await Promise.all(loops);
      },
    };
  }

  /** An event stream of the tenant's runs through the balancer that reconnects with Last-Event-ID, as EventSource does. */
  function resumingStream() {
    const seen: { id: number; runId: string; status: string }[] = [];
    let reconnects = 0;
    let lastId: string | undefined;
    const controller = new AbortController();
    const done = (async () => {
      while (!controller.signal.aborted) {
        try {
          const response = await fetch(`${cluster.url}${BASE}/syncs`, {
            headers: { authorization: `Token ${admin}`, accept: 'text/event-stream', ...(lastId ? { 'last-event-id': lastId } : {}) },
            signal: controller.signal,
          });
          if (response.status !== 200) throw new Error(`stream: ${response.status}`);
          const decoder = new TextDecoder();
          let buffer = '';
          for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
            buffer += decoder.decode(chunk, { stream: true });
            for (let at = buffer.indexOf('\n\n'); at >= 0; at = buffer.indexOf('\n\n')) {
              const block = buffer.slice(0, at);
              buffer = buffer.slice(at + 2);
              const id = /^id: (.*)$/m.exec(block)?.[1];
              const data = /^data: (.*)$/m.exec(block)?.[1];
              if (id && data && /^event: sync$/m.test(block)) {
                const record = JSON.parse(data) as { id: string; status: string };
                seen.push({ id: Number(id), runId: record.id, status: record.status });
                lastId = id;
              }
            }
          }
        } catch {
          // the replica went away, or the test ended
        }
        if (controller.signal.aborted) break;
        reconnects += 1;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })();
    return {
      seen,
      reconnects: () => reconnects,
      close: async () => {
        controller.abort();
        await done;
      },
    };
  }

  beforeAll(async () => {
    const seeded = inject('seededDatabases').postgres!;
    tenants = seeded.tenants;
    db = await createTestDatabase('postgres', { template: seeded.template });
    admin = tenants.demo.adminToken;
    const user = await createServiceUser(db, { tenantId: tenants.demo.id, name: 'cluster-engine', role: 'engine' });
    engine = (await createToken(db, { tenantId: tenants.demo.id, serviceUserId: user.id, expiresAt: new Date(Date.now() + 86_400_000) }))
      .token;
    cluster = await startCluster({
      databaseUrl: db.url!,
      env: {
        RATE_LIMIT_PER_MINUTE: '100000',
        SCHEDULER_TICK_MS: '500',
        LOG_LEVEL: 'warn',
        WEBHOOK_POLL_MS: '1000',
        ROW_WRITER_FALLBACK: 'refuse',
      },
    });
    const apps = await call(cluster.url, 'GET', '/available?slug=eq.stripe&select=id', admin);
    applicationId = apps.body.data[0].id;
  }, 120_000);
  afterAll(async () => {
    await cluster?.stop();
    await db?.dispose();
  });

  it('shares a credential’s rate-limit budget and an Idempotency-Key across replicas', async () => {
    const [a, b] = cluster.replicas.map((r) => r.url) as [string, string];
    const remaining: number[] = [];
    for (const base of [a, b, a, b]) {
      const answer = await call(base, 'GET', '/connected?limit=1', admin);
      remaining.push(Number(answer.headers.get('ratelimit-remaining')));
    }
    expect(remaining).toEqual([remaining[0], remaining[0]! - 1, remaining[0]! - 2, remaining[0]! - 3]);

    const body = { application_id: applicationId, name: `idempotent across replicas ${Date.now()}` };
    const first = await call(a, 'POST', '/connected', admin, body, { 'idempotency-key': 'cluster-key-1' });
    const second = await call(b, 'POST', '/connected', admin, body, { 'idempotency-key': 'cluster-key-1' });
    expect(first.status).toBe(201);
    expect(second.status).toBe(201);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(second.body.data.id).toBe(first.body.data.id);
    const rows = await db.raw.query<{ n: string }>('SELECT count(*)::text AS n FROM connections WHERE name = $1', [body.name]);
    expect(rows[0]!.n).toBe('1');
  });

  it('a rolling restart under steady load fails no request', async () => {
    run += 1;
    const traffic = load(6, { retry: false });
    await new Promise((resolve) => setTimeout(resolve, 1000));
    for (const index of [0, 1]) {
      await cluster.replicas[index]!.stop('SIGTERM');
      await cluster.restart(index);
      await cluster.balanced();
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
    await traffic.stop();
    console.log(
      JSON.stringify({
        rollingRestart: { requests: traffic.tally.requests, failed: traffic.tally.failures.length, writes: traffic.written.length },
      }),
    );
    expect(traffic.tally.failures).toEqual([]);
    expect(traffic.tally.requests).toBeGreaterThan(100);
    const found = await db.raw.query<{ id: string }>('SELECT id FROM connections WHERE id = ANY($1::text[])', [
      traffic.written.map((w) => w.id),
    ]);
    expect(found).toHaveLength(traffic.written.length);
  }, 120_000);

  it('kill -9 of a replica under load: no acknowledged write lost or duplicated, its lease reaped, streams resume on the other', async () => {
    run += 1;
    const [a] = cluster.replicas.map((r) => r.url) as [string];
    // A run claimed through the replica about to die, with a short lease: the other replica's reaper fails it.
    const lone = await call(a, 'POST', '/connected', admin, {
      application_id: applicationId,
      name: `leased ${Date.now()}`,
      settings: { sync_interval: null, retry_attempts: 0 },
    });
    expect((await call(a, 'POST', '/syncs', admin, { connection_id: lone.body.data.id })).status).toBe(201);
    const claimed = await call(a, 'POST', '/syncs/claim', engine, { connection_id: lone.body.data.id, lease_seconds: 2 });
    expect(claimed.status).toBe(200);

    // Two streams through the balancer: round robin puts one on each replica.
    const streams = [resumingStream(), resumingStream()];
    await new Promise((resolve) => setTimeout(resolve, 500));
    const traffic = load(6, { retry: true });
    await new Promise((resolve) => setTimeout(resolve, 1500));
    await cluster.replicas[0]!.stop('SIGKILL');
    await new Promise((resolve) => setTimeout(resolve, 3000));
    await traffic.stop();

    // Every acknowledged write is there once: one connection per name, one run per connection.
    const names = traffic.written.map((w) => w.name);
    const connections = await db.raw.query<{ id: string; name: string }>('SELECT id, name FROM connections WHERE name = ANY($1::text[])', [
      names,
    ]);
    expect(connections.map((c) => c.name).sort()).toEqual([...names].sort());
    expect(connections.map((c) => c.id).sort()).toEqual(traffic.written.map((w) => w.id).sort());
    const runs = await db.raw.query<{ id: string }>('SELECT id FROM syncs WHERE connection_id = ANY($1::text[])', [
      traffic.written.map((w) => w.id),
    ]);
    expect(runs.map((r) => r.id).sort()).toEqual(traffic.written.map((w) => w.runId!).sort());

    // The lease the dead replica's claimer held is reaped by the survivor's scheduler.
    const deadline = Date.now() + 20_000;
    let status = '';
    while (Date.now() < deadline) {
      const [row] = await db.raw.query<{ status: string }>('SELECT status::text AS status FROM syncs WHERE id = $1', [
        claimed.body.data.id,
      ]);
      status = row!.status;
      if (status !== 'in_progress') break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(status).toBe('failed');

    // Both streams saw every queued run, in event-id order, without a gap caused by the crash.
    const written = new Set(traffic.written.map((w) => w.runId!));
    const until = Date.now() + 15_000;
    while (
      Date.now() < until &&
      streams.some((s) => [...written].some((id) => !s.seen.some((e) => e.runId === id && e.status === 'pending')))
    ) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    for (const stream of streams) {
      const pending = new Set(stream.seen.filter((e) => e.status === 'pending').map((e) => e.runId));
      expect([...written].filter((id) => !pending.has(id))).toEqual([]);
      const ids = stream.seen.map((e) => e.id);
      expect(ids).toEqual([...new Set(ids)].sort((x, y) => x - y));
    }
    expect(streams.some((s) => s.reconnects() > 0)).toBe(true);
    await Promise.all(streams.map((s) => s.close()));
    console.log(
      JSON.stringify({
        kill9: {
          requests: traffic.tally.requests,
          failedAttemptsRetried: traffic.tally.failures.length,
          writesAcknowledged: traffic.written.length * 2,
          writesFound: connections.length + runs.length,
          runsQueued: written.size,
          queuedEventsDeliveredPerStream: streams.map(
            (s) => new Set(s.seen.filter((e) => e.status === 'pending' && written.has(e.runId)).map((e) => e.runId)).size,
          ),
          streamReconnects: streams.map((s) => s.reconnects()),
        },
      }),
    );
  }, 120_000);
});
