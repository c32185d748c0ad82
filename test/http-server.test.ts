// The HTTP server `npm start` listens with (src/http/http-server.ts), on a real port: slow clients are cut off at
// the configured bounds, and Node's own refusals (408, 431, 400) carry the spec's error body and a request id.
import type { Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpServer, HTTP_TIMEOUTS, type HttpTimeouts } from '../src/http/http-server.js';
import { createLogger } from '../src/logger.js';
import { capturingLogger, createTestGateway, type LogLine, type TestGateway } from './fixtures/gateway.js';

/** Test-sized bounds; the shipped ones are checked separately. */
const TIMEOUTS: HttpTimeouts = { headersTimeoutMs: 1_000, requestTimeoutMs: 2_000, keepAliveTimeoutMs: 5_000, checkIntervalMs: 100 };

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** Milliseconds from the first byte sent to the socket closing. */
  closedAfterMs: number;
}

let t: TestGateway;
/** The server's log, debug and above. */
const logLines: LogLine[] = [];
/** The level (pino's number: 20 debug, 30 info) of the 'client error' line of the answer with this request id. */
const clientErrorLevel = (requestId: string | undefined) =>
  logLines.find((line) => line.msg === 'client error' && line.req_id === requestId)?.level;
let server: Server;
let port: number;

beforeAll(async () => {
  t = await createTestGateway('pglite', { config: { RATE_LIMIT_PER_MINUTE: 0 } });
  server = createHttpServer(t.gateway, { logger: capturingLogger(logLines, 'debug'), timeouts: TIMEOUTS });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  await t?.dispose();
});

/**
 * Sends `head` at once, then `trickle` one byte a second, until the server closes the connection; returns what it
 * answered. A server that never closes fails the test by its timeout.
 */
function rawRequest(head: string, trickle = ''): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const started = performance.now();
    let received = '';
    let sent = 0;
    let timer: NodeJS.Timeout | undefined;
    socket.on('connect', () => {
      socket.write(head);
      timer = setInterval(() => {
        if (sent < trickle.length && socket.writable) socket.write(trickle[sent++] as string);
      }, 1000);
    });
    socket.on('data', (chunk) => (received += chunk.toString('latin1')));
    socket.on('error', () => {});
    socket.on('close', () => {
      clearInterval(timer);
      const [headPart = '', body = ''] = received.split('\r\n\r\n');
      const [statusLine = '', ...headerLines] = headPart.split('\r\n');
      const status = Number(statusLine.split(' ')[1]);
      if (!status) return reject(new Error(`no HTTP answer: ${JSON.stringify(received.slice(0, 200))}`));
      const headers = Object.fromEntries(
        headerLines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]),
      );
      resolve({ status, headers, body, closedAfterMs: performance.now() - started });
    });
  });
}

function expectErrorBody(answer: RawAnswer, code: string): void {
  expect(answer.headers['content-type']).toMatch(/^application\/json/);
  expect(answer.headers.connection).toBe('close');
  expect(answer.headers['x-content-type-options']).toBe('nosniff');
  const body = JSON.parse(answer.body) as { msg: string; error: { code: string; docs: string; req_id: string } };
  expect(Object.keys(body).sort()).toEqual(['error', 'msg']);
  expect(body.error.code).toBe(code);
  expect(body.error.req_id).toMatch(/^req_\d+$/);
  expect(answer.headers['x-request-id']).toBe(body.error.req_id);
  expect(body.error.docs).toBe(`http://127.0.0.1:${port}/docs/errors/${code}`);
  expect(Number(answer.headers['content-length'])).toBe(Buffer.byteLength(answer.body));
}

describe('slow clients', () => {
  it('cuts off a body sent at 1 byte/s at the request timeout, with 408 and the error body', async () => {
    const answer = await rawRequest(
      `POST /graphql HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n{"query":`,
      '"{ __typename }"}'.padEnd(190, ' '),
    );
    expect(answer.status).toBe(408);
    expectErrorBody(answer, 'UNAVAILABLE');
    expect(JSON.parse(answer.body).msg).toMatch(/did not arrive in time/);
    expect(answer.closedAfterMs).toBeGreaterThanOrEqual(TIMEOUTS.requestTimeoutMs - 50);
    expect(answer.closedAfterMs).toBeLessThan(TIMEOUTS.requestTimeoutMs + 1_500);
  });

  it('cuts off headers sent at 1 byte/s at the headers timeout', async () => {
    const answer = await rawRequest('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n', 'X-Slow: aaaaaaaaaaaaaaaaaaaa\r\n\r\n');
    expect(answer.status).toBe(408);
    expectErrorBody(answer, 'UNAVAILABLE');
    expect(answer.closedAfterMs).toBeGreaterThanOrEqual(TIMEOUTS.headersTimeoutMs - 50);
    expect(answer.closedAfterMs).toBeLessThan(TIMEOUTS.headersTimeoutMs + 1_500);
    // A browser's idle or preconnect socket timing out is routine: logged at debug, not where an operator reads.
    expect(clientErrorLevel(answer.headers['x-request-id'])).toBe(20);
  });

  it('still answers a request that arrives in time, and keeps the connection alive', async () => {
    const answer = await new Promise<string>((resolve) => {
      const socket = connect(port, '127.0.0.1', () => socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'));
      socket.on('data', (chunk) => {
        resolve(chunk.toString());
        socket.destroy();
      });
    });
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    expect(answer).toMatch(/keep-alive/i);
  });
});

describe("Node's own refusals", () => {
  it('answers headers over 16 KB with 431 PAYLOAD_TOO_LARGE', async () => {
    const answer = await rawRequest(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${'a'.repeat(17 * 1024)}\r\n\r\n`);
    expect(answer.status).toBe(431);
    expectErrorBody(answer, 'PAYLOAD_TOO_LARGE');
    expect(clientErrorLevel(answer.headers['x-request-id'])).toBe(30);
  });

  it.each([
    [
      'a broken chunk size',
      'POST /graphql HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n',
    ],
    [
      'both Content-Length and chunked',
      'POST /graphql HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n{}',
    ],
    ['a request line that is not HTTP', 'HELLO\r\n\r\n'],
  ])('answers %s with 400 INVALID_QUERY', async (_what, raw) => {
    const answer = await rawRequest(raw);
    expect(answer.status).toBe(400);
    expectErrorBody(answer, 'INVALID_QUERY');
  });
});

it('ships the documented bounds', () => {
  expect(HTTP_TIMEOUTS).toEqual({ headersTimeoutMs: 10_000, requestTimeoutMs: 30_000, keepAliveTimeoutMs: 5_000, checkIntervalMs: 1_000 });
  const shipped = createHttpServer(t.gateway, { logger: createLogger('silent') });
  expect([shipped.headersTimeout, shipped.requestTimeout, shipped.keepAliveTimeout]).toEqual([10_000, 30_000, 5_000]);
});
