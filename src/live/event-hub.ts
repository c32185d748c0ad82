import type { Database } from '../db/client.js';
import { BYTE_BOUNDS } from '../governor/governor.js';
import { connectionOfEvent, EVENTS_CHANNEL, lastEventId, readEventPage, type StoredEvent } from '../db/events.js';
import type { Logger } from '../logger.js';

// The process-wide event hub: one LISTEN for the whole process (a dedicated PostgreSQL
// connection, or PGlite's listen API), fanning the event log out to in-process subscribers of a tenant.
//
// NOTIFY only says "tenant T has events up to id n"; the events themselves are read from the log, after the
// last id this process delivered for T. Because a tenant's ids become visible in order with no gap (see
// src/db/events.ts), reading "after the cursor" never skips an event that commits later. Notifications can be
// lost (the LISTEN connection dropped): after a reconnect, and every `pollMs` anyway, each followed tenant is
// read again, so everything committed is delivered.
//
// A subscriber may follow one connection: it is then handed only that connection's events (and its runs'), so
// an event costs a call per interested subscriber, not one per subscriber of the tenant.
//
// Progress events (`sync.progress`) are coalesced per run at delivery: at most one per `progressMs`, the
// latest one wins; a held one is delivered before the next status change of its run, which is never held.

type EventListener = (event: StoredEvent) => void;

interface EventHubOptions {
  db: Pick<Database, 'liveReads' | 'listen'>;
  logger?: Pick<Logger, 'warn'>;
  /** Safety-net poll of every followed tenant (default 5 s). */
  pollMs?: number;
  /** Shortest gap between two delivered progress events of one run (default 250 ms). */
  progressMs?: number;
}

interface HeldProgress {
  event: StoredEvent;
  timer: NodeJS.Timeout | undefined;
  lastDeliveredAt: number;
}

interface FollowedTenant {
  /** Subscribers of every event of the tenant. */
  listeners: Set<EventListener>;
  /** Subscribers of one connection's events, by connection id. */
  byConnection: Map<string, Set<EventListener>>;
  /** The last id read from the log. */
  cursor: number;
  /** The cursor is being set (first subscriber): reads wait for it. */
  ready: Promise<void>;
  /** Reads of this tenant run one at a time; `again` asks for one more after the current one. */
  reading: Promise<void> | undefined;
  again: boolean;
  progress: Map<string, HeldProgress>;
}

export class EventHub {
  private readonly tenants = new Map<string, FollowedTenant>();
  private unlisten: (() => Promise<void>) | undefined;
  private pollTimer: NodeJS.Timeout | undefined;
  private readonly pollMs: number;
  private readonly progressMs: number;

  constructor(private readonly options: EventHubOptions) {
    this.pollMs = options.pollMs ?? 5000;
    this.progressMs = options.progressMs ?? 250;
  }

  /** Starts listening; resolves once the LISTEN is in place. */
  async start(): Promise<void> {
    this.unlisten = await this.options.db.listen(
      EVENTS_CHANNEL,
      (payload) => this.onNotify(payload),
      () => this.pollAll(),
    );
    this.pollTimer = setInterval(() => this.pollAll(), this.pollMs);
    this.pollTimer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.pollTimer);
    for (const tenant of this.tenants.values()) for (const held of tenant.progress.values()) clearTimeout(held.timer);
    this.tenants.clear();
    await this.unlisten?.();
    this.unlisten = undefined;
  }

  /**
   * Delivers the tenant's events committed from now on (in id order) to `listener` until the returned function
   * is called; with `connectionId`, only the events of that connection (see `connectionOfEvent`). Resolves
   * once the subscription is in place.
   */
  async subscribe(tenantId: string, listener: EventListener, connectionId?: string): Promise<() => void> {
    let tenant = this.tenants.get(tenantId);
    if (!tenant) {
      const created: FollowedTenant = {
        listeners: new Set(),
        byConnection: new Map(),
        cursor: 0,
        ready: Promise.resolve(),
        reading: undefined,
        again: false,
        progress: new Map(),
      };
      created.ready = lastEventId(this.options.db.liveReads, tenantId).then((id) => {
        created.cursor = id;
      });
      this.tenants.set(tenantId, created);
      tenant = created;
    }
    let listeners = tenant.listeners;
    if (connectionId !== undefined) {
      listeners = tenant.byConnection.get(connectionId) ?? new Set();
      tenant.byConnection.set(connectionId, listeners);
    }
    listeners.add(listener);
    const followed = tenant;
    const unsubscribe = () => this.remove(tenantId, followed, listener, connectionId);
    try {
      await tenant.ready;
    } catch (error) {
      unsubscribe();
      throw error;
    }
    return unsubscribe;
  }

  /** Tenants followed and their subscribers, for metrics and tests. */
  stats(): { tenants: number; subscribers: number } {
    let subscribers = 0;
    for (const tenant of this.tenants.values()) {
      subscribers += tenant.listeners.size;
      for (const listeners of tenant.byConnection.values()) subscribers += listeners.size;
    }
    return { tenants: this.tenants.size, subscribers };
  }

  private remove(tenantId: string, tenant: FollowedTenant, listener: EventListener, connectionId: string | undefined): void {
    if (connectionId === undefined) {
      tenant.listeners.delete(listener);
    } else {
      const listeners = tenant.byConnection.get(connectionId);
      listeners?.delete(listener);
      if (listeners?.size === 0) tenant.byConnection.delete(connectionId);
    }
    if (tenant.listeners.size === 0 && tenant.byConnection.size === 0 && this.tenants.get(tenantId) === tenant) {
      for (const held of tenant.progress.values()) clearTimeout(held.timer);
      this.tenants.delete(tenantId);
    }
  }

  private onNotify(payload: string): void {
    const at = payload.lastIndexOf(':');
    const tenantId = payload.slice(0, at);
    const tenant = this.tenants.get(tenantId);
    if (!tenant) return;
    if (Number(payload.slice(at + 1)) <= tenant.cursor) return;
    this.read(tenantId, tenant);
  }

  private pollAll(): void {
    for (const [tenantId, tenant] of this.tenants) this.read(tenantId, tenant);
  }

  /** Reads the tenant's new events; a read asked for while one runs is done right after it. */
  private read(tenantId: string, tenant: FollowedTenant): void {
    if (tenant.reading) {
      tenant.again = true;
      return;
    }
    tenant.reading = (async () => {
      try {
        await tenant.ready;
        do {
          tenant.again = false;
          for (;;) {
            const page = await readEventPage(this.options.db.liveReads, tenantId, tenant.cursor, { rows: 500, bytes: BYTE_BOUNDS.logPage });
            for (const event of page.events) {
              tenant.cursor = event.id;
              this.deliver(tenant, event);
            }
            if (!page.more) break;
          }
        } while (tenant.again && this.tenants.get(tenantId) === tenant);
      } catch (error) {
        // The next notification or poll reads again from the same cursor.
        this.options.logger?.warn({ err: error, tenant_id: tenantId }, 'event hub: reading events failed');
      } finally {
        tenant.reading = undefined;
      }
    })();
  }

  private deliver(tenant: FollowedTenant, event: StoredEvent): void {
    if (event.type !== 'sync.progress') {
      const held = tenant.progress.get(event.subjectId);
      if (held) {
        clearTimeout(held.timer);
        tenant.progress.delete(event.subjectId);
        if (held.timer) this.fanOut(tenant, held.event);
      }
      this.fanOut(tenant, event);
      return;
    }
    const now = Date.now();
    const held = tenant.progress.get(event.subjectId);
    if (!held) {
      tenant.progress.set(event.subjectId, { event, timer: undefined, lastDeliveredAt: now });
      this.fanOut(tenant, event);
      return;
    }
    held.event = event;
    if (held.timer) return;
    const wait = held.lastDeliveredAt + this.progressMs - now;
    if (wait <= 0) {
      held.lastDeliveredAt = now;
      this.fanOut(tenant, event);
      return;
    }
    held.timer = setTimeout(() => {
      held.timer = undefined;
      held.lastDeliveredAt = Date.now();
      this.fanOut(tenant, held.event);
    }, wait);
    held.timer.unref();
  }

  private fanOut(tenant: FollowedTenant, event: StoredEvent): void {
    this.call(tenant.listeners, event);
    const connectionId = connectionOfEvent(event);
    const followers = connectionId === undefined ? undefined : tenant.byConnection.get(connectionId);
    if (followers) this.call(followers, event);
  }

  private call(listeners: Set<EventListener>, event: StoredEvent): void {
    for (const listener of listeners) {
      try {
        listener(event);
      } catch (error) {
        this.options.logger?.warn({ err: error }, 'event hub: a subscriber threw');
      }
    }
  }
}
