import type { Plugin } from 'graphql-yoga';
import { ApiError } from '../errors.js';
import { GRAPHQL_ENDPOINT } from '../paths.js';
import { DEFAULT_STALL_MS, STREAM_QUEUE_BYTES } from '../rest/event-stream.js';

/** The web streams of the server's fetch API (yoga's on Node.js), which a replaced answer must use. */
interface StreamsApi {
  ReadableStream: typeof ReadableStream;
  Response: typeof Response;
}

/**
 * A GraphQL subscription over SSE (`Accept: text/event-stream` on /graphql) held to the bounds of a REST event
 * stream (src/rest/event-stream.ts): its answer queues at most `queueBytes` for its client, and yoga's stream
 * reads from the subscription only when that queue has room, so a client that reads slowly slows its
 * subscription instead of growing the process. A client that takes nothing for `stallMs` of a full queue has
 * fallen behind: its stream is ended with `event: next` carrying a 503 UNAVAILABLE error and no `event: complete`
 * (graphql-sse clients retry a stream that ends without it), and its subscription and slot are given up.
 * The single-connection mode of graphql-sse is not served; graphql-ws sockets are bounded by `ws` itself.
 */
export function useStreamBackpressure({
  stallMs = DEFAULT_STALL_MS,
  queueBytes = STREAM_QUEUE_BYTES,
}: {
  stallMs?: number | undefined;
  queueBytes?: number;
} = {}): Plugin {
  return {
    onResponse({ request, response, setResponse, fetchAPI }) {
      if (response.body === null || !(response.headers.get('content-type') ?? '').startsWith('text/event-stream')) return;
      // REST event streams bound themselves; only GraphQL's answer is yoga's own stream.
      if (new URL(request.url).pathname !== GRAPHQL_ENDPOINT) return;
      const body = boundedEventStream(response.body, fetchAPI, { stallMs, queueBytes, lastWords: fellBehindEvent(stallMs) });
      setResponse(new fetchAPI.Response(body, { status: response.status, statusText: response.statusText, headers: response.headers }));
    },
  };
}

/** The last event of a GraphQL stream that fell behind: a retryable error (UNAVAILABLE), as an execution result. */
function fellBehindEvent(stallMs: number): string {
  const error = new ApiError('UNAVAILABLE', `The stream fell behind: its client took nothing for ${stallMs / 1000} s; reconnect to resume`);
  return `event: next\ndata: ${JSON.stringify({ errors: [{ message: error.message, extensions: { code: error.code } }] })}\n\n`;
}

/**
 * `source` behind a queue of at most `queueBytes`: it is read only when the queue has room. When the queue stays
 * full for `stallMs`, `lastWords` is queued after it, the stream ends and `source` is cancelled.
 */
export function boundedEventStream(
  source: ReadableStream<Uint8Array>,
  streams: StreamsApi,
  { stallMs, queueBytes, lastWords }: { stallMs: number; queueBytes: number; lastWords: string },
): ReadableStream<Uint8Array> {
  const reader = source.getReader();
  let ticker: NodeJS.Timeout | undefined;
  let ended = false;
  /** Since when the stream has waited for its client to ask for more (its queue is full); undefined while it asks. */
  let fullSince: number | undefined;
  const stop = () => {
    ended = true;
    clearInterval(ticker);
  };
  return new streams.ReadableStream<Uint8Array>(
    {
      start(controller) {
        ticker = setInterval(
          () => {
            if (fullSince === undefined || performance.now() - fullSince < stallMs) return;
            stop();
            controller.enqueue(new TextEncoder().encode(lastWords));
            controller.close();
            void reader.cancel().catch(() => {});
          },
          Math.min(stallMs, 1000),
        );
      },
      async pull(controller) {
        fullSince = undefined;
        let read: ReadableStreamReadResult<Uint8Array>;
        try {
          read = await reader.read();
        } catch {
          // A source that fails (a subscription cut at shutdown: plugins/use-sse-shutdown-cut.ts) ends the stream
          // without `complete`, which graphql-sse clients retry; an error here would be nobody's to handle.
          stop();
          controller.close();
          return;
        }
        const { done, value } = read;
        if (ended) return;
        if (done) {
          stop();
          controller.close();
          return;
        }
        controller.enqueue(value);
        // Until the stream asks for more, which it does at once while its queue has room. (Not desiredSize:
        // the Node.js stream of yoga's fetch API reports its bound there whatever it holds.)
        fullSince = performance.now();
      },
      cancel(reason) {
        // The client went away.
        stop();
        return reader.cancel(reason);
      },
    },
    { highWaterMark: queueBytes, size: (chunk) => chunk.byteLength },
  );
}
