import type { ServerResponse } from 'node:http';
import type { ExecutionResult } from 'graphql';
import { isAsyncIterable, type Plugin } from 'graphql-yoga';

/** Why a subscription's response was cut: it never reaches the client, whose response just ends. */
class StreamCutAtShutdown extends Error {
  override name = 'StreamCutAtShutdown';
}

/**
 * GraphQL subscriptions over HTTP (SSE) that a shutdown ends are cut, not completed. A graphql-sse client takes
 * `event: complete` as the operation's end and never subscribes again; a response that ends while the operation
 * is open is a network error to it, which it retries (with backoff, reaching this process's successor or
 * another replica). So once the process ends its streams (Live.endStreams), the result that ending produced (an
 * UNAVAILABLE error) is not sent: the response ends there, and yoga writes no `complete`. graphql-ws clients get
 * close 1001 instead (http/graphql-ws.ts); the REST event streams send `event: error`, and EventSource reconnects.
 */
export function useSseShutdownCut({ streamsEnded }: { streamsEnded: () => boolean }): Plugin {
  return {
    onResultProcess({ result, setResult, serverContext }) {
      if (!isAsyncIterable(result)) return;
      // Served by node:http, the response itself is ended; served by fetch (in-process), the body errors.
      const response = (serverContext as { res?: ServerResponse }).res;
      setResult(cutAtShutdown(result, streamsEnded, () => response?.end()));
    },
  };
}

async function* cutAtShutdown<T extends ExecutionResult>(
  results: AsyncIterable<T>,
  streamsEnded: () => boolean,
  endResponse: () => void,
): AsyncGenerator<T> {
  const cut = () => {
    endResponse();
    return new StreamCutAtShutdown('the server is shutting down');
  };
  for await (const result of results) {
    if (streamsEnded()) throw cut();
    yield result;
  }
  if (streamsEnded()) throw cut();
}
