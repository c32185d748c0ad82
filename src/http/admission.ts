import type { DocumentNode, GraphQLError } from 'graphql';
import { requestCredential, viewerOf } from '../auth/request-viewers.js';
import { clientAddressOf } from '../auth/session-cookie.js';
import type { Viewer } from '../auth/viewer.js';
import { ApiError, ERROR_CODES, isErrorCode } from '../errors.js';
import type { Logger } from '../logger.js';
import { credentialRequirementRefusal } from '../plugins/use-auth.js';
import { isPastDeadline, startDeadline, timeoutError, withinDeadline, type Deadline } from '../plugins/use-deadline.js';
import { executionRefusal, paramsRefusal, type OperationArgs, type RequestLimits } from '../plugins/use-limits.js';
import { routeOf, type GatewayMetrics, type OperationSurface } from '../plugins/use-metrics.js';
import { budgetHeaders, type BudgetState, type RateCheck, type RateLimits } from '../plugins/use-rate-limit.js';
import { logRequest } from '../plugins/use-request-log.js';
import { securityHeaders } from '../plugins/use-security-headers.js';
import type { Incoming } from './incoming-outgoing.js';

// The admission spine: the one ordered list of checks every way in passes, and the functions that run them.
// A transport (yoga's pipeline, the two direct HTTP paths, graphql-ws, the OAuth endpoints) is an adapter: it
// reads its request into an `Incoming` (./incoming-outgoing.ts), the one request shape these functions read, and
// calls them in the list's order; none decides a check itself.
// docs/explanation/admission.md says why; docs/how-to/add-an-admission-check.md how to add one.

/**
 * The ways in. A new one added here fails test/admission-table.test.ts until every check has a row for it.
 * `oauth`: the authorization server's endpoints (src/http/oauth-endpoints.ts); `auth`: members' sign-in, sign-out
 * and codes under /api/v1/auth (plugins/use-sign-in.ts), through yoga's pipeline.
 */
export const SURFACES = ['rest', 'graphql-http', 'graphql-sse', 'graphql-ws', 'rest-stream', 'oauth', 'auth'] as const;
export type Surface = (typeof SURFACES)[number];

/**
 * The checks, in the order they take hold of a request. Five wrap it: they start at its arrival, before anything
 * can refuse it, and act on its way out in this order (a late answer is replaced by the 503 first, so the codes,
 * the log line, the metrics and the headers are those of the answer sent). The others then refuse it on its way
 * in. Every transport follows this order: yoga's plugin list is built from it (YOGA_ADMISSION in ./yoga.ts), and
 * the direct paths and graphql-ws call the functions of `Admission` in it. A new check is one entry here and one
 * row in test/admission-table.test.ts, which fails until the row exists and yoga's pipeline implements it.
 */
export const ADMISSION_CHECKS = [
  /** The Host header is a plain host[:port], so the origin of Location and `docs` links is this server's (400). */
  'host',
  /** From arrival to answer (503); streams are exempt once open. */
  'deadline',
  /** What an unexpected error may show: a code and the request id, never a stack or SQL. */
  'error-masking',
  /** One log line per request or WebSocket operation. */
  'request-log',
  /** Requests and operations counted by route, status and surface. */
  'metrics',
  /** nosniff, CSP, frame and referrer policies, no-store. */
  'security-headers',
  /** URL length (414), body bytes (413), WebSocket frame bytes (close 1009), sockets per client address. */
  'size',
  /** The credential is resolved (src/auth/credentials.ts): a refused one is 401, WebSocket close 4401. */
  'credential',
  /** Per-credential, per-tenant and per-address budgets (429). */
  'rate-limit',
  /** GraphQL tokens, variable nesting, depth, aliases, directives, cost, storable text (400). */
  'document-limits',
  /** An operation asking for data needs a credential (401; WebSocket: at connection_init). */
  'credential-requirement',
  /** Open streams per credential, per tenant (429) and per process (503); WebSockets per credential. */
  'stream-caps',
] as const;
export type AdmissionCheck = (typeof ADMISSION_CHECKS)[number];

/**
 * A Host header as RFC 3986 allows it: a registered name or an IP literal, with an optional port. Anything else
 * (`/`, `?`, `#`, `@`, whitespace) would make the URL the server builds from it point elsewhere.
 */
const HOST = /^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._~!$&'()*+,;=%-]+)(?::\d{1,5})?$/;

/** The refusal of a Host header (absent is fine: HTTP/1.0; the local address stands in). */
export function hostRefusal(host: string | undefined | null): ApiError | null {
  if (host === undefined || host === null || HOST.test(host)) return null;
  return new ApiError('INVALID_QUERY', 'The Host header must be a host name or address, with an optional port');
}

/** What the spine's functions need, built once per gateway. */
export interface AdmissionParts {
  logger: Logger;
  /** The credential checks (src/auth/credentials.ts, through viewerOf). */
  credentials: Parameters<typeof viewerOf>[1];
  rateLimits: RateLimits | null;
  metrics: GatewayMetrics;
  limits: RequestLimits;
  /** Yoga's masking function (use-error-masking's createMaskError). */
  maskError: (error: unknown, message: string) => Error;
  /** Whether CORS is on (every answer then varies on Origin). */
  cors: boolean;
}

/** One operation's or request's outcome, for its log line and its metrics. */
export interface Outcome {
  requestId: string;
  method: string;
  pathname: string;
  status: number;
  startedAt: number;
  viewer: Viewer | null | undefined;
}

/** yoga's masking message (maskedErrors.errorMessage). */
export const MASKED_MESSAGE = 'Unexpected error.';

/**
 * The spine's functions, bound to one gateway's parts: what every adapter calls, in the order of ADMISSION_CHECKS.
 * yoga's plugins call the same plain functions these wrap.
 */
export interface Admission {
  readonly limits: RequestLimits;
  /** Whether CORS is on: the direct paths leave a cross-origin request to yoga's CORS handling. */
  readonly cors: boolean;
  /** deadline: starts the time limit of a request or an operation, on its arrival. */
  deadline(): Deadline;
  /** deadline: the 503 that replaces an answer ready only past its time limit; null within it. */
  lateRefusal(deadline: Deadline): ApiError | null;
  /** error-masking: what an error may show (a GraphQLError as it is; anything else a code, never a stack). */
  mask(error: unknown): GraphQLError;
  /** metrics: counts an operation under `surface`; the function returned records its outcome. */
  operationStarted(document: DocumentNode, operationName: string | null | undefined, surface: OperationSurface): (result: unknown) => void;
  /** security-headers (and the rate budget's): an answer's headers by its content type, lower-case names. */
  headers(contentType: string, budget: BudgetState | undefined): Record<string, string>;
  /** credential: what a request presents (Authorization, or the session cookie past its cross-site checks). */
  presented(incoming: Incoming, surface?: 'websocket'): string | null;
  /**
   * rate-limit and size: the address a request came from, for the budget of a request without a credential and the
   * per-address caps: the socket's, or the last hop a trusted proxy (TRUST_PROXY) appended to X-Forwarded-For.
   */
  clientAddress(incoming: Pick<Incoming, 'header' | 'remoteAddress'>): string;
  /** credential: of an Authorization value: null without one; a refused one throws 401. Within `deadline` when given. */
  credential(authorization: string | null, deadline?: Deadline): Promise<Viewer | null>;
  /** rate-limit: counts a request or an operation; null when not counted (exempt path, store down, limits off). */
  rateLimit(pathname: string, viewer: Viewer | null, clientAddress: string): Promise<RateCheck | null>;
  /** document-limits: a GraphQL request's parameters before parsing: token count and variable nesting (400). */
  params(query: unknown, variables: unknown): GraphQLError | null;
  /**
   * document-limits: an operation about to run: its variables' text, and its cost unless `bounded` (the server's
   * own REST documents, bounded by construction).
   */
  operationRefusal(args: OperationArgs, bounded: boolean): GraphQLError | null;
  /** credential-requirement: an operation asking for data without a credential (401). */
  credentialRequirement(document: DocumentNode, operationName: string | null | undefined, viewer: Viewer | null): GraphQLError | null;
  /** request-log and metrics: the log line and the request metrics. */
  done(outcome: Outcome): void;
}

export function createAdmission(parts: AdmissionParts): Admission {
  const { logger, credentials, rateLimits, metrics, limits, maskError, cors } = parts;
  const proxyPolicy = { trustProxy: credentials.sessions?.trustProxy ?? false };
  const headersByType = new Map<string, Record<string, string>>();
  const securityHeadersOf = (contentType: string) => {
    let headers = headersByType.get(contentType);
    if (!headers) {
      headers = lowerCased(securityHeaders(contentType, { cors, vary: null, cacheControl: null }));
      headersByType.set(contentType, headers);
    }
    return headers;
  };
  return {
    limits,
    cors,
    deadline: () => startDeadline(limits.timeoutMs),
    lateRefusal: (deadline) => (isPastDeadline(deadline) ? timeoutError() : null),
    // yoga types the masking function's result as Error; it returns GraphQL errors.
    mask: (error) => maskError(error, MASKED_MESSAGE) as GraphQLError,
    operationStarted: (document, operationName, surface) => metrics.operationStarted(document, operationName, surface),
    headers: (contentType, budget) =>
      budget ? { ...securityHeadersOf(contentType), ...lowerCased(budgetHeaders(budget)) } : securityHeadersOf(contentType),
    clientAddress: (incoming) => clientAddressOf(incoming, incoming.remoteAddress, proxyPolicy),
    presented: (incoming, surface) => requestCredential(incoming, credentials, surface),
    credential: (authorization, deadline) => {
      const lookup = viewerOf(authorization, credentials);
      return deadline ? withinDeadline(deadline, lookup) : lookup;
    },
    rateLimit: async (pathname, viewer, clientAddress) => (rateLimits ? rateLimits.check(pathname, viewer, clientAddress) : null),
    params: (query, variables) => paramsRefusal(query, variables, limits.maxTokens),
    operationRefusal: (args, bounded) => executionRefusal(args, limits.maxCost, bounded),
    credentialRequirement: credentialRequirementRefusal,
    done({ requestId, method, pathname, status, startedAt, viewer }) {
      const route = routeOf(pathname);
      if (logger.isLevelEnabled('info'))
        logRequest(logger, { requestId, method, pathname, route, status, startedAt, tenantId: viewer?.tenantId ?? undefined });
      metrics.requestDone(method, route, status, startedAt);
    },
  };
}

/** Header names in lower case, as yoga's Headers send them. */
export function lowerCased(headers: Record<string, string>): Record<string, string> {
  const lower: Record<string, string> = {};
  for (const name in headers) lower[name.toLowerCase()] = headers[name]!;
  return lower;
}

/** The HTTP status an error stands for (its own, else its code's), for a log line of a transport without one. */
export function statusOf(error: GraphQLError | undefined): number {
  if (!error) return 200;
  const http = error.extensions?.http as { status?: number } | undefined;
  if (http?.status) return http.status;
  const code = error.extensions?.code;
  return isErrorCode(code) ? ERROR_CODES[code].status : 400;
}
