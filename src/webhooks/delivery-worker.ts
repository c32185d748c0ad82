import { randomUUID } from 'node:crypto';
import type { Database } from '../db/client.js';
import { WEBHOOKS_CHANNEL } from '../db/events.js';
import {
  dueDeliveries,
  leaseDueEndpoints,
  type LeasedEndpoint,
  recordAttempt,
  releaseEndpointLease,
  renewEndpointLease,
} from '../db/webhooks.js';
import type { Logger } from '../logger.js';
import { retryDelayMs } from './retry-schedule.js';
import { sendWebhook, type SendOptions } from './send.js';

// The delivery worker: every server process runs one. It is woken by the NOTIFY appendEvents sends when it
// queued deliveries (and polls every `pollMs`, for retries that fall due and notifications lost), leases the
// endpoints with deliveries due, and sends each endpoint's deliveries one at a time in event order, recording
// every attempt (src/db/webhooks.ts has the guarantees).

export interface DeliveryWorkerOptions extends Pick<SendOptions, 'allowPrivate' | 'timeoutMs'> {
  db: Pick<Database, 'raw' | 'listen'>;
  logger: Pick<Logger, 'info' | 'warn'>;
  /** Retry delays in seconds (WEBHOOK_RETRY_SCHEDULE). */
  retrySchedule: readonly number[];
  /** Consecutive failed deliveries that disable an endpoint (WEBHOOK_DISABLE_AFTER). */
  disableAfter: number;
  /** How often due retries are looked for (WEBHOOK_POLL_MS). */
  pollMs: number;
  /** Endpoints sent to at once by this process. */
  concurrency?: number;
}

/** Deliveries of one endpoint read at a time; the lease is renewed before each. */
const BATCH = 20;

export class DeliveryWorker {
  readonly owner = `worker_${randomUUID()}`;
  private stopped = false;
  private running: Promise<void> | undefined;
  private again = false;
  private pollTimer: NodeJS.Timeout | undefined;
  private unlisten: (() => Promise<void>) | undefined;

  constructor(private readonly options: DeliveryWorkerOptions) {}

  async start(): Promise<void> {
    this.unlisten = await this.options.db.listen(WEBHOOKS_CHANNEL, () => this.wake(), () => this.wake());
    this.pollTimer = setInterval(() => this.wake(), this.options.pollMs);
    this.pollTimer.unref();
    this.wake();
  }

  /** Stops taking work; resolves once the attempts under way are recorded and their leases released. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.pollTimer);
    await this.unlisten?.().catch(() => {});
    await this.running;
  }

  /** Works through what is due; a wake-up while working asks for one more pass. */
  wake(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.drain().finally(() => {
      this.running = undefined;
      if (this.again && !this.stopped) {
        this.again = false;
        this.wake();
      }
    });
  }

  private async drain(): Promise<void> {
    try {
      for (;;) {
        this.again = false;
        const leased = await leaseDueEndpoints(this.options.db.raw, this.owner, this.options.concurrency ?? 8);
        if (leased.length === 0 || this.stopped) return;
        await Promise.all(leased.map((endpoint) => this.serve(endpoint)));
        if (this.stopped) return;
      }
    } catch (error) {
      // The database away: the next poll tries again.
      this.options.logger.warn({ err: error }, 'webhook delivery pass failed');
    }
  }

  /** Sends the endpoint's due deliveries in event order while the lease holds, then releases it. */
  private async serve(leased: LeasedEndpoint): Promise<void> {
    const { db } = this.options;
    try {
      for (;;) {
        const due = await dueDeliveries(db.raw, leased, BATCH);
        if (due.length === 0) return;
        for (const delivery of due) {
          if (this.stopped) return;
          // The endpoint as it is now (URL or secret changed, disabled, deleted?), and the lease kept.
          const endpoint = await renewEndpointLease(db.raw, leased, this.owner);
          if (!endpoint) return;
          const startedAt = new Date();
          const outcome = await sendWebhook(
            { id: delivery.id, url: endpoint.url, secret: endpoint.secret, body: delivery.body },
            { allowPrivate: this.options.allowPrivate, timeoutMs: this.options.timeoutMs },
          );
          const retry = outcome.ok ? null : retryDelayMs(this.options.retrySchedule, delivery.attempts + 1);
          const recorded = await recordAttempt(db.raw, endpoint, delivery, { ...outcome, startedAt, retryDelayMs: retry }, this.options.disableAfter);
          if (recorded.endpointDisabled) {
            this.options.logger.warn({ endpoint: endpoint.id, tenant: endpoint.tenantId }, 'webhook endpoint disabled after consecutive failed deliveries');
            return;
          }
        }
      }
    } finally {
      await releaseEndpointLease(db.raw, leased, this.owner).catch(() => {});
    }
  }
}
