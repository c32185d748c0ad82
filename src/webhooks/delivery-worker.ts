import { randomUUID } from 'node:crypto';
import type { Database } from '../db/client.js';
import { WEBHOOKS_CHANNEL } from '../db/events.js';
import {
  anyPendingDelivery,
  backOffEndpoint,
  dueDeliveries,
  leaseDueEndpoints,
  type LeasedEndpoint,
  recordAttempt,
  releaseEndpointLease,
  renewEndpointLease,
} from '../db/webhooks.js';
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
// No endpoint can hold up another:
// - each leased endpoint is served in a slot of its own (`concurrency` slots); a slot that frees up is filled
//   at once, without waiting for the others;
// - an endpoint is served for one time slice (`sliceMs`), then its lease is given up, and the endpoints served
//   least recently are leased first: one with a long backlog takes turns with the others;
// - one tenant's endpoints hold at most `perTenant` of the slots, so a tenant whose endpoints all hang leaves
//   the other slots to the other tenants;
// - an attempt that gets no answer in time ends the endpoint's slice, and backs that endpoint off (5 s,
//   doubling per further timeout, up to 10 min; recordAttempt), its deliveries kept pending.
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
  /** Endpoints sent to at once by this process. */
  concurrency?: number;
  /** Of those, at most this many of one tenant (default: half of `concurrency`, at least 1). */
  perTenant?: number;
  /** How long one endpoint is served before it gives its turn to the others. */
  sliceMs?: number;
}

/** Deliveries of one endpoint read at a time; the lease is renewed before each. */
const BATCH = 20;
const DEFAULT_CONCURRENCY = 8;
const DEFAULT_SLICE_MS = 2000;
/** How long an endpoint whose secret the keys cannot open waits before the next look (the keys may be fixed by then). */
const UNOPENED_SECRET_BACKOFF_SECONDS = 60;
/** The longest interval between two polls of a worker with nothing pending (a lost NOTIFY waits at most this). */
const IDLE_POLL_MAX_MS = 30_000;

export class DeliveryWorker {
  readonly owner = `worker_${randomUUID()}`;
  private stopped = false;
  private filling: Promise<void> | undefined;
  private again = false;
  private pollTimer: NodeJS.Timeout | undefined;
  /** Until the next poll: `pollMs`, or longer while nothing is pending. */
  private pollDelayMs: number;
  private unlisten: (() => Promise<void>) | undefined;
  /** The endpoints being served, by id: their tenant, and the promise that ends with the slot. */
  private readonly slots = new Map<string, { tenantId: string; done: Promise<void> }>();
  private readonly concurrency: number;
  private readonly perTenant: number;

  constructor(private readonly options: DeliveryWorkerOptions) {
    this.concurrency = options.concurrency ?? DEFAULT_CONCURRENCY;
    this.perTenant = options.perTenant ?? Math.max(1, Math.floor(this.concurrency / 2));
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
    try {
      for (;;) {
        this.again = false;
        const free = this.concurrency - this.slots.size;
        if (free <= 0 || this.stopped) return false;
        const held = new Map<string, number>();
        for (const { tenantId } of this.slots.values()) held.set(tenantId, (held.get(tenantId) ?? 0) + 1);
        const full = [...held].filter(([, count]) => count >= this.perTenant).map(([tenantId]) => tenantId);
        const leased = await leaseDueEndpoints(this.options.db.raw, this.owner, free, full);
        // One lease query can return several endpoints of a tenant that holds slots already: keep its share.
        for (const endpoint of leased) {
          if ((held.get(endpoint.tenantId) ?? 0) >= this.perTenant || this.stopped) {
            await releaseEndpointLease(this.options.db.raw, endpoint, this.owner);
            continue;
          }
          held.set(endpoint.tenantId, (held.get(endpoint.tenantId) ?? 0) + 1);
          this.occupy(endpoint);
        }
        if (leased.length < free && !this.again) {
          return leased.length === 0 && this.slots.size === 0 && !(await anyPendingDelivery(this.options.db.raw));
        }
      }
    } catch (error) {
      // The database away: the next poll, `pollMs` later, tries again.
      this.options.logger.warn({ err: error }, 'webhook delivery pass failed');
      return false;
    }
  }

  /** Serves the endpoint in a slot of its own; the slot frees itself and asks for the next endpoint. */
  private occupy(endpoint: LeasedEndpoint): void {
    const done = this.serve(endpoint)
      .catch((error: unknown) =>
        this.options.logger.warn({ err: error, endpoint: endpoint.id, tenant: endpoint.tenantId }, 'webhook endpoint pass failed'),
      )
      .finally(() => {
        this.slots.delete(endpoint.id);
        this.wake();
      });
    this.slots.set(endpoint.id, { tenantId: endpoint.tenantId, done });
  }

  /** Sends the endpoint's due deliveries in event order for one slice while the lease holds, then releases it. */
  private async serve(leased: LeasedEndpoint): Promise<void> {
    const { db } = this.options;
    const sliceEnds = performance.now() + (this.options.sliceMs ?? DEFAULT_SLICE_MS);
    try {
      for (;;) {
        const due = await dueDeliveries(db.raw, leased, BATCH);
        if (due.length === 0) return;
        for (const delivery of due) {
          if (this.stopped || performance.now() >= sliceEnds) return;
          // The endpoint as it is now (URL or secret changed, disabled, deleted?), and the lease kept.
          const endpoint = await renewEndpointLease(db.raw, leased, this.owner);
          if (!endpoint) return;
          const secret = this.secretOf(endpoint);
          if (secret === null) {
            // The keys are misconfigured, not the endpoint broken: no attempt is spent, nothing gets disabled.
            await backOffEndpoint(db.raw, endpoint, UNOPENED_SECRET_BACKOFF_SECONDS);
            return;
          }
          const startedAt = new Date();
          const outcome = await sendWebhook(
            { id: delivery.id, url: endpoint.url, secret, body: delivery.body },
            { allowPrivate: this.options.allowPrivate, timeoutMs: this.options.timeoutMs },
          );
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
            return;
          }
          // Backed off: its other deliveries wait, and the slot goes to another endpoint.
          if (outcome.timedOut) return;
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
