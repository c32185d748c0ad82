import { Readable } from 'node:stream';

// The body of an event stream (a REST event stream, a GraphQL subscription over SSE): a Node stream, which
// @whatwg-node's Response takes as it is and @whatwg-node/server pipes into node:http's response. It queues
// nothing of its own (highWaterMark 0): the next message is made only when the response asks for one, that is
// once the socket has taken the last (node:http's write answered true, or the socket drained). So a client that
// reads nothing holds one message in its socket's buffer, and its subscription reads no further. (The web
// ReadableStream of yoga's fetch API is a Node stream underneath that ignores the queuing strategy it is given:
// it made one message ahead of the socket, a second copy of a large event for every unread stream.)

/** What an event stream's body asks of its transport. */
export interface EventStreamSource {
  /** Writes the next message(s) (`body.write`) or ends the body; called when the client wants more and no call runs. */
  next(): Promise<void>;
  /** The body was destroyed: its client went away. */
  cancel(): void;
}

export class EventStreamBody extends Readable {
  private source: EventStreamSource | undefined;
  private nexting = false;
  /** Whether the stream asked for more (`_read`) since the last call of `next` began. */
  private wanted = false;
  private over = false;

  constructor() {
    super({ highWaterMark: 0 });
  }

  /** Starts asking `source` for messages (the body is made before its source, which writes into it). */
  from(source: EventStreamSource): this {
    this.source = source;
    if (this.wanted && !this.nexting) void this.nextWhileWanted();
    return this;
  }

  /** Queues `text` for the client (a message, a heartbeat), unless the body ended. */
  send(text: string): void {
    if (!this.over && !this.destroyed) this.push(Buffer.from(text));
  }

  /** Queues bytes made elsewhere (yoga's own event stream), as they are. */
  sendBytes(bytes: Uint8Array): void {
    if (!this.over && !this.destroyed) this.push(bytes);
  }

  /** Ends the body after what was sent; later sends are dropped. */
  finish(): void {
    if (this.over) return;
    this.over = true;
    if (!this.destroyed) this.push(null);
  }

  override _read(): void {
    // Node calls this again only after a push, so a call while `next` runs is remembered, not dropped.
    this.wanted = true;
    if (this.source && !this.nexting) void this.nextWhileWanted();
  }

  private async nextWhileWanted(): Promise<void> {
    this.nexting = true;
    try {
      while (this.wanted && !this.over && !this.destroyed) {
        this.wanted = false;
        await this.source!.next();
      }
    } finally {
      this.nexting = false;
    }
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    // Destroyed before it ended: its client went away (after the end, Node destroys every stream it read whole).
    if (!this.over) this.source?.cancel();
    this.over = true;
    callback(error);
  }
}
