import type { IncomingMessage, ServerResponse } from 'node:http';
import { normalizedExecutor } from '@graphql-tools/executor';
import type { ExecutionArgs, ExecutionResult, GraphQLError, GraphQLSchema } from 'graphql';
import type { Viewer } from '../auth/viewer.js';
import { idempotencyOf, type Context } from '../context.js';
import type { CompiledExecution } from '../graphql/compiled-execution.js';
import { withStatementSignal } from '../db/cancellation.js';
import { newRequestId } from '../errors.js';
import { jsonBytes } from '../json-bytes.js';
import type { Logger } from '../logger.js';
import { lowerCased, type Admission } from './admission.js';
import { INTEGRATIONS_BASE, withoutTrailingSlash } from '../paths.js';
import { executeWithinDeadline, type Deadline } from '../plugins/use-deadline.js';
import type { OperationSurface } from '../plugins/use-metrics.js';
import type { BudgetState } from '../plugins/use-rate-limit.js';
import { withIdempotency } from '../plugins/use-rest.js';
import type { CompiledRoute } from '../rest/compile-routes.js';
import { errorResponse, graphqlErrorResponse, type ResponseTarget, type RestResponse } from '../rest/envelope.js';
import { acceptsEventStream } from '../rest/event-stream.js';
import { exportFormatOf } from '../rest/export.js';
import {
  matchStreamPath,
  pathCandidates,
  runRoute,
  unexpectedErrorResponse,
  type OperationRunner,
  type RouteInput,
} from '../rest/handler.js';

// The REST requests served directly: a documented path is answered on node:http (or from `gateway.fetch`) without
// yoga's request pipeline, its fetch-API request and response objects and envelop's per-request hooks, which cost
// more CPU than a read itself (docs/explanation/performance.md). The route still runs its fixed, pre-validated GraphQL document
// against the same schema, through rest/handler.ts like every route (its body read and checked there, its
// Idempotency-Key kept by use-rest's withIdempotency). Every check is the admission spine's (./admission.ts), called
// in the order of ADMISSION_CHECKS: the same functions yoga's plugins call, so none is written here. A request this
// path does not take (HEAD or a method no route has, an event stream, a cross-origin request under CORS, an
// oversized URL or declared body, a GET with a body, a path no route of its method has) goes through yoga's
// pipeline as before; test/direct-rest.test.ts checks that both answer alike.

/** What the direct paths read of a request, from node:http or from a fetch Request. */
export interface Incoming {
  method: string;
  /** The request's URL as yoga would build it (its origin names this server in the error bodies' docs links). */
  url: string;
  header(name: string): string | null;
  /** The request body, when it has one. */
  body(): AsyncIterable<Uint8Array> | null;
  /** The client's address, for the rate limit of a request without a valid credential. */
  remoteAddress: string;
  /** Whether the client left before its request was whole (a body cut off): there is no one to answer. */
  gone(): boolean;
}

/**
 * The status a request's log line and metrics get when its client left before the request was whole (nginx's
 * "client closed request"): nothing is sent, and it is no fault of the server (no 5xx, no error line).
 */
export const CLIENT_CLOSED_REQUEST = 499;

/** The answer, ready to send. */
export interface Outgoing {
  status: number;
  headers: Record<string, string>;
  body: Uint8Array<ArrayBuffer> | null;
}

/** What both direct paths (REST here, GraphQL in direct-graphql.ts) share with yoga's pipeline. */
export interface DirectPathOptions {
  schema: GraphQLSchema;
  logger: Logger;
  /** The admission spine's functions (./admission.ts): every check these paths make is one of them. */
  admission: Admission;
  maxBodyBytes: number;
  /** The compiled queries (the REST documents are compiled at their first run). */
  compiledExecution: CompiledExecution;
  /** The context's fields that do not depend on the request. */
  contextBase: Pick<Context, 'db' | 'webhooks' | 'applicationCategory' | 'tokenCaps' | 'live'>;
}

export interface DirectRestOptions extends DirectPathOptions {
  compiled: readonly CompiledRoute[];
  maxUrlLength: number;
}

/** The REST requests served without yoga: `node` and `fetch` answer a request they take, and return false / null otherwise. */
export interface DirectRest {
  node(req: IncomingMessage, res: ServerResponse): boolean;
  fetch(request: Request, remoteAddress?: string): Promise<Response> | null;
}

const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

export function createDirectRest(options: DirectRestOptions): DirectRest {
  const { compiled, logger, admission } = options;
  const cors = admission.cors;
  // Every method a route has, but HEAD (GET without the body, yoga's): PUT, OPTIONS and the like are yoga's to refuse.
  const routesByMethod = new Map<string, CompiledRoute[]>();
  for (const route of compiled) routesByMethod.set(route.spec.method, [...(routesByMethod.get(route.spec.method) ?? []), route]);

  /** The route this path answers the request with, or null for yoga's pipeline. */
  function take(incoming: Incoming): { url: URL; pathname: string; route: CompiledRoute; pathValues: string[] } | null {
    const routesOfMethod = routesByMethod.get(incoming.method);
    if (!routesOfMethod) return null;
    // A body is read by the routes that take one; a GET with a body, or a body declared over the limit, is yoga's
    // to refuse (use-limits).
    const length = incoming.header('content-length');
    const hasBody = (length !== null && length !== '0') || incoming.header('transfer-encoding') !== null;
    if (hasBody && (incoming.method === 'GET' || Number(length ?? 0) > options.maxBodyBytes || !/^\d*$/.test(length ?? ''))) return null;
    if (cors && incoming.header('origin') !== null) return null;
    let url: URL;
    try {
      url = new URL(incoming.url);
    } catch {
      return null;
    }
    if (url.pathname.length + url.search.length > options.maxUrlLength) return null;
    const pathname = withoutTrailingSlash(url.pathname);
    if (!pathname.startsWith(`${INTEGRATIONS_BASE}/`) || matchStreamPath(compiled, pathname)) return null;
    for (const { route, pathValues } of pathCandidates(compiled, pathname)) {
      if (route.spec.method !== incoming.method) continue;
      if (route.spec.stream && acceptsEventStream(incoming.header('accept'))) return null;
      // An export (rest/export.ts) streams: yoga's pipeline serves it.
      if (route.spec.response.kind === 'list' && exportFormatOf(incoming.header('accept'))) return null;
      return { url, pathname, route, pathValues };
    }
    return null;
  }

  // The checks of the spine in its order (ADMISSION_CHECKS); host and size were checked before (node:http, take()).
  async function answer(incoming: Incoming, taken: NonNullable<ReturnType<typeof take>>): Promise<Outgoing> {
    const startedAt = performance.now();
    const deadline = admission.deadline();
    const requestId = newRequestId();
    const target: ResponseTarget = { requestId, origin: taken.url.origin };
    let viewer: Viewer | null | undefined;
    let budget: BudgetState | undefined;
    let response: RestResponse;
    try {
      response = await withStatementSignal(deadline, async () => {
        let authorization: string | null = null;
        // One lookup for the rate limit and the context, within the request's time (as RequestViewers does); a
        // cross-site session cookie throws (403) in it, as a refused credential does.
        const lookup = (async () => {
          authorization = admission.presented(incoming);
          viewer = await admission.credential(authorization, deadline);
          return viewer;
        })();
        lookup.catch(() => undefined);
        const clientAddress = admission.clientAddress(incoming, incoming.remoteAddress);
        const check = await admission.rateLimit(taken.pathname, await lookup.catch(() => null), clientAddress);
        budget = check?.state;
        if (check?.refusal) return graphqlErrorResponse(check.refusal, target);
        const runner: OperationRunner<Context> = {
          context: async () => {
            try {
              return {
                ...options.contextBase,
                viewer: await lookup,
                requestId,
                clientAddress,
                idempotency: idempotencyOf(incoming.header('idempotency-key')),
                authorization,
              };
            } catch (error) {
              throw admission.mask(error);
            }
          },
          // document-limits: the route's document is bounded by construction; its variables' text is checked.
          execute: (args) =>
            executeDirectly(options, deadline, args, 'rest', admission.operationRefusal({ schema: options.schema, ...args }, true)),
        };
        const input: RouteInput = { header: incoming.header, body: incoming.body };
        const { response, context } = await runRoute({ ...taken, input, target, log: logger }, runner, options.maxBodyBytes);
        return context ? await withIdempotency(taken.route, context, response, target) : response;
      });
    } catch (error) {
      response = incoming.gone()
        ? errorResponse('INTERNAL', 'The client closed the request', target, { status: CLIENT_CLOSED_REQUEST })
        : unexpectedErrorResponse(logger, error, target);
    } finally {
      deadline.end();
    }
    // An answer ready only past the time limit is replaced by the 503, keeping its other headers (use-deadline).
    const late = response.status === 503 ? null : admission.lateRefusal(deadline);
    if (late) {
      const refused = graphqlErrorResponse(late, target);
      response = { ...refused, headers: { ...response.headers, ...refused.headers } };
    }
    const body = response.status === 204 ? null : jsonBytes(response.body);
    // Lower-case names, as yoga's Headers send them; later ones win, as the plugins' onResponse hooks set them.
    const headers: Record<string, string> = {
      ...(body === null ? {} : { 'content-type': JSON_CONTENT_TYPE, 'content-length': String(body.byteLength) }),
      ...lowerCased(response.headers),
      'x-request-id': requestId,
      ...admission.headers(body === null ? '' : JSON_CONTENT_TYPE, budget),
    };
    admission.done({ requestId, method: incoming.method, pathname: taken.url.pathname, status: response.status, startedAt, viewer });
    return { status: response.status, headers, body };
  }

  return {
    node(req, res) {
      const incoming = incomingOfNode(req);
      const taken = take(incoming);
      if (!taken) return false;
      sendOnNode(res, answer(incoming, taken), logger, 'direct REST answer failed');
      return true;
    },
    fetch(request, remoteAddress = 'unknown') {
      const incoming = incomingOfFetch(request, remoteAddress);
      const taken = take(incoming);
      if (!taken) return null;
      return answer(incoming, taken).then(responseOf);
    },
  };
}

/** A node:http request as the direct paths read it. */
export function incomingOfNode(req: IncomingMessage): Incoming {
  return {
    method: req.method ?? 'GET',
    url: `${(req.socket as { encrypted?: boolean }).encrypted ? 'https' : 'http'}://${hostOf(req)}${req.url ?? '/'}`,
    header: (name) => headerValue(req.headers[name]),
    body: () => req,
    remoteAddress: req.socket.remoteAddress ?? 'unknown',
    gone: () => req.destroyed && !req.complete,
  };
}

/** A fetch Request as the direct paths read it. */
export function incomingOfFetch(request: Request, remoteAddress: string): Incoming {
  return {
    method: request.method,
    url: request.url,
    header: (name) => request.headers.get(name),
    body: () => request.body as AsyncIterable<Uint8Array> | null,
    remoteAddress,
    gone: () => request.signal.aborted,
  };
}

/**
 * Writes an answer on node:http once it is ready; an answer that failed (a bug) is a bare 500, logged. One that
 * failed because the client left (its body cut off: node:http's "aborted") has no one to answer and is no fault.
 */
export function sendOnNode(res: ServerResponse, answer: Promise<Outgoing>, logger: Logger, failure: string): void {
  answer.then(
    ({ status, headers, body }) => {
      res.writeHead(status, headers);
      res.end(body);
    },
    (error: unknown) => {
      if (res.destroyed || !res.socket || res.socket.destroyed) {
        res.destroy();
        return;
      }
      logger.error({ err: error }, failure);
      if (!res.headersSent) res.writeHead(500);
      res.end();
    },
  );
}

/**
 * Runs an operation as the pipeline would around its executor: compiled when it is (the server's own REST
 * documents at their first run), within the deadline, counted in the metrics under `surface`, its errors masked.
 * `refusal`: a limit refused it already; that is its result.
 */
export async function executeDirectly(
  options: DirectPathOptions,
  deadline: Deadline,
  args: Omit<ExecutionArgs, 'schema'>,
  surface: OperationSurface,
  refusal: GraphQLError | null = null,
): Promise<ExecutionResult> {
  const { admission } = options;
  const done = admission.operationStarted(args.document, args.operationName, surface);
  let result: ExecutionResult;
  if (refusal) {
    result = { errors: [refusal] };
  } else {
    const compiled = options.compiledExecution.executorFor(args.document, args.operationName, surface === 'rest');
    const executor = (compiled ?? normalizedExecutor) as typeof normalizedExecutor;
    result = (await executeWithinDeadline(
      deadline,
      executor,
      { schema: options.schema, ...args },
      { usesSignal: compiled === null },
    )) as ExecutionResult;
  }
  const masked = result.errors ? { ...result, errors: result.errors.map(admission.mask) } : result;
  done(masked);
  return masked;
}

/** An answer as a fetch Response. */
export function responseOf({ status, headers, body }: Outgoing): Response {
  return new Response(body, { status, headers });
}

/** The host part of the URL as @whatwg-node/server builds it for yoga: the Host header, else the local address and port. */
function hostOf(req: IncomingMessage): string {
  const host = req.headers.host;
  if (host) return host;
  const local = req.socket.localAddress;
  return local && !local.includes('::') && !local.includes('ffff') ? `${local}:${req.socket.localPort ?? 80}` : 'localhost';
}

function headerValue(value: string | string[] | undefined): string | null {
  if (value === undefined) return null;
  return Array.isArray(value) ? value.join(', ') : value;
}
