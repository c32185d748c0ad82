// Fan-out benchmark (issues #13 and #16): 1,000 open SSE subscribers (half REST event streams, half GraphQL
// subscriptions over SSE), each following one of 100 connections, while runs change at 200 status events per
// second through the REST API (trigger → claim → finish, round robin over the connections). Reports the delay
// from each commit to each delivery of its change (p50/p95/p99: the commit is when this process hears the
// NOTIFY PostgreSQL sends at commit, on a LISTEN connection of its own; also from the write's acknowledgement), what was dropped (every subscriber must see every status of every run of its connection,
// in order), and the server's RSS and CPU, with PostgreSQL's and this process's CPU beside it (the four share
// two cores). The gateway runs as `npm start` runs it: dist/server.js on PostgreSQL, request log at info. The
// writes and the streams are node:http clients (bench/http-client.ts), not fetch, which cost this process twice
// the CPU and took it from the gateway.
//
//   npm run bench:fanout             (FANOUT_SUBSCRIBERS, FANOUT_EVENTS_PER_S, FANOUT_SECONDS override; FANOUT_NODE_ARGS
//                                    adds node options to the gateway, e.g. "--cpu-prof --cpu-prof-dir=/tmp/p"; GATEWAY=<script>
//                                    measures another build)

import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import pg from 'pg';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { jsonClient, openEventStream, type EventStream } from './http-client.js';
import { createDatabase, databaseUrl, dropDatabase } from './databases.js';
import { cpuTimeMs, freePort, PostgresCpuMeter, ROOT, rssMb as rssMbOrNull, runCli, startNode, stopAllChildren, stopChild, waitFor200 } from './processes.js';

const rssMb = (pid: number): number => rssMbOrNull(pid) ?? NaN;

const SUBSCRIBERS = Number(process.env.FANOUT_SUBSCRIBERS ?? 1000);
const EVENTS_PER_S = Number(process.env.FANOUT_EVENTS_PER_S ?? 200);
const SECONDS = Number(process.env.FANOUT_SECONDS ?? 20);
const CONNECTIONS = 100;
const log = (message: string) => process.stderr.write(`[fanout ${new Date().toISOString().slice(11, 19)}] ${message}\n`);


function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

interface Subscriber {
  connectionId: string;
  kind: 'rest' | 'graphql';
  /** `<run id> <status>` in arrival order, and when each arrived. */
  received: Array<{ key: string; at: number }>;
  stream: EventStream;
}

async function subscribe(base: string, token: string, connectionId: string, kind: 'rest' | 'graphql'): Promise<Subscriber> {
  const received: Subscriber['received'] = [];
  const onData = (data: string, at: number) => {
    const parsed = JSON.parse(data) as { id?: string; status?: string; data?: { syncChanged: { id: string; status: string } } };
    const run = kind === 'rest' ? parsed : parsed.data?.syncChanged;
    if (run?.id && run.status) received.push({ key: `${run.id} ${run.status}`, at });
  };
  const headers = { authorization: `Token ${token}` };
  const stream =
    kind === 'rest'
      ? await openEventStream(base, { method: 'GET', path: `/api/v1/integrations/syncs?connection_id=${connectionId}`, headers }, onData)
      : await openEventStream(
          base,
          {
            method: 'POST',
            path: '/graphql',
            headers: { ...headers, 'content-type': 'application/json' },
            body: JSON.stringify({ query: `subscription { syncChanged(connectionId: "${connectionId}") { id status } }` }),
          },
          onData,
        );
  return { connectionId, kind, received, stream };
}

/**
 * Measures the fan-out on a database and a gateway process of its own (both gone afterwards); `npm run bench`
 * calls it for its report, `npm run bench:fanout` prints it (and bench/results/fanout.json).
 */
export async function measureFanout() {
  const name = await createDatabase('fanout');
  const url = databaseUrl(name);
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const env = {
    DATABASE_URL: url,
    PORT: String(port),
    HOST: '127.0.0.1',
    SEED: 'demo',
    SCHEDULER: 'off',
    RATE_LIMIT_PER_MINUTE: '0',
    STREAMS_PER_CREDENTIAL: String(SUBSCRIBERS + 10),
    STREAMS_PER_PROCESS: String(SUBSCRIBERS + 10),
  };
  let gateway: ReturnType<typeof startNode> | undefined;
  try {
    const since = performance.now();
    gateway = startNode('gateway', process.env.GATEWAY ?? 'dist/server.js', { env, nodeArgs: process.env.FANOUT_NODE_ARGS?.split(' ') });
    await waitFor200(`${base}/readyz`, { since, timeoutMs: 120_000, child: gateway });
    const expires = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
    const cliEnv = { DATABASE_URL: url };
    const admin = (await runCli(['token', 'create', '--tenant', 'demo', '--service-user', 'demo-admin', '--expires', expires], cliEnv)).trim();
    await runCli(['service-user', 'create', '--tenant', 'demo', '--name', 'fanout-engine', '--role', 'engine'], cliEnv);
    const engine = (await runCli(['token', 'create', '--tenant', 'demo', '--service-user', 'fanout-engine', '--expires', expires], cliEnv)).trim();
    const client = jsonClient(base);
    const api = (method: string, path: string, token: string, body?: unknown) =>
      client.call<{ data: any }>(method, `/api/v1/integrations${path}`, token, body);
    const app = (await api('GET', '/available?slug=eq.stripe&select=id', admin)).body!.data[0].id as string;
    const connections: string[] = [];
    for (let i = 0; i < CONNECTIONS; i++) {
      const created = await api('POST', '/connected', admin, { application_id: app, name: `Fan-out ${i}`, settings: { sync_interval: null, retry_attempts: 0 } });
      connections.push(created.body!.data.id as string);
    }
    const idleRss = rssMb(gateway.pid);

    log(`opening ${SUBSCRIBERS} subscribers over ${CONNECTIONS} connections`);
    const subscribers: Subscriber[] = [];
    for (let i = 0; i < SUBSCRIBERS; i += 50) {
      const batch = [];
      for (let j = i; j < Math.min(SUBSCRIBERS, i + 50); j++) {
        batch.push(subscribe(base, admin, connections[j % CONNECTIONS]!, j % 2 === 0 ? 'rest' : 'graphql'));
      }
      subscribers.push(...(await Promise.all(batch)));
    }
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const subscribedRss = rssMb(gateway.pid);

    // Commit times: PostgreSQL sends the event log's NOTIFY (`<tenant>:<last id>`) at commit.
    const listener = new pg.Client({ connectionString: url });
    await listener.connect();
    const notified: Array<{ lastId: number; at: number }> = [];
    listener.on('notification', (message) => {
      notified.push({ lastId: Number(message.payload?.split(':').pop()), at: performance.now() });
    });
    await listener.query('LISTEN ig_events');

    // Writes: one every 1000 / EVENTS_PER_S ms, round robin over the connections, each advancing its
    // connection's run: trigger (pending) → claim (in_progress) → finish (success).
    log(`writing ${EVENTS_PER_S} status events/s for ${SECONDS} s`);
    const state = connections.map(() => ({ step: 0, runId: '', busy: false }));
    const writes = new Map<string, { sentAt: number; ackAt: number; connectionId: string }>();
    let skipped = 0;
    let failedWrites = 0;
    let peakRss = subscribedRss;
    const cpuBefore = cpuTimeMs(gateway.pid) ?? NaN;
    const postgresCpu = new PostgresCpuMeter();
    const ownCpuBefore = process.cpuUsage();
    const startedAt = performance.now();
    const total = EVENTS_PER_S * SECONDS;
    const pending: Promise<void>[] = [];
    for (let k = 0; k < total; k++) {
      const due = startedAt + (k * 1000) / EVENTS_PER_S;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      if (k % EVENTS_PER_S === 0) peakRss = Math.max(peakRss, rssMb(gateway.pid));
      const index = k % CONNECTIONS;
      const connection = state[index]!;
      if (connection.busy) {
        skipped++;
        continue;
      }
      connection.busy = true;
      const sentAt = performance.now();
      pending.push(
        (async () => {
          const connectionId = connections[index]!;
          let result;
          if (connection.step === 0) result = await api('POST', '/syncs', admin, { connection_id: connectionId });
          else if (connection.step === 1) result = await api('POST', '/syncs/claim', engine, { connection_id: connectionId });
          else result = await api('PATCH', `/syncs/${connection.runId}`, engine, { status: 'success', summary: { processed: 1, inserted: 1, updated: 0, deleted: 0 } });
          const ackAt = performance.now();
          if (result.status >= 300 || !result.body) {
            failedWrites++;
          } else {
            const run = result.body.data as { id: string; status: string };
            connection.runId = run.id;
            writes.set(`${run.id} ${run.status}`, { sentAt, ackAt, connectionId });
            connection.step = (connection.step + 1) % 3;
          }
          connection.busy = false;
        })(),
      );
    }
    await Promise.all(pending);
    const writeSeconds = (performance.now() - startedAt) / 1000;
    const cpuMs = (cpuTimeMs(gateway.pid) ?? NaN) - cpuBefore;
    const postgresMs = postgresCpu.stop();
    const ownCpu = process.cpuUsage(ownCpuBefore);
    // Let the last deliveries arrive.
    await new Promise((resolve) => setTimeout(resolve, 2000));
    await Promise.all(subscribers.map((subscriber) => subscriber.stream.close()));
    client.close();

    // Each status event's commit: the first notification that covers its id.
    const events = await listener.query<{ id: string; subject_id: string; type: string }>(
      `SELECT id::text, subject_id, type FROM events WHERE type IN ('sync.pending', 'sync.in_progress', 'sync.success') ORDER BY id`,
    );
    await listener.end();
    notified.sort((a, b) => a.lastId - b.lastId);
    const committedAt = new Map<string, number>();
    let cursor = 0;
    for (const event of events.rows) {
      const id = Number(event.id);
      while (cursor < notified.length && notified[cursor]!.lastId < id) cursor++;
      const notification = notified[cursor];
      if (notification) committedAt.set(`${event.subject_id} ${event.type.slice(5)}`, notification.at);
    }

    // Every subscriber must have every status of every run of its connection, in write order.
    const byConnection = new Map<string, string[]>();
    for (const [key, write] of writes) byConnection.set(write.connectionId, [...(byConnection.get(write.connectionId) ?? []), key]);
    const expectedDeliveries = writes.size * (SUBSCRIBERS / CONNECTIONS);
    const fromCommit: number[] = [];
    const fromAck: number[] = [];
    let delivered = 0;
    let outOfOrder = 0;
    let missing = 0;
    for (const subscriber of subscribers) {
      let last = -Infinity;
      const seen = new Set<string>();
      for (const { key, at } of subscriber.received) {
        const write = writes.get(key);
        if (!write) continue;
        delivered++;
        seen.add(key);
        const commit = committedAt.get(key);
        if (commit !== undefined) fromCommit.push(at - commit);
        fromAck.push(at - write.ackAt);
        if (write.sentAt < last) outOfOrder++;
        last = write.sentAt;
      }
      for (const key of byConnection.get(subscriber.connectionId) ?? []) if (!seen.has(key)) missing++;
    }
    fromCommit.sort((a, b) => a - b);
    const writeLatency = [...writes.values()].map((w) => w.ackAt - w.sentAt).sort((a, b) => a - b);
    fromAck.sort((a, b) => a - b);
    const result = {
      subscribers: SUBSCRIBERS,
      restStreams: subscribers.filter((s) => s.kind === 'rest').length,
      graphqlSubscriptions: subscribers.filter((s) => s.kind === 'graphql').length,
      connections: CONNECTIONS,
      targetEventsPerS: EVENTS_PER_S,
      statusEventsWritten: writes.size,
      achievedEventsPerS: Math.round(writes.size / writeSeconds),
      writesSkippedBusy: skipped,
      failedWrites,
      expectedDeliveries,
      delivered,
      missing,
      outOfOrder,
      commitsMeasured: fromCommit.length,
      msFromCommit: { p50: percentile(fromCommit, 50), p95: percentile(fromCommit, 95), p99: percentile(fromCommit, 99), max: fromCommit.at(-1) },
      writeLatencyMs: { p50: percentile(writeLatency, 50), p99: percentile(writeLatency, 99) },
      msFromWriteAcknowledged: { p50: percentile(fromAck, 50), p95: percentile(fromAck, 95), p99: percentile(fromAck, 99), max: fromAck.at(-1) },
      rssMb: { idle: idleRss, withSubscribers: subscribedRss, peakUnderLoad: peakRss },
      gatewayCpuMsPerSecond: Math.round(cpuMs / writeSeconds),
      // Where the rest of the two cores went while writing: PostgreSQL (every backend) and this process (the
      // load generator and the 1,000 stream parsers).
      postgresCpuMsPerSecond: Math.round(postgresMs / writeSeconds),
      loadGeneratorCpuMsPerSecond: Math.round((ownCpu.user + ownCpu.system) / 1000 / writeSeconds),
      loadAverage: readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' '),
    };
    const round = (value: number) => Math.round(value * 10) / 10;
    for (const section of [result.msFromCommit, result.msFromWriteAcknowledged, result.writeLatencyMs]) {
      for (const key of Object.keys(section) as (keyof typeof section)[]) section[key] = round(section[key] ?? NaN);
    }
    const problems = [
      ...(missing > 0 ? [`fan-out: ${missing} deliveries missing`] : []),
      ...(failedWrites > 0 ? [`fan-out: ${failedWrites} writes failed`] : []),
      ...(delivered !== expectedDeliveries ? [`fan-out: ${delivered} deliveries, ${expectedDeliveries} expected`] : []),
    ];
    return { ...result, problems };
  } finally {
    if (gateway) await stopChild(gateway.process);
    await dropDatabase(name).catch(() => {});
  }
}

export type FanoutFigures = Awaited<ReturnType<typeof measureFanout>>;

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  try {
    const { problems, ...result } = await measureFanout();
    mkdirSync(join(ROOT, 'bench', 'results'), { recursive: true });
    writeFileSync(join(ROOT, 'bench', 'results', 'fanout.json'), `${JSON.stringify(result, null, 2)}\n`);
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    if (problems.length > 0) {
      process.stderr.write(`${problems.join('\n')}\n`);
      process.exitCode = 1;
    }
  } finally {
    await stopAllChildren();
  }
}
