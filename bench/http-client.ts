// The benchmarks' HTTP/1.1 client for JSON calls: keep-alive connections on plain sockets, each request
// written as one buffer and each answer read by its Content-Length. The client shares the machine's two cores
// with the gateway and PostgreSQL, and what it spends is taken from the server being measured: fetch (undici)
// cost about as much CPU per request as the server's own HTTP handling (bench:fanout measured 2 ms of the load
// generator's CPU per write through fetch), node:http's client about 0.3 ms per write of bench:writes' lifecycle
// (3.6–3.9 ms a lifecycle of 13 writes), which the floor, calling the data layer in-process, never pays.

import { request as httpRequest } from 'node:http';
import { connect, type Socket } from 'node:net';

export interface JsonResponse<T> {
  status: number;
  /** The parsed body; null when it was empty. */
  body: T | null;
}

const HEAD_END = Buffer.from('\r\n\r\n');

/** One keep-alive connection: a request at a time, its answer framed by Content-Length (chunked is refused). */
class JsonConnection {
  private readonly socket: Socket;
  private buffered: Buffer = Buffer.alloc(0);
  private waiting: { resolve: (r: { status: number; text: string }) => void; reject: (e: Error) => void } | null = null;
  private failure: Error | null = null;

  constructor(host: string, port: number) {
    this.socket = connect({ host, port, noDelay: true });
    this.socket.on('data', (chunk: Buffer) => {
      this.buffered = this.buffered.length === 0 ? chunk : Buffer.concat([this.buffered, chunk]);
      this.take();
    });
    const fail = (error: Error) => {
      this.failure ??= error;
      this.waiting?.reject(this.failure);
      this.waiting = null;
    };
    this.socket.on('error', fail);
    this.socket.on('close', () => fail(new Error('the server closed the connection')));
  }

  get usable(): boolean {
    return this.failure === null;
  }

  send(head: string, payload: Buffer | undefined): Promise<{ status: number; text: string }> {
    if (this.failure) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => {
      this.waiting = { resolve, reject };
      this.socket.write(payload ? Buffer.concat([Buffer.from(head, 'latin1'), payload]) : Buffer.from(head, 'latin1'));
    });
  }

  /** Completes the waiting request once its whole answer is buffered. */
  private take(): void {
    const headEnd = this.buffered.indexOf(HEAD_END);
    if (headEnd < 0 || !this.waiting) return;
    const head = this.buffered.toString('latin1', 0, headEnd);
    const status = Number(head.slice(9, 12));
    const length = /\r\ncontent-length: *(\d+)/i.exec(head);
    if (!length) {
      this.failure = new Error(`an answer without Content-Length (${head.split('\r\n')[0]})`);
      this.waiting.reject(this.failure);
      this.waiting = null;
      this.socket.destroy();
      return;
    }
    const end = headEnd + 4 + Number(length[1]);
    if (this.buffered.length < end) return;
    const text = this.buffered.toString('utf8', headEnd + 4, end);
    this.buffered = this.buffered.subarray(end);
    const { resolve } = this.waiting;
    this.waiting = null;
    resolve({ status, text });
  }

  close(): void {
    this.socket.destroy();
  }
}

/** A JSON API client over keep-alive connections to one base URL (`http://host:port`), one per call in flight. */
export function jsonClient(baseUrl: string) {
  const { hostname, port, host } = new URL(baseUrl);
  const idle: JsonConnection[] = [];
  const all = new Set<JsonConnection>();
  const call = async <T = any>(method: string, path: string, token: string, body?: unknown): Promise<JsonResponse<T>> => {
    let connection = idle.pop();
    while (connection && !connection.usable) connection = idle.pop();
    if (!connection) {
      connection = new JsonConnection(hostname, Number(port));
      all.add(connection);
    }
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const head =
      `${method} ${path} HTTP/1.1\r\nhost: ${host}\r\nauthorization: Token ${token}\r\n` +
      (payload ? `content-type: application/json\r\ncontent-length: ${payload.length}\r\n\r\n` : 'content-length: 0\r\n\r\n');
    const { status, text } = await connection.send(head, payload);
    idle.push(connection);
    try {
      return { status, body: text ? (JSON.parse(text) as T) : null };
    } catch (error) {
      throw new Error(`${method} ${path}: ${status} not JSON: ${text.slice(0, 300)}`, { cause: error });
    }
  };
  return {
    call,
    close: () => {
      for (const connection of all) connection.close();
    },
  };
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
        for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
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
