import { randomUUID } from 'node:crypto';
import type { Database } from '../db/client.js';
import { WEBHOOKS_CHANNEL } from '../db/events.js';
import {
  anyPendingDelivery,
  backOffEndpoint,
  dueDeliveries,
  dueEndpoints,
  type LeasedEndpoint,
  leaseEndpoints,
  recordAttempt,
  releaseEndpointLease,
  renewEndpointLease,
} from '../db/webhooks.js';
import { type EndReason, Governor, type Lease } from '../governor/governor.js';
import type { Logger } from '../logger.js';
import { retryDelayMs } from './retry-schedule.js';
import { SecretKeyError, type WebhookSecretKeys } from './secret-keys.js';
import { sendWebhook, type SendOptions } from './send.js';

// The delivery worker: every server process runs one. It is woken by the NOTIFY appendEvents sends when it
// queued deliveries (and polls every `pollMs`, for retries that fall due and notifications lost), leases
// endpoints with deliveries due, and sends each endpoint's deliveries one at a time in event order, recording
// every attempt (src/db/webhooks.ts has the guarantees). While no delivery is pending at all there is no retry
// to fall due, and whatever makes one pending (a new event, a redelivery) sends the NOTIFY: the idle worker then
// polls less and less often, its interval doubling up to IDLE_POLL_MAX_MS, and the next pass that finds a
// pending delivery, or the next NOTIFY, brings it back to `pollMs`.
//
// Its slots are leases of the governor's `webhook-delivery` resource (8 per process), shared fairly between
// tenants, so endpoints that hang cost their own tenant its share and delay another tenant's delivery only
// while every tenant that wants a slot already holds one:
// - each leased endpoint is served in a slot of its own; a slot that frees up is filled at once, without
//   waiting for the others;
// - a tenant holds at most its fair share with room kept for one more tenant (Governor.shareOf: the slots
//   divided by the tenants holding one plus one, at least 1), so with up to 7 tenants wanting slots at once, at
//   least one is free for the next;
// - due endpoints are taken in turns by tenant, the tenants holding fewer slots first (dueEndpoints): one
//   tenant's many endpoints, never served or not, do not come before another tenant's one;
// - a share shrinks when more tenants want slots: when every slot is taken and a tenant below its share has an
//   endpoint due, a slot of the tenant furthest above its share is taken for it, its attempt under way
//   cancelled and not counted (the delivery stays due; it may reach its endpoint twice, as at-least-once
//   delivery allows);
// - an endpoint is served for one time slice (`sliceMs`), then its lease is given up, and within a tenant the
//   endpoints served least recently are leased first: one with a long backlog takes turns with the others;
// - an attempt that gets no answer in time ends the endpoint's slice, and backs that endpoint off (5 s,
//   doubling per further timeout, up to 10 min; recordAttempt), its deliveries kept pending.
// Every slot's lease ends through `Lease.end` however the slot ends: `done`, `stalled` (no answer in time),
// `taken-for-fairness`, `error`, or `shutdown` (stop, or the governor closed), counted in /metrics.
//
// An endpoint whose stored secret the configured keys cannot open (a key rotation half done) is held: its
// deliveries stay pending, no attempt is spent, and it is looked at again a minute later.

export interface DeliveryWorkerOptions extends Pick<SendOptions, 'allowPrivate' | 'timeoutMs'> {
  db: Pick<Database, 'raw' | 'listen'>;
  logger: Pick<Logger, 'info' | 'warn'>;
  /** Opens the stored (sealed) endpoint secrets. */
  secretKeys: WebhookSecretKeys;
  /** Retry delays in seconds (WEBHOOK_RETRY_SCHEDULE). */
  retrySchedule: readonly number[];
  /** Consecutive failed deliveries that disable an endpoint (WEBHOOK_DISABLE_AFTER). */
  disableAfter: number;
  /** How often due retries are looked for (WEBHOOK_POLL_MS). */
  pollMs: number;
  /**
   * The governor the slots are leased from (`webhook-delivery`): the gateway's, whose /metrics counts them.
   * Without one the worker has a governor of its own, closed when it stops.
   */
  governor?: Governor | undefined;
  /** How long one endpoint is served before it gives its turn to the others. */
  sliceMs?: number;
}

/** Deliveries of one endpoint read at a time; the lease is renewed before each. */
const BATCH = 20;
const DEFAULT_SLICE_MS = 2000;
/** How long an endpoint whose secret the keys cannot open waits before the next look (the keys may be fixed by then). */
const UNOPENED_SECRET_BACKOFF_SECONDS = 60;
/** The longest interval between two polls of a worker with nothing pending (a lost NOTIFY waits at most this). */
const IDLE_POLL_MAX_MS = 30_000;
const RESOURCE = 'webhook-delivery';

/** An endpoint being served: its lease of the governor, and what stops it early. */
interface Slot {
  endpoint: LeasedEndpoint;
  lease: Lease;
  /** Aborted when the slot is to end before its slice does: taken for another tenant, or its lease ended. */
  cut: AbortController;
  /** Why the slot is cut, when the worker cut it. */
  cutFor: EndReason | undefined;
  /** When the attempt under way started; undefined between attempts. */
  attemptSince: number | undefined;
  done: Promise<void>;
}

export class DeliveryWorker {
  readonly owner = `worker_${randomUUID()}`;
  private stopped = false;
  private filling: Promise<void> | undefined;
  private again = false;
  private pollTimer: NodeJS.Timeout | undefined;
  /** Until the next poll: `pollMs`, or longer while nothing is pending. */
  private pollDelayMs: number;
  private unlisten: (() => Promise<void>) | undefined;
  /** The endpoints being served, by id. */
  private readonly slots = new Map<string, Slot>();
  private readonly governor: Governor;
  private readonly ownGovernor: boolean;

  constructor(private readonly options: DeliveryWorkerOptions) {
    this.governor = options.governor ?? new Governor();
    this.ownGovernor = options.governor === undefined;
    this.pollDelayMs = options.pollMs;
  }

  async start(): Promise<void> {
    this.unlisten = await this.options.db.listen(
      WEBHOOKS_CHANNEL,
      () => this.wake(),
      () => this.wake(),
    );
    this.wake();
  }

  /** Stops taking work; resolves once the attempts under way are recorded and their leases released. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.pollTimer);
    await this.unlisten?.().catch(() => {});
    await this.filling;
    await Promise.all([...this.slots.values()].map((slot) => slot.done));
    if (this.ownGovernor) this.governor.close();
  }

  /** Fills the free slots with due endpoints; a wake-up while filling asks for one more pass. */
  wake(): void {
    if (this.stopped) return;
    if (this.filling) {
      this.again = true;
      return;
    }
    clearTimeout(this.pollTimer);
    this.filling = this.fill().then((idle) => {
      this.filling = undefined;
      if (this.stopped) return;
      if (this.again) {
        this.again = false;
        this.wake();
        return;
      }
      this.pollDelayMs = idle ? Math.min(Math.max(this.pollDelayMs * 2, this.options.pollMs), IDLE_POLL_MAX_MS) : this.options.pollMs;
      this.pollTimer = setTimeout(() => this.wake(), this.pollDelayMs);
      this.pollTimer.unref();
    });
  }

  /** One pass: fills the free slots. True when it found the worker idle: no slot busy, no delivery pending. */
  private async fill(): Promise<boolean> {
    const { db } = this.options;
    try {
      for (;;) {
        this.again = false;
        if (this.stopped) return false;
        const held = this.slotsByTenant();
        const atShare = [...held].filter(([tenant, count]) => count >= this.governor.shareOf(RESOURCE, tenant)).map(([tenant]) => tenant);
        const free = this.governor.limits(RESOURCE).perProcess - this.governor.stats(RESOURCE).held;
        // With every slot taken, one endpoint is still looked for: a tenant below its share may take a slot.
        const wanted = Math.max(free, 1);
        const due = await dueEndpoints(db.raw, wanted, atShare, held);
        const picked = new Map<string, Lease>();
        let occupied = 0;
        try {
          for (const endpoint of due) {
            if (this.stopped) break;
            const holder = { tenant: endpoint.tenantId };
            if (this.governor.mayLease(RESOURCE, holder)) {
              picked.set(endpoint.id, this.governor.lease(RESOURCE, holder, null));
              held.set(endpoint.tenantId, (held.get(endpoint.tenantId) ?? 0) + 1);
            } else this.takeSlotFor(endpoint.tenantId, held);
          }
          if (picked.size > 0 && !this.stopped) {
            for (const endpoint of await leaseEndpoints(db.raw, this.owner, [...picked.keys()])) {
              this.occupy(endpoint, picked.get(endpoint.id)!);
              picked.delete(endpoint.id);
              occupied++;
            }
          }
        } finally {
          // Picked, but leased by another process meanwhile (or the lease statement failed).
          for (const lease of picked.values()) lease.end('done');
        }
        if ((due.length < wanted || occupied === 0) && !this.again) {
          return due.length === 0 && this.slots.size === 0 && !(await anyPendingDelivery(db.raw));
        }
      }
    } catch (error) {
      // The database away: the next poll, `pollMs` later, tries again.
      this.options.logger.warn({ err: error }, 'webhook delivery pass failed');
      return false;
    }
  }

  /** The slots held by each tenant. */
  private slotsByTenant(): Map<string, number> {
    const held = new Map<string, number>();
    for (const { endpoint } of this.slots.values()) held.set(endpoint.tenantId, (held.get(endpoint.tenantId) ?? 0) + 1);
    return held;
  }

  /**
   * When every slot is taken and `tenant`, holding fewer than its share (`held`: the slots of each tenant, those
   * being leased included), has an endpoint due, a slot of the tenant furthest above its share is cut for it,
   * one slot at a time: its end wakes the worker, and the tenants holding fewest come first. Of that tenant's
   * slots, one between two attempts, else the one whose attempt has waited longest for an answer.
   */
  private takeSlotFor(tenant: string, held: ReadonlyMap<string, number>): void {
    if (this.governor.stats(RESOURCE).held < this.governor.limits(RESOURCE).perProcess) return;
    if ((held.get(tenant) ?? 0) >= this.governor.shareOf(RESOURCE, tenant)) return;
    if ([...this.slots.values()].some((slot) => slot.cutFor !== undefined)) return;
    let furthest: string | undefined;
    let above = 0;
    for (const [holder, count] of held) {
      const excess = count - this.governor.shareOf(RESOURCE, holder);
      if (excess > above) {
        above = excess;
        furthest = holder;
      }
    }
    let taken: Slot | undefined;
    for (const slot of this.slots.values()) {
      if (slot.endpoint.tenantId !== furthest) continue;
      if (!taken || (slot.attemptSince ?? Number.NEGATIVE_INFINITY) < (taken.attemptSince ?? Number.NEGATIVE_INFINITY)) taken = slot;
    }
    if (!taken) return;
    taken.cutFor = 'taken-for-fairness';
    taken.cut.abort();
  }

  /** Serves the endpoint in a slot of its own; the slot ends its lease, frees itself and asks for the next endpoint. */
  private occupy(endpoint: LeasedEndpoint, lease: Lease): void {
    const slot: Slot = { endpoint, lease, cut: new AbortController(), cutFor: undefined, attemptSince: undefined, done: Promise.resolve() };
    // The lease ended by the governor (closed at shutdown): the slot stops at its next step.
    lease.onEnd(() => slot.cut.abort());
    slot.done = this.serve(slot)
      .catch((error: unknown): EndReason => {
        this.options.logger.warn({ err: error, endpoint: endpoint.id, tenant: endpoint.tenantId }, 'webhook endpoint pass failed');
        return 'error';
      })
      .then((reason) => lease.end(reason))
      .finally(() => {
        this.slots.delete(endpoint.id);
        this.wake();
      });
    this.slots.set(endpoint.id, slot);
  }

  /**
   * Sends the endpoint's due deliveries in event order for one slice while the lease holds, then releases it; how
   * the slot ended.
   */
  private async serve(slot: Slot): Promise<EndReason> {
    const { db } = this.options;
    const leased = slot.endpoint;
    const sliceEnds = performance.now() + (this.options.sliceMs ?? DEFAULT_SLICE_MS);
    try {
      for (;;) {
        const due = await dueDeliveries(db.raw, leased, BATCH);
        if (due.length === 0) return 'done';
        for (const delivery of due) {
          if (this.stopped) return 'shutdown';
          if (slot.cut.signal.aborted) return slot.cutFor ?? 'shutdown';
          if (performance.now() >= sliceEnds) return 'done';
          // The endpoint as it is now (URL or secret changed, disabled, deleted?), and the lease kept.
          const endpoint = await renewEndpointLease(db.raw, leased, this.owner);
          if (!endpoint) return 'done';
          const secret = this.secretOf(endpoint);
          if (secret === null) {
            // The keys are misconfigured, not the endpoint broken: no attempt is spent, nothing gets disabled.
            await backOffEndpoint(db.raw, endpoint, UNOPENED_SECRET_BACKOFF_SECONDS);
            return 'done';
          }
          const startedAt = new Date();
          slot.attemptSince = performance.now();
          const outcome = await sendWebhook(
            { id: delivery.id, url: endpoint.url, secret, body: delivery.body },
            { allowPrivate: this.options.allowPrivate, timeoutMs: this.options.timeoutMs, signal: slot.cut.signal },
          );
          slot.attemptSince = undefined;
          // Cut by the worker, not failed by the endpoint: no attempt is counted, the delivery stays due.
          if (!outcome.ok && !outcome.timedOut && slot.cut.signal.aborted) return slot.cutFor ?? 'shutdown';
          const retry = outcome.ok ? null : retryDelayMs(this.options.retrySchedule, delivery.attempts + 1);
          const recorded = await recordAttempt(
            db.raw,
            endpoint,
            delivery,
            { ...outcome, startedAt, retryDelayMs: retry },
            this.options.disableAfter,
          );
          if (recorded.endpointDisabled) {
            this.options.logger.warn(
              { endpoint: endpoint.id, tenant: endpoint.tenantId },
              'webhook endpoint disabled after consecutive failed deliveries',
            );
            return 'done';
          }
          // Backed off: its other deliveries wait, and the slot goes to another endpoint.
          if (outcome.timedOut) return 'stalled';
        }
      }
    } finally {
      await releaseEndpointLease(db.raw, leased, this.owner).catch(() => {});
    }
  }

  /** The endpoint's secret in plaintext; null (logged) when the configured keys do not open it. */
  private secretOf(endpoint: LeasedEndpoint): string | null {
    try {
      return this.options.secretKeys.open(endpoint.sealedSecret, endpoint);
    } catch (error) {
      if (!(error instanceof SecretKeyError)) throw error;
      this.options.logger.warn(
        { endpoint: endpoint.id, tenant: endpoint.tenantId, reason: error.message },
        'webhook secret cannot be opened: deliveries held',
      );
      return null;
    }
  }
}
