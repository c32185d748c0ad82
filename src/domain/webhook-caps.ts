// How many webhook endpoints a tenant may have (WEBHOOK_ENDPOINTS_PER_TENANT), and so how many deliveries one
// event may fan out to: the cap keeps one tenant's events from filling the outbox (and the scheduler's and the
// delivery worker's time) for every other tenant.

/** WEBHOOK_ENDPOINTS_PER_TENANT when unset. */
export const DEFAULT_WEBHOOK_ENDPOINTS_PER_TENANT = 100;

/**
 * The largest WEBHOOK_ENDPOINTS_PER_TENANT allowed, and the most deliveries one event is queued for: a tenant
 * above the cap (endpoints made before it, or the cap lowered since) gets each event at its oldest enabled
 * endpoints up to this many.
 */
export const MAX_DELIVERIES_PER_EVENT = 1000;
