import { createHash } from 'node:crypto';
import { ApiError } from '../errors.js';
import type { RawSql } from './client.js';
import { inTransaction, withinTransaction, type TransactionRunner, type Tx } from './write-transactions.js';

// Idempotency-Key for POSTs. The key is inserted in the same transaction as the work it guards, so both commit
// or neither does: exactly once across processes. A concurrent request with the same key waits on the key's
// primary key until the first transaction ends; if that committed, it finds the stored record and replays it,
// if that rolled back (the work was refused), it does the work itself.
//
// The response is stored after the commit (it is rendered after the work), so a process can die in between:
// the record then holds the resource the work created or changed and no response. A replay answers from the
// resource then (re-rendered in its current state); a record with neither is a claim that found nothing (204).

/** How long a key is remembered. */
const IDEMPOTENCY_TTL_SECONDS = 24 * 60 * 60;
/** Keys are opaque strings of visible ASCII, at most this long (a UUID is 36). */
export const IDEMPOTENCY_KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

export interface IdempotentRequest {
  key: string;
  method: string;
  path: string;
  /** `hashRequestBody` of the parsed body. */
  requestHash: string;
}

export interface IdempotentResource {
  type: string;
  id: string;
}

export interface IdempotencyRecord extends IdempotentRequest {
  /** The stored answer; null when the process stopped between the commit and storing it. */
  response: { status: number; body: unknown } | null;
  /** What the work created or changed; null when it changed nothing (a claim that found nothing due). */
  resource: IdempotentResource | null;
  createdAt: Date;
  expiresAt: Date;
}

/** JSON with object members sorted, so the same body written in another member order hashes the same. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const members = Object.entries(value as Record<string, unknown>)
      .filter(([, member]) => member !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${members.map(([key, member]) => `${JSON.stringify(key)}:${canonicalJson(member)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** sha256 (hex) of a parsed request body; an absent body hashes like `null`. */
export function hashRequestBody(body: unknown): string {
  return createHash('sha256')
    .update(canonicalJson(body ?? null))
    .digest('hex');
}

interface RecordRow extends IdempotentRequest {
  responseStatus: number | null;
  responseBody: unknown;
  resourceType: string | null;
  resourceId: string | null;
  createdAt: Date;
  expiresAt: Date;
}

const RECORD_ROW = `"k"."key", "k"."method", "k"."path", "k"."request_hash" AS "requestHash", "k"."response_status" AS "responseStatus",
  "k"."response_body" AS "responseBody", "k"."resource_type" AS "resourceType", "k"."resource_id" AS "resourceId",
  "k"."created_at" AS "createdAt", "k"."expires_at" AS "expiresAt"`;

function toRecord(row: RecordRow): IdempotencyRecord {
  return {
    key: row.key,
    method: row.method,
    path: row.path,
    requestHash: row.requestHash,
    response: row.responseStatus === null ? null : { status: row.responseStatus, body: row.responseBody },
    resource: row.resourceType === null || row.resourceId === null ? null : { type: row.resourceType, id: row.resourceId },
    createdAt: row.createdAt,
    expiresAt: row.expiresAt,
  };
}

/** The tenant's live (unexpired) record of a key, or null. */
export async function findIdempotencyKey(sql: Pick<RawSql, 'query'>, tenantId: string, key: string): Promise<IdempotencyRecord | null> {
  const [row] = await sql.query<RecordRow>(
    `SELECT ${RECORD_ROW} FROM "public"."idempotency_keys" AS "k"
     WHERE "k"."tenant_id" = $1 AND "k"."key" = $2 AND "k"."expires_at" > now()`,
    [tenantId, key],
  );
  return row ? toRecord(row) : null;
}

/**
 * Reserves a key inside the transaction that will do the work: null when it is this request's to use (new,
 * or its earlier use expired), otherwise the stored record of the earlier request, to replay. The same key
 * for another method, path or body is IDEMPOTENCY_KEY_REUSED (422). Waits while another transaction holds
 * the same key.
 */
async function reserveIdempotencyKey(tx: Tx, tenantId: string, request: IdempotentRequest): Promise<IdempotencyRecord | null> {
  const [reserved] = await tx.query<{ key: string }>(
    `INSERT INTO "public"."idempotency_keys" AS "k" ("tenant_id", "key", "method", "path", "request_hash", "expires_at")
     VALUES ($1, $2, $3, $4, $5, now() + make_interval(secs => $6))
     ON CONFLICT ("tenant_id", "key") DO UPDATE
       SET "method" = EXCLUDED."method", "path" = EXCLUDED."path", "request_hash" = EXCLUDED."request_hash",
           "response_status" = NULL, "response_body" = NULL, "resource_type" = NULL, "resource_id" = NULL,
           "created_at" = now(), "expires_at" = EXCLUDED."expires_at"
       WHERE "k"."expires_at" <= now()
     RETURNING "k"."key"`,
    [tenantId, request.key, request.method, request.path, request.requestHash, IDEMPOTENCY_TTL_SECONDS],
  );
  if (reserved) return null;
  const earlier = await findIdempotencyKey(tx, tenantId, request.key);
  if (!earlier) throw new Error(`idempotency key ${request.key} neither reserved nor found`);
  if (earlier.method !== request.method || earlier.path !== request.path || earlier.requestHash !== request.requestHash) {
    // Which request used the key, and when, is not said: the key may have been another credential's of the tenant.
    throw new ApiError(
      'IDEMPOTENCY_KEY_REUSED',
      'the Idempotency-Key was already used for another request; use a new key for a new request',
    );
  }
  return earlier;
}

/** Records, in the work's transaction, what the work created or changed (null: nothing). */
async function recordIdempotentResource(tx: Tx, tenantId: string, key: string, resource: IdempotentResource | null): Promise<void> {
  await tx.query(
    `UPDATE "public"."idempotency_keys" AS "k" SET "resource_type" = $3, "resource_id" = $4
     WHERE "k"."tenant_id" = $1 AND "k"."key" = $2`,
    [tenantId, key, resource?.type ?? null, resource?.id ?? null],
  );
}

/**
 * Stores the answer once it is rendered (after the commit); the first stored answer stays. Resolves false when
 * it could not be stored: the work has committed, so losing the database just then (a failover) must not turn
 * its success into an error; a repeat then answers from the resource, as after a process stopped in between.
 */
export async function storeIdempotentResponse(
  sql: Pick<RawSql, 'query'>,
  tenantId: string,
  key: string,
  response: { status: number; body: unknown },
): Promise<boolean> {
  return sql
    .query(
      `UPDATE "public"."idempotency_keys" AS "k" SET "response_status" = $3, "response_body" = $4::jsonb
     WHERE "k"."tenant_id" = $1 AND "k"."key" = $2 AND "k"."response_status" IS NULL`,
      [tenantId, key, response.status, response.body === undefined ? null : JSON.stringify(response.body)],
    )
    .then(
      () => true,
      () => false,
    );
}

type IdempotentOutcome<T> = { replayed: false; result: T } | { replayed: true; record: IdempotencyRecord };

/**
 * Does `work` once per key: reserves the key, runs `work` in the same transaction (a write function given
 * the runner joins it) and records `resourceOf(result)`. A repeated request gets the earlier record instead;
 * a refused `work` (it throws) leaves no key behind, so a repeat tries again.
 */
export async function runIdempotently<T>(
  sql: TransactionRunner,
  tenantId: string,
  request: IdempotentRequest,
  work: (sql: TransactionRunner) => Promise<T>,
  resourceOf: (result: T) => IdempotentResource | null,
): Promise<IdempotentOutcome<T>> {
  return inTransaction(sql, async (tx) => {
    const earlier = await reserveIdempotencyKey(tx, tenantId, request);
    if (earlier) return { replayed: true, record: earlier };
    const result = await work(withinTransaction(tx));
    await recordIdempotentResource(tx, tenantId, request.key, resourceOf(result));
    return { replayed: false, result };
  });
}

/**
 * Deletes expired keys, at most `limit` (oldest first) per call; the scheduler calls it every tick. The one
 * statement of the data layer that spans tenants: it reads nothing back, and only ever removes expired keys.
 */
export async function deleteExpiredIdempotencyKeys(sql: Pick<RawSql, 'query'>, limit = 1000): Promise<number> {
  const rows = await sql.query<{ key: string }>(
    `DELETE FROM "public"."idempotency_keys" AS "k"
     WHERE ("k"."tenant_id", "k"."key") IN (
       SELECT "e"."tenant_id", "e"."key" FROM "public"."idempotency_keys" AS "e"
       WHERE "e"."expires_at" <= now() ORDER BY "e"."expires_at" LIMIT $1)
     RETURNING "k"."key"`,
    [limit],
  );
  return rows.length;
}
