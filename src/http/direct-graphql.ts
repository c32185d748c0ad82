import type { IncomingMessage, ServerResponse } from 'node:http';
import { getOperationAST, type ExecutionResult } from 'graphql';
import { processRegularResult } from 'graphql-yoga';
import type { Viewer } from '../auth/viewer.js';
import { idempotencyOf, type Context } from '../context.js';
import { withStatementSignal } from '../db/cancellation.js';
import { statusOf, type Ticket } from './admission.js';
import { executeDirectly, type DirectPathOptions } from './direct-execution.js';
import {
  CLIENT_CLOSED_REQUEST,
  incomingOfFetch,
  incomingOfNode,
  responseOf,
  sendOnNode,
  type Incoming,
  type Outgoing,
} from './incoming-outgoing.js';
import type { ApiError } from '../errors.js';
import { jsonBytes } from '../json-bytes.js';
import { introspects } from '../graphql/compiled-execution.js';
import { GRAPHQL_ENDPOINT } from '../paths.js';
import { earlyErrorResponse } from '../plugins/error-response.js';
import { recodeResultErrors } from '../admission/error-codes.js';
import type { ValidatedDocuments } from '../plugins/use-validated-documents.js';
import { markReadOnly } from '../db/read-routing.js';

// GraphQL queries served directly: a POST to /graphql whose document yoga's pipeline has already parsed and
// validated (plugins/use-validated-documents.ts) is answered on node:http, or from `gateway.fetch`, without
// yoga's request pipeline: its fetch-API request and response objects, envelop's per-request hooks and yoga's
// request parsing and content negotiation cost ~0.3 ms of CPU a request, as much as a small query itself
// (docs/explanation/performance.md). As on the direct REST path (src/http/direct-rest.ts), every check is the admission spine's
// (./admission.ts): `admit`, `operation` and `settle`, the calls yoga's pipeline makes (the time limit, the
// credential and its requirement, the rate limit, the variables' and the cost limits, error masking, the log
// line, metrics and the security headers); the answer is yoga's (processRegularResult when it holds errors),
// its error codes admission/error-codes.ts'.
//
// The path takes only what it can answer exactly as yoga would, and hands everything else to yoga: another
// method, path, media type or Accept, a cross-origin request under CORS, a body without Content-Length or over
// the limit, a body that is not a plain {query, variables?, operationName?} object, a document yoga has not
// validated, a mutation, subscription or schema query, variables or a cost a limit refuses, a request without a
// credential that asks for data, or a credential that is refused. A body it has read goes to yoga as it came,
// with its ticket: yoga keeps its deadline and, once the rate limit has counted it, does not count it again.
// test/direct-graphql.test.ts compares the answers of both paths.

export interface DirectGraphQLOptions extends DirectPathOptions {
  /** The documents yoga found valid, by text. */
  validated: ValidatedDocuments;
  /** Yoga, for a request whose body this path read but does not answer. */
  yoga: (request: Request, serverContext: Record<string, unknown>) => Promise<Response>;
}

export interface DirectGraphQL {
  node(req: IncomingMessage, res: ServerResponse): boolean;
  fetch(request: Request, remoteAddress?: string): Promise<Response> | null;
  /** Requests answered here, and requests read here but answered by yoga. */
  readonly counts: { answered: number; handedToYoga: number };
}

/** The media types of an answer, as yoga picks them from Accept (the first of these it names; `*\/*` is JSON). */
const JSON_TYPE = 'application/json';
const GRAPHQL_RESPONSE_TYPE = 'application/graphql-response+json';
const BODY_KEYS = new Set(['query', 'variables', 'operationName']);

/** A request this path reads: its URL and the media type of its answer. */
interface Taken {
  url: URL;
  accepted: string;
  length: number;
}

/** A request read, to be answered by yoga after all, with its ticket (its deadline, and its count if admitted). */
interface Fallback {
  fallback: Uint8Array<ArrayBuffer>;
  ticket: Ticket;
}

export function createDirectGraphQL(options: DirectGraphQLOptions): DirectGraphQL {
  const { logger, admission } = options;
  const counts = { answered: 0, handedToYoga: 0 };

  function take(incoming: Incoming): Taken | null {
    if (incoming.method !== 'POST') return null;
    if (admission.cors && incoming.header('origin') !== null) return null;
    const contentType = incoming.header('content-type')?.toLowerCase().replaceAll(' ', '');
    if (contentType !== JSON_TYPE && contentType !== `${JSON_TYPE};charset=utf-8`) return null;
    const length = incoming.header('content-length');
    if (length === null || !/^\d+$/.test(length) || Number(length) > options.maxBodyBytes || incoming.header('transfer-encoding') !== null)
      return null;
    const accepted = acceptedType(incoming.header('accept'));
    if (accepted === null) return null;
    let url: URL;
    try {
      url = new URL(incoming.url);
    } catch {
      return null;
    }
    if (url.pathname !== GRAPHQL_ENDPOINT || url.search !== '') return null;
    return { url, accepted, length: Number(length) };
  }

  // admit and settle run the spine's checks in their order (host and size hold already: node:http, take()).
  async function answer(incoming: Incoming, taken: Taken): Promise<Outgoing | Fallback> {
    // From arrival: reading the body is part of the request's time. A request left to yoga keeps its ticket.
    const ticket = admission.arrive(incoming, 'graphql-http', { url: taken.url });
    const fallback = (bytes: Uint8Array<ArrayBuffer>): Fallback => {
      counts.handedToYoga += 1;
      return { fallback: bytes, ticket };
    };
    /** The answer's common headers, its log line and its metrics; a late one is the 503 (admission/deadline.ts). */
    const finish = async (outgoing: Outgoing, sent = true): Promise<Outgoing> => {
      let late: ApiError | undefined;
      const settled = admission.settle(ticket, {
        status: outgoing.status,
        contentType: outgoing.headers['content-type'] ?? '',
        late: sent
          ? (error) => {
              late = error;
              return { status: statusOf(error), contentType: JSON_TYPE };
            }
          : undefined,
      });
      const answered = late ? await early(taken, late) : outgoing;
      answered.headers = { ...answered.headers, ...settled.headers };
      counts.answered += 1;
      return answered;
    };
    try {
      let bytes: Uint8Array<ArrayBuffer>;
      try {
        bytes = await readBody(incoming.body(), taken.length);
      } catch (error) {
        if (!incoming.gone()) throw error;
        // Its log line and metrics say so; nothing can be sent.
        return finish({ status: CLIENT_CLOSED_REQUEST, headers: {}, body: null }, false);
      }
      const request = parseRequest(bytes);
      const document = request && options.validated.get(request.query);
      if (!request || !document) return fallback(bytes);
      const { operationName, variables } = request;
      const operation = getOperationAST(document, operationName);
      if (operation?.operation !== 'query' || introspects(document)) return fallback(bytes);
      markReadOnly();
      // A refusal of the request's checks (the rate limit) is answered here, as yoga's pipeline would.
      const refusal = await admission.admit(ticket);
      if (refusal) return finish(await early(taken, refusal));
      let viewer: Viewer | null;
      try {
        viewer = await ticket.viewer();
      } catch (error) {
        // A refused credential is yoga's to answer (counted once: the ticket is admitted); past the time limit, the 503.
        if (!ticket.deadline.aborted) return fallback(bytes);
        return finish(await early(taken, error as ApiError));
      }
      // The operation's checks: a refusal is yoga's to answer. The document's tokens were counted when yoga
      // validated it, so only its variables are.
      const args = { schema: options.schema, document, operationName, variableValues: variables, contextValue: {} };
      if (admission.params(null, variables) || admission.operation({ args, viewer, bounded: false })) return fallback(bytes);
      const { requestId, clientAddress, authorization } = ticket;
      const idempotency = idempotencyOf(incoming.header('idempotency-key'));
      const context: Context = { ...options.contextBase, viewer, requestId, clientAddress, idempotency, authorization };
      const execution = { document, operationName, variableValues: variables, contextValue: context };
      const result = await withStatementSignal(ticket.deadline, () => executeDirectly(options, ticket.deadline, execution, 'graphql'));
      recodeResultErrors(result);
      return finish(await answerOf(result, taken.accepted));
    } catch (error) {
      ticket.deadline.end();
      throw error;
    }
  }

  /** A refusal before or instead of execution (rate limit, deadline), as yoga answers it (earlyErrorResponse). */
  async function early(taken: Taken, error: ApiError): Promise<Outgoing> {
    const request = new Request(taken.url, { method: 'POST', headers: { accept: taken.accepted } });
    return outgoingOf(earlyErrorResponse(request, error, globalThis));
  }

  /** The request as it came, with the body already read, for yoga: its ticket goes with it. */
  function handOver(headers: Iterable<[string, string]>, { fallback, ticket }: Fallback): Request {
    const request = requestOf(ticket.incoming.url, headers, fallback);
    admission.carry(request, ticket);
    return request;
  }

  return {
    counts,
    node(req, res) {
      const incoming = incomingOfNode(req);
      const taken = take(incoming);
      if (!taken) return false;
      const answered = answer(incoming, taken).then(async (outcome) =>
        'fallback' in outcome ? outgoingOf(await options.yoga(handOver(nodeHeaders(req), outcome), { req, res })) : outcome,
      );
      sendOnNode(res, answered, logger, 'direct GraphQL answer failed');
      return true;
    },
    fetch(request, remoteAddress = 'unknown') {
      const incoming = incomingOfFetch(request, remoteAddress);
      const taken = take(incoming);
      if (!taken) return null;
      return answer(incoming, taken).then((outcome) =>
        'fallback' in outcome ? options.yoga(handOver(request.headers, outcome), {}) : responseOf(outcome),
      );
    },
  };
}

/** A result as yoga answers it: 200 with the encoded result, or yoga's own answer for a result with errors. */
async function answerOf(result: ExecutionResult, accepted: string): Promise<Outgoing> {
  if (!result.errors?.length) {
    const body = jsonBytes(result);
    return { status: 200, headers: { 'content-type': `${accepted}; charset=utf-8`, 'content-length': String(body.byteLength) }, body };
  }
  Object.defineProperty(result, 'stringify', { value: jsonBytes, configurable: true, writable: true });
  return outgoingOf(
    processRegularResult(result, globalThis as unknown as Parameters<typeof processRegularResult>[1], accepted) as Response,
  );
}

async function outgoingOf(response: Response): Promise<Outgoing> {
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    headers[name] = value;
  });
  const body = new Uint8Array(await response.arrayBuffer());
  headers['content-length'] = String(body.byteLength);
  return { status: response.status, headers, body };
}

/**
 * The answer's media type for an Accept header that names only JSON types (the first it names, `*\/*` and none
 * meaning application/json, as yoga picks), or null for any other: yoga negotiates those.
 */
function acceptedType(accept: string | null): string | null {
  if (accept === null) return JSON_TYPE;
  let first: string | null = null;
  for (const part of accept.split(',')) {
    const [type, ...parameters] = part.split(';').map((piece) => piece.trim().toLowerCase());
    if (parameters.some((parameter) => parameter !== 'charset=utf-8')) return null;
    const named = type === '*/*' || type === JSON_TYPE ? JSON_TYPE : type === GRAPHQL_RESPONSE_TYPE ? GRAPHQL_RESPONSE_TYPE : null;
    if (named === null) return null;
    first ??= named;
  }
  return first;
}

/** The body's GraphQL parameters when it is exactly a plain {query, variables?, operationName?} object. */
function parseRequest(
  bytes: Uint8Array,
): { query: string; variables: Record<string, unknown> | undefined; operationName: string | undefined } | null {
  let body: unknown;
  try {
    body = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch {
    return null;
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return null;
  for (const key of Object.keys(body)) if (!BODY_KEYS.has(key)) return null;
  const { query, variables, operationName } = body as Record<string, unknown>;
  if (typeof query !== 'string') return null;
  if (variables !== undefined && variables !== null && (typeof variables !== 'object' || Array.isArray(variables))) return null;
  if (operationName !== undefined && operationName !== null && (typeof operationName !== 'string' || operationName === '')) return null;
  return { query, variables: (variables ?? undefined) as Record<string, unknown> | undefined, operationName: operationName ?? undefined };
}

async function readBody(body: AsyncIterable<Uint8Array> | null, length: number): Promise<Uint8Array<ArrayBuffer>> {
  const bytes = new Uint8Array(length);
  let at = 0;
  if (body) {
    for await (const chunk of body) {
      bytes.set(chunk.subarray(0, length - at), at);
      at += Math.min(chunk.byteLength, length - at);
    }
  }
  return at === length ? bytes : bytes.slice(0, at);
}

/** Headers of the connection or of the body as it was framed, which the request rebuilt for yoga does not carry. */
const FRAMING_HEADERS = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'expect', 'upgrade']);

/** The request as it came, with the body already read: for yoga. */
function requestOf(url: string, headers: Iterable<[string, string]>, body: Uint8Array<ArrayBuffer>): Request {
  const kept = new Headers();
  for (const [name, value] of headers) if (!FRAMING_HEADERS.has(name.toLowerCase())) kept.append(name, value);
  return new Request(url, { method: 'POST', headers: kept, body });
}

function nodeHeaders(req: IncomingMessage): [string, string][] {
  return Object.entries(req.headers).flatMap(([name, value]) =>
    value === undefined ? [] : [[name, Array.isArray(value) ? value.join(', ') : value] as [string, string]],
  );
}
