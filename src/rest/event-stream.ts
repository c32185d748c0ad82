import type { ExecutionResult } from 'graphql';
import { isAsyncIterable } from 'graphql-yoga';
import { ApiError } from '../errors.js';
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
  /** Bytes written but not yet taken by the client that the stream holds; past them it reads no further. */
  bufferBytes: number;
  /** A stream whose buffer stays full this long has fallen behind: it is ended, and its client resumes. */
  stallMs?: number;
  /** The request's signal: aborted when the client disconnects, which ends the stream at once. */
  signal?: AbortSignal;
  target: ResponseTarget;
  fetchAPI: { Response: typeof Response; ReadableStream: typeof ReadableStream };
}

/** Default of `stallMs`: a client that takes nothing of a full buffer for this long is not reading. */
const DEFAULT_STALL_MS = 10_000;

/**
 * The response: the stream, or the error a refused subscription answers (as JSON, before any stream).
 *
 * The stream is pulled: a result is read from the subscription only while the bytes the client has not taken
 * stay under `bufferBytes` (the stream's desiredSize), so a client that reads slowly slows its subscription (a
 * replay reads the event log at its pace) instead of growing the process. One whose buffer stays full for
 * `stallMs` is ended with a retryable `event: error` (UNAVAILABLE) naming the Last-Event-ID to resume from, and
 * its subscription, slot and buffer are given up.
 */
export function eventStreamResponse(options: EventStreamOptions): Response | RestResponse {
  const { result, target, fetchAPI } = options;
  if (!isAsyncIterable(result)) {
    const error = result.errors?.[0];
    return graphqlErrorResponse(error ?? { message: 'Internal error' }, target);
  }
  const iterator = result[Symbol.asyncIterator]();
  const encoder = new TextEncoder();
  const stallMs = options.stallMs ?? DEFAULT_STALL_MS;
  let ticker: NodeJS.Timeout | undefined;
  let closed = false;
  /** The id of the last message sent, for the resume point of a stream that fell behind. */
  let lastSentId: number | undefined;
  const finish = () => {
    closed = true;
    clearInterval(ticker);
    void iterator.return?.();
  };
  // The writer and the ending of the stream, made by `start` and used by `pull`.
  const pulling: { end(last?: string): void; write(text: string): void } = { end: () => {}, write: () => {} };
  const errorMessage = (error: { message: string; extensions?: Record<string, unknown> }) =>
    `event: error\ndata: ${JSON.stringify(graphqlErrorResponse(error, target).body)}\n\n`;
  const body = new fetchAPI.ReadableStream<Uint8Array>(
    {
      start(controller) {
        const write = (text: string) => {
          if (!closed) controller.enqueue(encoder.encode(text));
        };
        const end = (last?: string) => {
          if (closed) return;
          if (last) write(last);
          finish();
          controller.close();
        };
        // Without it a gone client is noticed at the next write, a heartbeat away.
        options.signal?.addEventListener('abort', () => end());
        // The client's reconnection delay, then a comment so headers and first bytes go out at once.
        write('retry: 3000\n: stream open\n\n');
        let lastBeat = performance.now();
        let fullSince: number | undefined;
        ticker = setInterval(
          () => {
            const now = performance.now();
            if ((controller.desiredSize ?? 0) > 0) {
              fullSince = undefined;
              if (now - lastBeat >= options.heartbeatMs) {
                lastBeat = now;
                write(': heartbeat\n\n');
              }
              return;
            }
            fullSince ??= now;
            if (now - fullSince < stallMs) return;
            const resume = lastSentId === undefined ? '' : ` with Last-Event-ID ${lastSentId}`;
            end(errorMessage(new ApiError('UNAVAILABLE', `The stream fell behind: the client took none of its last ${options.bufferBytes} bytes for ${stallMs / 1000} s; reconnect${resume} to resume`)));
          },
          Math.min(options.heartbeatMs, 1000),
        );
        pulling.end = end;
        pulling.write = write;
      },
      async pull() {
        try {
          const next = await iterator.next();
          if (next.done || closed) return pulling.end();
          const item = next.value;
          const error = item.errors?.[0];
          if (error) return pulling.end(errorMessage(error));
          const value = Object.values(item.data ?? {})[0];
          lastSentId = options.currentId();
          pulling.write(`id: ${lastSentId}\nevent: ${options.event}\ndata: ${JSON.stringify(value)}\n\n`);
        } catch {
          pulling.end(errorMessage({ message: 'Internal error' }));
        }
      },
      cancel() {
        // The client went away.
        finish();
      },
    },
    { highWaterMark: options.bufferBytes, size: (chunk) => chunk.byteLength },
  );
  return new fetchAPI.Response(body, {
    status: 200,
    headers: {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      'x-accel-buffering': 'no',
    },
  });
}
