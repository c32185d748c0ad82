import type { IncomingMessage, ServerResponse } from 'node:http';
import { errorBody } from '../errors.js';
import { COMMON_SECURITY_HEADERS, DATA_CSP } from '../admission/security-headers.js';
import { hostRefusal, type Admission } from './admission.js';
import { incomingOfNode } from './incoming-outgoing.js';

/**
 * The origin of this server as the socket saw it, for the `docs` link of an answer given before (or instead
 * of) the Host header: a refused Host, or a request node:http refused itself.
 */
export function localOrigin(socket: { localAddress?: string | undefined; localPort?: number | undefined }): string {
  const host = socket.localAddress?.includes(':') ? `[${socket.localAddress}]` : (socket.localAddress ?? 'localhost');
  return `http://${host}:${socket.localPort ?? 80}`;
}

/** The JSON headers of an answer made outside yoga and the direct paths: its length, request id and security headers. */
export function bareAnswerHeaders(body: string, requestId: string): Record<string, string> {
  return {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': String(Buffer.byteLength(body)),
    'X-Request-Id': requestId,
    'Cache-Control': 'no-store',
    'Content-Security-Policy': DATA_CSP,
    ...COMMON_SECURITY_HEADERS,
  };
}

/**
 * The spine's first check on node:http: a Host header the URL cannot be built from is answered 400 here, with its
 * log line and metrics, and the request goes no further (nothing runs, whatever its path and method). Returns
 * whether it answered.
 */
export function refuseBadHost(req: IncomingMessage, res: ServerResponse, admission: Admission): boolean {
  const refusal = hostRefusal(req.headers.host);
  if (!refusal) return false;
  // Its log line and metrics: the URL names this server, not the Host sent.
  const ticket = admission.arrive({ ...incomingOfNode(req), url: `${localOrigin(req.socket)}/` }, 'rest');
  const { requestId } = ticket;
  const body = JSON.stringify(errorBody('INVALID_QUERY', refusal.message, requestId, localOrigin(req.socket)));
  // The request's own body is not read: the connection closes after the answer.
  res.writeHead(400, { ...bareAnswerHeaders(body, requestId), Connection: 'close' });
  res.end(body);
  admission.settle(ticket, { status: 400, contentType: 'application/json' });
  return true;
}
