import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { Agent, request, type IncomingMessage } from 'node:http';
import { connect } from 'node:net';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { createClient } from 'graphql-ws';
import { createClient as createSseClient } from 'graphql-sse';
import WebSocket from 'ws';
import { migratedPgliteDataDir } from './fixtures/databases.js';
import { printedToken, startServer, type LogLine, type RunningServer, type StartOptions } from './fixtures/server-process.js';
import { readSse } from './fixtures/sse.js';

// The real server, started as users start it (`npm start`, which runs `node dist/server.js`, or that node
// command itself), receives SIGTERM or SIGINT while a request is still arriving; nothing here imports the
// server, so what is checked is what operators get. The signal goes to the npm process, as a supervisor or a
// shell sends it (npm started it), or to node (started directly: what npm would add is not the point there).

/** server.ts waits this long for in-flight requests before cutting connections. */
const DRAIN_BOUND_MS = 10_000;

interface StartedServer extends RunningServer {
  token: string;
  dataDir: string;
}

const cleanups: Array<() => Promise<void> | void> = [];

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

async function startServerWithToken(env: Record<string, string>, options: StartOptions = {}): Promise<StartedServer> {
  const dataDir = migratedPgliteDataDir('gw-shutdown-');
  cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
  const server = await startServer({ DATA_DIR: dataDir, ...env }, options);
  cleanups.push(server.kill);
  return Object.assign(server, { token: await printedToken(server), dataDir });
}

/** Resolves true when a TCP connection is refused, false when it is accepted. */
function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'ECONNREFUSED'));
  });
}

function waitForLog(logs: LogLine[], msg: string, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const check = () => {
      if (logs.some((l) => l.msg === msg)) resolve();
      else if (performance.now() > deadline) reject(new Error(`no "${msg}" log line within ${timeoutMs} ms`));
      else setTimeout(check, 10);
    };
    check();
  });
}

/**
 * Starts a GraphQL POST whose body arrives in two parts: the request is in flight, on an active (not idle)
 * connection, until `finish` sends the rest. `Expect: 100-continue` makes the server confirm that it has
 * parsed the request (`accepted`); before that, a request still in a socket buffer is not in flight yet.
 */
function slowGraphQLRequest(server: StartedServer) {
  const body = Buffer.from(
    JSON.stringify({ query: '{ connections(limit: 3) { totalCount nodes { id name syncs(limit: 2) { id status } } } }' }),
  );
  const half = body.length >> 1;
  const req = request({
    host: '127.0.0.1',
    port: server.port,
    path: '/graphql',
    method: 'POST',
    // Keep-alive, as load balancers and most clients are: the connection outlives the request.
    agent: new Agent({ keepAlive: true }),
    headers: {
      'content-type': 'application/json',
      'content-length': body.length,
      authorization: `Token ${server.token}`,
      expect: '100-continue',
    },
  });
  const accepted = new Promise<void>((resolve) => req.once('continue', () => resolve()));
  // When the server closes the connection: the keep-alive socket outlives the response, so this is the server's doing.
  const connectionClosed = new Promise<number>((resolve) =>
    req.once('socket', (socket) => socket.once('close', () => resolve(performance.now()))),
  );
  const response = new Promise<{ status: number; body: any; headers: IncomingMessage['headers'] }>((resolve, reject) => {
    req.once('response', (res) => {
      let text = '';
      res.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
      res.once('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text), headers: res.headers }));
      res.once('error', reject);
    });
    req.once('error', reject);
  });
  req.flushHeaders();
  void accepted.then(() => req.write(body.subarray(0, half)));
  return {
    accepted,
    response,
    connectionClosed,
    finish: () => req.end(body.subarray(half)),
  };
}

/** Who receives the signal: the `npm start` process, or the node process. */
type SignalTarget = 'npm' | 'node';

async function expectGracefulShutdown(server: StartedServer, signal: 'SIGTERM' | 'SIGINT', target: SignalTarget): Promise<void> {
  // Warm: the first request pays for schema and pool setup, which is not what is measured here.
  const warm = await fetch(`${server.url}/api/v1/integrations/connected`, { headers: { authorization: `Token ${server.token}` } });
  expect(warm.status).toBe(200);
  await warm.body?.cancel();

  expect(await refused(server.port)).toBe(false);
  const slow = slowGraphQLRequest(server);
  await slow.accepted;
  // Part of the body on its way, so the server is reading it when the signal arrives.
  await new Promise((resolve) => setTimeout(resolve, 50));
  const signalled = performance.now();
  process.kill(target === 'npm' ? server.child.pid! : server.nodePid, signal);
  await waitForLog(server.logs, 'shutting down', 5000);

  let refusedAfterSignal = false;
  for (const deadline = performance.now() + 1000; !refusedAfterSignal && performance.now() < deadline; ) {
    refusedAfterSignal = await refused(server.port);
  }
  expect(refusedAfterSignal, `new connections are still accepted after ${signal}`).toBe(true);
  // Still running: it is waiting for the request above.
  expect(server.child.exitCode).toBeNull();

  slow.finish();
  const answer = await slow.response;
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  expect(answer.body.errors).toBeUndefined();
  expect(answer.body.data.connections.nodes.length).toBeGreaterThan(0);

  const answered = performance.now();
  const exit = await Promise.race([
    server.exited,
    new Promise<never>((_, reject) => setTimeout(() => reject(new Error('no exit within the drain bound')), DRAIN_BOUND_MS + 2000).unref()),
  ]);
  expect(exit.code, server.stderr()).toBe(0);
  expect(exit.at - signalled).toBeLessThan(DRAIN_BOUND_MS);
  // The answered keep-alive connection is closed as soon as it is idle (the drain sweeps idle connections every
  // 50 ms), not after its keep-alive timeout (5 s). Observed on the client's socket, so the time the process then
  // takes to close its database and exit (seconds for PGlite on a loaded machine) is not part of the measure.
  const closedAfterAnswer = (await slow.connectionClosed) - answered;
  expect(closedAfterAnswer).toBeLessThan(2500);
  const messages = server.logs.map((l) => l.msg);
  expect(messages).toContain('stopped');
  expect(messages).not.toContain('drain timeout: closing remaining connections');
  expect(
    server.logs.filter((l) => l.level >= 50),
    'error lines in the log',
  ).toEqual([]);
  // The request log shows the in-flight request finishing after the signal.
  expect(messages.indexOf('shutting down')).toBeLessThan(messages.lastIndexOf('request'));
  // What was started (npm, or node itself) exits once the server has: nothing is left behind, holding the port
  // or the data directory.
  expect(() => process.kill(server.nodePid, 0)).toThrow();
  expect(server.logs.find((l) => l.msg === 'shutting down')).toMatchObject({ signal });
  console.info(
    `${signal} to ${target}: exited ${Math.round(exit.at - signalled)} ms after the signal, ${Math.round(exit.at - answered)} ms after the last answer, whose connection closed ${Math.round(closedAfterAnswer)} ms after it`,
  );
}

// Concurrent: each variant spends most of its time starting a server, mostly waiting on I/O.
describe.concurrent('graceful shutdown of the real server (npm start)', () => {
  it.each([
    ['SIGTERM', 'npm'],
    ['SIGINT', 'npm'],
  ] as const)(
    'on PGlite, %s to the %s process: finishes the in-flight request, refuses new connections, exits 0',
    async (signal, target) => {
      const server = await startServerWithToken({}, { via: target });
      await expectGracefulShutdown(server, signal, target);
    },
    90_000,
  );

  const adminUrl = process.env.TEST_DATABASE_URL;
  it.skipIf(!adminUrl)(
    'on PostgreSQL, SIGTERM to the node process: the same',
    async () => {
      const name = `gw_test_${randomBytes(6).toString('hex')}`;
      const admin = async (sql: string) => {
        const client = new pg.Client({ connectionString: adminUrl });
        await client.connect();
        try {
          await client.query(sql);
        } finally {
          await client.end();
        }
      };
      await admin(`CREATE DATABASE ${name}`);
      cleanups.push(() => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
      const url = new URL(adminUrl!);
      url.pathname = `/${name}`;
      const server = await startServerWithToken({ DATABASE_URL: url.toString() });
      await expectGracefulShutdown(server, 'SIGTERM', 'node');
    },
    90_000,
  );

  it('with open streams (REST event stream, GraphQL over SSE and WebSocket): ends them at SIGTERM and exits without waiting for the drain bound', async () => {
    const server = await startServerWithToken({});
    const headers = { authorization: `Token ${server.token}`, accept: 'text/event-stream' };
    const rest = readSse(await fetch(`${server.url}/api/v1/integrations/syncs`, { headers }));
    const graphql = readSse(
      await fetch(`${server.url}/graphql`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body: JSON.stringify({ query: 'subscription { syncChanged { id } }' }),
      }),
    );
    const ws = createClient({
      url: `${server.url.replace('http', 'ws')}/graphql`,
      webSocketImpl: WebSocket,
      connectionParams: { Authorization: `Token ${server.token}` },
      retryAttempts: 0,
    });
    const wsClosed = new Promise<void>((resolve) => ws.on('closed', () => resolve()));
    const connected = new Promise<void>((resolve) => ws.on('connected', () => resolve()));
    ws.subscribe({ query: 'subscription { syncChanged { id } }' }, { next: () => {}, error: () => {}, complete: () => {} });
    await connected;
    await new Promise((resolve) => setTimeout(resolve, 200));
    const signalled = performance.now();
    process.kill(server.nodePid, 'SIGTERM');
    await Promise.all([rest.ended, graphql.ended, wsClosed]);
    // The streams end at the signal, not when the drain bound runs out: timed on the client's side, so closing the
    // database afterwards (seconds for PGlite on a loaded machine) is not part of the measure.
    const streamsEnded = performance.now() - signalled;
    expect(streamsEnded).toBeLessThan(2500);
    const exit = await server.exited;
    expect(exit.code, server.stderr()).toBe(0);
    expect(exit.at - signalled).toBeLessThan(DRAIN_BOUND_MS);
    expect(server.logs.map((l) => l.msg)).not.toContain('drain timeout: closing remaining connections');
    // The REST client is told why, and reconnects (EventSource does by itself) to resume with Last-Event-ID.
    expect(JSON.parse(rest.messages.at(-1)!.data)).toMatchObject({ error: { code: 'UNAVAILABLE' } });
    // The GraphQL-over-SSE stream is cut, not completed: a graphql-sse client takes `complete` as the end.
    expect(graphql.messages.map((m) => m.event)).not.toContain('complete');
    await ws.dispose();
  }, 90_000);

  it('a graphql-sse subscription cut by a shutdown resubscribes to the restarted server and receives what happens next', async () => {
    const first = await startServerWithToken({ SCHEDULER: 'off' });
    const received: string[] = [];
    let connected: () => void = () => {};
    const firstConnected = new Promise<void>((resolve) => (connected = resolve));
    const reconnected = new Promise<void>((resolve) => {
      const client = createSseClient({
        url: `${first.url}/graphql`,
        headers: { authorization: `Token ${first.token}` },
        // The library's backoff (1 s, 2 s, 4 s… plus up to 3 s) would outlast the test's bound on a slow restart.
        retryAttempts: 60,
        retry: () => new Promise((wait) => setTimeout(wait, 500)),
        on: { connected: (reconnect) => (reconnect ? resolve() : connected()) },
      });
      cleanups.push(() => client.dispose());
      client.subscribe<{ syncChanged: { id: string } }>(
        { query: 'subscription { syncChanged { id } }' },
        {
          next: (result) => {
            if (result.data) received.push(result.data.syncChanged.id);
          },
          error: (error) => received.push(`error: ${String(error)}`),
          complete: () => received.push('complete'),
        },
      );
    });
    await firstConnected;
    process.kill(first.nodePid, 'SIGTERM');
    expect((await first.exited).code, first.stderr()).toBe(0);
    const second = await startServer({ DATA_DIR: first.dataDir, PORT: String(first.port), SCHEDULER: 'off' });
    cleanups.push(second.kill);
    // Bounded: a client that took the cut for the end (`complete`) would never reconnect.
    await Promise.race([
      reconnected,
      new Promise((_, reject) => setTimeout(() => reject(new Error(`no reconnect within 40 s; received ${received}`)), 40_000)),
    ]);
    const headers = { authorization: `Token ${first.token}`, 'content-type': 'application/json' };
    const connections = await fetch(`${second.url}/api/v1/integrations/connected?slug=eq.salto-staff-entrances&select=id`, { headers });
    const [connection] = ((await connections.json()) as { data: { id: string }[] }).data;
    const queued = await fetch(`${second.url}/api/v1/integrations/syncs`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ connection_id: connection!.id }),
    });
    expect(queued.status).toBe(201);
    const { id } = ((await queued.json()) as { data: { id: string } }).data;
    const deadline = performance.now() + 10_000;
    while (!received.includes(id) && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(received).toContain(id);
    expect(received).not.toContain('complete');
    expect(received.filter((item) => item.startsWith('error'))).toEqual([]);
  }, 120_000);
});
