import { ERROR_CODES, type ApiError } from '../errors.js';
import { GRAPHQL_ENDPOINT } from '../paths.js';
import { jsonResponse } from './json-response.js';
import { errorResponse } from '../rest/envelope.js';
import { requestIdOf } from '../admission/request-id.js';

const GRAPHQL_RESPONSE_TYPE = 'application/graphql-response+json';

/**
 * The answer of a plugin that refuses a request before GraphQL runs (limits, rate limits): on the GraphQL
 * endpoint a GraphQL-over-HTTP error response, elsewhere the spec's error body. Status and headers come
 * from the error, so a caller sees the same code, status and headers as for the same error raised later.
 */
export function earlyErrorResponse(request: Request, error: ApiError, fetchAPI: { Response: typeof Response }): Response {
  const url = new URL(request.url);
  const http = (error.extensions.http ?? {}) as { status?: number; headers?: Record<string, string> };
  const headers = { ...http.headers };
  // HEAD gets the status and headers a GET would, without the body.
  const withoutBody = request.method === 'HEAD';
  if (url.pathname === GRAPHQL_ENDPOINT) {
    // graphql-response+json when the client accepts it (GraphQL over HTTP); plain JSON for older clients.
    const contentType = (request.headers.get('accept') ?? '').includes(GRAPHQL_RESPONSE_TYPE) ? GRAPHQL_RESPONSE_TYPE : 'application/json';
    const body = { errors: [{ message: error.message, extensions: { code: error.code } }] };
    return jsonResponse(fetchAPI, body, {
      status: http.status ?? ERROR_CODES[error.code].status,
      headers,
      contentType: `${contentType}; charset=utf-8`,
      withoutBody,
    });
  }
  const rest = errorResponse(
    error.code,
    error.message,
    { requestId: requestIdOf(request), origin: url.origin },
    { status: http.status, headers, details: error.extensions.details },
  );
  return jsonResponse(fetchAPI, rest.body, { status: rest.status, headers: rest.headers, withoutBody });
}

/** `replacement` for `original`, keeping the headers earlier plugins set on it (request id, CORS, security). */
export function replaceResponse(original: Response, replacement: Response): Response {
  original.headers.forEach((value, name) => {
    if (!replacement.headers.has(name) && name !== 'content-length') replacement.headers.set(name, value);
  });
  return replacement;
}
