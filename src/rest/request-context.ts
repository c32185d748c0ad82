import type { ApplicationCategoryLookup } from '../domain/connection-input.js';
import type { Governor } from '../governor/governor.js';
import type { GuardOptions } from '../domain/ssrf-guard.js';

/**
 * What REST reads or sets of a request's context. The GraphQL server builds the whole context and REST hands
 * it on to the operation untouched, so the route code is generic over it and knows only this part.
 */
export interface RestContext {
  /** The caller; null without a valid credential, which every route refuses (401). */
  viewer: { tenantId: string; permissions: ReadonlySet<string>; tokenId?: string; credential?: string; subject?: string } | null;
  /** The SSRF guard's setting, for the webhook body checks. */
  webhooks: GuardOptions;
  /** The catalog, for a new connection's body check. */
  applicationCategory: ApplicationCategoryLookup;
  /** How an event stream keeps the connection alive, and the governor its stream and an export are leased from. */
  live: { heartbeatMs: number; governor: Governor };
  /** The HTTP request: the owner of what it leases. */
  request?: Request;
}
