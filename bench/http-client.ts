// The benchmarks' HTTP client: node:http, not fetch. The client shares the machine's two cores with the
// gateway and PostgreSQL, and fetch (undici) cost it about as much CPU per request as the server's own HTTP
// handling (bench:fanout measured 2 ms of the load generator's CPU per write through fetch); what the client
// spends is taken from the server being measured.

import { Agent, request as httpRequest, type IncomingHttpHeaders } from 'node:http';

export interface JsonResponse<T> {
  status: number;
  headers: IncomingHttpHeaders;
  /** The parsed body; null when it was empty. */
  body: T | null;
}

/** A JSON API client over keep-alive connections to one base URL (`http://host:port`). */
export function jsonClient(baseUrl: string, options: { maxSockets?: number } = {}) {
  const agent = new Agent({ keepAlive: true, maxSockets: options.maxSockets ?? Infinity });
  const { hostname, port } = new URL(baseUrl);
  const call = <T = any>(method: string, path: string, token: string, body?: unknown): Promise<JsonResponse<T>> =>
    new Promise((resolve, reject) => {
      const payload = body === undefined ? undefined : JSON.stringify(body);
      const headers: Record<string, string | number> = { authorization: `Token ${token}` };
      if (payload !== undefined) {
        headers['content-type'] = 'application/json';
        headers['content-length'] = Buffer.byteLength(payload);
      }
      const request = httpRequest({ agent, hostname, port, method, path, headers }, (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          try {
            resolve({ status: response.statusCode ?? 0, headers: response.headers, body: text ? (JSON.parse(text) as T) : null });
          } catch (error) {
            reject(new Error(`${method} ${path}: ${response.statusCode} not JSON: ${text.slice(0, 300)}`, { cause: error }));
          }
        });
        response.on('error', reject);
      });
      request.on('error', reject);
      request.end(payload);
    });
  return { call, close: () => agent.destroy() };
}

export interface EventStream {
  /** Ends the stream (closes its connection); resolves once it has. */
  close(): Promise<void>;
}

/**
 * Opens a Server-Sent Events stream on a connection of its own and calls `onData` with each message's `data:`
 * text, and the time (performance.now()) its bytes were read. Resolves once the response's headers arrived
 * with status 200; rejects otherwise.
 */
export function openEventStream(
  baseUrl: string,
  request: { method: 'GET' | 'POST'; path: string; headers: Record<string, string>; body?: string },
  onData: (data: string, at: number) => void,
): Promise<EventStream> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = { ...request.headers, accept: 'text/event-stream' };
    if (request.body !== undefined) headers['content-length'] = Buffer.byteLength(request.body);
    const outgoing = httpRequest({ agent: false, hostname, port, method: request.method, path: request.path, headers }, (response) => {
      if (response.statusCode !== 200) {
        response.resume();
        reject(new Error(`${request.method} ${request.path}: HTTP ${response.statusCode}`));
        return;
      }
      response.setEncoding('utf8');
      let buffer = '';
      const ended = new Promise<void>((done) => {
        response.on('close', done);
        response.on('error', () => done());
      });
      response.on('data', (chunk: string) => {
        const at = performance.now();
        buffer += chunk;
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = block.split('\n').find((line) => line.startsWith('data: '));
          if (data !== undefined) onData(data.slice(6), at);
        }
      });
      resolve({
        close: () => {
          outgoing.destroy();
          return ended;
        },
      });
    });
    outgoing.on('error', reject);
    outgoing.end(request.body);
  });
}
