import type { IdempotencyRecord } from './db/idempotency.js';
import type { Viewer } from './auth/viewer.js';
import type { Database } from './db/client.js';
import type { Live } from './live/live.js';
import type { TokenCaps } from './domain/token-caps.js';
import type { WebhookSettings } from './webhooks/settings.js';

export interface Context {
  db: Database;
  /** null when the request carries no valid credential; protected fields then answer UNAUTHORIZED. */
  viewer: Viewer | null;
  requestId: string;
  /**
   * The request's `Idempotency-Key` header, for the mutations a POST runs (createConnection, triggerSync,
   * claimSync). `outcome` is set by the mutation: whether it did the work or found an earlier request's.
   */
  idempotency: { key: string; outcome?: { replayed: boolean; record?: IdempotencyRecord } } | null;
  /** The request's Authorization header: open streams check it again while they last. */
  authorization: string | null;
  /** The SSRF guard's setting, the endpoint cap and the secrets' keys (src/webhooks/settings.ts). */
  webhooks: WebhookSettings;
  /** Active tokens a service user and a tenant may hold (TOKENS_PER_SERVICE_USER, TOKENS_PER_TENANT). */
  tokenCaps: TokenCaps;
  /** The event hub, credential watch and stream caps the subscriptions use. */
  live: Live;
  /**
   * Set by a REST event stream, which runs a subscription: where to resume (its Last-Event-ID), and the id of
   * the event being delivered, written by the subscription before each item for the stream's `id:` line.
   */
  streamCursor?: { after?: number; current: number };
  /**
   * Set by a REST export (rest/export.ts): each list page reads `batchRows` rows, past a client page's maximum;
   * a list field that can read its rows for the export itself hands its reader over in `rows` (ListRowReader below).
   */
  listExport?: ListExport;
}

/** A request's Idempotency-Key header, as the context holds it (checked by the mutation that uses it). */
export function idempotencyOf(header: string | null): Context['idempotency'] {
  return header === null ? null : { key: header };
}

/**
 * What a REST export asks of a list field (context.listExport): batches of `batchRows` rows, and, from a field
 * that can read its rows for the export itself, the reader (`rows`), which the field sets instead of reading a
 * page. The export then reads the list batch after batch by its keyset, with the field's own conditions, order
 * and properties, and shapes each REST record from the row (rest/export.ts): no operation runs per batch.
 */
export interface ListExport {
  batchRows: number;
  /** Whether the export shapes records from rows (it does unless a field it exports is an object). */
  readsRows: boolean;
  rows?: ListRowReader;
}

/** A list's rows for an export: the field's own question, read from a keyset position on. */
export interface ListRowReader {
  /**
   * Up to `take` rows after the row whose sort keys read `after` (null: from the first). The properties in
   * `packed` come as one JSON array (text) in the row's `PACKED_PROPERTIES` member, in that order; the other
   * properties the field reads are the row's members, as a page's rows hold them.
   */
  read(packed: readonly string[], after: readonly unknown[] | null, take: number): Promise<Record<string, unknown>[]>;
  /** Which properties `read` can pack. */
  packable(property: string): boolean;
  /** A row's sort keys' values: where the next batch starts. */
  keyValues(row: Record<string, unknown>): unknown[];
}

/** The row member holding a ListRowReader's packed properties. */
export const PACKED_PROPERTIES = '__packed';
