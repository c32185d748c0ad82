// `npm run drill:failover`: loses the primary database under load and counts what was lost
// (docs/how-to/high-availability.md). It starts the HA cluster (scripts/cluster-ha.ts); writers create
// connections, every request with an Idempotency-Key and repeated until it is acknowledged; each acknowledged
// connection is read back at once with the write's Consistency-Token; readers list connections without one.
// The gateways' schedulers queue a run of every new connection, and an event stream follows the tenant's runs,
// resuming with Last-Event-ID whenever it ends. Then it kill -9s the primary's postmaster, waits for Patroni to
// promote the replica, writes on, and compares: acknowledged writes against rows on the new primary,
// duplicates, the longest time without an acknowledged write, reads served meanwhile, whether the schedulers
// went on queueing runs, and the events the stream and a webhook endpoint got against the event log. Its last
// line:
//
//   failover: acknowledged N, found N, lost 0, duplicated 0, unavailable T s
//
// It exits non-zero when anything was lost, duplicated or answered wrongly, or when T exceeds 10 s.
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { createServiceUser } from '../src/auth/service-users.js';
import { createToken } from '../src/auth/tokens.js';
import { openDatabase } from '../src/db/client.js';
import { newId } from '../src/prefixed-ids.js';
import { seedCatalog } from '../src/seed/catalog.js';
import { generateSecretKey } from '../src/webhooks/secret-keys.js';
import { startHaCluster, type HaCluster, type HaNode } from './cluster-ha.js';

const CONSISTENCY_TOKEN = 'consistency-token';

export interface DrillTenant {
  tenantId: string;
  token: string;
  applicationId: string;
}

/** A tenant with an admin token, made directly in the database (the gateways have applied the migrations). */
export async function provisionTenant(writeUrl: string): Promise<DrillTenant> {
  const db = await openDatabase({ databaseUrl: writeUrl, poolSize: 2 });
  try {
    await seedCatalog(db);
    const tenantId = newId('ten');
    await db.prisma.tenant.create({ data: { id: tenantId, slug: `drill-${randomUUID().slice(0, 8)}`, name: 'Failover drill' } });
    const user = await createServiceUser(db, { tenantId, name: 'drill', role: 'admin' });
    const { token } = await createToken(db, { tenantId, serviceUserId: user.id, expiresAt: new Date(Date.now() + 86_400_000) });
    const [application] = await db.raw.query<{ id: string }>('SELECT id FROM applications ORDER BY id LIMIT 1');
    return { tenantId, token, applicationId: application!.id };
  } finally {
    await db.close();
  }
}

/** One answer of the gateway: status, JSON body, headers; status 0 when no answer came. */
interface Answer {
  status: number;
  body: { data?: { id?: string }; error?: { code?: string } } | null;
  headers: Headers | null;
}

async function call(url: string, init: RequestInit): Promise<Answer> {
  try {
    const response = await fetch(url, { ...init, signal: AbortSignal.timeout(10_000) });
    const text = await response.text();
    let body: Answer['body'] = null;
    try {
      body = JSON.parse(text) as Answer['body'];
    } catch {
      body = null;
    }
    return { status: response.status, body, headers: response.headers };
  } catch {
    return { status: 0, body: null, headers: null };
  }
}

/** An event stream of the tenant's runs that resumes with Last-Event-ID whenever it ends, until stopped. */
export class ResumingStream {
  /** Every event received: its id and the run it carries. */
  readonly events: { id: number; syncId: string }[] = [];
  reconnects = 0;
  private stopped = false;
  private abort: AbortController | undefined;
  readonly done: Promise<void>;
  private opened!: () => void;
  /** Resolves once the first connection is open. */
  readonly open = new Promise<void>((resolve) => (this.opened = resolve));

  constructor(
    private readonly url: string,
    private readonly token: string,
    /** Where the stream starts: after this event id (Last-Event-ID), or from now on. */
    private readonly after?: number,
  ) {
    this.done = this.run();
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      this.abort = new AbortController();
      const last = this.events.at(-1)?.id ?? this.after;
      try {
        const response = await fetch(`${this.url}/api/v1/integrations/syncs`, {
          headers: {
            authorization: `Token ${this.token}`,
            accept: 'text/event-stream',
            ...(last === undefined ? {} : { 'last-event-id': String(last) }),
          },
          signal: this.abort.signal,
        });
        if (response.status === 200 && response.body) {
          this.opened();
          await this.read(response.body);
        } else {
          await response.body?.cancel();
        }
      } catch {
        // the connection failed or was aborted: open it again below
      }
      if (this.stopped) return;
      this.reconnects += 1;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }

  private async read(body: ReadableStream<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder();
    let buffer = '';
    const reader = body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
        const message = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const fields = new Map<string, string>();
        for (const line of message.split('\n')) {
          const colon = line.indexOf(':');
          if (colon > 0) fields.set(line.slice(0, colon), line.slice(colon + 1).trimStart());
        }
        if (fields.get('event') === 'sync' && fields.has('id')) {
          const data = JSON.parse(fields.get('data') ?? '{}') as { id: string };
          this.events.push({ id: Number(fields.get('id')), syncId: data.id });
        }
        // `event: error` ends the stream; the loop resumes it.
      }
    }
  }

  /** Drops the connection as a network failure would; the stream resumes with Last-Event-ID. */
  drop(): void {
    this.abort?.abort();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.abort?.abort();
    await this.done;
  }
}

/**
 * What a stream got against the event log's run events (`logIds`, ascending): events missing, delivered more
 * than once, and delivered out of order.
 */
export function checkStream(
  stream: ResumingStream,
  logIds: readonly number[],
): { missing: number; duplicated: number; outOfOrder: number } {
  const delivered = new Set<number>();
  let duplicated = 0;
  let outOfOrder = 0;
  stream.events.forEach((event, i) => {
    if (delivered.has(event.id)) duplicated += 1;
    else if (i > 0 && event.id < stream.events[i - 1]!.id) outOfOrder += 1;
    delivered.add(event.id);
  });
  return { missing: logIds.filter((id) => !delivered.has(id)).length, duplicated, outOfOrder };
}

/** A webhook endpoint on loopback that records the `event_id` of every message it receives (and answers 204). */
class WebhookReceiver {
  readonly received: number[] = [];
  private readonly server: Server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => {
      try {
        this.received.push(Number((JSON.parse(body) as { event_id: unknown }).event_id));
      } catch {
        // not a message: counted nowhere
      }
      response.writeHead(204).end();
    });
  });

  async url(): Promise<string> {
    if (!this.server.listening) await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hook`;
  }

  /** Of `logIds`, how many were never received. */
  missing(logIds: readonly number[]): number {
    const received = new Set(this.received);
    return logIds.filter((id) => !received.has(id)).length;
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/** The ids of the events of `connections` and of their runs after `after`, ascending: what their webhooks send. */
async function eventIdsOf(client: pg.Client, tenantId: string, connections: string[], after: number): Promise<number[]> {
  const { rows } = await client.query<{ id: string }>(
    `SELECT e.id::text AS id FROM events AS e WHERE e.tenant_id = $1 AND e.id > $2
       AND (e.subject_id = ANY($3) OR e.subject_id IN (SELECT s.id FROM syncs AS s WHERE s.tenant_id = $1 AND s.connection_id = ANY($3)))
     ORDER BY e.id`,
    [tenantId, after, connections],
  );
  return rows.map((row) => Number(row.id));
}

/** The ids of the tenant's run events in the event log after `after`, ascending. */
async function runEventIds(client: pg.Client, tenantId: string, after: number): Promise<number[]> {
  const { rows } = await client.query<{ id: string }>(
    "SELECT id::text AS id FROM events WHERE tenant_id = $1 AND id > $2 AND type LIKE 'sync.%' ORDER BY id",
    [tenantId, after],
  );
  return rows.map((row) => Number(row.id));
}

/** The tenant's last event id (0: none yet). */
async function lastEventId(writeUrl: string, tenantId: string): Promise<number> {
  const client = new pg.Client({ connectionString: writeUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ id: string | null }>('SELECT max(id)::text AS id FROM events WHERE tenant_id = $1', [tenantId]);
    return Number(rows[0]?.id ?? 0);
  } finally {
    await client.end();
  }
}

export interface DrillResult {
  acknowledged: number;
  found: number;
  lost: number;
  duplicated: number;
  /** Longest time between two acknowledged writes, in seconds. */
  unavailableSeconds: number;
  /** Longest time writes were refused or failed: from a failed attempt until the next write acknowledged (0: none failed). */
  writesRefusedSeconds: number;
  /** The same of reads: from a failed read until the next one answered 200. */
  readsRefusedSeconds: number;
  /** From the fault until it was over (the default fault: until Patroni reported another primary), in seconds. */
  promotionSeconds: number;
  /** Reads answered 200 during the longest time without an acknowledged write. */
  readsDuringFailover: number;
  /** Reads in all, and how many answered 200. */
  reads: number;
  readsOk: number;
  /** Acknowledged connections the schedulers queued no run for (they stopped after the failover). */
  unscheduled: number;
  /** Read-your-writes: a connection read back at once with its write's token and not found. */
  readYourWritesMisses: number;
  readYourWritesChecked: number;
  /** Answers other than success and 503 with Retry-After and the error body (a 500, say), by status. */
  wrongAnswers: Record<string, number>;
  /** The webhook endpoint: events of the drill's connections and runs it never received (at least once each). */
  webhook: { received: number; missing: number };
  /** The event streams: events got, reconnects, and what the check found. */
  streams: { events: number; reconnects: number; missing: number; duplicated: number; outOfOrder: number }[];
}

/**
 * What a drill does to the cluster, under load: resolves once the part is lost and back (or replaced). The
 * default kill -9s the primary's postmaster and waits for another node's promotion.
 */
export type Fault = (cluster: HaCluster, log: (line: string) => void) => Promise<void>;

export interface DrillOptions {
  /** The fault (default: kill -9 of the primary's postmaster). */
  fault?: Fault;
  /** Concurrent writers (default 4) and readers (default 2). */
  writers?: number;
  readers?: number;
  /** Event streams kept open across the failover (default 1). */
  streams?: number;
  /** Streams whose connection is dropped at the kill, to resume with Last-Event-ID while the primary is lost (default: all with the default fault, none with another). */
  droppedStreams?: number;
  /** Writes acknowledged before the kill (default 60). */
  warmupWrites?: number;
  /** Writes acknowledged in all before the drill stops writing (default 220), and at least this long after the first write after the kill (default 4 s). */
  minWrites?: number;
  afterRecoveryMs?: number;
  log?: (line: string) => void;
}

/** Runs the drill on a started cluster with gateways; see the file's comment. */
export async function runFailoverDrill(cluster: HaCluster, tenant: DrillTenant, options: DrillOptions = {}): Promise<DrillResult> {
  const log = options.log ?? (() => {});
  const base = cluster.gateways!.url;
  const run = randomUUID().slice(0, 8);
  const auth = { authorization: `Token ${tenant.token}` };
  const wrongAnswers: Record<string, number> = {};
  const acks: number[] = [];
  const writeAttempts: Attempt[] = [];
  const ackedConnections: string[] = [];
  let readYourWritesMisses = 0;
  let readYourWritesChecked = 0;
  const readTimes: number[] = [];
  /** Every read: when it was sent, how long it took, and its status (0: no answer). */
  const readLog: { at: number; ms: number; status: number }[] = [];
  let reads = 0;
  let stopWriting = false;
  let stopReading = false;
  let counter = 0;

  /** An answer that is neither a success nor a well-formed 503 is recorded. */
  const judge = (answer: Answer, ok: number[]): 'ok' | 'retry' | 'wrong' => {
    if (ok.includes(answer.status)) return 'ok';
    if (answer.status === 0) return 'retry';
    if (answer.status === 503 && answer.headers?.get('retry-after') && answer.body?.error?.code === 'UNAVAILABLE') return 'retry';
    const key = `${answer.status} ${answer.body?.error?.code ?? ''}`.trim();
    wrongAnswers[key] = (wrongAnswers[key] ?? 0) + 1;
    return 'wrong';
  };

  /** POSTs until acknowledged, with one Idempotency-Key; null when answered wrongly. */
  const write = async (path: string, body: unknown, key: string): Promise<Answer | null> => {
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      const sent = Date.now();
      const answer = await call(`${base}${path}`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json', 'idempotency-key': key },
        body: JSON.stringify(body),
      });
      const verdict = judge(answer, [200, 201]);
      writeAttempts.push({ sent, at: Date.now(), ok: verdict === 'ok' });
      if (verdict === 'ok') return answer;
      if (verdict === 'wrong') return null;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    wrongAnswers['no answer within 60 s'] = (wrongAnswers['no answer within 60 s'] ?? 0) + 1;
    return null;
  };

  const writer = async () => {
    while (!stopWriting) {
      counter += 1;
      const i = counter;
      const connection = await write(
        '/api/v1/integrations/connected',
        { application_id: tenant.applicationId, name: `drill ${run} ${i}`, settings: { webhook_enabled: true } },
        `${run}-${i}`,
      );
      const id = connection?.body?.data?.id;
      if (!id) continue;
      acks.push(Date.now());
      ackedConnections.push(id);
      // Read-your-writes: the connection, at once, presenting the write's token.
      const token = connection.headers?.get(CONSISTENCY_TOKEN);
      const read = await call(`${base}/api/v1/integrations/connected/${id}`, {
        headers: { ...auth, ...(token ? { [CONSISTENCY_TOKEN]: token } : {}) },
      });
      if (read.status === 200) readYourWritesChecked += 1;
      else if (read.status === 404) {
        readYourWritesChecked += 1;
        readYourWritesMisses += 1;
      } else judge(read, [200]);
    }
  };

  const reader = async () => {
    while (!stopReading) {
      const at = Date.now();
      const answer = await call(`${base}/api/v1/integrations/connected?limit=5`, { headers: auth });
      readLog.push({ at, ms: Date.now() - at, status: answer.status });
      reads += 1;
      if (judge(answer, [200]) === 'ok') readTimes.push(Date.now());
      else await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };

  // The streams and the webhook endpoint start after the tenant's last event, and are checked against every
  // event after it. The drill's connections have webhooks on: their events and their runs' are sent.
  const startId = await lastEventId(cluster.writeUrl, tenant.tenantId);
  const receiver = new WebhookReceiver();
  const endpoint = await call(`${base}/api/v1/integrations/webhooks`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({ url: await receiver.url(), description: 'failover drill' }),
  });
  if (endpoint.status !== 201) throw new Error(`registering the webhook endpoint answered ${endpoint.status}`);
  const streams = Array.from({ length: options.streams ?? 1 }, () => new ResumingStream(base, tenant.token, startId));
  await Promise.all(streams.map((stream) => stream.open));
  const writers = Array.from({ length: options.writers ?? 4 }, writer);
  const readers = Array.from({ length: options.readers ?? 2 }, reader);
  const waitUntil = async (test: () => boolean, timeoutMs: number) => {
    const deadline = Date.now() + timeoutMs;
    while (!test() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
  };

  let promotionSeconds = Number.NaN;
  let killedAt = 0;
  try {
    await waitUntil(() => acks.length >= (options.warmupWrites ?? 60), 60_000);
    await cluster.healthy(30_000);
    log(`fault after ${acks.length} acknowledged writes`);
    killedAt = Date.now();
    const fault = (options.fault ?? killPrimaryPostmaster)(cluster, log);
    for (const stream of streams.slice(0, options.droppedStreams ?? (options.fault ? 0 : streams.length))) stream.drop();
    await fault;
    promotionSeconds = (Date.now() - killedAt) / 1000;
    log(`fault over ${promotionSeconds.toFixed(1)} s after it began`);
    await waitUntil(() => acks.some((at) => at > killedAt), 60_000);
    const recoveredAt = acks.find((at) => at > killedAt) ?? Date.now();
    await waitUntil(
      () => Date.now() - recoveredAt >= (options.afterRecoveryMs ?? 4000) && acks.length >= (options.minWrites ?? 220),
      60_000,
    );
  } finally {
    stopWriting = true;
    await Promise.all(writers);
    stopReading = true;
    await Promise.all(readers);
  }
  // What the new primary holds of this run's writes.
  const client = new pg.Client({ connectionString: cluster.writeUrl });
  await client.connect();
  let found = 0;
  let duplicated = 0;
  let unscheduled = 0;
  let logIds: number[] = [];
  let webhookMissing = 0;
  try {
    // The schedulers queue a run of every acknowledged connection, and the streams deliver each run's event
    // (at most 45 s: a webhook lease left by a worker that lost the database lapses after 30 s).
    const unscheduledNow = async () =>
      (
        await client.query<{ count: string }>(
          'SELECT count(*) AS count FROM connections AS c WHERE c.id = ANY($1) AND NOT EXISTS (SELECT 1 FROM syncs AS s WHERE s.connection_id = c.id)',
          [ackedConnections],
        )
      ).rows[0]!.count;
    const settleBy = Date.now() + 45_000;
    for (;;) {
      unscheduled = Number(await unscheduledNow());
      logIds = await runEventIds(client, tenant.tenantId, startId);
      webhookMissing = receiver.missing(await eventIdsOf(client, tenant.tenantId, ackedConnections, startId));
      const caughtUp = streams.every((stream) => checkStream(stream, logIds).missing === 0) && webhookMissing === 0;
      if ((unscheduled === 0 && caughtUp) || Date.now() > settleBy) break;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    await Promise.all(streams.map((stream) => stream.stop()));
    const connections = await client.query<{ name: string; count: string }>(
      'SELECT name, count(*) AS count FROM connections WHERE tenant_id = $1 AND name LIKE $2 GROUP BY name',
      [tenant.tenantId, `drill ${run} %`],
    );
    const connectionIds = new Set(
      (
        await client.query<{ id: string }>('SELECT id FROM connections WHERE tenant_id = $1 AND name LIKE $2', [
          tenant.tenantId,
          `drill ${run} %`,
        ])
      ).rows.map((row) => row.id),
    );
    found = ackedConnections.filter((id) => connectionIds.has(id)).length;
    for (const row of connections.rows) duplicated += Number(row.count) - 1;
  } finally {
    await Promise.all(streams.map((stream) => stream.stop()));
    await receiver.close();
    await client.end();
  }

  const sorted = [...acks].sort((a, b) => a - b);
  let gap = { from: 0, to: 0 };
  for (let i = 1; i < sorted.length; i++)
    if (sorted[i]! - sorted[i - 1]! > gap.to - gap.from) gap = { from: sorted[i - 1]!, to: sorted[i]! };
  const recoveredAt = sorted.find((at) => at > killedAt) ?? Number.POSITIVE_INFINITY;
  // Reads second by second around the failover: how many were sent, answered 200, and the slowest.
  for (let second = -1; killedAt + second * 1000 < Math.min(Math.max(recoveredAt, gap.to) + 1000, Date.now()); second++) {
    const from = killedAt + second * 1000;
    const bucket = readLog.filter((read) => read.at >= from && read.at < from + 1000);
    log(
      `reads ${second >= 0 ? '+' : ''}${second} s after the kill: ${bucket.filter((read) => read.status === 200).length} of ${bucket.length} answered 200, statuses ${[...new Set(bucket.map((read) => read.status))].join('/')}, slowest ${Math.max(0, ...bucket.map((read) => read.ms))} ms`,
    );
  }
  return {
    acknowledged: acks.length,
    found,
    lost: acks.length - found,
    duplicated,
    unavailableSeconds: (gap.to - gap.from) / 1000,
    writesRefusedSeconds: longestRefusal(writeAttempts),
    readsRefusedSeconds: longestRefusal(readLog.map((read) => ({ sent: read.at, at: read.at + read.ms, ok: read.status === 200 }))),
    promotionSeconds,
    readsDuringFailover: readTimes.filter((at) => at > gap.from && at < gap.to).length,
    reads,
    readsOk: readTimes.length,
    unscheduled,
    readYourWritesMisses,
    readYourWritesChecked,
    wrongAnswers,
    webhook: { received: receiver.received.length, missing: webhookMissing },
    streams: streams.map((stream) => ({ events: stream.events.length, reconnects: stream.reconnects, ...checkStream(stream, logIds) })),
  };
}

/** The gateways' settings for the drill: no rate limit, schedulers ticking every second, webhooks to loopback. */
export const DRILL_GATEWAY_ENV: Record<string, string> = {
  SEED: 'none',
  RATE_LIMIT_PER_MINUTE: '0',
  LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
  SCHEDULER_TICK_MS: '1000',
  WEBHOOK_ALLOW_PRIVATE: '1',
  // Webhook endpoints' secrets are sealed with it; one for this cluster only.
  WEBHOOK_SECRET_KEY: generateSecretKey(),
};

/** The default fault: kill -9 of the primary's postmaster; over once Patroni promoted another node. */
export const killPrimaryPostmaster: Fault = async (cluster, log) => {
  const primary = await cluster.healthy(30_000);
  const pid = primary.postmasterPid();
  if (pid === undefined) throw new Error(`no postmaster pid for ${primary.name}`);
  const killedAt = Date.now();
  log(`kill -9 ${pid} (the postmaster of ${primary.name}, the primary)`);
  process.kill(pid, 'SIGKILL');
  const promoted = await promotion(cluster.nodes, primary, 60_000);
  log(`${promoted.name} promoted ${((Date.now() - killedAt) / 1000).toFixed(1)} s after the kill`);
};

/** One request of a drill: when it was sent, when its answer came, and whether it succeeded. */
export interface Attempt {
  sent: number;
  at: number;
  ok: boolean;
}

/** A success slower than this is counted as the time it was unavailable (a commit held back, say). */
const STALLED_MS = 5000;

/**
 * How long, at the longest, requests were unavailable, in seconds: from the sending of a failed attempt until
 * the answer of the next success (in the order they were sent), or a success that took longer than STALLED_MS;
 * 0 when none failed or stalled. What a client retrying at once sees.
 */
export function longestRefusal(attempts: readonly Attempt[]): number {
  const sorted = [...attempts].sort((a, b) => a.sent - b.sent);
  let longest = 0;
  let failingSince: number | undefined;
  for (const attempt of sorted) {
    if (!attempt.ok) {
      failingSince ??= attempt.sent;
      continue;
    }
    if (attempt.at - attempt.sent > STALLED_MS) longest = Math.max(longest, attempt.at - attempt.sent);
    if (failingSince !== undefined) {
      longest = Math.max(longest, attempt.at - failingSince);
      failingSince = undefined;
    }
  }
  if (failingSince !== undefined) longest = Math.max(longest, (sorted.at(-1)?.at ?? failingSince) - failingSince);
  return longest / 1000;
}

/** Resolves with the node Patroni promoted in place of `lost`. */
async function promotion(nodes: HaNode[], lost: HaNode, timeoutMs: number): Promise<HaNode> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    for (const node of nodes) if (node !== lost && (await node.role()) === 'primary') return node;
    if (Date.now() > deadline) throw new Error(`no node was promoted within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The drill's verdict: the reasons it failed (none: it passed). */
export function failures(result: DrillResult, { minAcknowledged = 200, maxUnavailableSeconds = 10 } = {}): string[] {
  const reasons: string[] = [];
  if (result.acknowledged < minAcknowledged)
    reasons.push(`only ${result.acknowledged} writes acknowledged (at least ${minAcknowledged} needed)`);
  if (result.lost !== 0) reasons.push(`${result.lost} acknowledged writes lost`);
  if (result.duplicated !== 0) reasons.push(`${result.duplicated} writes duplicated`);
  if (!(result.unavailableSeconds <= maxUnavailableSeconds))
    reasons.push(`writes unavailable for ${result.unavailableSeconds} s (at most ${maxUnavailableSeconds})`);
  if (result.unscheduled !== 0) reasons.push(`${result.unscheduled} connections got no scheduled run (a scheduler did not resume)`);
  if (result.readYourWritesMisses !== 0) reasons.push(`${result.readYourWritesMisses} reads missed their own write`);
  if (Object.keys(result.wrongAnswers).length > 0) reasons.push(`wrong answers: ${JSON.stringify(result.wrongAnswers)}`);
  if (result.webhook.missing !== 0) reasons.push(`the webhook endpoint never received ${result.webhook.missing} events`);
  result.streams.forEach((stream, i) => {
    if (stream.missing || stream.duplicated || stream.outOfOrder) {
      reasons.push(`stream ${i + 1}: ${stream.missing} events missing, ${stream.duplicated} duplicated, ${stream.outOfOrder} out of order`);
    }
  });
  return reasons;
}

// As a command.
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const log = (line: string) => process.stderr.write(`drill: ${line}\n`);
  let cluster: HaCluster | undefined;
  let exitCode = 1;
  // Bounded: whatever hangs, everything started is stopped and the drill fails within this time.
  const limit = setTimeout(() => {
    log('did not finish within 5 minutes');
    void (cluster?.stop() ?? Promise.resolve()).finally(() => process.exit(1));
  }, 300_000);
  const interrupted = () => void (cluster?.stop() ?? Promise.resolve()).finally(() => process.exit(130));
  process.on('SIGINT', interrupted);
  process.on('SIGTERM', interrupted);
  try {
    const startedAt = Date.now();
    cluster = await startHaCluster({
      nodes: 2,
      gateways: 2,
      port: 0,
      env: DRILL_GATEWAY_ENV,
    });
    log(
      `cluster up in ${((Date.now() - startedAt) / 1000).toFixed(1)} s (data and logs: ${cluster.dir}, gateways' logs: ${cluster.gateways!.logDir})`,
    );
    const tenant = await provisionTenant(cluster.writeUrl);
    const result = await runFailoverDrill(cluster, tenant, { log, streams: 1 });
    const stream = result.streams[0]!;
    log(
      `promotion ${result.promotionSeconds.toFixed(1)} s after the kill; reads ${result.readsOk} of ${result.reads} answered, ${result.readsDuringFailover} while writes were unavailable`,
    );
    log(
      `read-your-writes: ${result.readYourWritesChecked - result.readYourWritesMisses} of ${result.readYourWritesChecked} found at once with the write's token`,
    );
    log(`schedulers: ${result.unscheduled} acknowledged connections without a queued run`);
    log(`webhooks: ${result.webhook.received} messages received, ${result.webhook.missing} events of the log never sent`);
    log(
      `event stream: ${stream.events} run events, ${stream.reconnects} reconnects (Last-Event-ID), ${stream.missing} missing, ${stream.duplicated} duplicated, ${stream.outOfOrder} out of order`,
    );
    if (Object.keys(result.wrongAnswers).length > 0) log(`wrong answers: ${JSON.stringify(result.wrongAnswers)}`);
    const reasons = failures(result);
    for (const reason of reasons) log(`FAILED: ${reason}`);
    exitCode = reasons.length === 0 ? 0 : 1;
    process.stdout.write(
      `failover: acknowledged ${result.acknowledged}, found ${result.found}, lost ${result.lost}, duplicated ${result.duplicated}, unavailable ${result.unavailableSeconds.toFixed(1)} s\n`,
    );
  } catch (error) {
    log(`FAILED: ${(error as Error).message}`);
  } finally {
    clearTimeout(limit);
    // A failed drill keeps its data and logs for a look.
    await cluster?.stop(exitCode !== 0).catch(() => {});
    if (exitCode !== 0 && cluster) log(`data and logs kept in ${cluster.dir}`);
  }
  process.exit(exitCode);
}
