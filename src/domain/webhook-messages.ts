import { EVENT_TYPES, type EventType } from './event-types.js';
import type { Sync } from '../generated/prisma/client.js';
import { CONNECTION, type ConnectionMessageData } from './connection-record.js';
import { columnOf } from './record-descriptor.js';
import { type SyncRecord, syncRecordOf } from './sync-record.js';

export { connectionMessageData } from './connection-record.js';

// What a webhook says. Every message body is `{type, timestamp, event_id, data}`:
// - `type`: the event type (below); `timestamp`: when the event was committed; `event_id`: its id in the
//   tenant's event log (ascending in commit order: a receiver can order or de-duplicate by it);
// - `data` of `sync.*`: the sync record exactly as REST shows it (GET /syncs/{id}), plus `attempt`;
// - `data` of `connection.*`: the connection's id, name, application_id, status and settings (CONNECTION.webhook);
// - `data` of `webhook.endpoint_disabled`: the endpoint's id, url and why it was disabled.
// A connection's events (and its runs') are sent only while its settings.webhook_enabled is true.

/** Every event type of the log is sent. */
export const WEBHOOK_EVENT_TYPES = EVENT_TYPES;
type WebhookEventType = EventType;

/** `data` of a sync event: the REST sync record (summary, diff and checksum JSON-encoded, as the spec has them), plus the attempt. */
export type SyncMessageData = SyncRecord & { attempt: number };
export interface EndpointDisabledData {
  id: string;
  url: string;
  reason: string;
}
/** A webhook message's `data`, by the kind of event it is sent for. */
export type WebhookData = SyncMessageData | ConnectionMessageData | EndpointDisabledData;

export function syncMessageData(run: Sync): SyncMessageData {
  return { ...syncRecordOf(run), attempt: run.attempt };
}

export function endpointDisabledData(endpoint: { id: string; url: string }, reason: string): EndpointDisabledData {
  return { id: endpoint.id, url: endpoint.url, reason };
}

/**
 * JSON Schemas of the messages, for the OpenAPI document's `webhooks` section. `syncRecord` is the REST sync
 * record's schema (the document's SyncRecord component, derived from the same GraphQL selection as GET
 * /syncs/{id}): a sync message's data is that record plus `attempt`, so the two cannot drift apart;
 * `connectionSettings` is the connection's settings schema, as the document's ConnectedApplication has it.
 */
export function messageSchema(
  type: WebhookEventType,
  syncRecord: Record<string, unknown>,
  connectionSettings: Record<string, unknown>,
): Record<string, unknown> {
  const data: Record<string, unknown> = type.startsWith('sync.')
    ? {
        ...syncRecord,
        description: 'The sync record as GET /syncs/{id} shows it, plus attempt.',
        properties: {
          ...(syncRecord.properties as Record<string, unknown>),
          attempt: { type: 'integer', minimum: 1, description: 'The attempt this run is (1 for the first).' },
        },
        required: [...(syncRecord.required as string[]), 'attempt'],
      }
    : type.startsWith('connection.')
      ? {
          type: 'object',
          required: CONNECTION.webhook.map(columnOf),
          properties: {
            id: { type: 'string' },
            name: { type: 'string' },
            application_id: { type: 'string' },
            status: { type: 'string', enum: ['pending', 'active', 'paused', 'error'] },
            settings: { ...connectionSettings, description: "The connection's settings, as GET /connected/{id} shows them." },
          },
        }
      : {
          type: 'object',
          required: ['id', 'url', 'reason'],
          properties: { id: { type: 'string' }, url: { type: 'string' }, reason: { type: 'string' } },
        };
  return {
    type: 'object',
    required: ['type', 'timestamp', 'event_id', 'data'],
    properties: {
      type: { const: type },
      timestamp: { type: 'string', format: 'date-time' },
      event_id: { type: 'integer', description: "The event's id in the tenant's event log (ascending in commit order)." },
      data,
    },
  };
}
