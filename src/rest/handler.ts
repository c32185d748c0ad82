import { getOperationAST, GraphQLError, Kind, type DocumentNode, type ExecutionResult } from 'graphql';
import { isAsyncIterable, type YogaServerInstance } from 'graphql-yoga';
import { parseJsonBody } from '../json-body.js';
import type { Logger } from '../logger.js';
import { invalidInput } from '../domain/problems.js';
import { credentialRequiredError, isErrorCode, clip } from '../errors.js';
import type { CompiledRoute } from './compile-routes.js';
import {
  errorResponse,
  graphqlErrorResponse,
  invalidQueryResponse,
  resultResponse,
  type ResponseTarget,
  type RestResponse,
} from './envelope.js';
import { eventStreamResponse, parseLastEventId } from './event-stream.js';
import { listVariables } from './list-variables.js';
import { parseListQuery, type ListQuery, type QueryProblem, withFilterFormParams } from './query-params.js';
import type { RestContext } from './request-context.js';
import { StreamPosition } from '../live/change-stream.js';
import { ListPlanRequest } from '../query/list-plan.js';
import { LeftToExecution, type RowWriterFallbacks } from './row-writer.js';
import { STREAM_PATH_SUFFIX, type BodySpec } from './routes.js';

// Running a REST request: the route it matches, then its GraphQL operation through yoga's enveloped pipeline
// (context and auth, limits, masking, logging) and the result in the spec's envelope, as JSON or as an event
// stream. plugins/use-rest.ts is the yoga plugin that hands requests here.

/** The gateway's yoga, whatever its context holds beyond what REST reads (RestContext). */
export type Yoga<C extends RestContext = RestContext> = YogaServerInstance<Record<string, unknown>, C>;

/**
 * The route a path and method name, or the refusal: 404 when no route has the path, 405 (with `Allow`) when
 * one has it for other methods. `method` is the request's, HEAD answered as GET.
 */
export function matchRoute(
  routes: readonly CompiledRoute[],
  pathname: string,
  method: string,
  requestMethod: string,
  target: ResponseTarget,
): { route: CompiledRoute; pathValues: string[]; stream?: true } | { refused: RestResponse } {
  const streamed = matchStreamPath(routes, pathname);
  if (streamed && method === 'GET') return streamed;
  // A stream path (`/syncs/events`) is its stream's only.
  const candidates = streamed ? [] : pathCandidates(routes, pathname);
  if (candidates.length === 0 && !streamed) return { refused: errorResponse('NOT_FOUND', `no such endpoint: ${clip(pathname)}`, target) };
  const matched = candidates.find((c) => c.route.spec.method === method);
  if (matched) return matched;
  const allow = streamed
    ? 'GET, HEAD'
    : candidates.flatMap((c) => (c.route.spec.method === 'GET' ? ['GET', 'HEAD'] : [c.route.spec.method])).join(', ');
  return {
    refused: errorResponse('METHOD_NOT_ALLOWED', `${clip(requestMethod)} is not allowed on ${clip(pathname)}; allowed: ${allow}`, target, {
      headers: { Allow: allow },
    }),
  };
}

/**
 * The routes whose template a path fits, as OpenAPI routes: a path that a template names literally
 * (`/syncs/claim`) is that template's only, not an id of `/syncs/{id}`.
 */
export function pathCandidates(routes: readonly CompiledRoute[], pathname: string): Array<{ route: CompiledRoute; pathValues: string[] }> {
  const matching = routes.flatMap((route) => {
    const match = route.pathPattern.exec(pathname);
    return match ? [{ route, pathValues: match.slice(1) }] : [];
  });
  const fewestParams = Math.min(...matching.map((c) => c.route.pathParams.length));
  return matching.filter((c) => c.route.pathParams.length === fewestParams);
}

/** A streamed route's own stream path (`…/events`), whatever the Accept header asks for; null for any other path. */
export function matchStreamPath(
  routes: readonly CompiledRoute[],
  pathname: string,
): { route: CompiledRoute; pathValues: string[]; stream: true } | null {
  if (!pathname.endsWith(STREAM_PATH_SUFFIX)) return null;
  const streamedPath = pathname.slice(0, -STREAM_PATH_SUFFIX.length);
  for (const route of routes) {
    const match = route.spec.stream && route.spec.method === 'GET' ? route.pathPattern.exec(streamedPath) : null;
    if (match) return { route, pathValues: match.slice(1), stream: true };
  }
  return null;
}

/** The operation arguments a runner executes. */
export interface OperationArgs<C extends RestContext = RestContext> {
  document: DocumentNode;
  operationName: string | undefined;
  variableValues: Record<string, unknown>;
  contextValue: C;
  /** What the root fields receive: a ListPlanRequest (a list's plan handed back), a StreamPosition (where a stream resumes). */
  rootValue?: unknown;
}

/**
 * How a route's operation runs: through yoga's enveloped pipeline (`envelopedRunner`), or on the REST reads
 * served directly on node:http (src/http/direct-rest.ts), which apply the same plugins' checks as plain functions.
 */
export interface OperationRunner<C extends RestContext = RestContext> {
  /** The request's context, authenticated; a rejected credential (or a failed lookup) is thrown, already masked. */
  context(): Promise<C>;
  execute(args: OperationArgs<C>): Promise<unknown>;
}

/** A request's pass through yoga's enveloped pipeline for one operation (context and auth, limits, masking, metrics). */
export function envelopedRunner<C extends RestContext>(
  yoga: Yoga<C>,
  request: Request,
  serverContext: object,
  operationName: string | undefined,
  rest: string,
): OperationRunner<C> & { subscribe(args: OperationArgs<C>): Promise<unknown> } {
  const run = yoga.getEnveloped({ ...serverContext, request, params: { operationName, extensions: { rest } } });
  return {
    // Yoga's context function authenticates; a rejected credential is thrown from here, already masked.
    context: async () => (await run.contextFactory()) as unknown as C,
    execute: async (args) => run.execute({ schema: run.schema, ...args }),
    subscribe: async (args) => run.subscribe({ schema: run.schema, ...args }),
  };
}

/** The context of a request the runner authenticated, or the refusal: every route needs a credential. */
export async function authenticated<C extends RestContext>(
  runner: OperationRunner<C>,
  log: Logger,
  target: ResponseTarget,
): Promise<{ context: C } | { refused: RestResponse }> {
  let context: C;
  try {
    context = await runner.context();
  } catch (error) {
    return { refused: unexpectedErrorResponse(log, error, target) };
  }
  // Every route reads tenant data or the catalog, which need a credential: without one the answer is 401
  // before the query string or the path is read (CONTRACT), whatever else is wrong with the request.
  if (context.viewer === null) return { refused: graphqlErrorResponse(credentialRequiredError(), target) };
  return { context };
}

/** The headers a route reads, and its body: a fetch Request's or node:http's, whichever served it. */
export interface RouteInput {
  header(name: string): string | null;
  /** The request body's bytes; null when it has none. */
  body(): AsyncIterable<Uint8Array> | null;
}

/** A fetch Request as a route reads it. */
export function fetchRouteInput(request: Request): RouteInput {
  return { header: (name) => request.headers.get(name), body: () => request.body as AsyncIterable<Uint8Array> | null };
}

/** A request matched to a route: what running it (as JSON, an event stream or an export) needs. */
export interface RouteRequest {
  route: CompiledRoute;
  pathValues: string[];
  url: URL;
  input: RouteInput;
  target: ResponseTarget;
  /** Where an unexpected error is logged. */
  log: Logger;
}

/**
 * Runs a matched route: the query string (lists) or nothing, the path parameters and the JSON body become the
 * operation's variables, checked by the grammar, the body's schema and the schema's scalars; the result goes
 * into the spec's envelope. `context` is the request's, once yoga built it (null when the request was refused
 * before), for what the caller does with the answer (idempotency). `fallbacks` hears of a list page its row
 * writer left to execution.
 */
export async function runRoute<C extends RestContext>(
  { route, pathValues, url, input, target, log }: RouteRequest,
  runner: OperationRunner<C>,
  maxBodyBytes: number,
  fallbacks: RowWriterFallbacks,
): Promise<{ response: RestResponse; context: C | null }> {
  const operationName = route.operation.name?.value;
  const pipeline = await authenticated(runner, log, target);
  if ('refused' in pipeline) return { response: pipeline.refused, context: null };
  const contextValue = pipeline.context;
  const refuse = (response: RestResponse) => ({ response, context: contextValue });

  let variables: Record<string, unknown> = {};
  let query: ListQuery | null = null;
  const response = route.spec.response;
  if (response.kind === 'list' && route.resource) {
    const parsed = parseListQuery(url.searchParams, withFilterFormParams(route.resource, url.searchParams));
    if (!parsed.ok) return refuse(invalidQueryResponse(parsed.problems, target));
    query = parsed.query;
    variables = listVariables(route, response.list, query);
  } else if ([...url.searchParams.keys()].length > 0) {
    const names = [...new Set(url.searchParams.keys())].map((n) => `'${clip(n)}'`).join(', ');
    return refuse(invalidQueryResponse([{ parameter: '*', message: `this endpoint takes no query parameters (got ${names})` }], target));
  }
  for (const [index, param] of route.pathParams.entries()) {
    const raw = pathValues[index] ?? '';
    let value: string;
    try {
      value = decodeURIComponent(raw);
    } catch {
      return refuse(invalidQueryResponse([{ parameter: param, message: `path parameter ${param} is not valid percent-encoding` }], target));
    }
    variables[param] = value;
  }
  if (route.spec.body) {
    const body = await readJsonBody(input, route.spec.body, maxBodyBytes, target);
    if ('refused' in body) return refuse(body.refused);
    // The body's one schema first, so every problem is named as the body names it; path parameters win.
    const problems = await route.spec.body.problems(body.value, contextValue);
    if (problems.length > 0) return refuse(graphqlErrorResponse(invalidInput(problems), target));
    variables = { ...route.spec.body.variables(body.value), ...variables };
  }

  // The schema's own scalars coerce the values, once, inside execute: what they refuse is the caller's mistake
  // (see variableProblems), answered before any resolver ran.
  const args = { document: route.spec.document, operationName, variableValues: variables, contextValue };
  // A list whose items are written from its rows executes without them, and with them only when the writer
  // must leave a row to execution (./row-writer.ts), which `fallbacks` counts.
  const result = (route.rowWriter && (await withRowsWritten(route, runner, args, fallbacks))) || (await runner.execute(args));
  if (isAsyncIterable(result)) throw new Error(`REST operation ${operationName} returned a stream`);
  const problems = variableProblems(result as ExecutionResult);
  if (problems) return refuse(invalidQueryResponse(problems, target));
  return { response: resultResponse(route, result as ExecutionResult, query, { ...target, requestUrl: url }), context: contextValue };
}

/**
 * The route's operation executed with its list's plan handed back (query/list-plan.ts), whose rows the route's
 * row writer writes the items from; null when a row must be left to execution, told to `fallbacks` first. An answer with errors is answered as it is: the root field refused (a credential without
 * the permission, an argument), and no item was read.
 */
async function withRowsWritten<C extends RestContext>(
  route: CompiledRoute,
  runner: OperationRunner<C>,
  args: OperationArgs<C>,
  fallbacks: RowWriterFallbacks,
): Promise<ExecutionResult | null> {
  const request = new ListPlanRequest();
  const result = (await runner.execute({ ...args, rootValue: request })) as ExecutionResult;
  if (result.errors?.length || isAsyncIterable(result)) return result;
  const page = (result.data as Record<string, { nodes?: unknown }> | null | undefined)?.[route.rootKey];
  // No page (a nullable root field that answered null): no items to write, and execution would answer the same.
  if (!page) return result;
  if (!request.plan) {
    fallbacks.fellBack(route.spec.path, 'rows-not-handed-over');
    return null;
  }
  const items = route.rowWriter!(await request.plan.nodes(), args.variableValues);
  if (items instanceof LeftToExecution) {
    fallbacks.fellBack(route.spec.path, items.reason);
    return null;
  }
  page.nodes = items;
  return result;
}

/**
 * The variables execute could not coerce, as query problems; null when execution ran. graphql-js coerces a
 * request's variables before it runs any resolver and answers a value it refuses with errors and no `data`,
 * each naming the variable's definition (masked to INVALID_QUERY by admission/error-masking.ts, node kept).
 */
export function variableProblems(result: ExecutionResult): QueryProblem[] | null {
  if (result.data !== undefined || !result.errors?.length) return null;
  const coercion = result.errors.every((error) => error.nodes?.some((node) => node.kind === Kind.VARIABLE_DEFINITION));
  return coercion ? result.errors.map((error) => ({ parameter: '*', message: error.message })) : null;
}

/**
 * A route's event stream (`Accept: text/event-stream`): its subscription runs through yoga's enveloped pipeline
 * like any operation (auth, limits, masking), with the path parameter as the run's id and the query parameters
 * the stream takes; `Last-Event-ID` resumes from the event log.
 */
export async function runStream<C extends RestContext>(
  { route, pathValues, url, input, target, log }: RouteRequest,
  { yoga, request, serverContext }: { yoga: Yoga<C>; request: Request; serverContext: object },
): Promise<Response | RestResponse> {
  const stream = route.spec.stream!;
  const operationName = getOperationAST(stream.document)?.name?.value;
  const runner = envelopedRunner(yoga, request, serverContext, operationName, `${route.spec.method} ${route.spec.path} (stream)`);
  const pipeline = await authenticated(runner, log, target);
  if ('refused' in pipeline) return pipeline.refused;
  const { context } = pipeline;

  const variables: Record<string, unknown> = {};
  const problems: { parameter: string; message: string }[] = [];
  for (const name of new Set(url.searchParams.keys())) {
    const param = stream.params[name];
    const values = url.searchParams.getAll(name);
    if (!param)
      problems.push({
        parameter: name,
        message: `a stream takes ${
          Object.keys(stream.params)
            .map((p) => `'${p}'`)
            .join(', ') || 'no query parameters'
        }, not '${clip(name, 64)}'`,
      });
    else if (values.length > 1) problems.push({ parameter: name, message: `'${name}' may be given only once` });
    else variables[param.variable] = values[0]!.replace(/^eq\./, '');
  }
  const lastEventId = parseLastEventId(input.header('last-event-id'));
  if (lastEventId === null)
    problems.push({
      parameter: 'Last-Event-ID',
      message: 'Last-Event-ID must be an event id: the digits of a message id this stream sent',
    });
  if (problems.length > 0) return invalidQueryResponse(problems, target);
  for (const [index, param] of route.pathParams.entries()) {
    try {
      variables[param === 'id' ? 'syncId' : param] = decodeURIComponent(pathValues[index] ?? '');
    } catch {
      return invalidQueryResponse([{ parameter: param, message: `path parameter ${param} is not valid percent-encoding` }], target);
    }
  }

  const position = new StreamPosition(lastEventId ?? undefined);
  const args = { document: stream.document, operationName, variableValues: variables, contextValue: context, rootValue: position };
  const result = await runner.subscribe(args);
  return eventStreamResponse({
    result: result as AsyncIterable<ExecutionResult> | ExecutionResult,
    event: stream.event,
    currentId: () => position.current,
    heartbeatMs: context.live.heartbeatMs,
    owner: context.live.governor.ownerOf(request),
    target,
    fetchAPI: yoga.fetchAPI,
  });
}

/**
 * The request's JSON body, as an object: 415 for another media type, 413 past the size limit (also for a
 * chunked body without Content-Length), 400 for a body that is not UTF-8, not JSON, nested too deep or not an object.
 */
async function readJsonBody(
  input: RouteInput,
  spec: BodySpec,
  maxBytes: number,
  target: ResponseTarget,
): Promise<{ value: Record<string, unknown> } | { refused: RestResponse }> {
  const contentType = input.header('content-type') ?? '';
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
  // Leaving the loop early (past the limit) cancels the rest of the body.
  for await (const chunk of input.body() ?? []) {
    size += chunk.byteLength;
    if (size > maxBytes)
      return { refused: errorResponse('PAYLOAD_TOO_LARGE', `The request body exceeds the limit of ${maxBytes} bytes`, target) };
    chunks.push(chunk);
  }
  if (bodiless) {
    if (size === 0) return { value: {} };
    return {
      refused: errorResponse(
        'UNSUPPORTED_MEDIA_TYPE',
        `Send the body as ${spec.mediaTypes.join(' or ')} (Content-Type is missing)`,
        target,
      ),
    };
  }
  const parsed = parseJsonBody(Buffer.concat(chunks));
  if ('problem' in parsed) return { refused: invalidQueryResponse([{ parameter: '(body)', message: parsed.problem }], target) };
  const value = parsed.value;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { refused: invalidQueryResponse([{ parameter: '(body)', message: 'the body must be a JSON object' }], target) };
  }
  return { value: value as Record<string, unknown> };
}

/**
 * A thrown error. Errors from the context function and from execution were already masked by yoga, so one
 * with a known code is meant to be shown; anything else is a fault here: logged, and answered without details.
 */
export function unexpectedErrorResponse(log: Logger, error: unknown, target: ResponseTarget): RestResponse {
  if (error instanceof GraphQLError && isErrorCode(error.extensions.code)) return graphqlErrorResponse(error, target);
  log.error({ err: error }, 'unexpected error');
  return errorResponse('INTERNAL', 'Internal error', target);
}
