import type { GraphQLSchema } from 'graphql';
import { clip } from '../errors.js';
import type { Plugin } from 'graphql-yoga';
import type { Context } from '../context.js';
import type { Logger } from '../logger.js';
import { storeIdempotentResponse } from '../db/idempotency.js';
import { API_PREFIX, DOCS_PATH, GRAPHQL_ENDPOINT, OPENAPI_PATH, withoutTrailingSlash } from '../paths.js';
import { jsonResponse } from './json-response.js';
import { documentErrors, type CompiledRoute } from '../rest/compile-routes.js';
import { apiDocsResponse } from '../rest/docs-page.js';
import { errorResponse, type ResponseTarget, type RestResponse } from '../rest/envelope.js';
import { acceptsEventStream } from '../rest/event-stream.js';
import type { RowWriterFallbacks } from '../rest/row-writer.js';
import { envelopedRunner, fetchRouteInput, matchRoute, runRoute, runStream, unexpectedErrorResponse, type Yoga } from '../rest/handler.js';
import { EXPORT_BATCH_TIMEOUT_MS, exportFormatOf, runExport } from '../rest/export.js';
import { withinStepDeadline } from './batch-deadline.js';
import { openApiDocument } from '../rest/openapi.js';
import { replayableBody } from '../rest/routes.js';
import { DEFAULT_REQUEST_LIMITS } from '../admission/request-limits.js';
import { requestIdOf } from '../admission/request-id.js';

/**
 * The REST facade as a yoga plugin: requests under `/api` are answered here (rest/handler.ts runs each route's
 * GraphQL operation through yoga's enveloped pipeline), as are the OpenAPI document and the API reference;
 * other paths that are not GraphQL get the error body rather than yoga's empty 404. Stream documents are
 * validated when the plugin is created, as the routes' are (rest/compile-routes.ts documentErrors): a document
 * that does not fit stops the start.
 */
export function useRest({
  schema,
  compiled,
  logger,
  maxBodyBytes = DEFAULT_REQUEST_LIMITS.maxBodyBytes,
  rowWriterFallbacks,
}: {
  schema: GraphQLSchema;
  /** The routes, compiled against `schema` (compileRoutes). */
  compiled: readonly CompiledRoute[];
  logger: Logger;
  maxBodyBytes?: number;
  /** Where a list page its row writer left to execution is counted (rest/row-writer.ts createRowWriterFallbacks). */
  rowWriterFallbacks: RowWriterFallbacks;
}): Plugin<Record<string, unknown>, Context> {
  for (const { spec: route } of compiled) {
    const errors = route.stream ? documentErrors(schema, route.stream.document) : [];
    if (errors.length > 0)
      throw new Error(`stream of ${route.operationId} does not fit the schema: ${errors.map((e) => e.message).join('; ')}`);
  }
  // Written at its first request: most processes never serve it, and it is half a megabyte of text.
  let openApiText: string | undefined;
  const openApi = () => {
    openApiText ??= JSON.stringify(openApiDocument(compiled));
    return openApiText;
  };
  let yoga: Yoga<Context> | undefined;

  return {
    onYogaInit({ yoga: instance }) {
      yoga = instance as unknown as Yoga<Context>;
    },
    async onRequest({ request, url, endResponse, fetchAPI, serverContext }) {
      const target: ResponseTarget = { requestId: requestIdOf(request), origin: url.origin };
      // HEAD is GET without the body, as HTTP asks of every server.
      const isHead = request.method === 'HEAD';
      const method = isHead ? 'GET' : request.method;
      const send = ({ status, body, headers }: RestResponse) =>
        endResponse(
          status === 204
            ? new fetchAPI.Response(null, { status, headers })
            : jsonResponse(fetchAPI, body, { status, headers, withoutBody: isHead }),
        );
      const pathname = withoutTrailingSlash(url.pathname);
      if (pathname !== API_PREFIX && !pathname.startsWith(`${API_PREFIX}/`)) {
        // Health, metrics and error docs answered earlier; what is left is GraphQL or no path at all, which
        // gets the error body too, not yoga's empty 404.
        if (pathname !== GRAPHQL_ENDPOINT) send(errorResponse('NOT_FOUND', `no such path: ${clip(url.pathname)}`, target));
        return;
      }
      if (!yoga) throw new Error('useRest: yoga did not initialise the plugin');

      try {
        if (pathname === OPENAPI_PATH || pathname === DOCS_PATH || pathname.startsWith(`${DOCS_PATH}/`)) {
          if (method !== 'GET') {
            send(
              errorResponse('METHOD_NOT_ALLOWED', `${clip(request.method)} is not allowed on ${pathname}`, target, {
                headers: { Allow: 'GET, HEAD' },
              }),
            );
            return;
          }
          if (pathname === OPENAPI_PATH) {
            endResponse(
              new fetchAPI.Response(isHead ? null : openApi(), {
                headers: { 'content-type': 'application/json; charset=utf-8' },
              }),
            );
            return;
          }
          const page = await apiDocsResponse(pathname, fetchAPI);
          if (page) endResponse(isHead ? new fetchAPI.Response(null, { headers: page.headers }) : page);
          else send(errorResponse('NOT_FOUND', `no such path: ${clip(pathname)}`, target));
          return;
        }

        const matched = matchRoute(compiled, pathname, method, request.method, target);
        if ('refused' in matched) {
          send(matched.refused);
          return;
        }
        const routeRequest = { ...matched, url, input: fetchRouteInput(request), target, log: logger };
        if (matched.route.spec.stream && ('stream' in matched || (!isHead && acceptsEventStream(request.headers.get('accept'))))) {
          const streamed = await runStream(routeRequest, { yoga, request, serverContext });
          if (streamed instanceof fetchAPI.Response) endResponse(streamed);
          else send(streamed as RestResponse);
          return;
        }
        const operationName = matched.route.operation.name?.value;
        const runner = envelopedRunner(
          yoga,
          request,
          serverContext,
          operationName,
          `${matched.route.spec.method} ${matched.route.spec.path}`,
        );
        const exportFormat = matched.route.spec.response.kind === 'list' && !isHead ? exportFormatOf(request.headers.get('accept')) : null;
        if (exportFormat) {
          const exported = await runExport(routeRequest, exportFormat, runner, fetchAPI, request.signal, (work) =>
            withinStepDeadline(EXPORT_BATCH_TIMEOUT_MS, work),
          );
          if (exported instanceof fetchAPI.Response) endResponse(exported);
          else send(exported as RestResponse);
          return;
        }
        const { response, context } = await runRoute(routeRequest, runner, maxBodyBytes, rowWriterFallbacks);
        send(context ? await withIdempotency(matched.route, context, response, target) : response);
      } catch (error) {
        send(unexpectedErrorResponse(logger, error, target));
      }
    },
  };
}

/**
 * A POST sent with an Idempotency-Key: the first answer is stored with the key (after the write committed);
 * a repeat answers that stored answer, marked `Idempotent-Replayed: true`. A repeat whose first answer was not
 * stored (its process stopped in between) answers the resource as it is now, re-rendered by the mutation. The
 * REST requests served directly (src/http/direct-rest.ts) keep their answers the same way.
 */
export async function withIdempotency(
  route: CompiledRoute,
  context: Context,
  response: RestResponse,
  target: ResponseTarget,
): Promise<RestResponse> {
  const outcome = context.idempotency?.outcome;
  if (!context.idempotency || !outcome || !context.viewer) return response;
  const stored = outcome.record?.response;
  if (outcome.replayed) {
    const replayed = stored ? storedResponse(route, stored, target) : response;
    return { ...replayed, headers: { ...replayed.headers, 'Idempotent-Replayed': 'true' } };
  }
  if (response.status < 300) {
    const body = replayableBody(route.spec.response, response.body);
    await storeIdempotentResponse(context.db.raw, context.viewer.tenantId, context.idempotency.key, { status: response.status, body });
  }
  return response;
}

/** A stored answer as it was sent: its status and body, and the Location a 201 carries. */
function storedResponse(route: CompiledRoute, stored: { status: number; body: unknown }, target: ResponseTarget): RestResponse {
  const { response } = route.spec;
  const id = (stored.body as { data?: { id?: unknown } } | null)?.data?.id;
  const headers: Record<string, string> = {};
  if (stored.status === 201 && response.kind === 'item' && response.created && typeof id === 'string') {
    headers.Location = `${target.origin}${response.created.location.replace('{id}', encodeURIComponent(id))}`;
  }
  return { status: stored.status, body: stored.body, headers };
}
