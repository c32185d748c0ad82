import type { ExecutionResult } from 'graphql';
import { isAsyncIterable } from 'graphql-yoga';
import { graphqlErrorResponse, type ResponseTarget, type RestResponse } from './envelope.js';

// A REST event stream (Server-Sent Events): what a route's subscription yields, one `event:` message per
// result, with the event log's id as the message id (so EventSource's Last-Event-ID resumes after it). An
// error result (credential revoked, resume point past retention, stream fell behind) is sent as
// `event: error` with the spec's error body, and ends the stream. Idle streams get a comment line every
// `heartbeatMs`, so proxies and load balancers keep them open.

/** `Last-Event-ID`: an event id (digits). Undefined when absent; null when malformed. */
export function parseLastEventId(value: string | null): number | undefined | null {
  if (value === null || value.trim() === '') return undefined;
  const trimmed = value.trim();
  return /^\d{1,15}$/.test(trimmed) ? Number(trimmed) : null;
}

/** Whether an Accept header asks for an event stream. */
export function acceptsEventStream(accept: string | null | undefined): boolean {
  return (accept ?? '').toLowerCase().includes('text/event-stream');
}

interface EventStreamOptions {
  /** What the subscription answered: a stream of results, or one result (its errors refuse the request). */
  result: AsyncIterable<ExecutionResult> | ExecutionResult;
  /** The `event:` name of each message. */
  event: string;
  /** The id of the event behind the result being written. */
  currentId: () => number;
  heartbeatMs: number;
  /** The request's signal: aborted when the client disconnects, which ends the stream at once. */
  signal?: AbortSignal;
  target: ResponseTarget;
  fetchAPI: { Response: typeof Response; ReadableStream: typeof ReadableStream };
}

/** The response: the stream, or the error a refused subscription answers (as JSON, before any stream). */
export function eventStreamResponse(options: EventStreamOptions): Response | RestResponse {
  const { result, target, fetchAPI } = options;
  if (!isAsyncIterable(result)) {
    const error = result.errors?.[0];
    return graphqlErrorResponse(error ?? { message: 'Internal error' }, target);
  }
  const iterator = result[Symbol.asyncIterator]();
  const encoder = new TextEncoder();
  let heartbeat: NodeJS.Timeout | undefined;
  let closed = false;
  const finish = () => {
    closed = true;
    clearInterval(heartbeat);
    void iterator.return?.();
  };
  const body = new fetchAPI.ReadableStream<Uint8Array>({
    start(controller) {
      // Without it a gone client is noticed at the next write, a heartbeat away.
      options.signal?.addEventListener('abort', () => {
        if (closed) return;
        finish();
        controller.close();
      });
      const write = (text: string) => {
        if (!closed) controller.enqueue(encoder.encode(text));
      };
      // The client's reconnection delay, then a comment so headers and first bytes go out at once.
      write('retry: 3000\n: stream open\n\n');
      heartbeat = setInterval(() => write(': heartbeat\n\n'), options.heartbeatMs);
      void (async () => {
        try {
          for (;;) {
            const next = await iterator.next();
            if (next.done || closed) break;
            const item = next.value;
            const error = item.errors?.[0];
            if (error) {
              write(`event: error\ndata: ${JSON.stringify(graphqlErrorResponse(error, target).body)}\n\n`);
              break;
            }
            const value = Object.values(item.data ?? {})[0];
            write(`id: ${options.currentId()}\nevent: ${options.event}\ndata: ${JSON.stringify(value)}\n\n`);
          }
        } catch {
          write(`event: error\ndata: ${JSON.stringify(graphqlErrorResponse({ message: 'Internal error' }, target).body)}\n\n`);
        }
        if (!closed) {
          finish();
          controller.close();
        }
      })();
    },
    cancel() {
      // The client went away.
      finish();
    },
  });
  return new fetchAPI.Response(body, {
    status: 200,
    headers: {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      'x-accel-buffering': 'no',
    },
  });
}
