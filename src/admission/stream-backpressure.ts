import { ApiError } from '../errors.js';
import { endingMessage, type LeaseOwner } from '../governor/governor.js';
import { EventStreamBody } from '../rest/event-stream-body.js';

/** The last event of a GraphQL stream the governor ended: a retryable error (UNAVAILABLE), as an execution result. */
function lastEvent(message: string): string {
  const error = new ApiError('UNAVAILABLE', message);
  return `event: next\ndata: ${JSON.stringify({ errors: [{ message: error.message, extensions: { code: error.code } }] })}\n\n`;
}

/**
 * `source` behind a body that queues nothing of its own (rest/event-stream-body.ts): it is read only when the
 * client's socket has taken what was sent. `owner` is told when a chunk waits for its client (its stall clock
 * runs) and when the client takes; when the governor ends it, the last event is sent, the stream ends and
 * `source` is cancelled.
 */
export function boundedEventStream(source: ReadableStream<Uint8Array>, owner: LeaseOwner): EventStreamBody {
  const reader = source.getReader();
  let ended = false;
  const body = new EventStreamBody();
  const stop = () => {
    ended = true;
    owner.end('done');
    body.finish();
  };
  owner.onEnding((reason) => {
    if (ended) return;
    ended = true;
    body.send(lastEvent(endingMessage(reason, owner.stallMs)));
    body.finish();
    void reader.cancel().catch(() => {});
  });
  owner.signal.addEventListener('abort', () => {
    if (ended) return;
    ended = true;
    body.finish();
    void reader.cancel().catch(() => {});
  });
  return body.from({
    async next() {
      owner.taking();
      let read: ReadableStreamReadResult<Uint8Array>;
      try {
        read = await reader.read();
      } catch {
        // A source that fails (a subscription cut at shutdown: plugins/use-sse-shutdown-cut.ts) ends the stream
        // without `complete`, which graphql-sse clients retry; an error here would be nobody's to handle.
        if (!ended) stop();
        return;
      }
      const { done, value } = read;
      if (ended) return;
      if (done) return stop();
      body.sendBytes(value);
      // Until the client has taken it (at once when the socket has room).
      owner.waiting();
    },
    cancel() {
      // The client went away: its owner ends, and every lease of it.
      ended = true;
      owner.end('client-gone');
      void reader.cancel().catch(() => {});
    },
  });
}
