import { randomBytes } from 'node:crypto';
import { ApiError } from '../errors.js';
import { newId } from '../prefixed-ids.js';
import type { EndpointInput, EndpointPatch } from '../domain/webhook-input.js';
import { endpointDisabledData } from '../domain/webhook-messages.js';
import type { RawSql } from './client.js';
import { appendEvents, type BatchOptions, deleteInBatches } from './events.js';
import { inTransaction, type TransactionRunner, type Tx } from './write-transactions.js';

// The webhooks' data layer: endpoints (written by admins through the API), and the outbox
// the delivery worker works through (src/webhooks/delivery-worker.ts). Deliveries are queued by appendEvents,
// in the event's own transaction. Every statement that serves a request is scoped by tenant; the worker's
// claim spans tenants, as the scheduler does, and everything after it names the tenant.
//
// One process at a time sends to an endpoint: the worker leases the endpoint (lease_owner, lease_until) with
// FOR UPDATE SKIP LOCKED, renews the lease before each attempt, and sends the endpoint's due deliveries in
// event order. A process that dies mid-attempt loses its lease within LEASE_SECONDS; the attempt it did not
// record is made again by the next holder (delivery is at least once).

/** `whsec_` and 24 random bytes in base64: the form Standard Webhooks libraries take. */
function newWebhookSecret(): string {
  return `whsec_${randomBytes(24).toString('base64')}`;
}

export interface WebhookEndpointRow {
  id: string;
  tenantId: string;
  url: string;
  description: string;
  eventTypes: string[];
  enabled: boolean;
  disabledReason: string | null;
  consecutiveFailures: number;
  createdAt: Date;
  updatedAt: Date;
  /** Who created it: member:<id>, token:<id>, jwt:<sub> or cli. */
  createdBy: string | null;
}

const ENDPOINT_ROW = `"w"."id", "w"."tenant_id" AS "tenantId", "w"."url", "w"."description", coalesce("w"."event_types", '{}') AS "eventTypes",
  "w"."enabled", "w"."disabled_reason" AS "disabledReason", "w"."consecutive_failures" AS "consecutiveFailures",
  "w"."created_at" AS "createdAt", "w"."updated_at" AS "updatedAt", "w"."created_by" AS "createdBy"`;

/** An endpoint with its secret: only the answers of create and rotate carry it. */
type EndpointWithSecret = WebhookEndpointRow & { secret: string };

export async function createWebhookEndpoint(runner: TransactionRunner, tenantId: string, input: EndpointInput, createdBy: string | null = null): Promise<EndpointWithSecret> {
  const secret = newWebhookSecret();
  return inTransaction(runner, async (tx) => {
    const [row] = await tx.query<WebhookEndpointRow>(
      `INSERT INTO "public"."webhook_endpoints" AS "w" ("id", "tenant_id", "url", "description", "secret", "event_types", "enabled", "created_by")
       VALUES ($1, $2, $3, $4, $5, $6::text[], $7, $8)
       RETURNING ${ENDPOINT_ROW}`,
      [newId('whk'), tenantId, input.url, input.description ?? '', secret, input.eventTypes ?? [], input.enabled ?? true, createdBy],
    );
    return { ...row!, secret };
  });
}

/**
 * Changes an endpoint; null when the tenant has none with that id. Enabling it again (after the service or an
 * admin disabled it) clears the failure count and the reason; its deliveries failed meanwhile stay failed
 * (redeliver them one by one).
 */
export async function updateWebhookEndpoint(
  runner: TransactionRunner,
  tenantId: string,
  id: string,
  patch: EndpointPatch,
): Promise<WebhookEndpointRow | null> {
  return inTransaction(runner, async (tx) => {
    const [row] = await tx.query<WebhookEndpointRow>(
      `UPDATE "public"."webhook_endpoints" AS "w" SET
         "url" = coalesce($3, "w"."url"),
         "description" = coalesce($4, "w"."description"),
         "event_types" = coalesce($5::text[], "w"."event_types"),
         "enabled" = coalesce($6, "w"."enabled"),
         "consecutive_failures" = CASE WHEN $6 IS TRUE AND NOT "w"."enabled" THEN 0 ELSE "w"."consecutive_failures" END,
         "disabled_reason" = CASE WHEN $6 IS TRUE THEN NULL ELSE "w"."disabled_reason" END,
         "updated_at" = now()
       WHERE "w"."tenant_id" = $1 AND "w"."id" = $2
       RETURNING ${ENDPOINT_ROW}`,
      [tenantId, id, patch.url ?? null, patch.description ?? null, patch.eventTypes ?? null, patch.enabled ?? null],
    );
    if (row && patch.enabled === false) await failPendingDeliveries(tx, tenantId, id);
    return row ?? null;
  });
}

/** Deletes an endpoint with its delivery log; null when the tenant has none with that id. */
export async function deleteWebhookEndpoint(runner: TransactionRunner, tenantId: string, id: string): Promise<{ id: string } | null> {
  return inTransaction(runner, async (tx) => {
    const [row] = await tx.query<{ id: string }>(
      `DELETE FROM "public"."webhook_endpoints" AS "w" WHERE "w"."tenant_id" = $1 AND "w"."id" = $2 RETURNING "w"."id"`,
      [tenantId, id],
    );
    return row ?? null;
  });
}

/** A new secret for the endpoint, in force for the next attempt; null when the tenant has none with that id. */
export async function rotateWebhookSecret(runner: TransactionRunner, tenantId: string, id: string): Promise<EndpointWithSecret | null> {
  const secret = newWebhookSecret();
  return inTransaction(runner, async (tx) => {
    const [row] = await tx.query<WebhookEndpointRow>(
      `UPDATE "public"."webhook_endpoints" AS "w" SET "secret" = $3, "updated_at" = now()
       WHERE "w"."tenant_id" = $1 AND "w"."id" = $2
       RETURNING ${ENDPOINT_ROW}`,
      [tenantId, id, secret],
    );
    return row ? { ...row, secret } : null;
  });
}

/**
 * Sends a delivery again, now: a finished one (succeeded or failed) becomes pending, a pending one is moved
 * to now. Its attempts keep counting. Null when the tenant has no such delivery; CONFLICT while its endpoint
 * is disabled (enable it first).
 */
export async function redeliverWebhook(runner: TransactionRunner, tenantId: string, deliveryId: string): Promise<{ id: string } | null> {
  return inTransaction(runner, async (tx) => {
    const [found] = await tx.query<{ id: string; enabled: boolean }>(
      `SELECT "d"."id", "w"."enabled" FROM "public"."webhook_deliveries" AS "d"
       JOIN "public"."webhook_endpoints" AS "w" ON "w"."tenant_id" = "d"."tenant_id" AND "w"."id" = "d"."endpoint_id"
       WHERE "d"."tenant_id" = $1 AND "d"."id" = $2
       FOR UPDATE OF "w", "d"`,
      [tenantId, deliveryId],
    );
    if (!found) return null;
    if (!found.enabled) throw new ApiError('CONFLICT', 'the endpoint is disabled: enable it before redelivering');
    await tx.query(
      `UPDATE "public"."webhook_deliveries" AS "d" SET "status" = 'pending', "next_attempt_at" = now(), "updated_at" = now()
       WHERE "d"."tenant_id" = $1 AND "d"."id" = $2`,
      [tenantId, deliveryId],
    );
    return { id: found.id };
  });
}

/** An endpoint disabled: its deliveries still to send fail (an admin can redeliver them once it is enabled again). */
async function failPendingDeliveries(tx: Tx, tenantId: string, endpointId: string): Promise<void> {
  await tx.query(
    `UPDATE "public"."webhook_deliveries" AS "d" SET "status" = 'failed', "next_attempt_at" = NULL, "updated_at" = now()
     WHERE "d"."tenant_id" = $1 AND "d"."endpoint_id" = $2 AND "d"."status" = 'pending'`,
    [tenantId, endpointId],
  );
}

// ---- The delivery worker's side ----

/** How long a worker holds an endpoint between renewals: well over one attempt's 10 s. */
const LEASE_SECONDS = 30;

export interface LeasedEndpoint {
  id: string;
  tenantId: string;
  url: string;
  secret: string;
}

/** Leases up to `limit` enabled endpoints that have a delivery due and no live lease, for `owner`. */
export async function leaseDueEndpoints(sql: Pick<RawSql, 'query'>, owner: string, limit: number): Promise<LeasedEndpoint[]> {
  return sql.query<LeasedEndpoint>(
    `UPDATE "public"."webhook_endpoints" AS "w" SET "lease_owner" = $1, "lease_until" = now() + make_interval(secs => $2)
     WHERE "w"."id" IN (
       SELECT "e"."id" FROM "public"."webhook_endpoints" AS "e"
       WHERE "e"."enabled" AND ("e"."lease_until" IS NULL OR "e"."lease_until" < now())
         AND EXISTS (
           SELECT 1 FROM "public"."webhook_deliveries" AS "d"
           WHERE "d"."endpoint_id" = "e"."id" AND "d"."status" = 'pending' AND "d"."next_attempt_at" <= now())
       LIMIT $3
       FOR UPDATE SKIP LOCKED)
     RETURNING "w"."id", "w"."tenant_id" AS "tenantId", "w"."url", "w"."secret"`,
    [owner, LEASE_SECONDS, limit],
  );
}

/**
 * Extends `owner`'s lease before an attempt, and reads the endpoint as it is now (URL and secret may have
 * changed; it may have been disabled or deleted). Null when the lease is lost or the endpoint is gone or off.
 */
export async function renewEndpointLease(sql: Pick<RawSql, 'query'>, endpoint: LeasedEndpoint, owner: string): Promise<LeasedEndpoint | null> {
  const [row] = await sql.query<LeasedEndpoint>(
    `UPDATE "public"."webhook_endpoints" AS "w" SET "lease_until" = now() + make_interval(secs => $4)
     WHERE "w"."tenant_id" = $1 AND "w"."id" = $2 AND "w"."lease_owner" = $3 AND "w"."enabled"
     RETURNING "w"."id", "w"."tenant_id" AS "tenantId", "w"."url", "w"."secret"`,
    [endpoint.tenantId, endpoint.id, owner, LEASE_SECONDS],
  );
  return row ?? null;
}

export async function releaseEndpointLease(sql: Pick<RawSql, 'query'>, endpoint: LeasedEndpoint, owner: string): Promise<void> {
  await sql.query(
    `UPDATE "public"."webhook_endpoints" AS "w" SET "lease_owner" = NULL, "lease_until" = NULL
     WHERE "w"."tenant_id" = $1 AND "w"."id" = $2 AND "w"."lease_owner" = $3`,
    [endpoint.tenantId, endpoint.id, owner],
  );
}

interface DueDelivery {
  id: string;
  attempts: number;
  /** The message body, exactly as it is signed and sent. */
  body: string;
}

/** The endpoint's deliveries due now, in event order. */
export async function dueDeliveries(sql: Pick<RawSql, 'query'>, endpoint: LeasedEndpoint, limit: number): Promise<DueDelivery[]> {
  return sql.query<DueDelivery>(
    `SELECT "d"."id", "d"."attempts", "d"."payload"::text AS "body" FROM "public"."webhook_deliveries" AS "d"
     WHERE "d"."tenant_id" = $1 AND "d"."endpoint_id" = $2 AND "d"."status" = 'pending' AND "d"."next_attempt_at" <= now()
     ORDER BY "d"."event_id"
     LIMIT $3`,
    [endpoint.tenantId, endpoint.id, limit],
  );
}

interface AttemptRecord {
  startedAt: Date;
  ok: boolean;
  statusCode: number | null;
  latencyMs: number;
  responseBody: string;
  error: string | null;
  /** When to try again after a failure; null when the retries are spent (the delivery has failed). */
  retryDelayMs: number | null;
}

interface RecordedAttempt {
  /** The delivery failed for good and that made the endpoint reach the limit: it is now disabled. */
  endpointDisabled: boolean;
}

/**
 * Records one attempt of a delivery, in one transaction: the attempt row, the delivery's new state, and the
 * endpoint's count of consecutive failed deliveries. When a delivery fails for good and the count reaches
 * `disableAfter`, the endpoint is disabled, its other pending deliveries fail, and a
 * `webhook.endpoint_disabled` event tells the tenant. Nothing is recorded if the delivery is no longer at
 * `attempts` (another worker recorded it, or an admin changed it meanwhile).
 */
export async function recordAttempt(
  runner: TransactionRunner,
  endpoint: LeasedEndpoint,
  delivery: DueDelivery,
  attempt: AttemptRecord,
  disableAfter: number,
): Promise<RecordedAttempt> {
  return inTransaction(runner, async (tx) => {
    // Lock order: the endpoint before its delivery (as redeliverWebhook does).
    const [current] = await tx.query<{ url: string; consecutiveFailures: number; enabled: boolean }>(
      `SELECT "w"."url", "w"."consecutive_failures" AS "consecutiveFailures", "w"."enabled" FROM "public"."webhook_endpoints" AS "w"
       WHERE "w"."tenant_id" = $1 AND "w"."id" = $2 FOR UPDATE`,
      [endpoint.tenantId, endpoint.id],
    );
    if (!current) return { endpointDisabled: false };
    const number = delivery.attempts + 1;
    const finished = attempt.ok ? 'succeeded' : attempt.retryDelayMs === null ? 'failed' : 'pending';
    const updated = await tx.query<{ id: string }>(
      `UPDATE "public"."webhook_deliveries" AS "d" SET
         "attempts" = $4, "status" = $5, "last_status_code" = $6, "updated_at" = now(),
         "next_attempt_at" = CASE WHEN $5 = 'pending' THEN now() + make_interval(secs => $7::double precision / 1000) END
       WHERE "d"."tenant_id" = $1 AND "d"."id" = $2 AND "d"."attempts" = $3 AND "d"."status" = 'pending'
       RETURNING "d"."id"`,
      [endpoint.tenantId, delivery.id, delivery.attempts, number, finished, attempt.statusCode, attempt.retryDelayMs ?? 0],
    );
    if (updated.length === 0) return { endpointDisabled: false };
    await tx.query(
      `INSERT INTO "public"."webhook_attempts"
         ("tenant_id", "delivery_id", "attempt", "started_at", "status_code", "latency_ms", "response_body", "error", "next_retry_at")
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, CASE WHEN $9::double precision IS NULL THEN NULL ELSE now() + make_interval(secs => $9::double precision / 1000) END)`,
      [
        endpoint.tenantId,
        delivery.id,
        number,
        attempt.startedAt,
        attempt.statusCode,
        attempt.latencyMs,
        attempt.responseBody.replaceAll('\u0000', ''),
        attempt.error,
        attempt.ok ? null : attempt.retryDelayMs,
      ],
    );
    if (finished === 'pending') return { endpointDisabled: false };
    const failures = finished === 'succeeded' ? 0 : current.consecutiveFailures + 1;
    const disable = current.enabled && failures >= disableAfter;
    const reason = `disabled after ${failures} consecutive failed deliveries`;
    await tx.query(
      `UPDATE "public"."webhook_endpoints" AS "w" SET "consecutive_failures" = $3,
         "enabled" = CASE WHEN $4 THEN false ELSE "w"."enabled" END,
         "disabled_reason" = CASE WHEN $4 THEN $5 ELSE "w"."disabled_reason" END,
         "updated_at" = CASE WHEN $4 THEN now() ELSE "w"."updated_at" END
       WHERE "w"."tenant_id" = $1 AND "w"."id" = $2`,
      [endpoint.tenantId, endpoint.id, failures, disable, reason],
    );
    if (!disable) return { endpointDisabled: false };
    await failPendingDeliveries(tx, endpoint.tenantId, endpoint.id);
    await appendEvents(tx, endpoint.tenantId, [
      {
        type: 'webhook.endpoint_disabled',
        subjectId: endpoint.id,
        payload: { reason },
        webhookData: endpointDisabledData({ id: endpoint.id, url: current.url }, reason),
      },
    ]);
    return { endpointDisabled: true };
  });
}

/**
 * Retention of the delivery log: finished deliveries (succeeded or failed) last changed more than
 * `retentionHours` ago are deleted with their attempts, in batches; pending ones stay whatever their age.
 */
export async function deleteOldDeliveries(sql: Pick<RawSql, 'query'>, retentionHours: number, options: BatchOptions = {}): Promise<number> {
  return deleteInBatches(
    sql,
    `WITH "old" AS (
       SELECT "d"."id" FROM "public"."webhook_deliveries" AS "d"
       WHERE "d"."status" <> 'pending' AND "d"."updated_at" < now() - make_interval(secs => $1::double precision)
       LIMIT $2
     )
     DELETE FROM "public"."webhook_deliveries" AS "d" USING "old"
     WHERE "d"."id" = "old"."id"
     RETURNING 1 AS "n"`,
    retentionHours,
    options,
  );
}
