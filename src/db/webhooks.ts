import { randomBytes } from 'node:crypto';
import { ApiError } from '../errors.js';
import { newId } from '../prefixed-ids.js';
import type { EndpointInput, EndpointPatch } from '../domain/webhook-input.js';
import { endpointDisabledData } from '../domain/webhook-messages.js';
import type { RawSql } from './client.js';
import { appendEvents, type BatchOptions, deleteInBatches, WEBHOOKS_CHANNEL } from './events.js';
import { type ActivityOrigin, recordActivity } from './activity.js';
import { inTransaction, type TransactionRunner, type Tx } from './write-transactions.js';

// The webhooks' data layer: endpoints (written by admins through the API), and the outbox
// the delivery worker works through (src/webhooks/delivery-worker.ts). Deliveries are queued by appendEvents,
// in the event's own transaction. Every statement that serves a request is scoped by tenant; the worker's
// claim spans tenants, as the scheduler does, and everything after it names the tenant.
//
// One process at a time sends to an endpoint: the worker leases the endpoint (lease_owner, lease_until) by an
// update that takes it only while no live lease holds it, renews the lease before each attempt, and sends the
// endpoint's due deliveries in event order. A process that dies mid-attempt loses its lease within
// LEASE_SECONDS; the attempt it did not record is made again by the next holder (delivery is at least once).

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

/**
 * Seals a secret for storage, bound to its endpoint (src/webhooks/secret-keys.ts); throws an ApiError when the
 * server has no key to seal with.
 */
interface SecretSealer {
  seal(secret: string, owner: { tenantId: string; id: string }): string;
}

/** What writing an endpoint's secret needs: the keys that seal it, and the tenant's cap on endpoints. */
export interface EndpointWriteSettings {
  secretKeys: SecretSealer;
  /** WEBHOOK_ENDPOINTS_PER_TENANT. */
  endpointsPerTenant: number;
}

/**
 * Adds an endpoint with a new secret, sealed for storage (the answer carries it in plaintext, once). CONFLICT
 * when the tenant already has `endpointsPerTenant` endpoints (enabled or not); the count and the insert are one
 * step per tenant (an advisory lock), so concurrent creations cannot pass the cap together.
 */
export async function createWebhookEndpoint(
  runner: TransactionRunner,
  tenantId: string,
  input: EndpointInput,
  settings: EndpointWriteSettings,
  createdBy: string | null = null,
  activity?: ActivityOrigin,
): Promise<EndpointWithSecret> {
  const secret = newWebhookSecret();
  const id = newId('whk');
  const sealed = settings.secretKeys.seal(secret, { tenantId, id });
  return inTransaction(runner, async (tx) => {
    await tx.query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [`webhook_endpoints:${tenantId}`]);
    const [count] = await tx.query<{ n: number }>(
      `SELECT count(*)::int AS "n" FROM "public"."webhook_endpoints" AS "w" WHERE "w"."tenant_id" = $1`,
      [tenantId],
    );
    if ((count?.n ?? 0) >= settings.endpointsPerTenant) {
      throw new ApiError(
        'CONFLICT',
        `the tenant has ${count!.n} webhook endpoints, the most it may have (WEBHOOK_ENDPOINTS_PER_TENANT is ${settings.endpointsPerTenant}): delete one first`,
      );
    }
    const [row] = await tx.query<WebhookEndpointRow>(
      `INSERT INTO "public"."webhook_endpoints" AS "w" ("id", "tenant_id", "url", "description", "secret", "event_types", "enabled", "created_by")
       VALUES ($1, $2, $3, $4, $5, $6::text[], $7, $8)
       RETURNING ${ENDPOINT_ROW}`,
      [id, tenantId, input.url, input.description ?? '', sealed, input.eventTypes ?? [], input.enabled ?? true, createdBy],
    );
    await recordActivity(tx, tenantId, activity, { action: 'webhook_endpoint.created', targetId: id, targetName: input.url });
    return { ...row!, secret };
  });
}

/** The tenant's enabled endpoints: how many deliveries each of its events fans out to, at most. */
export async function enabledEndpointCount(sql: Pick<RawSql, 'query'>, tenantId: string): Promise<number> {
  const [row] = await sql.query<{ n: number }>(
    `SELECT count(*)::int AS "n" FROM "public"."webhook_endpoints" AS "w" WHERE "w"."tenant_id" = $1 AND "w"."enabled"`,
    [tenantId],
  );
  return row?.n ?? 0;
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
  activity?: ActivityOrigin,
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
    if (row) await recordActivity(tx, tenantId, activity, { action: 'webhook_endpoint.updated', targetId: id, targetName: row.url });
    return row ?? null;
  });
}

/** Deletes an endpoint with its delivery log; null when the tenant has none with that id. */
export async function deleteWebhookEndpoint(
  runner: TransactionRunner,
  tenantId: string,
  id: string,
  activity?: ActivityOrigin,
): Promise<{ id: string } | null> {
  return inTransaction(runner, async (tx) => {
    const [row] = await tx.query<{ id: string; url: string }>(
      `DELETE FROM "public"."webhook_endpoints" AS "w" WHERE "w"."tenant_id" = $1 AND "w"."id" = $2 RETURNING "w"."id", "w"."url"`,
      [tenantId, id],
    );
    if (!row) return null;
    await recordActivity(tx, tenantId, activity, { action: 'webhook_endpoint.deleted', targetId: id, targetName: row.url });
    return { id: row.id };
  });
}

/** A new secret for the endpoint, in force for the next attempt; null when the tenant has none with that id. */
export async function rotateWebhookSecret(
  runner: TransactionRunner,
  tenantId: string,
  id: string,
  secretKeys: SecretSealer,
  activity?: ActivityOrigin,
): Promise<EndpointWithSecret | null> {
  const secret = newWebhookSecret();
  return inTransaction(runner, async (tx) => {
    // An endpoint that is not there is NOT_FOUND whatever the keys: sealed only once it is known to exist.
    const [found] = await tx.query(
      `SELECT 1 FROM "public"."webhook_endpoints" AS "w" WHERE "w"."tenant_id" = $1 AND "w"."id" = $2 FOR UPDATE`,
      [tenantId, id],
    );
    if (!found) return null;
    const sealed = secretKeys.seal(secret, { tenantId, id });
    const [row] = await tx.query<WebhookEndpointRow>(
      `UPDATE "public"."webhook_endpoints" AS "w" SET "secret" = $3, "updated_at" = now()
       WHERE "w"."tenant_id" = $1 AND "w"."id" = $2
       RETURNING ${ENDPOINT_ROW}`,
      [tenantId, id, sealed],
    );
    if (!row) return null;
    await recordActivity(tx, tenantId, activity, { action: 'webhook_endpoint.secret_rotated', targetId: id, targetName: row.url });
    return { ...row, secret };
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
    // The NOTIFY wakes the delivery workers at commit, as appendEvents does for new deliveries: an idle worker
    // looks for due deliveries only now and then (src/webhooks/delivery-worker.ts).
    await tx.query(
      `UPDATE "public"."webhook_deliveries" AS "d" SET "status" = 'pending', "next_attempt_at" = now(), "updated_at" = now()
       WHERE "d"."tenant_id" = $1 AND "d"."id" = $2
       RETURNING pg_notify($3, $1)`,
      [tenantId, deliveryId, WEBHOOKS_CHANNEL],
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

/** After the first attempt in a row that got no answer in time, an endpoint is left alone this long, doubled for each further one. */
const TIMEOUT_BACKOFF_SECONDS = 5;
const MAX_TIMEOUT_BACKOFF_SECONDS = 600;

export interface LeasedEndpoint {
  id: string;
  tenantId: string;
  url: string;
  /** The secret as stored (sealed; see src/webhooks/secret-keys.ts). */
  sealedSecret: string;
}

const LEASED_ENDPOINT = `"w"."id", "w"."tenant_id" AS "tenantId", "w"."url", "w"."secret" AS "sealedSecret"`;

/** An endpoint with a delivery due that no process holds: a candidate for leaseEndpoints. */
export interface DueEndpoint {
  id: string;
  tenantId: string;
}

/**
 * Up to `limit` enabled endpoints that have a delivery due, no live lease and no back-off, none of
 * `skipTenants`' (tenants that hold their share of the worker), taken in turns by tenant: every tenant's first,
 * then every tenant's second, and so on, so one tenant's many endpoints cannot come before another tenant's one.
 * Within a tenant the endpoint served least recently comes first (a released lease keeps its end time,
 * lease_until, as that mark); within a turn, the tenants holding fewer of this worker's slots (`held`) first,
 * then the tenant served least recently.
 * Nothing is locked: leaseEndpoints takes the ones the worker picks, unless another process took them meanwhile.
 */
export async function dueEndpoints(
  sql: Pick<RawSql, 'query'>,
  limit: number,
  skipTenants: readonly string[],
  held: ReadonlyMap<string, number>,
): Promise<DueEndpoint[]> {
  return sql.query<DueEndpoint>(
    `SELECT "c"."id", "c"."tenantId" FROM (
       SELECT "e"."id", "e"."tenant_id" AS "tenantId", "e"."lease_until",
         row_number() OVER (PARTITION BY "e"."tenant_id" ORDER BY "e"."lease_until" NULLS FIRST, "e"."id") AS "turn",
         max("e"."lease_until") OVER (PARTITION BY "e"."tenant_id") AS "tenant_served"
       FROM "public"."webhook_endpoints" AS "e"
       WHERE "e"."enabled" AND ("e"."lease_owner" IS NULL OR "e"."lease_until" < now())
         AND ("e"."backoff_until" IS NULL OR "e"."backoff_until" <= now())
         AND "e"."tenant_id" <> ALL ($2::text[])
         AND EXISTS (
           SELECT 1 FROM "public"."webhook_deliveries" AS "d"
           WHERE "d"."endpoint_id" = "e"."id" AND "d"."status" = 'pending' AND "d"."next_attempt_at" <= now())
     ) AS "c"
     LEFT JOIN unnest($3::text[], $4::int[]) AS "h"("tenant_id", "slots") ON "h"."tenant_id" = "c"."tenantId"
     ORDER BY "c"."turn", coalesce("h"."slots", 0), "c"."tenant_served" NULLS FIRST, "c"."lease_until" NULLS FIRST, "c"."id"
     LIMIT $1`,
    [limit, skipTenants, [...held.keys()], [...held.values()]],
  );
}

/**
 * Leases the endpoints `ids` for `owner`, those still free: the condition is checked again on each row as it is
 * updated, so of two processes that picked the same endpoint only one gets it.
 */
export async function leaseEndpoints(sql: Pick<RawSql, 'query'>, owner: string, ids: readonly string[]): Promise<LeasedEndpoint[]> {
  return sql.query<LeasedEndpoint>(
    `UPDATE "public"."webhook_endpoints" AS "w" SET "lease_owner" = $1, "lease_until" = now() + make_interval(secs => $2)
     WHERE "w"."id" = ANY ($3::text[]) AND "w"."enabled" AND ("w"."lease_owner" IS NULL OR "w"."lease_until" < now())
       AND ("w"."backoff_until" IS NULL OR "w"."backoff_until" <= now())
     RETURNING ${LEASED_ENDPOINT}`,
    [owner, LEASE_SECONDS, ids],
  );
}

/** Whether any delivery waits to be sent, due or not (an index-only look at the pending ones). */
export async function anyPendingDelivery(sql: Pick<RawSql, 'query'>): Promise<boolean> {
  const [row] = await sql.query<{ pending: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM "public"."webhook_deliveries" AS "d" WHERE "d"."status" = 'pending') AS "pending"`,
  );
  return row?.pending ?? false;
}

/**
 * Extends `owner`'s lease before an attempt, and reads the endpoint as it is now (URL and secret may have
 * changed; it may have been disabled or deleted). Null when the lease is lost or the endpoint is gone or off.
 */
export async function renewEndpointLease(
  sql: Pick<RawSql, 'query'>,
  endpoint: LeasedEndpoint,
  owner: string,
): Promise<LeasedEndpoint | null> {
  const [row] = await sql.query<LeasedEndpoint>(
    `UPDATE "public"."webhook_endpoints" AS "w" SET "lease_until" = now() + make_interval(secs => $4)
     WHERE "w"."tenant_id" = $1 AND "w"."id" = $2 AND "w"."lease_owner" = $3 AND "w"."enabled"
     RETURNING ${LEASED_ENDPOINT}`,
    [endpoint.tenantId, endpoint.id, owner, LEASE_SECONDS],
  );
  return row ?? null;
}

/** Leaves the endpoint alone for `seconds` (its deliveries kept pending, no attempt recorded). */
export async function backOffEndpoint(sql: Pick<RawSql, 'query'>, endpoint: LeasedEndpoint, seconds: number): Promise<void> {
  await sql.query(
    `UPDATE "public"."webhook_endpoints" AS "w" SET "backoff_until" = now() + make_interval(secs => $3)
     WHERE "w"."tenant_id" = $1 AND "w"."id" = $2`,
    [endpoint.tenantId, endpoint.id, seconds],
  );
}

/** Gives the lease up; its end becomes now, the mark of when the endpoint was last served (dueEndpoints). */
export async function releaseEndpointLease(sql: Pick<RawSql, 'query'>, endpoint: LeasedEndpoint, owner: string): Promise<void> {
  await sql.query(
    `UPDATE "public"."webhook_endpoints" AS "w" SET "lease_owner" = NULL, "lease_until" = now()
     WHERE "w"."tenant_id" = $1 AND "w"."id" = $2 AND "w"."lease_owner" = $3`,
    [endpoint.tenantId, endpoint.id, owner],
  );
}

/** A delivery as the API shows it (without its attempts). */
export interface WebhookDeliveryRow {
  id: string;
  endpointId: string;
  eventId: bigint;
  eventType: string;
  payload: unknown;
  status: string;
  attempts: number;
  nextAttemptAt: Date | null;
  lastStatusCode: number | null;
  createdAt: Date;
  updatedAt: Date;
}

/**
 * The latest delivery (of the newest event) of each of the tenant's endpoints in `endpointIds`, in one statement:
 * one index probe per endpoint (its unique (endpoint_id, event_id)). Endpoints with no delivery have no row.
 */
export async function latestDeliveries(
  sql: Pick<RawSql, 'query'>,
  tenantId: string,
  endpointIds: readonly string[],
): Promise<WebhookDeliveryRow[]> {
  const rows = await sql.query<Omit<WebhookDeliveryRow, 'eventId'> & { eventId: string }>(
    `SELECT "d"."id", "d"."endpoint_id" AS "endpointId", "d"."event_id"::text AS "eventId", "d"."event_type" AS "eventType",
       "d"."payload", "d"."status", "d"."attempts", "d"."next_attempt_at" AS "nextAttemptAt", "d"."last_status_code" AS "lastStatusCode",
       "d"."created_at" AS "createdAt", "d"."updated_at" AS "updatedAt"
     FROM unnest($2::text[]) AS "e"("id")
     CROSS JOIN LATERAL (
       SELECT * FROM "public"."webhook_deliveries" AS "l"
       WHERE "l"."endpoint_id" = "e"."id" AND "l"."tenant_id" = $1
       ORDER BY "l"."event_id" DESC
       LIMIT 1
     ) AS "d"`,
    [tenantId, [...endpointIds]],
  );
  return rows.map((row) => ({ ...row, eventId: BigInt(row.eventId) }));
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
  /** No answer came within the attempt's time limit: the endpoint is backed off (on its own, deliveries kept). */
  timedOut: boolean;
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
    // The endpoint's own back-off: each attempt in a row without an answer in time doubles it; any answer ends it.
    await tx.query(
      `UPDATE "public"."webhook_endpoints" AS "w" SET
         "consecutive_timeouts" = CASE WHEN $3 THEN "w"."consecutive_timeouts" + 1 ELSE 0 END,
         "backoff_until" = CASE WHEN $3
           THEN now() + make_interval(secs => least($4::double precision * power(2, "w"."consecutive_timeouts"), $5))
           END
       WHERE "w"."tenant_id" = $1 AND "w"."id" = $2 AND ($3 OR "w"."consecutive_timeouts" > 0)`,
      [endpoint.tenantId, endpoint.id, attempt.timedOut, TIMEOUT_BACKOFF_SECONDS, MAX_TIMEOUT_BACKOFF_SECONDS],
    );
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

// ---- Secrets at rest (src/webhooks/reseal.ts) ----

interface StoredSecret {
  tenantId: string;
  id: string;
  secret: string;
}

/**
 * Up to `limit` endpoints after `afterId` (by id) whose stored secret is not sealed with the key `keyId`:
 * plaintext ones, and with `keyId` null only those. The one read of the data layer that spans tenants besides
 * the worker's: every row is written back to its own tenant and id.
 */
export async function secretsToReseal(
  sql: Pick<RawSql, 'query'>,
  keyId: string | null,
  afterId: string,
  limit: number,
): Promise<StoredSecret[]> {
  return sql.query<StoredSecret>(
    `SELECT "w"."tenant_id" AS "tenantId", "w"."id", "w"."secret" FROM "public"."webhook_endpoints" AS "w"
     WHERE "w"."id" > $1 AND CASE WHEN $2::text IS NULL THEN "w"."secret" NOT LIKE 'v1.%' ELSE "w"."secret" NOT LIKE 'v1.' || $2::text || '.%' END
     ORDER BY "w"."id"
     LIMIT $3`,
    [afterId, keyId, limit],
  );
}

/** Replaces a stored secret by its resealed form, unless it changed meanwhile (a rotation wins); whether it did. */
export async function replaceStoredSecret(sql: Pick<RawSql, 'query'>, stored: StoredSecret, resealed: string): Promise<boolean> {
  const rows = await sql.query<{ id: string }>(
    `UPDATE "public"."webhook_endpoints" AS "w" SET "secret" = $4
     WHERE "w"."tenant_id" = $1 AND "w"."id" = $2 AND "w"."secret" = $3
     RETURNING "w"."id"`,
    [stored.tenantId, stored.id, stored.secret, resealed],
  );
  return rows.length > 0;
}
