import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Viewer } from '../auth/viewer.js';
import { idempotencyOf, type Context } from '../context.js';
import { withStatementSignal } from '../db/cancellation.js';
import { newRequestId } from '../errors.js';
import { jsonBytes } from '../json-bytes.js';
import { lowerCased } from './admission.js';
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
import { INTEGRATIONS_BASE, withoutTrailingSlash } from '../paths.js';
import type { BudgetState } from '../plugins/use-rate-limit.js';
import { JSON_CONTENT_TYPE } from '../plugins/json-response.js';
import { withIdempotency } from '../plugins/use-rest.js';
import type { CompiledRoute } from '../rest/compile-routes.js';
import type { RowWriterFallbacks } from '../rest/row-writer.js';
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

export interface DirectRestOptions extends DirectPathOptions {
  compiled: readonly CompiledRoute[];
  /** Where a list page its row writer left to execution is counted (rest/row-writer.ts createRowWriterFallbacks). */
  rowWriterFallbacks: RowWriterFallbacks;
  maxUrlLength: number;
}

/** The REST requests served without yoga: `node` and `fetch` answer a request they take, and return false / null otherwise. */
export interface DirectRest {
  node(req: IncomingMessage, res: ServerResponse): boolean;
  fetch(request: Request, remoteAddress?: string): Promise<Response> | null;
}

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
        const clientAddress = admission.clientAddress(incoming);
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
        const { response, context } = await runRoute(
          { ...taken, input, target, log: logger },
          runner,
          options.maxBodyBytes,
          options.rowWriterFallbacks,
        );
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
