import type { ExecutionResult, GraphQLFormattedError } from 'graphql';
import { ERROR_CODES, errorBody, isErrorCode, type ErrorCode } from '../errors.js';
import { restNameOfGraphQLPath } from '../domain/problems.js';
import type { CompiledRoute } from './compile-routes.js';
import { describeFilters, describeOrder, type ListQuery, type QueryProblem } from './query-params.js';
import type { ListSpec } from './routes.js';

// GraphQL result → the spec's envelope (`{msg, data, meta}` / `{msg, data}`) or its error body
// (`{msg, error: {code, docs, req_id}}`), with the HTTP status and headers to send.

export interface RestResponse {
  status: number;
  body: unknown;
  headers: Record<string, string>;
}

/** Where the response is going: the request id for error bodies and the origin their docs URLs resolve on. */
export interface ResponseTarget {
  requestId: string;
  origin: string;
  /** The request's URL, which a list page's Link rel="next" is written from; absent where no list is answered. */
  requestUrl?: URL;
}

/** What a list operation's root field answers (rest/compile-routes.ts checks the selection). */
interface ListResult {
  totalCount: number;
  offset: number;
  pageInfo: { hasNextPage: boolean; endCursor: string | null };
  nodes: Record<string, unknown>[];
}

/**
 * The RFC 8288 `Link` of the page after this one: the same request (filters, select, search, order, limit)
 * with `cursor` in place of offset and page.
 */
export function nextPageLink(requestUrl: URL | undefined, cursor: string): string {
  if (!requestUrl) throw new Error('a list answer needs its request URL');
  // Written out rather than through a copy of the URL whose searchParams are edited: each edit serialises the
  // whole URL again. The query is serialised as URLSearchParams serialises it, so the bytes are the same.
  let query = '';
  for (const [name, value] of requestUrl.searchParams) {
    if (name !== 'offset' && name !== 'page' && name !== 'cursor') query += `${formEncoded(name)}=${formEncoded(value)}&`;
  }
  const { href, search, hash } = requestUrl;
  let base = href.slice(0, href.length - hash.length - search.length);
  if (base.endsWith('?')) base = base.slice(0, -1);
  return `<${base}?${query}cursor=${formEncoded(cursor)}${hash}>; rel="next"`;
}

/** application/x-www-form-urlencoded as URLSearchParams writes it: encodeURIComponent, and `!'()~` escaped, space as `+`. */
function formEncoded(text: string): string {
  return encodeURIComponent(text).replace(/[!'()~]|%20/g, (c) => (c === '%20' ? '+' : `%${c.charCodeAt(0).toString(16).toUpperCase()}`));
}

type GraphQLErrorLike = Pick<GraphQLFormattedError, 'message' | 'extensions'>;

export function errorResponse(
  code: ErrorCode,
  msg: string,
  target: ResponseTarget,
  options: { status?: number; headers?: Record<string, string>; details?: unknown } = {},
): RestResponse {
  const body = errorBody(code, msg, target.requestId, target.origin);
  return {
    status: options.status ?? ERROR_CODES[code].status,
    body: options.details === undefined ? body : { ...body, error: { ...body.error, details: options.details } },
    headers: options.headers ?? {},
  };
}

/** Every problem of the query string in one 400: each in msg, and as `{parameter, message}` in error.details. */
export function invalidQueryResponse(problems: QueryProblem[], target: ResponseTarget): RestResponse {
  const msg = `Invalid query: ${problems.map((p) => p.message).join('; ')}`;
  return errorResponse('INVALID_QUERY', msg, target, { details: problems });
}

/**
 * A GraphQL error, as yoga's masking left it: its `extensions.code` and `extensions.http` decide the status
 * and headers. An error without a known code was not meant to be shown, so it answers as INTERNAL.
 */
export function graphqlErrorResponse(error: GraphQLErrorLike, target: ResponseTarget): RestResponse {
  const extensions = error.extensions ?? {};
  if (!isErrorCode(extensions.code)) return errorResponse('INTERNAL', 'Internal error', target);
  const http = (extensions.http ?? {}) as { status?: unknown; headers?: unknown };
  const status = typeof http.status === 'number' ? http.status : undefined;
  const headers = isStringRecord(http.headers) ? http.headers : undefined;
  return errorResponse(extensions.code, error.message, target, { status, headers, details: restDetails(extensions.details) });
}

/**
 * An error's details as REST answers them: `{parameter, message}`, also for the problems a resolver named by
 * their GraphQL path (`{field: 'input.settings.retryAttempts'}` → `settings.retry_attempts`, the body's name).
 */
function restDetails(details: unknown): unknown {
  if (!Array.isArray(details)) return details;
  return details.map((item: unknown) =>
    typeof item === 'object' && item !== null && 'field' in item && 'message' in item
      ? { parameter: restNameOfGraphQLPath(String(item.field)), message: String(item.message) }
      : item,
  );
}

/** The envelope for a route's execution result. `query` is the parsed query string of a list route. */
export function resultResponse(
  route: CompiledRoute,
  result: ExecutionResult,
  query: ListQuery | null,
  target: ResponseTarget,
): RestResponse {
  const firstError = result.errors?.[0];
  if (firstError) return graphqlErrorResponse(firstError, target);
  const value = (result.data as Record<string, unknown> | null | undefined)?.[route.rootKey];
  const response = route.spec.response;
  const omit = omittedNullMembers(route);
  if (response.kind === 'list') {
    if (!query) throw new Error('a list route needs its parsed query');
    const page = value as ListResult;
    const selected = query.select;
    const items = page.nodes.map((node) =>
      selected === null ? withoutNullMembers(node, omit) : inSelectOrder(withoutNullMembers(node, omit), selected),
    );
    // A cursor page's position is the one its cursor carries.
    const position = query.cursor === null ? query : { ...query, offset: page.offset, page: Math.floor(page.offset / query.limit) + 1 };
    const headers: Record<string, string> =
      page.pageInfo.hasNextPage && page.pageInfo.endCursor ? { Link: nextPageLink(target.requestUrl, page.pageInfo.endCursor) } : {};
    return {
      status: 200,
      body: {
        msg: countMessage(items.length, response.list),
        data: items,
        meta: listMeta(response.list, position, page.totalCount, items.length),
      },
      headers,
    };
  }
  if (value === null || value === undefined) {
    if (response.kind === 'item' && response.nullIsNoContent) return { status: 204, body: null, headers: {} };
    return errorResponse('NOT_FOUND', response.notFound, target);
  }
  const item = withoutNullMembers(value as Record<string, unknown>, omit);
  if (response.kind === 'item' && response.created) {
    const location = `${target.origin}${response.created.location.replace('{id}', encodeURIComponent(String(item.id)))}`;
    return { status: 201, body: { msg: response.msg, data: item }, headers: { Location: location } };
  }
  return ok({ msg: response.msg, data: response.kind === 'item-in-array' ? [item] : item });
}

const omitted = new WeakMap<CompiledRoute, ReadonlySet<string>>();

/** The route's object-valued fields whose null members are left out, as a set built once per route. */
function omittedNullMembers(route: CompiledRoute): ReadonlySet<string> {
  let fields = omitted.get(route);
  if (!fields) {
    fields = new Set(route.spec.omitNullMembers ?? []);
    omitted.set(route, fields);
  }
  return fields;
}

function ok(body: unknown): RestResponse {
  return { status: 200, body, headers: {} };
}

function countMessage(count: number, list: ListSpec): string {
  return `${count} ${count === 1 ? list.noun.one : list.noun.many}`;
}

function listMeta(list: ListSpec, query: ListQuery, total: number, count: number): Record<string, unknown> {
  const meta: Record<string, unknown> = {};
  const echoedParams = Object.entries(query.reserved).flatMap(([param, raw]) => {
    const spec = list.params[param];
    return spec ? [{ field: param, operator: spec.echo.operator, value: spec.echo.value(raw) }] : [];
  });
  const filters = [...echoedParams, ...describeFilters(query.filters)];
  if (filters.length > 0) meta.filters = filters;
  if (query.order.length > 0) meta.order = describeOrder(query.order);
  if (query.select !== null) meta.select = query.select;
  meta.pagination = list.pagination === 'sync' ? syncPagination(query, total, count) : genericPagination(query, total, count);
  return meta;
}

/** `{}` as the spec shows for catalog lists, unless the caller paged or the default window cut the list short. */
function genericPagination(query: ListQuery, total: number, count: number): Record<string, number> {
  if (!query.paginationRequested && count >= total) return {};
  return { limit: query.limit, page: query.page, pages: Math.ceil(total / query.limit), total };
}

function syncPagination(query: ListQuery, total: number, count: number): Record<string, number> {
  return {
    current_count: count,
    current_page: query.page,
    per_page: query.limit,
    total_pages: Math.ceil(total / query.limit),
    total_items: total,
  };
}

/**
 * Leaves out the null members of the named object-valued fields: the spec shows only members that are set. The
 * item and those objects are the execution result's own, so they are changed in place, no object copied: a null
 * member becomes undefined, which JSON leaves out as it leaves out a missing one. A delete would be the same
 * bytes, but turns the object to V8's slow dictionary form, slower to build and to stringify.
 */
export function withoutNullMembers(item: Record<string, unknown>, fields: ReadonlySet<string>): Record<string, unknown> {
  for (const field of fields) {
    const value = item[field];
    if (value === null || typeof value !== 'object') continue;
    const members = value as Record<string, unknown>;
    for (const key in members) if (members[key] === null) members[key] = undefined;
  }
  return item;
}

/**
 * The item with its members in the order `select` names them (as PostgREST answers), not the operation's: the
 * selection runs through the document's @include directives, which keep the document's order.
 */
export function inSelectOrder(item: Record<string, unknown>, select: readonly string[]): Record<string, unknown> {
  const ordered: Record<string, unknown> = {};
  for (const name of select) if (Object.hasOwn(item, name)) ordered[name] = item[name];
  return ordered;
}

function isStringRecord(value: unknown): value is Record<string, string> {
  return value !== null && typeof value === 'object' && Object.values(value).every((v) => typeof v === 'string');
}
