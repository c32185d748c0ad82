import type { ExecutionResult } from 'graphql';
import { isAsyncIterable } from 'graphql-yoga';
import { ApiError } from '../errors.js';
import { endingMessage, type LeaseOwner } from '../governor/governor.js';
import { encodedOnce } from '../live/shared-results.js';
import { graphqlErrorResponse, type ResponseTarget, type RestResponse } from './envelope.js';
import { EventStreamBody } from './event-stream-body.js';

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
  /**
   * The request's owner in the governor: told when the stream waits for its client and when the client takes
   * something; it ends the stream when the client leaves or stalls (and the subscription's lease with it).
   */
  owner: LeaseOwner;
  target: ResponseTarget;
  fetchAPI: { Response: typeof Response };
}

/**
 * The response: the stream, or the error a refused subscription answers (as JSON, before any stream).
 *
 * The stream is pulled: a result is read from the subscription only when the body asks for more, that is when
 * the socket has taken the last message (rest/event-stream-body.ts); so a client that reads slowly slows its
 * subscription (a replay reads the event log at its pace) instead of growing the process. A client that takes
 * nothing for the governor's stall time while the stream has more to send has fallen behind: the governor ends
 * its owner, and the stream ends with a retryable `event: error` (UNAVAILABLE) naming the Last-Event-ID to
 * resume from. A client that leaves ends the owner at once, and the subscription's lease with it.
 */
export function eventStreamResponse(options: EventStreamOptions): Response | RestResponse {
  const { result, target, fetchAPI, owner } = options;
  if (!isAsyncIterable(result)) {
    const error = result.errors?.[0];
    return graphqlErrorResponse(error ?? { message: 'Internal error' }, target);
  }
  const iterator = result[Symbol.asyncIterator]();
  let ticker: NodeJS.Timeout | undefined;
  let closed = false;
  /** The id of the last message sent, for the resume point of a stream that fell behind. */
  let lastSentId: number | undefined;
  const body = new EventStreamBody();
  const finish = () => {
    closed = true;
    clearInterval(ticker);
    owner.end('done');
    void iterator.return?.();
  };
  const end = (last?: string) => {
    if (closed) return;
    if (last) body.send(last);
    finish();
    body.finish();
  };
  const errorMessage = (error: { message: string; extensions?: Record<string, unknown> }) =>
    `event: error\ndata: ${JSON.stringify(graphqlErrorResponse(error, target).body)}\n\n`;
  // The owner ends when the client leaves (without it a gone client is noticed at the next write, a heartbeat
  // away), and when the governor ends it: stalled, or at shutdown, with a retryable last message.
  owner.onEnding((reason) => {
    const resume = lastSentId === undefined ? '' : ` with Last-Event-ID ${lastSentId}`;
    end(errorMessage(new ApiError('UNAVAILABLE', endingMessage(reason, owner.stallMs, resume))));
  });
  owner.signal.addEventListener('abort', () => end());
  // The client's reconnection delay, then a comment so headers and first bytes go out at once.
  body.send('retry: 3000\n: stream open\n\n');
  let lastBeat = performance.now();
  ticker = setInterval(
    () => {
      const now = performance.now();
      // An idle stream (its subscription has nothing to send) gets a comment now and then; a full one needs none.
      if (owner.waitingSince === undefined && now - lastBeat >= options.heartbeatMs) {
        lastBeat = now;
        body.send(': heartbeat\n\n');
      }
    },
    Math.min(options.heartbeatMs, 1000),
  );
  body.from({
    async next() {
      owner.taking();
      try {
        const next = await iterator.next();
        if (next.done || closed) return end();
        const item = next.value;
        const error = item.errors?.[0];
        if (error) return end(errorMessage(error));
        const value = Object.values(item.data ?? {})[0];
        lastSentId = options.currentId();
        // In three pieces: the data is encoded straight from its JSON text, not from a copy joined to the lines
        // around it, and once for every stream of an event with the same route and access (live/shared-results.ts).
        body.send(`id: ${lastSentId}\nevent: ${options.event}\ndata: `);
        body.sendBytes(encodedOnce(item, 'rest data', () => Buffer.from(JSON.stringify(value))));
        body.send('\n\n');
        // Until the client has taken it (at once when the socket has room).
        owner.waiting();
      } catch {
        end(errorMessage({ message: 'Internal error' }));
      }
    },
    cancel() {
      // The client went away.
      owner.end('client-gone');
      finish();
    },
  });
  return new fetchAPI.Response(body as unknown as BodyInit, {
    status: 200,
    headers: {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      'x-accel-buffering': 'no',
    },
  });
}
