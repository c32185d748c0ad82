import { getOperationAST, getVariableValues, GraphQLError, validate, type ExecutionResult, type GraphQLSchema } from 'graphql';
import { isAsyncIterable, type Plugin, type YogaServerInstance } from 'graphql-yoga';
import type { Context } from '../context.js';
import { clip } from '../clip.js';
import { isErrorCode } from '../errors.js';
import { storeIdempotentResponse } from '../db/idempotency.js';
import { invalidInput } from '../domain/problems.js';
import { credentialRequiredError } from '../graphql/viewer.js';
import { compileRoutes, type CompiledRoute } from '../rest/compile-routes.js';
import { apiDocsResponse } from '../rest/docs-page.js';
import { acceptsEventStream, eventStreamResponse, parseLastEventId } from '../rest/event-stream.js';
import {
  errorResponse,
  graphqlErrorResponse,
  invalidQueryResponse,
  resultResponse,
  type ResponseTarget,
  type RestResponse,
} from '../rest/envelope.js';
import { listVariables } from '../rest/graphql-variables.js';
import { openApiDocument } from '../rest/openapi.js';
import { FILTER_OPERATORS, parseListQuery, type ListQuery, type ResourceSpec } from '../rest/query-params.js';
import { API_PREFIX, type BodySpec, DOCS_PATH, OPENAPI_PATH, routes as defaultRoutes, type RouteSpec } from '../rest/routes.js';
import { GRAPHQL_ENDPOINT } from './error-response.js';
import { DEFAULT_REQUEST_LIMITS } from './use-limits.js';
import { requestIdOf } from './use-request-id.js';

type Yoga = YogaServerInstance<Record<string, unknown>, Context>;

/**
 * The REST facade: each route runs its GraphQL operation through yoga's enveloped pipeline (context and
 * auth, masking, logging), then shapes the result into the spec's envelope. Documents are validated here,
 * once, when the plugin is created; a document that does not fit stops the start.
 */
export function useRest({
  schema,
  routes = defaultRoutes,
  maxBodyBytes = DEFAULT_REQUEST_LIMITS.maxBodyBytes,
}: {
  schema: GraphQLSchema;
  routes?: readonly RouteSpec[];
  maxBodyBytes?: number;
}): Plugin<
  Record<string, unknown>,
  Context
> {
  const compiled = compileRoutes(schema, routes);
  for (const route of routes) {
    const errors = route.stream ? validate(schema, route.stream.document) : [];
    if (errors.length > 0) throw new Error(`stream of ${route.operationId} does not fit the schema: ${errors.map((e) => e.message).join('; ')}`);
  }
  const openApi = JSON.stringify(openApiDocument(compiled));
  let yoga: Yoga | undefined;

  return {
    onYogaInit({ yoga: instance }) {
      yoga = instance as unknown as Yoga;
    },
    async onRequest({ request, url, endResponse, fetchAPI, serverContext }) {
      const target: ResponseTarget = { requestId: requestIdOf(request), origin: url.origin };
      if (url.pathname !== API_PREFIX && !url.pathname.startsWith(`${API_PREFIX}/`)) {
        // Health, metrics and error docs answered earlier; what is left is GraphQL or no path at all, which
        // gets the error body too, not yoga's empty 404.
        if (url.pathname === GRAPHQL_ENDPOINT || url.pathname === `${GRAPHQL_ENDPOINT}/`) return;
        const { status, body, headers } = errorResponse('NOT_FOUND', `no such path: ${clip(url.pathname)}`, target);
        endResponse(
          new fetchAPI.Response(request.method === 'HEAD' ? null : JSON.stringify(body), {
            status,
            headers: { 'content-type': 'application/json; charset=utf-8', ...headers },
          }),
        );
        return;
      }
      // HEAD is GET without the body, as HTTP asks of every server.
      const isHead = request.method === 'HEAD';
      const method = isHead ? 'GET' : request.method;
      const send = ({ status, body, headers }: RestResponse) =>
        endResponse(
          status === 204
            ? new fetchAPI.Response(null, { status, headers })
            : new fetchAPI.Response(isHead ? null : JSON.stringify(body), {
                status,
                headers: { 'content-type': 'application/json; charset=utf-8', ...headers },
              }),
        );
      if (!yoga) throw new Error('useRest: yoga did not initialise the plugin');

      try {
        const pathname = url.pathname.length > 1 && url.pathname.endsWith('/') ? url.pathname.slice(0, -1) : url.pathname;
        if (pathname === OPENAPI_PATH || pathname === DOCS_PATH || pathname.startsWith(`${DOCS_PATH}/`)) {
          if (method !== 'GET') {
            send(errorResponse('METHOD_NOT_ALLOWED', `${clip(request.method)} is not allowed on ${pathname}`, target, { headers: { Allow: 'GET, HEAD' } }));
            return;
          }
          if (pathname === OPENAPI_PATH) {
            endResponse(new fetchAPI.Response(isHead ? null : openApi, { headers: { 'content-type': 'application/json; charset=utf-8' } }));
            return;
          }
          const page = await apiDocsResponse(pathname, fetchAPI);
          if (page) endResponse(isHead ? new fetchAPI.Response(null, { headers: page.headers }) : page);
          else send(errorResponse('NOT_FOUND', `no such path: ${clip(pathname)}`, target));
          return;
        }

        const candidates = compiled.flatMap((route) => {
          const match = route.pathPattern.exec(pathname);
          return match ? [{ route, values: match.slice(1) }] : [];
        });
        if (candidates.length === 0) {
          send(errorResponse('NOT_FOUND', `no such endpoint: ${clip(pathname)}`, target));
          return;
        }
        const matched = candidates.find((c) => c.route.spec.method === method);
        if (!matched) {
          const allow = candidates.flatMap((c) => (c.route.spec.method === 'GET' ? ['GET', 'HEAD'] : [c.route.spec.method])).join(', ');
          send(
            errorResponse('METHOD_NOT_ALLOWED', `${clip(request.method)} is not allowed on ${clip(pathname)}; allowed: ${allow}`, target, {
              headers: { Allow: allow },
            }),
          );
          return;
        }
        const routeRequest: RouteRequest = { yoga, route: matched.route, pathValues: matched.values, url, request, serverContext, target };
        if (matched.route.spec.stream && !isHead && acceptsEventStream(request)) {
          const streamed = await runStream(routeRequest);
          if (streamed instanceof fetchAPI.Response) endResponse(streamed);
          else send(streamed as RestResponse);
          return;
        }
        send(await runRoute(routeRequest, maxBodyBytes));
      } catch (error) {
        send(unexpectedErrorResponse(yoga, error, target));
      }
    },
  };
}

/** A request's pass through yoga's enveloped pipeline for one operation: its context, authenticated, or the refusal. */
async function enveloped(
  yoga: Yoga,
  request: Request,
  serverContext: object,
  operationName: string | undefined,
  rest: string,
  target: ResponseTarget,
): Promise<{ run: ReturnType<Yoga['getEnveloped']>; context: Context } | { refused: RestResponse }> {
  const run = yoga.getEnveloped({ ...serverContext, request, params: { operationName, extensions: { rest } } });
  let context: Context;
  try {
    // Yoga's context function authenticates; a rejected credential is thrown from here, already masked.
    context = (await run.contextFactory()) as unknown as Context;
  } catch (error) {
    return { refused: unexpectedErrorResponse(yoga, error, target) };
  }
  // Every route reads tenant data or the catalog, which need a credential: without one the answer is 401
  // before the query string or the path is read (CONTRACT), whatever else is wrong with the request.
  if (context.viewer === null) return { refused: graphqlErrorResponse(credentialRequiredError(), target) };
  return { run, context };
}

/** A request matched to a route: what running it (as JSON, or as an event stream) needs. */
interface RouteRequest {
  yoga: Yoga;
  route: CompiledRoute;
  pathValues: string[];
  url: URL;
  request: Request;
  serverContext: object;
  target: ResponseTarget;
}

async function runRoute({ yoga, route, pathValues, url, request, serverContext, target }: RouteRequest, maxBodyBytes: number): Promise<RestResponse> {
  const operationName = route.operation.name?.value;
  const pipeline = await enveloped(yoga, request, serverContext, operationName, `${route.spec.method} ${route.spec.path}`, target);
  if ('refused' in pipeline) return pipeline.refused;
  const { execute, schema } = pipeline.run;
  const contextValue = pipeline.context;

  let variables: Record<string, unknown> = {};
  let query: ListQuery | null = null;
  const response = route.spec.response;
  if (response.kind === 'list' && route.resource) {
    const parsed = parseListQuery(url.searchParams, withFilterFormParams(route.resource, url.searchParams));
    if (!parsed.ok) return invalidQueryResponse(parsed.problems, target);
    query = parsed.query;
    variables = listVariables(route, response.list, query);
  } else if ([...url.searchParams.keys()].length > 0) {
    const names = [...new Set(url.searchParams.keys())].map((n) => `'${clip(n)}'`).join(', ');
    return invalidQueryResponse([{ parameter: '*', message: `this endpoint takes no query parameters (got ${names})` }], target);
  }
  for (const [index, param] of route.pathParams.entries()) {
    const raw = pathValues[index] ?? '';
    let value: string;
    try {
      value = decodeURIComponent(raw);
    } catch {
      return invalidQueryResponse([{ parameter: param, message: `path parameter ${param} is not valid percent-encoding` }], target);
    }
    variables[param] = value;
  }
  if (route.spec.body) {
    const body = await readJsonBody(request, route.spec.body, maxBodyBytes, target);
    if ('refused' in body) return body.refused;
    // The body's one schema first, so every problem is named as the body names it; path parameters win.
    const problems = await route.spec.body.problems(body.value, contextValue as Context);
    if (problems.length > 0) return graphqlErrorResponse(invalidInput(problems), target);
    variables = { ...route.spec.body.variables(body.value), ...variables };
  }

  // The schema's own scalars coerce the values; what they refuse is the caller's mistake, not ours.
  const coerced = getVariableValues(schema, route.operation.variableDefinitions ?? [], variables);
  if (coerced.errors) {
    return invalidQueryResponse(
      coerced.errors.map((e) => ({ parameter: '*', message: e.message })),
      target,
    );
  }

  const result = await execute({
    schema,
    document: route.spec.document,
    operationName,
    variableValues: variables,
    contextValue,
  });
  if (isAsyncIterable(result)) throw new Error(`REST operation ${operationName} returned a stream`);
  const answer = resultResponse(route, result as ExecutionResult, query, target);
  return withIdempotency(route, contextValue as Context, answer, target);
}

/**
 * A route's event stream (`Accept: text/event-stream`): its subscription runs through yoga's enveloped pipeline
 * like any operation (auth, limits, masking), with the path parameter as the run's id and the query parameters
 * the stream takes; `Last-Event-ID` resumes from the event log.
 */
async function runStream({ yoga, route, pathValues, url, request, serverContext, target }: RouteRequest): Promise<Response | RestResponse> {
  const stream = route.spec.stream!;
  const operationName = getOperationAST(stream.document)?.name?.value;
  const pipeline = await enveloped(yoga, request, serverContext, operationName, `${route.spec.method} ${route.spec.path} (stream)`, target);
  if ('refused' in pipeline) return pipeline.refused;
  const { subscribe, schema } = pipeline.run;
  const { context } = pipeline;

  const variables: Record<string, unknown> = {};
  const problems: { parameter: string; message: string }[] = [];
  for (const name of new Set(url.searchParams.keys())) {
    const param = stream.params[name];
    const values = url.searchParams.getAll(name);
    if (!param) problems.push({ parameter: name, message: `a stream takes ${Object.keys(stream.params).map((p) => `'${p}'`).join(', ') || 'no query parameters'}, not '${clip(name, 64)}'` });
    else if (values.length > 1) problems.push({ parameter: name, message: `'${name}' may be given only once` });
    else variables[param.variable] = values[0]!.replace(/^eq\./, '');
  }
  const lastEventId = parseLastEventId(request.headers.get('last-event-id'));
  if (lastEventId === null) problems.push({ parameter: 'Last-Event-ID', message: 'Last-Event-ID must be an event id: the digits of a message id this stream sent' });
  if (problems.length > 0) return invalidQueryResponse(problems, target);
  for (const [index, param] of route.pathParams.entries()) {
    try {
      variables[param === 'id' ? 'syncId' : param] = decodeURIComponent(pathValues[index] ?? '');
    } catch {
      return invalidQueryResponse([{ parameter: param, message: `path parameter ${param} is not valid percent-encoding` }], target);
    }
  }

  const cursor = { after: lastEventId ?? undefined, current: lastEventId ?? 0 };
  context.streamCursor = cursor;
  const result = await subscribe({ schema, document: stream.document, operationName, variableValues: variables, contextValue: context });
  return eventStreamResponse({
    result: result as AsyncIterable<ExecutionResult> | ExecutionResult,
    event: stream.event,
    currentId: () => cursor.current,
    heartbeatMs: context.live.heartbeatMs,
    signal: request.signal,
    target,
    fetchAPI: yoga.fetchAPI,
  });
}

/**
 * A POST sent with an Idempotency-Key: the first answer is stored with the key (after the write committed);
 * a repeat answers that stored answer, marked `Idempotent-Replayed: true`. A repeat whose first answer was not
 * stored (its process stopped in between) answers the resource as it is now, re-rendered by the mutation.
 */
async function withIdempotency(route: CompiledRoute, context: Context, response: RestResponse, target: ResponseTarget): Promise<RestResponse> {
  const outcome = context.idempotency?.outcome;
  if (!context.idempotency || !outcome || !context.viewer) return response;
  const stored = outcome.record?.response;
  if (outcome.replayed) {
    const replayed = stored ? storedResponse(route, stored, target) : response;
    return { ...replayed, headers: { ...replayed.headers, 'Idempotent-Replayed': 'true' } };
  }
  if (response.status < 300) {
    await storeIdempotentResponse(context.db.raw, context.viewer.tenantId, context.idempotency.key, { status: response.status, body: response.body });
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

/**
 * The request's JSON body, as an object: 415 for another media type, 413 past the size limit (also for a
 * chunked body without Content-Length), 400 for text that is not JSON or JSON that is not an object.
 */
async function readJsonBody(
  request: Request,
  spec: BodySpec,
  maxBytes: number,
  target: ResponseTarget,
): Promise<{ value: Record<string, unknown> } | { refused: RestResponse }> {
  const contentType = request.headers.get('content-type') ?? '';
  const mediaType = contentType.split(';')[0]?.trim().toLowerCase() ?? '';
  // A body that may be left out: no Content-Type is taken as no body (checked once it is read).
  const bodiless = spec.optional === true && contentType === '';
  if (!spec.mediaTypes.includes(mediaType) && !bodiless) {
    const expected = spec.mediaTypes.join(' or ');
    return {
      refused: errorResponse(
        'UNSUPPORTED_MEDIA_TYPE',
        `Send the body as ${expected}${contentType ? `, not ${clip(contentType, 100)}` : ' (Content-Type is missing)'}`,
        target,
      ),
    };
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = request.body?.getReader();
  for (;;) {
    const next = reader ? await reader.read() : { done: true as const, value: undefined };
    if (next.done) break;
    size += next.value.byteLength;
    if (size > maxBytes) {
      await reader?.cancel().catch(() => undefined);
      return { refused: errorResponse('PAYLOAD_TOO_LARGE', `The request body exceeds the limit of ${maxBytes} bytes`, target) };
    }
    chunks.push(next.value);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (bodiless) {
    if (size === 0) return { value: {} };
    return { refused: errorResponse('UNSUPPORTED_MEDIA_TYPE', `Send the body as ${spec.mediaTypes.join(' or ')} (Content-Type is missing)`, target) };
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { refused: invalidQueryResponse([{ parameter: '(body)', message: text.trim() === '' ? 'the body is empty; send a JSON object' : 'the body is not valid JSON' }], target) };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { refused: invalidQueryResponse([{ parameter: '(body)', message: 'the body must be a JSON object' }], target) };
  }
  return { value: value as Record<string, unknown> };
}

const FILTER_FORM = new RegExp(`^(?:not\\.)?(?:${FILTER_OPERATORS.join('|')})\\.`);

/**
 * An endpoint parameter that is also a field (`name`, `connection_id`) is a filter when every value it is
 * given is in `op.value` form, and the endpoint's own parameter otherwise.
 */
function withFilterFormParams(resource: ResourceSpec, params: URLSearchParams): ResourceSpec {
  const filterForm = resource.reserved.filter(
    (name) => Object.hasOwn(resource.fields, name) && params.has(name) && params.getAll(name).every((v) => FILTER_FORM.test(v)),
  );
  if (filterForm.length === 0) return resource;
  return { ...resource, reserved: resource.reserved.filter((name) => !filterForm.includes(name)) };
}

/**
 * A thrown error. Errors from the context function and from execution were already masked by yoga, so one
 * with a known code is meant to be shown; anything else is a fault here: logged, and answered without details.
 */
function unexpectedErrorResponse(yoga: Yoga, error: unknown, target: ResponseTarget): RestResponse {
  if (error instanceof GraphQLError && isErrorCode(error.extensions.code)) return graphqlErrorResponse(error, target);
  yoga.logger.error(error);
  return errorResponse('INTERNAL', 'Internal error', target);
}
