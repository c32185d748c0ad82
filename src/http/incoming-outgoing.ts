import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '../logger.js';

// A request as every transport reads it, and the answer it sends: grafserv's RequestDigest. The adapters build
// an `Incoming` from node:http or from a fetch Request and hand it to the admission spine's functions
// (./admission.ts), which read only its headers and addresses; the direct paths answer with an `Outgoing`.

/** What a transport reads of a request, from node:http or from a fetch Request. */
export interface Incoming {
  method: string;
  /** The request's URL as yoga would build it (its origin names this server in the error bodies' docs links). */
  url: string;
  header(name: string): string | null;
  /** The request body, when it has one. */
  body(): AsyncIterable<Uint8Array> | null;
  /** The client's address, for the rate limit of a request without a valid credential. */
  remoteAddress: string;
  /** Whether the client left before its request was whole (a body cut off): there is no one to answer. */
  gone(): boolean;
}

/**
 * The status a request's log line and metrics get when its client left before the request was whole (nginx's
 * "client closed request"): nothing is sent, and it is no fault of the server (no 5xx, no error line).
 */
export const CLIENT_CLOSED_REQUEST = 499;

/** The answer, ready to send. */
export interface Outgoing {
  status: number;
  headers: Record<string, string>;
  body: Uint8Array<ArrayBuffer> | null;
}

/** A node:http request as a transport reads it. */
export function incomingOfNode(req: IncomingMessage): Incoming {
  return {
    method: req.method ?? 'GET',
    url: `${(req.socket as { encrypted?: boolean }).encrypted ? 'https' : 'http'}://${hostOf(req)}${req.url ?? '/'}`,
    header: (name) => headerValue(req.headers[name]),
    body: () => req,
    remoteAddress: req.socket.remoteAddress ?? 'unknown',
    gone: () => req.destroyed && !req.complete,
  };
}

/** A fetch Request as a transport reads it (`remoteAddress`: the socket's, when the server context has one). */
export function incomingOfFetch(request: Request, remoteAddress: string | undefined): Incoming {
  return {
    method: request.method,
    url: request.url,
    header: (name) => request.headers.get(name),
    body: () => request.body as AsyncIterable<Uint8Array> | null,
    remoteAddress: remoteAddress ?? 'unknown',
    gone: () => request.signal.aborted,
  };
}

/**
 * Writes an answer on node:http once it is ready; an answer that failed (a bug) is a bare 500, logged. One that
 * failed because the client left (its body cut off: node:http's "aborted") has no one to answer and is no fault.
 */
export function sendOnNode(res: ServerResponse, answer: Promise<Outgoing>, logger: Logger, failure: string): void {
  answer.then(
    ({ status, headers, body }) => {
      res.writeHead(status, headers);
      res.end(body);
    },
    (error: unknown) => {
      if (res.destroyed || !res.socket || res.socket.destroyed) {
        res.destroy();
        return;
      }
      logger.error({ err: error }, failure);
      if (!res.headersSent) res.writeHead(500);
      res.end();
    },
  );
}

/** An answer as a fetch Response. */
export function responseOf({ status, headers, body }: Outgoing): Response {
  return new Response(body, { status, headers });
}

/** The host part of the URL as @whatwg-node/server builds it for yoga: the Host header, else the local address and port. */
function hostOf(req: IncomingMessage): string {
  const host = req.headers.host;
  if (host) return host;
  const local = req.socket.localAddress;
  return local && !local.includes('::') && !local.includes('ffff') ? `${local}:${req.socket.localPort ?? 80}` : 'localhost';
}

function headerValue(value: string | string[] | undefined): string | null {
  if (value === undefined) return null;
  return Array.isArray(value) ? value.join(', ') : value;
}
