// The types of the event log's events (src/db/events.ts): what webhooks are sent for, too.

export const EVENT_TYPES = [
  'connection.created',
  'connection.updated',
  'connection.deleted',
  'sync.pending',
  'sync.in_progress',
  'sync.progress',
  'sync.success',
  'sync.failed',
  'webhook.endpoint_disabled',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];
