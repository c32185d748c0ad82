// graphql-ws subscriptions whose clients stop reading, on a real server (`node dist/server.js`): 200 sockets, each
// with one subscription, subscribe and then pause (the client reads nothing more, so the kernel's buffers fill,
// then the socket's own queue), while an engine's runs finish with diffs of ~100 KB. What an unread subscription
// holds is bounded in bytes (its socket's queue, its events not yet taken), so RSS stays bounded (MAX_GROWTH: not
// the 150 MB); and a socket
// whose queue stays full for STALL_MS is ended by the governor's stall rule (closed with 1013, Try Again Later).
//
// 200 is reachable by design: the per-tenant stream cap is 200, the per-credential caps (streams and sockets)
// are 20, so ten credentials; the per-address socket cap is 100, so the clients connect from two loopback addresses.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { DEFAULT_STALL_MS } from '../src/governor/governor.js';
import { DEFAULT_WEBSOCKET_LIMITS } from '../src/http/graphql-ws.js';
import { databaseKinds } from './fixtures/databases.js';
import { rssBytes, serverDatabase, serviceToken } from './fixtures/server-database.js';
import { startServer, type RunningServer } from './fixtures/server-process.js';
import { connectApp } from './fixtures/write-side.js';

const SUBSCRIPTIONS = 200;
const CREDENTIALS = SUBSCRIPTIONS / DEFAULT_WEBSOCKET_LIMITS.perCredential;
const ADDRESSES = ['127.0.0.1', '127.0.0.2'];
/** How often the governor looks for stalled owners (src/governor/governor.ts). */
const SWEEP_MS = 500;
/** ~100 KB of ids in each finished run's diff: a few dozen fill a paused socket's kernel buffers. */
const DIFF = { added: Array.from({ length: 500 }, (_, i) => `${String(i).padStart(6, '0')}${'d'.repeat(194)}`) };
/** Runs finished at once (~3 MB of diffs), then one every SLOW_RUN_MS. */
const BURST_RUNS = 30;
const SLOW_RUN_MS = 1500;
/**
 * The figure. Little is held: a socket's one message and the events shared by every subscriber. An event
 * is executed and encoded once for all the subscribers alike (live/shared-results.ts), and the young generation
 * is held at Node 20's size (scripts/server-node-args.ts): measured alone on a loaded machine, +83 to +105 MB on
 * both databases, against +257 to +296 MB when each subscriber executed and encoded each event on Node 24's
 * default young generation. Queues without a bound would hold ~1 GB here (47 runs × 200 × 100 KB).
 */
const MAX_GROWTH = 150 * 2 ** 20;
const SUBSCRIPTION = 'subscription { syncChanged { id status diff { added } } }';

/** A value of the server's /metrics: the sum of the samples of `name` whose labels include every one of `labels`. */
async function metric(server: RunningServer, name: string, labels: Record<string, string>): Promise<number> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    if (Object.entries(labels).every(([label, value]) => line.includes(`${label}="${value}"`))) sum += Number(line.split(' ').at(-1));
  }
  return sum;
}

interface Subscriber {
  socket: WebSocket;
  closed: Promise<number>;
}

/** A graphql-ws client that connects from `localAddress`, subscribes, and resolves once its subscription is sent. */
async function subscribe(server: RunningServer, token: string, localAddress: string): Promise<Subscriber> {
  const socket = new WebSocket(`ws://127.0.0.1:${server.port}/graphql`, 'graphql-transport-ws', { localAddress });
  const closed = new Promise<number>((resolve) => socket.once('close', (code) => resolve(code)));
  socket.on('error', () => {});
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => socket.send(JSON.stringify({ type: 'connection_init', payload: { Authorization: `Token ${token}` } })));
    socket.on('message', (data) => {
      const message = JSON.parse(String(data)) as { type: string };
      if (message.type !== 'connection_ack') return;
      socket.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: SUBSCRIPTION } }));
      resolve();
    });
    void closed.then((code) => reject(new Error(`socket closed (${code}) before its subscription was sent`)));
  });
  return { socket, closed };
}

describe.each(databaseKinds)('200 graphql-ws subscriptions whose clients stop reading, on %s', (kind) => {
  let server: RunningServer;
  let cleanup: () => Promise<void>;
  let readers: string[];
  let admin: string;
  let connectionId: string;
  const subscribers: Subscriber[] = [];

  beforeAll(async () => {
    const prepared = await serverDatabase(kind, 'igw-ws-memory-');
    cleanup = prepared.cleanup;
    const tenantId = prepared.tenants.demo.id;
    readers = [];
    for (let i = 0; i < CREDENTIALS; i++) readers.push(await serviceToken(prepared.db, tenantId, `ws-memory-${i}`));
    admin = await serviceToken(prepared.db, tenantId, 'ws-memory-engine', 'admin');
    connectionId = (await connectApp(prepared.db, tenantId, { status: 'active', name: 'ws memory' })).id;
    await prepared.handOver();
    server = await startServer({ ...prepared.env, SEED: 'none', SCHEDULER: 'off', WEBHOOKS: 'off' });
  }, 300_000);
  afterAll(async () => {
    for (const { socket } of subscribers) socket.terminate();
    await server?.kill();
    await cleanup?.();
  });

  /** One run of the connection triggered, claimed and finished with a ~100 KB diff: three events, one large. */
  async function finishRun(): Promise<void> {
    const headers = { authorization: `Token ${admin}`, 'content-type': 'application/json' };
    const base = `${server.url}/api/v1/integrations/syncs`;
    const triggered = await fetch(base, { method: 'POST', headers, body: JSON.stringify({ connection_id: connectionId }) });
    expect(triggered.status).toBe(201);
    const claimed = await fetch(`${base}/claim`, { method: 'POST', headers, body: JSON.stringify({ connection_id: connectionId }) });
    expect(claimed.status).toBe(200);
    const { data } = (await claimed.json()) as { data: { id: string } };
    const finished = await fetch(`${base}/${data.id}`, {
      method: 'PATCH',
      headers,
      body: JSON.stringify({ status: 'success', summary: { processed: 500, inserted: 500 }, diff: DIFF }),
    });
    expect(finished.status).toBe(200);
  }

  it('keeps RSS growth bounded, and ends every subscription by the stall rule', async () => {
    // Warm: one subscriber that reads a run's events, so the first subscription's and run's costs are in the baseline.
    const warm = await subscribe(server, readers[0]!, ADDRESSES[0]!);
    const received = new Promise<void>((resolve) => warm.socket.on('message', (data) => String(data).includes('"success"') && resolve()));
    await finishRun();
    await received;
    warm.socket.close();
    await warm.closed;
    await new Promise((resolve) => setTimeout(resolve, 500));
    const before = rssBytes(server.nodePid);
    const stalledBefore = await metric(server, 'governor_lease_ends_total', { resource: 'stream', reason: 'stalled' });
    const stalled = async () =>
      (await metric(server, 'governor_lease_ends_total', { resource: 'stream', reason: 'stalled' })) - stalledBefore;
    const held = () => metric(server, 'governor_leases', { resource: 'stream', state: 'held' });

    for (let i = 0; i < SUBSCRIPTIONS; i++) {
      subscribers.push(await subscribe(server, readers[i % CREDENTIALS]!, ADDRESSES[Math.floor((i * ADDRESSES.length) / SUBSCRIPTIONS)]!));
    }
    // Every subscription open, then no client reads anything more.
    const opened = performance.now() + 30_000;
    while ((await held()) < SUBSCRIPTIONS && performance.now() < opened) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(await held()).toBe(SUBSCRIPTIONS);
    for (const { socket } of subscribers) socket.pause();

    // A paused socket takes ~3.7 MB into the kernel's buffers before its own queue fills and its stall clock starts.
    // Runs finish quickly up to ~3 MB, then one every 1.5 s: slowly enough that a socket whose queue is full
    // gathers less than its 1 MiB of events not taken in the stall time (else it would be ended for falling
    // behind), until the first socket is ended. They all received the same events, so the others are full too.
    let peak = before;
    const sample = setInterval(() => (peak = Math.max(peak, rssBytes(server.nodePid))), 200);
    let runs = 0;
    let firstEnded: number;
    let lastEnded: number;
    try {
      for (; runs < BURST_RUNS; runs++) await finishRun();
      const deadline = performance.now() + 120_000;
      for (let nextRun = 0; (await stalled()) === 0 && performance.now() < deadline; ) {
        if (performance.now() >= nextRun) {
          await finishRun();
          runs++;
          nextRun = performance.now() + SLOW_RUN_MS;
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      firstEnded = performance.now();
      // Within the stall time and a sweep of the first, every other one (and a second for a loaded machine).
      while ((await held()) > 0 && performance.now() - firstEnded < DEFAULT_STALL_MS + SWEEP_MS + 1000) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      lastEnded = performance.now();
    } finally {
      clearInterval(sample);
    }
    process.stderr.write(
      `graphql-ws-memory (${kind}): RSS ${Math.round(before / 2 ** 20)} MB before, ${Math.round(peak / 2 ** 20)} MB at most; ` +
        `${runs} runs; ${await stalled()} ended as stalled, the last ${Math.round(lastEnded - firstEnded)} ms after the first\n`,
    );
    expect(await held()).toBe(0);
    expect(await stalled()).toBe(SUBSCRIPTIONS);
    expect(peak - before, `RSS grew from ${Math.round(before / 2 ** 20)} MB to ${Math.round(peak / 2 ** 20)} MB`).toBeLessThan(MAX_GROWTH);

    // The server closed each socket with 1013 (Try Again Later), behind the ~3.7 MB its client never read, then
    // cut it a second later: a client that reads again finds it closed (1006 when the close frame did not get through).
    for (const { socket } of subscribers) socket.resume();
    const codes = await Promise.all(subscribers.map(({ closed }) => closed));
    expect(
      codes.every((code) => code === 1013 || code === 1006),
      `close codes ${[...new Set(codes)].join(', ')}`,
    ).toBe(true);
  }, 240_000);
});
