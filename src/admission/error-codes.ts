import { GraphQLError, Kind } from 'graphql';
import { ApiError, isErrorCode, type ErrorCode, clip } from '../errors.js';

/** Codes yoga gives the request errors it raises itself (bad JSON, no query, wrong method, parse, validation). */
const YOGA_REQUEST_CODES = new Set([
  'BAD_REQUEST',
  'GRAPHQL_PARSE_FAILED',
  'GRAPHQL_VALIDATION_FAILED',
  'REQUEST_ENTITY_TOO_LARGE',
  // The executor's "Unknown operation named …" / "Must provide operation name …".
  'OPERATION_RESOLUTION_FAILURE',
]);

const CODE_BY_STATUS: Record<number, ErrorCode> = {
  405: 'METHOD_NOT_ALLOWED',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
};

/**
 * Yoga answers an Accept header it cannot serve with an empty 406: the error that gives it a body and a code
 * (null for any other answer). yoga's own request errors get this API's codes from recodeResultErrors.
 */
export function notAcceptableRefusal(request: Request, response: Response): ApiError | null {
  if (response.status !== 406 || response.body !== null) return null;
  return new ApiError('NOT_ACCEPTABLE', `No response type matches Accept: ${clip(request.headers.get('accept') ?? '')}`);
}

/**
 * A result's errors with this API's codes, keeping the status yoga chose (GraphQL over HTTP fixes it), so every
 * error a GraphQL client sees carries a code from the table in src/errors.ts (yoga's results; the direct GraphQL path's).
 */
export function recodeResultErrors(result: unknown): void {
  const { errors, data } = result as { errors?: unknown; data?: unknown };
  if (!Array.isArray(errors)) return;
  // GraphQL over HTTP: present, non-null data is a (partial) success and MUST be 2xx. Its field errors keep
  // their codes; only their statuses, which yoga would otherwise raise the response to, are dropped. Null
  // data (the operation failed as a whole) keeps the error's status, as the same refusal gets on REST.
  const partial = data !== null && data !== undefined;
  for (const error of errors) {
    if (!(error instanceof GraphQLError)) continue;
    recode(error);
    if (partial) dropStatus(error);
    else if (isVariableError(error)) asRequestError(error);
  }
}

/**
 * A variable graphql-js could not coerce: a request error, as a document that fails validation is (GraphQL over
 * HTTP: 200 to application/json, 400 to application/graphql-response+json), not a 400 to every client.
 */
function isVariableError(error: GraphQLError): boolean {
  return error.extensions.code === 'INVALID_QUERY' && (error.nodes?.some((node) => node.kind === Kind.VARIABLE_DEFINITION) ?? false);
}

/** The statuses GraphQL over HTTP gives a request error: yoga reads `spec` as "200 to application/json". */
function asRequestError(error: GraphQLError): void {
  const extensions = error.extensions as Record<string, unknown>;
  extensions.http = { ...(extensions.http as object | undefined), status: 400, spec: true };
}

/**
 * An error as a graphql-ws client receives it: this API's code, and nothing of the HTTP answer it would have
 * been (`extensions.http` is yoga's instruction to itself).
 */
export function socketError(error: GraphQLError): GraphQLError {
  recode(error);
  const { http: _http, ...extensions } = error.extensions as Record<string, unknown>;
  return new GraphQLError(error.message, {
    nodes: error.nodes,
    source: error.source,
    positions: error.positions,
    path: error.path,
    originalError: error.originalError,
    extensions,
  });
}

function recode(error: GraphQLError): void {
  const extensions = error.extensions as Record<string, unknown>;
  const code = extensions.code;
  if (isErrorCode(code) || typeof code !== 'string' || !YOGA_REQUEST_CODES.has(code)) return;
  // No operation to run is a request error like a validation error, and answers with the same statuses.
  if (code === 'OPERATION_RESOLUTION_FAILURE') asRequestError(error);
  const http = extensions.http as { status?: unknown; spec?: boolean } | undefined;
  const status = http?.status;
  extensions.code = (typeof status === 'number' ? CODE_BY_STATUS[status] : undefined) ?? 'INVALID_QUERY';
  // A body that is not JSON is not a GraphQL request at all: 400 even to application/json clients, which
  // yoga would otherwise answer with 200 as it does for documents that fail to parse or validate.
  if (code === 'BAD_REQUEST' && http) http.spec = false;
  // Yoga attaches the JSON parser's own exception here; the message already says what is wrong.
  delete extensions.originalError;
}

function dropStatus(error: GraphQLError): void {
  const extensions = error.extensions as Record<string, unknown>;
  const http = extensions.http as { status?: unknown } | undefined;
  // A copy: headers (Retry-After, WWW-Authenticate) still apply; the error's own object is left as it was.
  if (http?.status !== undefined) extensions.http = { ...http, status: undefined };
}
