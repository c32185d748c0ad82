import { GraphQLError } from 'graphql';
import { ERROR_DOCS_PATH } from './paths.js';

/**
 * Every error code the API answers with, its usual HTTP status, every status it can come with, and what it means
 * (served at /docs/errors/<code>).
 */
export const ERROR_CODES = {
  UNAUTHORIZED: {
    status: 401,
    statuses: [401, 403],
    title: 'Unauthorized',
    description:
      'The credential is missing, malformed, unknown, expired or revoked (HTTP 401), or it is valid but lacks the permission the operation needs (HTTP 403). Send `Authorization: Token <personal access token>` or `Authorization: Bearer <JWT>`.',
  },
  NOT_FOUND: {
    status: 404,
    statuses: [404],
    title: 'Not found',
    description: 'No such resource for the calling tenant. Objects of other tenants are indistinguishable from missing ones.',
  },
  INVALID_QUERY: {
    status: 400,
    statuses: [400],
    title: 'Invalid query',
    description:
      'The request could not be understood: a malformed filter, unknown field or operator, a value of the wrong type, an out-of-range limit or offset, an invalid id, invalid JSON or an invalid GraphQL document. On GraphQL, a request that fails before execution (a document that does not parse or validate, a variable that cannot be coerced, no operation to run) is answered as GraphQL over HTTP says: 400 to `Accept: application/graphql-response+json`, 200 with `errors` and no `data` to `Accept: application/json`, and an `error` (or a result with `errors`, for a variable) on graphql-ws, always with this code.',
  },
  CONFLICT: {
    status: 409,
    statuses: [409],
    title: 'Conflict',
    description:
      'The request conflicts with the current state of the resource, for example demoting or deleting the last admin of a tenant (make another service user admin first), an illegal status transition of a connection or a sync run, a report on a run whose lease was lost, a second active run for a connection, or a sign-in whose password is that of the email in several organizations (error.details lists them: send one as `organization`). The message names the current state and what it allows; change that state first, then repeat the request.',
  },
  METHOD_NOT_ALLOWED: {
    status: 405,
    statuses: [405],
    title: 'Method not allowed',
    description: 'The path exists but does not accept this HTTP method. The `Allow` header lists the ones it does.',
  },
  NOT_ACCEPTABLE: {
    status: 406,
    statuses: [406],
    title: 'Not acceptable',
    description:
      'The `Accept` header admits none of the types GraphQL answers in: application/graphql-response+json or application/json (or text/html for GraphiQL in a browser). The error itself is sent as JSON.',
  },
  PAYLOAD_TOO_LARGE: {
    status: 413,
    statuses: [413, 414, 431],
    title: 'Payload too large',
    description: 'The request URL (HTTP 414), headers (HTTP 431) or body (HTTP 413) exceeds the documented limit.',
  },
  UNSUPPORTED_MEDIA_TYPE: {
    status: 415,
    statuses: [415],
    title: 'Unsupported media type',
    description: 'The request body is not in a content type the endpoint accepts (application/json for GraphQL POST).',
  },
  IDEMPOTENCY_KEY_REUSED: {
    status: 422,
    statuses: [422],
    title: 'Idempotency key reused',
    description:
      'The `Idempotency-Key` was already used within the last 24 hours for a different request (another body, method or path). Send a new key for a new request.',
  },
  EVENTS_EXPIRED: {
    status: 410,
    statuses: [410],
    title: 'Events expired',
    description:
      'A stream was asked to resume (`Last-Event-ID`) after an event older than the event retention window (`EVENT_RETENTION_HOURS`): some changes since then can no longer be replayed. Read the current state again (`GET` without `Accept: text/event-stream`), then open the stream without `Last-Event-ID`. Sent as an `event: error` message on the stream.',
  },
  RATE_LIMITED: {
    status: 429,
    statuses: [429],
    title: 'Rate limited',
    description:
      'Too many requests for this credential, or too many open streams (subscriptions and event streams) for it. Wait the number of seconds in `Retry-After`; `RateLimit-*` headers describe the budget.',
  },
  INTERNAL: {
    status: 500,
    statuses: [500],
    title: 'Internal error',
    description: 'An unexpected error. It carries no details; the request id identifies it in the server log.',
  },
  UNAVAILABLE: {
    status: 503,
    statuses: [503, 408],
    title: 'Service unavailable',
    description:
      'The database is unreachable, the request did not finish within the time limit (15 s by default), or the server holds as many open streams as it serves. Retry later; `/readyz` reports when the service is ready again. With HTTP 408: the client sent its request too slowly (headers within 10 s, the whole request within 30 s); send it again.',
  },
} as const satisfies Record<string, { status: number; statuses: readonly number[]; title: string; description: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;

function docsUrl(code: ErrorCode, origin: string): string {
  return `${origin}${ERROR_DOCS_PATH}/${code}`;
}

let lastRequestNumber = 0;

/** `req_<digits>`: milliseconds since epoch followed by a per-process counter, unique and sortable. */
export function newRequestId(): string {
  lastRequestNumber = (lastRequestNumber + 1) % 1000;
  return `req_${Date.now()}${String(lastRequestNumber).padStart(3, '0')}`;
}

/**
 * The one error type resolvers and plugins throw for expected failures. It is a GraphQLError, so yoga's
 * masking lets it through; `extensions.code` and `extensions.http.status` drive both surfaces.
 */
/** Seconds a 503 asks the client to wait (`Retry-After`) when its cause names no other. */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 5;

export class ApiError extends GraphQLError {
  constructor(
    readonly code: ErrorCode,
    message: string,
    options: { status?: number; headers?: Record<string, string>; details?: unknown } = {},
  ) {
    const status = options.status ?? ERROR_CODES[code].status;
    // Every 503 tells the client when to come back, so clients and balancers retry it alike.
    const headers =
      status === 503 && !Object.keys(options.headers ?? {}).some((name) => name.toLowerCase() === 'retry-after')
        ? { ...options.headers, 'Retry-After': String(UNAVAILABLE_RETRY_AFTER_SECONDS) }
        : options.headers;
    super(message, {
      extensions: {
        code,
        http: { status, headers },
        ...(options.details === undefined ? {} : { details: options.details }),
      },
    });
  }
}

/** The 401 for a request that sends no credential, with the challenges a 401 carries (RFC 9110 §15.5.2). */
export function credentialRequiredError(): ApiError {
  return new ApiError('UNAUTHORIZED', 'A valid credential is required: Authorization: Token <token> or Bearer <JWT>', {
    headers: { 'WWW-Authenticate': 'Bearer, Token' },
  });
}

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.hasOwn(ERROR_CODES, value);
}

/** The spec's error body. */
interface ErrorBody {
  msg: string;
  error: { code: ErrorCode; docs: string; req_id: string };
}

export function errorBody(code: ErrorCode, msg: string, requestId: string, origin: string): ErrorBody {
  return { msg, error: { code, docs: docsUrl(code, origin), req_id: requestId } };
}

/** The code a status is answered with (each status has one; see `statuses`). */
export function errorCodeOfStatus(status: number): ErrorCode | undefined {
  return (Object.keys(ERROR_CODES) as ErrorCode[]).find((code) => (ERROR_CODES[code].statuses as readonly number[]).includes(status));
}

/** What a local server at its default address answers for a code and status, for the documents' examples. */
export const EXAMPLE_ORIGIN = 'http://127.0.0.1:4000';

const EXAMPLE_MESSAGES: Record<number, string> = {
  400: "Invalid query: unknown field 'colour'; filterable fields: id, name, slug",
  401: 'Missing credential: send Authorization: Token <personal access token> or Authorization: Bearer <JWT>',
  403: 'The credential lacks the permission catalog:read this operation needs (its role is engine; roles with it: admin, reader)',
  404: 'connection not found',
  405: 'PUT is not allowed on /api/v1/integrations/connected; allowed: GET, HEAD, POST',
  406: 'Accept admits none of application/graphql-response+json, application/json',
  408: 'The request was not received in time; send it again',
  409: 'the connection is pending; it becomes active after its first successful run',
  410: 'events before 1042 are no longer kept; read the current state, then open the stream without Last-Event-ID',
  413: 'The request body exceeds the limit of 1048576 bytes',
  414: 'The URL is 9000 characters long; the limit is 8192',
  415: 'Send the body as application/json, not text/plain',
  422: 'This Idempotency-Key was used within 24 hours for another request; send a new key',
  429: 'Too many requests; retry in 12 s',
  431: 'The request headers exceed the limit of 16 KB',
  500: 'Internal error',
  503: 'The database is unavailable; retry later',
};

/** An example error body of a code at one of its statuses, as the server writes it. */
export function exampleErrorBody(
  code: ErrorCode,
  status: number,
): ErrorBody & { error: { details?: { parameter: string; message: string }[] } } {
  const body = errorBody(code, EXAMPLE_MESSAGES[status] ?? ERROR_CODES[code].title, 'req_1764236400000001', EXAMPLE_ORIGIN);
  if (code !== 'INVALID_QUERY') return body;
  return {
    ...body,
    error: { ...body.error, details: [{ parameter: 'colour', message: "unknown field 'colour'; filterable fields: id, name, slug" }] },
  };
}

/** Echoed input, clipped so that a hostile value cannot blow up an error message. */
export function clip(text: string, max = 120): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}
