// graphql-ws admitted like HTTP (src/live/websocket.ts over src/http/admission.ts), through a real server: what the
// admission table's cells do not show on their own. A 30 MB frame before connection_init is refused before it is
// read whole; a socket that never sends connection_init is closed; sockets are capped per client address; many
// operations on one socket meet the rate limit, each with its log line.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { createHttpServer } from '../src/http-server.js';
import { attachGraphqlWebSocket } from '../src/live/websocket.js';
import { createLogger } from '../src/logger.js';
import { databaseKinds } from './fixtures/databases.js';
import { capturingLogger, createTestGateway, gatewayOver, type LogLine, type TestGateway } from './fixtures/gateway.js';

describe.each(databaseKinds)('graphql-ws admission on %s', (kind) => {
  let t: TestGateway;
  let server: Server;
  let closeSockets: () => Promise<void>;
  let base: string;
  const lines: LogLine[] = [];
  const PER_MINUTE = 40;

  beforeAll(async () => {
    t = await createTestGateway(kind);
    const gateway = gatewayOver(t.db, {
      logger: capturingLogger(lines),
      config: { RATE_LIMIT_PER_MINUTE: PER_MINUTE },
      rateLimit: { keyPrefix: `igw:ws-admission:${kind}:${Date.now()}` },
    });
    server = createHttpServer(gateway, { logger: createLogger('silent') });
    closeSockets = attachGraphqlWebSocket(server, gateway, createLogger('silent'), { connectionInitWaitMs: 500, perAddress: 3 });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await closeSockets?.();
    server?.closeAllConnections();
    await new Promise<void>((resolve) => server?.close(() => resolve()));
    await t?.dispose();
  });

  function open(): Promise<WebSocket> {
    return new Promise((resolve, reject) => {
      const socket = new WebSocket(`ws://${base}/graphql`, 'graphql-transport-ws');
      socket.once('open', () => resolve(socket));
      socket.once('unexpected-response', (_req, res) => reject(new Error(`upgrade refused: ${res.statusCode}`)));
      socket.once('error', reject);
    });
  }

  const closed = (socket: WebSocket) => new Promise<{ code: number; at: number }>((resolve) => socket.once('close', (code) => resolve({ code, at: performance.now() })));

  it('closes a socket that sends a 30 MB frame before connection_init (1009), and /healthz keeps answering', async () => {
    const socket = await open();
    const done = closed(socket);
    socket.on('error', () => {});
    const started = performance.now();
    socket.send(JSON.stringify({ type: 'subscribe', id: '1', payload: { query: `{ ${'a'.repeat(30 * 1024 * 1024)} }` } }));
    const { code } = await done;
    expect(code).toBe(1009);
    expect(performance.now() - started).toBeLessThan(5000);
    expect((await fetch(`http://${base}/healthz`)).status).toBe(200);
  });

  it('closes a socket that sends no connection_init (4408) and keeps none open', async () => {
    const socket = await open();
    const opened = performance.now();
    const { code, at } = await closed(socket);
    expect(code).toBe(4408);
    expect(at - opened).toBeGreaterThanOrEqual(400);
  });

  it('refuses an upgrade past the sockets of one client address (429)', async () => {
    const held = await Promise.all([open(), open(), open()]);
    await expect(open()).rejects.toThrow('upgrade refused: 429');
    for (const socket of held) socket.close();
    await Promise.all(held.map(closed));
  });

  it('counts every operation of one socket against the rate limit, each with a log line', async () => {
    const socket = await open();
    const messages: Array<{ id?: string; type: string; payload?: any }> = [];
    socket.on('message', (data) => messages.push(JSON.parse(String(data))));
    socket.send(JSON.stringify({ type: 'connection_init', payload: { Authorization: `Token ${t.tenants.other.readerToken}` } }));
    while (!messages.some((m) => m.type === 'connection_ack')) await new Promise((resolve) => setTimeout(resolve, 10));
    lines.length = 0;
    const operations = PER_MINUTE + 20;
    for (let i = 0; i < operations; i++) {
      socket.send(JSON.stringify({ id: String(i), type: 'subscribe', payload: { query: '{ connections(limit: 1) { totalCount } }' } }));
    }
    const answered = () => new Set(messages.filter((m) => m.type === 'complete' || m.type === 'error').map((m) => m.id)).size;
    const waited = performance.now() + 20_000;
    while (answered() < operations && performance.now() < waited) await new Promise((resolve) => setTimeout(resolve, 20));
    const refused = messages.filter((m) => m.type === 'error' && m.payload[0].extensions.code === 'RATE_LIMITED');
    expect(refused.length).toBe(20);
    expect(messages.filter((m) => m.type === 'next' && m.payload.data).length).toBe(PER_MINUTE);
    const logged = lines.filter((line) => line.msg === 'request' && line.method === 'WS');
    expect(logged.length).toBe(operations);
    expect(logged.filter((line) => line.status === 429).length).toBe(20);
    expect(logged.every((line) => line.tenant === t.tenants.other.id)).toBe(true);
    socket.close();
  });
});
