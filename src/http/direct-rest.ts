import type { IncomingMessage, ServerResponse } from 'node:http';
import { idempotencyOf, type Context } from '../context.js';
import { withStatementSignal } from '../db/cancellation.js';
import { jsonBytes } from '../json-bytes.js';
import { lowerCased, type Answer } from './admission.js';
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
// Idempotency-Key kept by use-rest's withIdempotency). Every check is the admission spine's (./admission.ts): the
// request is admitted and its answer settled by the same two calls yoga's pipeline makes, so none is written here. A request this
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
    // to refuse (admission/request-limits.ts).
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

  // admit and settle run the spine's checks in their order (host and size hold already: node:http, take()).
  async function answer(incoming: Incoming, taken: NonNullable<ReturnType<typeof take>>): Promise<Outgoing> {
    const ticket = admission.arrive(incoming, 'rest', { url: taken.url });
    const { requestId, deadline } = ticket;
    const target: ResponseTarget = { requestId, origin: taken.url.origin };
    let response: RestResponse;
    try {
      response = await withStatementSignal(deadline, async () => {
        const refusal = await admission.admit(ticket);
        if (refusal) return graphqlErrorResponse(refusal, target);
        const runner: OperationRunner<Context> = {
          context: async () => {
            try {
              // A refused credential (401, a cross-site session cookie's 403) is the route's answer.
              const viewer = await ticket.viewer();
              const { clientAddress, authorization } = ticket;
              return {
                ...options.contextBase,
                viewer,
                requestId,
                clientAddress,
                idempotency: idempotencyOf(incoming.header('idempotency-key')),
                authorization,
              };
            } catch (error) {
              throw admission.mask(error);
            }
          },
          // The route's document is bounded by construction; its variables' text and the credential it needs are checked.
          execute: (args) => {
            const viewer = (args.contextValue as Context).viewer;
            const refusal = admission.operation({ args: { schema: options.schema, ...args }, viewer, bounded: true });
            return executeDirectly(options, deadline, args, 'rest', refusal);
          },
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
    }
    const answerOf = ({ status }: RestResponse): Answer => ({
      status,
      contentType: status === 204 ? '' : JSON_CONTENT_TYPE,
      // An answer ready only past the time limit is replaced by the 503, keeping its other headers.
      late(error) {
        const refused = graphqlErrorResponse(error, target);
        response = { ...refused, headers: { ...response.headers, ...refused.headers } };
        return answerOf(response);
      },
    });
    const settled = admission.settle(ticket, answerOf(response));
    const body = response.status === 204 ? null : jsonBytes(response.body);
    // Lower-case names, as yoga's Headers send them; the spine's last, as yoga's onResponse sets them.
    const headers: Record<string, string> = {
      ...(body === null ? {} : { 'content-type': JSON_CONTENT_TYPE, 'content-length': String(body.byteLength) }),
      ...lowerCased(response.headers),
      ...settled.headers,
    };
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
