import type { IdempotencyRecord } from './db/idempotency.js';
import type { Viewer } from './auth/viewer.js';
import type { Database } from './db/client.js';
import type { Live } from './live/live.js';
import type { ApplicationCategoryLookup } from './domain/connection-input.js';
import type { TokenCaps } from './domain/token-caps.js';
import type { WebhookSettings } from './webhooks/settings.js';
import type { IdentityProviders } from './auth/identity-providers.js';

export interface Context {
  db: Database;
  /** null when the request carries no valid credential; protected fields then answer UNAUTHORIZED. */
  viewer: Viewer | null;
  requestId: string;
  /**
   * The client's address as the rate limiter keys it (admission's clientAddress: the socket's, or behind
   * TRUST_PROXY the hop the proxy appended), for the activity log; absent where no socket is known.
   */
  clientAddress?: string;
  /**
   * The request's `Idempotency-Key` header, for the mutations a POST runs (createConnection, triggerSync,
   * claimSync). `outcome` is set by the mutation: whether it did the work or found an earlier request's.
   */
  idempotency: { key: string; outcome?: { replayed: boolean; record?: IdempotencyRecord } } | null;
  /** The request's Authorization header: open streams check it again while they last. */
  authorization: string | null;
  /** The SSRF guard's setting, the endpoint cap and the secrets' keys (src/webhooks/settings.ts). */
  webhooks: WebhookSettings;
  /** The catalog as the input checks read it (a new connection's application and its kind). */
  applicationCategory: ApplicationCategoryLookup;
  /** The organizations' identity providers (single sign-on): their settings and discovered configurations. */
  identityProviders: IdentityProviders;
  /** Active tokens a service user and a tenant may hold (TOKENS_PER_SERVICE_USER, TOKENS_PER_TENANT). */
  tokenCaps: TokenCaps;
  /** The event hub, credential watch and the governor the subscriptions use. */
  live: Live;
  /** The HTTP request (yoga's, or the one a WebSocket operation runs as): the owner of what it leases. */
  request?: Request;
}

/** A request's Idempotency-Key header, as the context holds it (checked by the mutation that uses it). */
export function idempotencyOf(header: string | null): Context['idempotency'] {
  return header === null ? null : { key: header };
}
