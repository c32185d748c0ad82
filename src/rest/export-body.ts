import { ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { PIECE_BYTES, type PieceSink } from './export-lines.js';

// The body of an export (rest/export.ts): its batches' pieces, sent on as each is written. It is a Node stream,
// which @whatwg-node's Response takes as it is and @whatwg-node/server pipes into node:http's response. (Its
// web ReadableStream, by contrast, keeps every chunk a `pull` enqueues and concatenates them once the pull has
// ended: a batch reached the client only when all of it had been read, as one more copy of it.) Piped into
// node:http, the body writes its pieces into the response itself, each with a callback that hands the buffer
// back once the socket has written it, so that the export writes in a few buffers, over and over, rather than a
// new one per piece: those buffers outlive the young generation's collections, and made V8 run a full collection
// every few megabytes. Read as a stream otherwise (`fetch` in-process, any other pipe), each piece is a buffer
// of its own.

/** A piece of an export written before its body streams: `buffer[0 .. length)`. */
export interface Piece {
  buffer: Buffer;
  length: number;
}

/** How an export's body gets its pieces, and what it reports. */
export interface ExportBodySource {
  /** Pieces written before answering (a CSV header, the first batch). */
  first: readonly Piece[];
  /** Whether batches follow the first. */
  more: boolean;
  /** Reads the next batch, sending its pieces to `sink` as they are written; resolves whether more follow. */
  readBatch(sink: PieceSink): Promise<boolean>;
  /** The export's end, reported once (later calls are ignored): all of it read, the client gone, or a failure. */
  finish(outcome: 'complete' | 'client closed' | 'failed', error?: unknown): void;
  /** Told when the client has taken nothing of a full queue (its stall clock runs), and when it takes again. */
  owner: { waiting(): void; taking(): void };
}

export class ExportBody extends Readable {
  private mode: 'waiting' | 'read' | 'written' = 'waiting';
  private response: ServerResponse | undefined;
  private reading = false;
  /** Whether the stream asked for more (_read) since the last batch began. */
  private wanted = false;
  private more: boolean;

  /** `queuedBytes`: how much may wait to be written or taken when the next batch is read. */
  constructor(
    private readonly source: ExportBodySource,
    private readonly queuedBytes: number,
  ) {
    super({ highWaterMark: queuedBytes });
    this.more = source.more;
  }

  override pipe<T extends NodeJS.WritableStream>(destination: T, options?: { end?: boolean }): T {
    if (!(destination instanceof ServerResponse) || this.mode !== 'waiting') return super.pipe(destination, options);
    this.mode = 'written';
    this.response = destination;
    void this.writeTo(destination, options?.end !== false);
    return destination;
  }

  /**
   * Writes every batch into node:http's response. A buffer comes back from the socket once written, and the next
   * batch is read once no more than `queuedBytes` wait to be written. A failure destroys the response: the
   * client sees the transfer cut off, with no last chunk, and can tell it from a whole one.
   */
  private async writeTo(response: ServerResponse, end: boolean): Promise<void> {
    const spare: Buffer[] = [];
    let unwritten = 0;
    let gone = false;
    /** Who waits for the client to take what is written: the next batch, or a batch's read paused mid-way. */
    let wakes: (() => void)[] = [];
    const awake = () => {
      const resume = wakes;
      wakes = [];
      if (resume.length > 0) this.source.owner.taking();
      for (const wake of resume) wake();
    };
    const untilTaken = () => {
      this.source.owner.waiting();
      return new Promise<void>((resolve) => wakes.push(resolve));
    };
    response.once('close', () => {
      gone = !response.writableFinished;
      awake();
    });
    const sink: PieceSink = {
      buffer: () => spare.pop() ?? Buffer.allocUnsafe(PIECE_BYTES),
      send: (buffer, length) => {
        if (gone) return;
        unwritten += length;
        response.write(length === buffer.length ? buffer : buffer.subarray(0, length), () => {
          unwritten -= length;
          if (buffer.length === PIECE_BYTES) spare.push(buffer);
          if (unwritten <= this.queuedBytes) awake();
        });
      },
      room: () => (unwritten > this.queuedBytes && !gone ? untilTaken() : null),
    };
    try {
      for (const piece of this.source.first) sink.send(piece.buffer, piece.length);
      while (this.more) {
        if (gone || this.destroyed) return this.source.finish('client closed');
        if (unwritten > this.queuedBytes) {
          await untilTaken();
          continue;
        }
        this.more = await this.source.readBatch(sink);
      }
      // The export holds its lease until its client has taken what was written: bytes left in this process's
      // buffers are still the export's, and a client that stops reading now is ended by the stall rule.
      while (unwritten > 0 && !gone && !this.destroyed) await untilTaken();
      this.source.finish(gone ? 'client closed' : 'complete');
      if (end) response.end();
    } catch (error) {
      this.source.finish('failed', error);
      response.destroy();
    }
  }

  /** Cuts the transfer off (no last chunk), so its client can tell it from a whole one. */
  cut(reason: string): void {
    this.source.finish('failed', new Error(`export ended: ${reason}`));
    if (this.response) this.response.destroy();
    else this.destroy(new Error(`export ended: ${reason}`));
  }

  override _read(): void {
    if (this.mode === 'written') return;
    // Node calls this again only after a push, so a call during a batch is remembered, not dropped.
    this.wanted = true;
    if (!this.reading) void this.readOn();
  }

  /** Reads batches while the stream asks for more, each piece a buffer of its own. */
  private async readOn(): Promise<void> {
    this.reading = true;
    const sink: PieceSink = {
      buffer: () => Buffer.allocUnsafe(PIECE_BYTES),
      send: (buffer, length) => {
        if (!this.destroyed) this.push(buffer.subarray(0, length));
      },
    };
    try {
      if (this.mode === 'waiting') {
        this.mode = 'read';
        // The first pieces (a CSV header) may be none: the stream then still wants the first batch.
        this.wanted = this.source.first.length === 0;
        for (const piece of this.source.first) sink.send(piece.buffer, piece.length);
      }
      while (this.more && this.wanted && !this.destroyed) {
        this.wanted = false;
        this.more = await this.source.readBatch(sink);
      }
      if (!this.more && !this.destroyed) {
        this.source.finish('complete');
        this.push(null);
      }
    } catch (error) {
      this.source.finish('failed', error);
      this.destroy(error instanceof Error ? error : new Error(String(error)));
    } finally {
      this.reading = false;
    }
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.source.finish('client closed');
    callback(error);
  }
}
