// graphql-ws admitted like HTTP (src/http/graphql-ws.ts over src/http/admission.ts), through a real server: what the
// admission table's cells do not show on their own. A 30 MB frame before connection_init is refused before it is
// read whole; a socket that never sends connection_init is closed; sockets are capped per client address; many
// operations on one socket meet the rate limit, each with its log line.
import type { Server } from 'node:http';
import { randomBytes } from 'node:crypto';
import { connect, type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { createHttpServer } from '../src/http/http-server.js';
import { attachGraphqlWebSocket } from '../src/http/graphql-ws.js';
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
    closeSockets = attachGraphqlWebSocket(server, gateway, createLogger('silent'), { connectionInitWaitMs: 1500, perAddress: 3 });
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
      const socket = new WebSocket(`ws://${base}/graphql`, 'graphql-transport-ws', { perMessageDeflate: false });
      socket.once('open', () => resolve(socket));
      socket.once('unexpected-response', (_req, res) => reject(new Error(`upgrade refused: ${res.statusCode}`)));
      socket.once('error', reject);
    });
  }

  const closed = (socket: WebSocket) =>
    new Promise<{ code: number; at: number }>((resolve) => socket.once('close', (code) => resolve({ code, at: performance.now() })));

  it('closes a socket that announces a 30 MB frame before connection_init (1009), reading none of it, and /healthz keeps answering', async () => {
    // A raw client: the upgrade, then only the header of a 30 MB text frame and its first kilobyte.
    const { port, hostname } = new URL(`http://${base}`);
    const socket = connect(Number(port), hostname);
    let received = Buffer.alloc(0);
    socket.on('data', (chunk) => (received = Buffer.concat([received, chunk])));
    const ended = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    socket.write(
      `GET /graphql HTTP/1.1\r\nHost: ${base}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
        `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: graphql-transport-ws\r\n\r\n`,
    );
    while (!received.includes('\r\n\r\n')) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(received.toString('latin1')).toMatch(/^HTTP\/1\.1 101/);
    const header = Buffer.alloc(14);
    header[0] = 0x81; // FIN, text
    header[1] = 0x80 | 127; // masked, 64-bit length
    header.writeBigUInt64BE(BigInt(30 * 1024 * 1024), 2);
    randomBytes(4).copy(header, 10);
    const started = performance.now();
    socket.write(Buffer.concat([header, randomBytes(1024)]));
    await ended;
    expect(performance.now() - started).toBeLessThan(1000);
    // The server's close frame: opcode 8, status 1009 (message too big).
    const close = received.subarray(received.indexOf('\r\n\r\n') + 4);
    expect(close[0]).toBe(0x88);
    expect(close.readUInt16BE(2)).toBe(1009);
    expect((await fetch(`http://${base}/healthz`)).status).toBe(200);
  });

  it('closes a socket that sends no connection_init (4408) and keeps none open', async () => {
    const socket = await open();
    const opened = performance.now();
    const { code, at } = await closed(socket);
    expect(code).toBe(4408);
    expect(at - opened).toBeGreaterThanOrEqual(1400);
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
