import { createServer, STATUS_CODES, type RequestListener, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { errorBody, newRequestId, type ErrorCode } from '../errors.js';
import type { Logger } from '../logger.js';
import { bareAnswerHeaders, localOrigin } from './host.js';

/**
 * How long node:http waits for a client. Node's defaults (60 s for the headers, 300 s for the whole request)
 * let a client that sends a byte a second hold a connection for minutes without an answer.
 */
export interface HttpTimeouts {
  /** From the first byte of a request to the end of its headers; past it the answer is 408. */
  headersTimeoutMs: number;
  /** From the first byte of a request to the end of its body (not the answer); past it the answer is 408. */
  requestTimeoutMs: number;
  /** An idle keep-alive connection is closed after this long. */
  keepAliveTimeoutMs: number;
  /** How often node:http looks for requests past those bounds, so a bound holds to within this. */
  checkIntervalMs: number;
}

/**
 * 10 s is ample for headers (at most 16 KB), 30 s for a body of at most 1 MiB (35 KB/s). An idle keep-alive
 * connection costs a socket and little else; 5 s is Node's own default, kept deliberately: a proxy in front
 * that reuses connections must close idle ones sooner than that (or the value must be raised above its own).
 */
export const HTTP_TIMEOUTS: HttpTimeouts = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
  checkIntervalMs: 1_000,
};

/** The HTTP server `npm start` listens with: `handler` (the gateway) behind the timeouts above. */
export function createHttpServer(
  handler: RequestListener,
  { logger, timeouts = HTTP_TIMEOUTS }: { logger: Logger; timeouts?: HttpTimeouts },
): Server {
  const server = createServer(
    {
      headersTimeout: timeouts.headersTimeoutMs,
      requestTimeout: timeouts.requestTimeoutMs,
      keepAliveTimeout: timeouts.keepAliveTimeoutMs,
      connectionsCheckingInterval: timeouts.checkIntervalMs,
    },
    handler,
  );
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => answerClientError(error, socket, timeouts, logger));
  return server;
}

/**
 * Node answers the requests it refuses itself (headers over 16 KB, broken framing, a client too slow) with an
 * empty body; this answers them with the spec's error body and a request id instead. As Node does, nothing is
 * written once a response has started or when the client is gone.
 */
function answerClientError(error: NodeJS.ErrnoException, socket: Duplex, timeouts: HttpTimeouts, logger: Logger): void {
  const responding = (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (error.code === 'ECONNRESET' || !socket.writable || responding?.headersSent) {
    socket.destroy();
    return;
  }
  const { status, code, message } = describeClientError(error, timeouts);
  const requestId = newRequestId();
  const body = JSON.stringify(errorBody(code, message, requestId, localOrigin(socket as { localAddress?: string; localPort?: number })));
  const headers = { ...bareAnswerHeaders(body, requestId), Connection: 'close' };
  const head = Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  // A browser's idle keep-alive or preconnect socket timing out is routine (408): not a line an operator reads.
  const level = status === 408 ? 'debug' : 'info';
  logger[level]({ req_id: requestId, status, error: error.code }, 'client error');
  // As Node's own handler: write, then close without waiting for a client that may never read.
  socket.write(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n${head}\r\n${body}`);
  socket.destroy();
}

function describeClientError(error: NodeJS.ErrnoException, timeouts: HttpTimeouts): { status: number; code: ErrorCode; message: string } {
  switch (error.code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return {
        status: 408,
        code: 'UNAVAILABLE',
        message: `The request did not arrive in time: headers are awaited ${timeouts.headersTimeoutMs / 1000} s, the whole request ${timeouts.requestTimeoutMs / 1000} s`,
      };
    case 'HPE_HEADER_OVERFLOW':
      return { status: 431, code: 'PAYLOAD_TOO_LARGE', message: 'The request headers exceed the limit of 16 KB' };
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return { status: 413, code: 'PAYLOAD_TOO_LARGE', message: 'The chunk extensions of the request body exceed the limit' };
    default:
      return { status: 400, code: 'INVALID_QUERY', message: `The request is not well-formed HTTP/1.1 (${error.code ?? 'unknown error'})` };
  }
}
