import { Repeater } from 'graphql-yoga';
import type { RawSql } from '../db/client.js';
import { lastEventId, oldestEventId, type StoredEvent } from '../db/events.js';
import { ApiError } from '../errors.js';
import { BYTE_BOUNDS } from '../governor/governor.js';
import type { EventHub } from './event-hub.js';
import { sharedEventPage } from './shared-log-pages.js';

// One tenant's changes as an async iterator: what a GraphQL subscription and a REST event stream deliver.
//
// It starts at an event id: the one a client resumes after (Last-Event-ID), or the tenant's last id when it
// opens. Everything after it comes from the event log (replayed in id order), then live from the process's
// event hub, with the overlap between the two delivered once. Both reads are scoped to the tenant in SQL.
//
// A stream ends with an `error` item, never a thrown one, so the transports can say why: the resume point is
// older than the retention window, the subscriber fell too far behind, or its credential was revoked.

export type ChangeItem = { event: StoredEvent } | { error: ApiError };

export interface ChangeStreamOptions {
  hub: EventHub;
  sql: Pick<RawSql, 'query'>;
  tenantId: string;
  /** Which events this stream delivers. */
  matches: (event: StoredEvent) => boolean;
  /**
   * The connection whose events alone it delivers, when it follows one: the hub then hands it only those
   * (`matches` must refuse every other connection's events, as the log replay still reads them all).
   */
  connectionId?: string;
  /**
   * Where the stream starts: after this event id (see `streamStart`). `resumed` when a client asked for it
   * (Last-Event-ID): the stream then first checks that retention kept every event since.
   */
  start: StreamStart;
  /** Items to deliver first: the state as of `start.after` (e.g. a run's row read after that id was). */
  initial?: StoredEvent[];
  /** The stream ends after delivering an event for which this is true (a run's terminal status). */
  isLast?: (event: StoredEvent) => boolean;
  /** Called with a function that ends the stream with an error; returns the function that stops watching. */
  guard?: (end: (error: ApiError) => void) => () => void;
  /** Called once when the stream ends, however it ends. */
  onEnd?: () => void;
  /** Bytes of events a subscriber may leave unread before it is ended (it can resume with the last id it read). */
  maxPendingBytes?: number;
  /**
   * Called when the subscriber fell behind, before the stream ends with its error item: the transport's owner
   * ends, so that the client gets its transport's retryable ending rather than a final error.
   */
  onFellBehind?: () => void;
}

/** Events read from the log at most at once when a stream replays it (and at most BYTE_BOUNDS.logPage of them). */
const REPLAY_ROWS = 200;

const sizes = new WeakMap<StoredEvent, number>();
/** What holding an event costs: its payload's bytes as read from the log, or measured once for one made here. */
function bytesOf(event: StoredEvent): number {
  if (event.bytes !== undefined) return event.bytes;
  let bytes = sizes.get(event);
  if (bytes === undefined) {
    bytes = JSON.stringify(event.payload).length;
    sizes.set(event, bytes);
  }
  return bytes;
}

/** A stream of the tenant's changes; `return()` ends it and releases everything it held. */
export function changeStream(options: ChangeStreamOptions): Repeater<ChangeItem> {
  const { hub, sql, tenantId, matches, isLast, maxPendingBytes = BYTE_BOUNDS.streamPending } = options;
  return new Repeater<ChangeItem>(async (push, stop) => {
    /** Bytes of the events delivered and not yet taken by the subscriber (one event alone may exceed the bound). */
    let pendingBytes = 0;
    /** Live events that arrived during the replay, and their bytes. */
    let queuedBytes = 0;
    let ended = false;
    const end = (item?: ChangeItem) => {
      if (ended) return;
      ended = true;
      if (item) void push(item).catch(() => {});
      stop();
    };
    // The promise of the last item pushed: settled once the subscriber has taken it (or the stream ended).
    let lastTaken: Promise<unknown> = Promise.resolve();
    const fellBehind = () => {
      options.onFellBehind?.();
      end({
        error: new ApiError(
          'UNAVAILABLE',
          `The stream fell more than ${maxPendingBytes} bytes of events behind; reconnect with Last-Event-ID ${lastDelivered} to resume`,
        ),
      });
    };
    const deliver = (event: StoredEvent) => {
      if (ended) return;
      const bytes = bytesOf(event);
      if (pendingBytes > 0 && pendingBytes + bytes > maxPendingBytes) {
        fellBehind();
        return;
      }
      pendingBytes += bytes;
      lastDelivered = event.id;
      lastTaken = push({ event }).then(
        () => (pendingBytes -= bytes),
        () => {},
      );
      if (isLast?.(event)) end();
    };
    // Stopped by its subscriber (return()): the replay reads no further.
    void stop.then(() => (ended = true));
    const startId = options.start.after;
    let lastDelivered = startId;
    const unguard = options.guard?.((error) => end({ error }));
    let unsubscribe: (() => void) | undefined;
    try {
      if (options.start.resumed && (await eventsWereDeletedAfter(sql, tenantId, startId))) {
        end({
          error: new ApiError(
            'EVENTS_EXPIRED',
            `Event ${startId} is older than the event retention window: read the current state again, then stream without Last-Event-ID`,
          ),
        });
      }
      const initial = ended ? [] : (options.initial ?? []);
      // Live events arriving while the log is replayed wait here; those the replay covered are dropped. The
      // hub may also hand over, after the replay, an event it read before this stream subscribed: every event
      // at or below the highest id this stream has taken (from the log or the hub) is dropped, so none is
      // delivered twice (the hub delivers a tenant's events in id order).
      const queued: StoredEvent[] = [];
      let replaying = true;
      let takenUpTo = startId;
      const live = (event: StoredEvent) => {
        if (event.id <= takenUpTo) return;
        takenUpTo = event.id;
        if (matches(event)) deliver(event);
      };
      unsubscribe = await hub.subscribe(
        tenantId,
        (event) => {
          if (!replaying) live(event);
          // Live events wait while the log is replayed at the subscriber's pace: as many bytes as it may fall behind.
          else if (queuedBytes === 0 || queuedBytes + bytesOf(event) <= maxPendingBytes) {
            queued.push(event);
            queuedBytes += bytesOf(event);
          } else fellBehind();
        },
        options.connectionId,
      );
      for (const event of initial) deliver(event);
      while (!ended) {
        // The log is read no faster than the subscriber takes it: a page is read once it has taken the last
        // one, so a history of any length, in events of any size, costs one page of memory (BYTE_BOUNDS), and a
        // subscriber that reads slowly is not ended for it. Replays reading the same page share it.
        if (pendingBytes > 0) await Promise.race([lastTaken, stop]);
        if (ended) break;
        const page = await sharedEventPage(sql, tenantId, takenUpTo, {
          rows: REPLAY_ROWS,
          bytes: Math.min(maxPendingBytes, BYTE_BOUNDS.logPage),
        });
        for (const event of page.events) {
          takenUpTo = event.id;
          if (matches(event)) deliver(event);
        }
        if (!page.more) break;
      }
      // The live events that waited are delivered once the replay's last page is taken.
      if (pendingBytes > 0) await Promise.race([lastTaken, stop]);
      replaying = false;
      for (const event of queued) live(event);
    } catch (error) {
      end({
        error: error instanceof ApiError ? error : new ApiError('UNAVAILABLE', 'The event log could not be read; reconnect to resume'),
      });
    }
    await stop;
    ended = true;
    unsubscribe?.();
    unguard?.();
    options.onEnd?.();
  });
}

export interface StreamStart {
  after: number;
  resumed: boolean;
}

/**
 * The root value of a subscription that resumes (a REST event stream): after which event (its Last-Event-ID), and
 * the id of the event being delivered, for the stream's `id:` line (set by plugins/use-shared-subscription-results.ts).
 */
export class StreamPosition {
  current = 0;
  constructor(readonly after: number | undefined) {}
}

/**
 * Where a new stream starts: after `resumeAfter` (a client's Last-Event-ID; INVALID_QUERY when the tenant has no
 * such event yet), or after the tenant's last event now. Read before anything the stream shows first, so every
 * change committed after that state is delivered.
 */
export async function streamStart(sql: Pick<RawSql, 'query'>, tenantId: string, resumeAfter: number | undefined): Promise<StreamStart> {
  const last = await lastEventId(sql, tenantId);
  if (resumeAfter === undefined) return { after: last, resumed: false };
  if (resumeAfter > last)
    throw new ApiError('INVALID_QUERY', `Last-Event-ID ${resumeAfter} names no event of this tenant yet (its last is ${last})`);
  return { after: resumeAfter, resumed: true };
}

/** Whether retention deleted events after `after` (so a resume from it would miss some). */
async function eventsWereDeletedAfter(sql: Pick<RawSql, 'query'>, tenantId: string, after: number): Promise<boolean> {
  if ((await lastEventId(sql, tenantId)) === after) return false;
  const oldest = await oldestEventId(sql, tenantId);
  return oldest === null || oldest > after + 1;
}
