import type { DocumentNode, GraphQLError } from 'graphql';
import { requestCredential, viewerOf } from '../auth/request-viewers.js';
import { clientAddressOf } from '../auth/session-cookie.js';
import type { Viewer } from '../auth/viewer.js';
import { ApiError, ERROR_CODES, isErrorCode, newRequestId } from '../errors.js';
import type { Logger } from '../logger.js';
import { credentialRequirementRefusal } from '../admission/credential-requirement.js';
import { isPastDeadline, startDeadline, timeoutError, withinDeadline, type Deadline } from '../admission/deadline.js';
import {
  costRefusal,
  executionRefusal,
  paramsRefusal,
  sizeRefusal,
  type OperationArgs,
  type RequestLimits,
} from '../admission/request-limits.js';
import { routeOf, type GatewayMetrics, type OperationSurface } from '../plugins/use-metrics.js';
import { budgetHeaders, isExempt, type BudgetState, type RateLimits } from '../admission/rate-limits.js';
import { logRequest } from '../admission/request-log.js';
import { securityHeaders } from '../admission/security-headers.js';
import type { Incoming } from './incoming-outgoing.js';

// The admission spine: the one ordered list of checks every way in passes, and the two functions that run it.
// A transport (yoga's pipeline through ./use-admission.ts, the two direct HTTP paths, graphql-ws, SSE on yoga) is
// an adapter: it reads its request into an `Incoming` (./incoming-outgoing.ts), calls `admit` on its arrival and
// `settle` with its answer, and asks `operation` of each operation it runs; none decides a check itself.
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
 * in. `admit` and `settle` run them in this order for every transport; each one's steps are its row of CHECKS
 * below. A new check is its implementation, one entry here with its row, and one row in
 * test/admission-table.test.ts, which fails until the row exists.
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
  /** Yoga's masking function (admission/error-masking.ts' createMaskError). */
  maskError: (error: unknown, message: string) => Error;
  /** Whether CORS is on (every answer then varies on Origin). */
  cors: boolean;
}

/** An operation about to run, for the operation checks. */
export interface Operation {
  args: OperationArgs;
  viewer: Viewer | null;
  /** The server's own REST documents: bounded in cost by construction. */
  bounded: boolean;
  subscription?: boolean;
}

/** An answer, as `settle` reads it. */
export interface Answer {
  status: number;
  /** The answer's Content-Type ('' for none). */
  contentType: string;
  /** The Vary and Cache-Control it already has (null: none). */
  vary?: string | null;
  cacheControl?: string | null;
  /**
   * Replaces an answer ready only past the deadline with the 503 `error`, and returns the answer it became;
   * without it a late answer is left as it is (a graphql-ws result with errors).
   */
  late?: (error: ApiError) => Answer;
}

/** An answer settled: its status and the headers the checks add (lower-case names, as yoga's Headers send them). */
export interface Settled {
  status: number;
  headers: Record<string, string>;
}

/**
 * A check's steps, each run by the spine's functions in the order of ADMISSION_CHECKS: `arrive` on arrival (the
 * checks that wrap a request), `admit` of the request (a refusal ends it), `params` of a GraphQL request's
 * parameters before parsing, `operation` of each operation about to run, and `settle` of the answer.
 */
interface Check {
  admit?(ticket: Ticket): ApiError | null | Promise<ApiError | null>;
  params?(query: unknown, variables: unknown): GraphQLError | null;
  operation?(operation: Operation): GraphQLError | null;
  settle?(ticket: Ticket, settling: Settled & { answer: Answer }): void;
}

/** yoga's masking message (maskedErrors.errorMessage). */
export const MASKED_MESSAGE = 'Unexpected error.';

/** What a transport knows of a request on its arrival already: its id and the deadline it started (yoga's). */
export interface Arrival {
  requestId?: string;
  deadline?: Deadline;
  /** The request's URL, when the transport has parsed it. */
  url?: URL;
}

/** The spine, bound to one gateway's parts: what every adapter calls. */
export interface Admission {
  readonly limits: RequestLimits;
  /** Whether CORS is on: the direct paths leave a cross-origin request to yoga's CORS handling. */
  readonly cors: boolean;
  /** The wrapping checks start (deadline, request id, log and metrics clocks): the ticket, not yet admitted. */
  arrive(incoming: Incoming, surface: Surface, arrival?: Arrival): Ticket;
  /**
   * The request's checks in the list's order (on a ticket `arrive` made, or on arrival): the first refusal, or
   * null when admitted. A refused credential is not a refusal here: the request is counted by its address, and
   * `ticket.viewer()` rejects where the transport builds its context.
   */
  admit(ticket: Ticket): Promise<ApiError | null>;
  /** document-limits: a GraphQL request's parameters before parsing: token count and variable nesting (400). */
  params(query: unknown, variables: unknown): GraphQLError | null;
  /** The operation checks in the list's order: the first refusal, or null when it may run. */
  operation(operation: Operation): GraphQLError | null;
  /** The answer's checks in the list's order: the late 503, the request id, log line, metrics and headers. */
  settle(ticket: Ticket, answer: Answer): Settled;
  /** error-masking: what an error may show (a GraphQLError as it is; anything else a code, never a stack). */
  mask(error: unknown): GraphQLError;
  /** metrics: counts an operation under `surface`; the function returned records its outcome. */
  operationStarted(document: DocumentNode, operationName: string | null | undefined, surface: OperationSurface): (result: unknown) => void;
  /** security-headers: an answer's headers by its content type, for an answer written outside `settle` (OAuth). */
  headers(contentType: string): Record<string, string>;
  /** credential: what a request presents (Authorization, or the session cookie past its cross-site checks). */
  presented(incoming: Incoming, surface?: 'websocket'): string | null;
  /** The client's address: the socket's, or the last hop a trusted proxy (TRUST_PROXY) appended to X-Forwarded-For. */
  clientAddress(incoming: Pick<Incoming, 'header' | 'remoteAddress'>): string;
  /** credential: of an Authorization value: null without one; a refused one throws 401. */
  credential(authorization: string | null): Promise<Viewer | null>;
  /** rate-limit: counts a graphql-ws connection_init refused, by its address (null: not counted). */
  rateLimitAddress(pathname: string, clientAddress: string): Promise<ApiError | null>;
  /** A ticket handed on with `request` (a request the direct GraphQL path read and leaves to yoga). */
  carry(request: Request, ticket: Ticket): void;
  carried(request: Request): Ticket | undefined;
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
  const clientAddress = (incoming: Pick<Incoming, 'header' | 'remoteAddress'>) =>
    clientAddressOf(incoming, incoming.remoteAddress, proxyPolicy);
  const presented = (incoming: Incoming, surface?: 'websocket') => requestCredential(incoming, credentials, surface);
  /** The credential lookup of a ticket (its `viewer()`, the first time). */
  const lookUp = async (ticket: Ticket): Promise<Viewer | null> => {
    ticket.authorization = presented(ticket.incoming, ticket.surface === 'graphql-ws' ? 'websocket' : undefined);
    const viewer = await withinDeadline(ticket.deadline, viewerOf(ticket.authorization, credentials));
    ticket.resolved = viewer;
    return viewer;
  };

  // Each check's steps: its row. `admit`, `params`, `operation` and `settle` run them in the list's order.
  const CHECKS: Record<AdmissionCheck, Check> = {
    host: { admit: (ticket) => hostRefusal(ticket.incoming.header('host')) },
    // Started on arrival (arrive); a late answer is replaced first, so every later step sees the 503.
    deadline: {
      settle(ticket, settling) {
        ticket.deadline.end();
        const { answer } = settling;
        if (answer.status === 503 || !answer.late || !isPastDeadline(ticket.deadline)) return;
        settling.answer = answer.late(timeoutError());
        settling.status = settling.answer.status;
      },
    },
    // Errors are masked where they are raised (mask, below; yoga's maskedErrors); the answer names the request.
    'error-masking': {
      settle(ticket, { headers }) {
        headers['x-request-id'] = ticket.requestId;
      },
    },
    'request-log': {
      settle(ticket, { status }) {
        if (!logger.isLevelEnabled('info')) return;
        const { requestId, incoming, pathname, route, startedAt, resolved } = ticket;
        logRequest(logger, { requestId, method: incoming.method, pathname, route, status, startedAt, tenantId: resolved?.tenantId });
      },
    },
    metrics: {
      settle(ticket, { status }) {
        metrics.requestDone(ticket.incoming.method, ticket.route, status, ticket.startedAt);
      },
    },
    'security-headers': {
      settle(_ticket, { answer: { contentType, vary, cacheControl }, headers: settled }) {
        const headers =
          (vary ?? null) === null && (cacheControl ?? null) === null
            ? securityHeadersOf(contentType)
            : lowerCased(securityHeaders(contentType, { cors, vary: vary ?? null, cacheControl: cacheControl ?? null }));
        Object.assign(settled, headers);
      },
    },
    size: {
      admit: ({ incoming, urlLength }) => sizeRefusal(urlLength, incoming.header('content-length'), limits),
    },
    // The lookup starts when the rate limit or the context first asks (ticket.viewer).
    credential: {},
    'rate-limit': {
      async admit(ticket) {
        if (!rateLimits || isExempt(ticket.pathname)) return null;
        // A refused credential counts against the client's address.
        const viewer = await ticket.viewer().catch(() => null);
        const check = await rateLimits.check(ticket.pathname, viewer, ticket.clientAddress);
        ticket.budget = check?.state;
        return check?.refusal ?? null;
      },
      settle(ticket, { headers }) {
        if (ticket.budget) Object.assign(headers, lowerCased(budgetHeaders(ticket.budget)));
      },
    },
    'document-limits': {
      params: (query, variables) => paramsRefusal(query, variables, limits.maxTokens),
      operation: ({ args, bounded, subscription }) =>
        subscription ? (bounded ? null : costRefusal(args, limits.maxCost)) : executionRefusal(args, limits.maxCost, bounded),
    },
    'credential-requirement': {
      operation: ({ args, viewer }) => credentialRequirementRefusal(args.document, args.operationName, viewer),
    },
    // Leased from the governor as a stream opens (graphql/live.ts, rest/export.ts), by the request's owner.
    'stream-caps': {},
  };
  const rows = ADMISSION_CHECKS.map((check) => CHECKS[check]);
  const admitSteps = rows.flatMap((row) => (row.admit ? [row.admit] : []));
  const paramsSteps = rows.flatMap((row) => (row.params ? [row.params] : []));
  const operationSteps = rows.flatMap((row) => (row.operation ? [row.operation] : []));
  const settleSteps = rows.flatMap((row) => (row.settle ? [row.settle] : []));
  const tickets = new WeakMap<Request, Ticket>();

  return {
    limits,
    cors,
    arrive(incoming, surface, arrival = {}) {
      const deadline = arrival.deadline ?? startDeadline(limits.timeoutMs);
      const url = arrival.url ?? new URL(incoming.url);
      return new Ticket(incoming, surface, url, arrival.requestId ?? newRequestId(), deadline, lookUp, clientAddress);
    },
    async admit(ticket) {
      if (ticket.admitted) return null;
      ticket.admitted = true;
      for (const step of admitSteps) {
        const outcome = step(ticket);
        const refusal = outcome instanceof Promise ? await outcome : outcome;
        if (refusal) return refusal;
      }
      return null;
    },
    params(query, variables) {
      for (const step of paramsSteps) {
        const refusal = step(query, variables);
        if (refusal) return refusal;
      }
      return null;
    },
    operation(operation) {
      for (const step of operationSteps) {
        const refusal = step(operation);
        if (refusal) return refusal;
      }
      return null;
    },
    settle(ticket, answer) {
      const settling = { answer, status: answer.status, headers: {} };
      for (const step of settleSteps) step(ticket, settling);
      return { status: settling.status, headers: settling.headers };
    },
    // yoga types the masking function's result as Error; it returns GraphQL errors.
    mask: (error) => maskError(error, MASKED_MESSAGE) as GraphQLError,
    operationStarted: (document, operationName, surface) => metrics.operationStarted(document, operationName, surface),
    headers: securityHeadersOf,
    presented,
    clientAddress,
    credential: (authorization) => viewerOf(authorization, credentials),
    rateLimitAddress: async (pathname, address) =>
      rateLimits ? ((await rateLimits.check(pathname, null, address))?.refusal ?? null) : null,
    carry: (request, ticket) => void tickets.set(request, ticket),
    carried: (request) => tickets.get(request),
  };
}

/**
 * One request (or WebSocket operation) from its arrival to its answer, as `arrive` makes it: what the checks
 * found, for the later ones. What is derived from the request is computed when first asked.
 */
export class Ticket {
  readonly pathname: string;
  /** Path plus query string, in characters (the size check's). */
  readonly urlLength: number;
  /** performance.now() at its arrival. */
  readonly startedAt = performance.now();
  /** The credential presented, once the lookup has started. */
  authorization: string | null = null;
  /** The viewer once looked up, without waiting: undefined before that or when refused. */
  resolved: Viewer | null | undefined = undefined;
  /** The rate limit's budget, for the answer's headers. */
  budget: BudgetState | undefined = undefined;
  /** Whether `admit` has run its request checks (a ticket carried to yoga is not admitted twice). */
  admitted = false;
  private lookup: Promise<Viewer | null> | undefined = undefined;
  private address: string | undefined = undefined;
  private pattern: string | undefined = undefined;

  constructor(
    readonly incoming: Incoming,
    readonly surface: Surface,
    url: URL,
    readonly requestId: string,
    readonly deadline: Deadline,
    private readonly lookUp: (ticket: Ticket) => Promise<Viewer | null>,
    private readonly addressOf: (incoming: Incoming) => string,
  ) {
    this.pathname = url.pathname;
    this.urlLength = url.pathname.length + url.search.length;
  }

  /** The route pattern of the path (routeOf), for the log line and the metrics. */
  get route(): string {
    this.pattern ??= routeOf(this.pathname);
    return this.pattern;
  }

  /** The client's address (a trusted proxy's X-Forwarded-For hop under TRUST_PROXY), for the per-address budget. */
  get clientAddress(): string {
    this.address ??= this.addressOf(this.incoming);
    return this.address;
  }

  /**
   * The viewer: looked up by the first call, within the deadline, and shared (the rate limit, the context and the
   * log line). No credential is null; a refused one (401, a cross-site cookie's 403) rejects.
   */
  viewer(): Promise<Viewer | null> {
    this.lookup ??= this.lookUp(this);
    return this.lookup;
  }
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
