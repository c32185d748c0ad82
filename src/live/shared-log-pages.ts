import { readEventPage, type EventPage } from '../db/events.js';
import type { RawSql } from '../db/client.js';

// Replays that read the same page of a tenant's log at about the same time read it once: many streams opened
// from the start of a history, or clients reconnecting after a restart with Last-Event-IDs close together. A page
// read is shared by every stream that asks for the same tenant, start and bounds while it is read, and kept
// afterwards among the latest pages read, up to SHARED_PAGE_BYTES of events, so that a stream a page behind
// finds it too. The events of a shared page are the same objects for every stream, so what a subscription makes
// of them is executed and encoded once as well (shared-results.ts).
//
// Only a page that is not the log's last is kept: events are appended after the last page, and a stream that
// subscribed to the hub after such a page was read must read the log's end itself (an event appended between the
// read and its subscription would be in neither). A page before the end never changes: a tenant's event ids are
// given in the order their transactions commit (event_sequences, db/events.ts).

/** Bytes of events kept for replays to share, per database. */
export const SHARED_PAGE_BYTES = 8 * 1024 * 1024;

/** What an event costs beside its payload's bytes (its object, its type and ids), so that small events count too. */
const EVENT_OVERHEAD_BYTES = 256;

interface Kept {
  page: Promise<EventPage>;
  /** The page's bytes once read (null while it is read, when it is not yet counted). */
  bytes: number | null;
}

class SharedLogPages {
  /** By tenant, start and bounds; in the order of their last use (the first is the next to go). */
  private readonly pages = new Map<string, Kept>();
  private bytes = 0;

  constructor(private readonly sql: Pick<RawSql, 'query'>) {}

  read(tenantId: string, afterId: number, bounds: { rows: number; bytes: number }): Promise<EventPage> {
    const key = `${tenantId}\u0000${afterId}\u0000${bounds.rows}\u0000${bounds.bytes}`;
    const known = this.pages.get(key);
    if (known) {
      this.pages.delete(key);
      this.pages.set(key, known);
      return known.page;
    }
    const kept: Kept = { page: readEventPage(this.sql, tenantId, afterId, bounds), bytes: null };
    this.pages.set(key, kept);
    kept.page.then(
      (page) => {
        if (this.pages.get(key) !== kept) return;
        if (!page.more) {
          this.pages.delete(key);
          return;
        }
        kept.bytes = page.events.reduce((sum, event) => sum + (event.bytes ?? 0) + EVENT_OVERHEAD_BYTES, 0);
        this.bytes += kept.bytes;
        this.evict();
      },
      () => {
        if (this.pages.get(key) === kept) this.pages.delete(key);
      },
    );
    return kept.page;
  }

  /** The least recently used pages go (never one still being read) until the kept ones fit the bound. */
  private evict(): void {
    for (const [key, kept] of this.pages) {
      if (this.bytes <= SHARED_PAGE_BYTES) return;
      if (kept.bytes === null) continue;
      this.pages.delete(key);
      this.bytes -= kept.bytes;
    }
  }
}

const byDatabase = new WeakMap<object, SharedLogPages>();

/** readEventPage (db/events.ts), shared by the replays of one database that ask for the same page. */
export function sharedEventPage(
  sql: Pick<RawSql, 'query'>,
  tenantId: string,
  afterId: number,
  bounds: { rows: number; bytes: number },
): Promise<EventPage> {
  let pages = byDatabase.get(sql);
  if (!pages) {
    pages = new SharedLogPages(sql);
    byDatabase.set(sql, pages);
  }
  return pages.read(tenantId, afterId, bounds);
}
