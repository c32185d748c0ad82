import type { Context } from '../context.js';
import { hashRequestBody, IDEMPOTENCY_KEY_PATTERN, type IdempotentResource, runIdempotently } from '../db/idempotency.js';
import type { TransactionRunner } from '../db/write-transactions.js';
import { ApiError } from '../errors.js';
import { requireViewer } from './viewer.js';

/**
 * Does a POST's write at most once per Idempotency-Key (24 h, per tenant), when the request sends one: the key
 * is reserved in the write's own transaction (src/db/idempotency.ts), so the work and the key commit together.
 * The same key again with the same operation and arguments answers what the first request wrote (loaded by
 * `replay` from the resource it recorded); with anything else it is IDEMPOTENCY_KEY_REUSED (422).
 */
export async function once<T>(
  context: Context,
  operation: string,
  args: unknown,
  work: (sql: TransactionRunner) => Promise<T>,
  resourceOf: (result: T) => IdempotentResource | null,
  replay: (resource: IdempotentResource | null) => Promise<T>,
): Promise<T> {
  const { idempotency } = context;
  if (!idempotency) return work(context.db.raw);
  if (!IDEMPOTENCY_KEY_PATTERN.test(idempotency.key)) {
    throw new ApiError('INVALID_QUERY', 'The Idempotency-Key header must be 1 to 255 visible ASCII characters (a UUID, say)');
  }
  if (idempotency.outcome) throw new ApiError('INVALID_QUERY', 'An Idempotency-Key covers one mutation; send the others separately');
  const request = { key: idempotency.key, method: 'mutation', path: operation, requestHash: hashRequestBody(args) };
  const outcome = await runIdempotently(context.db.raw, requireViewer(context).tenantId, request, work, resourceOf);
  if (!outcome.replayed) {
    idempotency.outcome = { replayed: false };
    return outcome.result;
  }
  idempotency.outcome = { replayed: true, record: outcome.record };
  return replay(outcome.record.resource);
}
