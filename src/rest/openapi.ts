import { messageSchema, WEBHOOK_EVENT_TYPES } from '../domain/webhook-messages.js';
import { SESSION_SECURITY_SCHEME, signInPaths, signInSchemas } from './sign-in-openapi.js';
import { errorCodeOfStatus, exampleErrorBody } from '../errors.js';
import { heldByEveryRole, isPermission, rolesWith } from '../auth/permissions.js';
import { OAUTH_SCOPE_DESCRIPTIONS } from '../auth/oauth-clients.js';
import type { CompiledRoute, JsonSchema, RestField } from './compile-routes.js';
import { filterSchema, maxPage, orderSchema, PATH_ID_SCHEMA, plainParamSchema, SEARCH_SCHEMA, selectSchema } from './openapi-grammar.js';
import { QUERY_LIMITS } from './query-params.js';
import { STREAM_PATH_SUFFIX } from './routes.js';

// OpenAPI 3.1 for the REST routes, built from the compiled route table: parameters from each route's
// fields (which the document's selection and the schema determine), response schemas from the same
// fields. Nothing here is written per endpoint, so the document cannot drift from what is served.

const SCHEMA_REF = '#/components/schemas/';
const RESPONSE_REF = '#/components/responses/';

/** Every error status an operation may answer, the response component it refers to, and when it happens. */
const ERROR_RESPONSES: Record<number, { name: string; description: string }> = {
  400: {
    name: 'InvalidQuery',
    description:
      'The query string, a path parameter, a header value or the body is invalid; msg lists every problem and error.details names each one `{parameter, message}`.',
  },
  401: { name: 'Unauthorized', description: 'The credential is missing, malformed, unknown, expired or revoked.' },
  403: {
    name: 'Forbidden',
    description:
      'The credential is valid but its role lacks the permission the operation needs; msg names it (e.g. the engine role on the catalog).',
  },
  404: { name: 'NotFound', description: "No such item for the calling tenant (another tenant's items are not found either)." },
  408: { name: 'RequestTimeout', description: 'The request was sent too slowly (headers within 10 s, the whole request within 30 s).' },
  409: { name: 'Conflict', description: 'The request conflicts with the current state of the resource; msg names that state.' },
  413: { name: 'PayloadTooLarge', description: 'The request body is over 1 MiB.' },
  414: { name: 'UriTooLong', description: 'The URL (path and query string) is over 8 KiB.' },
  415: { name: 'UnsupportedMediaType', description: 'The body is not sent as one of the media types the operation takes.' },
  422: { name: 'IdempotencyKeyReused', description: 'The Idempotency-Key was used within 24 hours for another request.' },
  429: {
    name: 'RateLimited',
    description: 'Too many requests for this credential, or (event streams) too many open streams for it; retry after Retry-After seconds.',
  },
  431: { name: 'HeadersTooLarge', description: 'The request headers are over 16 KB.' },
  500: { name: 'Internal', description: 'An unexpected error; it carries no details, and req_id identifies it in the server log.' },
  503: {
    name: 'Unavailable',
    description:
      'The database is unreachable, the request ran past the time limit, or (event streams) the server holds as many open streams as it serves; retry after Retry-After seconds.',
  },
};

/** What any request can be answered with: its query string, its size, its credential, its rate and the server's state. */
const ANY_REQUEST_STATUSES = [400, 401, 408, 413, 414, 429, 431, 500, 503];

/** The error body of one status: its code (see ERROR_CODES' statuses), with `details` on 400 only. */
function statusErrorBodySchema(status: number): JsonSchema {
  const code = errorCodeOfStatus(status);
  if (!code) throw new Error(`no error code answers HTTP ${status}`);
  return errorBodySchema([code], status === 400, `The page of the code: /docs/errors/${code}.`);
}

/** `{msg, error: {code, docs, req_id, details?}}` with `code` one of `codes`. */
function errorBodySchema(codes: readonly string[], withDetails: boolean, docs: string): JsonSchema {
  return {
    type: 'object',
    required: ['msg', 'error'],
    additionalProperties: false,
    properties: {
      msg: { type: 'string', description: 'Human-readable explanation.' },
      error: {
        type: 'object',
        required: ['code', 'docs', 'req_id'],
        additionalProperties: false,
        properties: {
          code: { type: 'string', enum: codes },
          docs: { type: 'string', format: 'uri', description: docs },
          req_id: { type: 'string', pattern: '^req_\\d+$' },
          ...(withDetails ? { details: { $ref: `${SCHEMA_REF}ProblemDetails` } } : {}),
        },
      },
    },
  };
}

/** The OpenAPI 3.1 document of the compiled routes. */
export function openApiDocument(routes: readonly CompiledRoute[]): Record<string, unknown> {
  const schemas: Record<string, JsonSchema> = { ...sharedSchemas() };
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    addComponent(schemas, route.spec.itemSchema, route.itemSchema);
    if (route.spec.response.kind === 'list') addComponent(schemas, selectionSchemaName(route), selectionSchema(route.itemSchema));
    paths[route.spec.path] ??= {};
    const operations = paths[route.spec.path]!;
    operations[route.spec.method.toLowerCase()] = operationObject(route);
    if (route.spec.stream) paths[`${route.spec.path}${STREAM_PATH_SUFFIX}`] = { get: streamOperationObject(route) };
    // The spec writes the sync list with a trailing slash; both are served (as every path is), and this one is
    // documented so that a validator does not take it for `/syncs/{id}` with an empty id.
    if (route.spec.operationId === 'listSyncs') {
      paths[`${route.spec.path}/`] = {
        get: operationObject(route, 'listSyncsTrailingSlash', `${route.spec.summary} (the spec's path, with a trailing slash)`),
      };
    }
  }
  Object.assign(paths, signInPaths());
  Object.assign(schemas, signInSchemas());
  addMessageSchemas(schemas);
  return {
    openapi: '3.1.0',
    info: {
      title: 'Integrations & Sync API',
      version: 'v1',
      description: API_DESCRIPTION,
      license: { name: 'MIT', identifier: 'MIT' },
      contact: { name: 'Integrations & Sync API maintainers' },
    },
    servers: [{ url: '/', description: 'The server that serves this document.' }],
    tags: [
      { name: 'Catalog', description: 'Categories and applications that can be connected.' },
      { name: 'Connections', description: "The calling tenant's connected applications." },
      { name: 'Syncs', description: 'Records of synchronization runs.' },
      { name: 'Members', description: "The organization's members (people who sign in): invite, change role, remove. Admin only." },
      { name: 'Activity', description: 'Who did what, when and from where: the activity log of the organization. Admin only.' },
      {
        name: 'OAuth applications',
        description:
          "Partners' applications of the authorization server (OAuth 2.0 authorization code with PKCE): members approve them on the console's consent page. Admin only.",
      },
      {
        name: 'OAuth approvals',
        description:
          "Members' approvals of partners' applications, given on the console's consent page: a member lists and revokes their own, an admin every one of the organization.",
      },
      {
        name: 'OAuth clients',
        description:
          "Service users' OAuth clients of the authorization server (OAuth 2.0 client credentials): short-lived tokens instead of a personal access token. Admin only.",
      },
      {
        name: 'Single sign-on',
        description:
          "The organization's OpenID Connect provider, whose accounts sign its members in (GET /api/v1/auth/sso/start). Admin only.",
      },
      {
        name: 'Sign-in',
        description:
          'Members sign in and out, and choose a password with an invitation. The session cookie is then a credential on every endpoint.',
      },
      {
        name: 'Webhooks',
        description:
          'Endpoints that receive the events, signed with Standard Webhooks (webhook-id, webhook-timestamp, webhook-signature: v1,<base64 HMAC-SHA256>), and their delivery log. The messages are listed under webhooks.',
      },
    ],
    security: [{ token: [] }, { bearer: [] }, { oauth2: [] }, { session: [] }],
    paths,
    webhooks: webhookMessages(),
    components: {
      schemas,
      responses: Object.fromEntries(
        Object.entries(ERROR_RESPONSES).map(([status, { name, description }]) => {
          const code = errorCodeOfStatus(Number(status))!;
          const retry = Number(status) === 429 || Number(status) === 503;
          return [
            name,
            {
              description: `${code}: ${description}`,
              headers: retry
                ? {
                    ...requestIdHeader(),
                    'Retry-After': { description: 'Seconds to wait before retrying.', schema: { type: 'string', pattern: '^\\d+$' } },
                  }
                : requestIdHeader(),
              content: {
                'application/json': { schema: statusErrorBodySchema(Number(status)), example: exampleErrorBody(code, Number(status)) },
              },
            },
          ];
        }),
      ),
      headers: {
        'X-Request-Id': {
          description: 'The request id (`req_<digits>`), as error bodies show it.',
          schema: { type: 'string', pattern: '^req_\\d+$' },
        },
      },
      securitySchemes: {
        token: {
          type: 'apiKey',
          in: 'header',
          name: 'Authorization',
          description:
            'A personal access token of a service user, sent as `Authorization: Token <token>`. In the API reference page, paste the token alone: the page adds `Token `.',
        },
        bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: '`Authorization: Bearer <JWT>`.' },
        oauth2: {
          type: 'oauth2',
          description:
            "An access token of this server's authorization server (metadata at `/.well-known/oauth-authorization-server`), sent as `Authorization: Bearer <access token>`. A service user's OAuth client gets one with the client credentials grant; it acts with the service user's tenant and, at most, the role its scopes name. A partner's application gets one with the authorization code grant (PKCE with S256 required) once a member approves it on the console's consent page; it acts for that member with the scopes both the application and the member's role allow (a reader: read; an admin: read and write; engine never), and its refresh token rotates at each use.",
          flows: {
            clientCredentials: { tokenUrl: '/oauth/token', scopes: OAUTH_SCOPE_DESCRIPTIONS },
            authorizationCode: {
              authorizationUrl: '/oauth/authorize',
              tokenUrl: '/oauth/token',
              refreshUrl: '/oauth/token',
              scopes: OAUTH_SCOPE_DESCRIPTIONS,
            },
          },
        },
        session: SESSION_SECURITY_SCHEME,
      },
    },
  };
}

const API_DESCRIPTION = `REST facade of the Integrations & Sync API. Every endpoint needs \`Authorization: Token <personal access token>\`, \`Authorization: Bearer <JWT>\` or \`Authorization: Bearer <OAuth access token>\`.

List endpoints accept:
- **Filters** \`field=operator.value\`: eq, neq, in (\`in.(a,b,"c,d")\`), is (\`is.null\`, \`is.not_null\`, \`is.true\`, \`is.false\`), gt, lt, gte, lte, like and ilike (\`*\` is the wildcard, at the start and/or end). Prefix \`not.\` negates; several conditions are combined with AND. Timestamps are ISO 8601 with Z or an offset, or a date.
- **select** \`select=id,name\`: only those fields are returned (and fetched).
- **search** a case-insensitive keyword over the fields the endpoint names.
- **order** \`order=started_at.desc.nullslast,id.asc\`.
- **limit** with **offset** or **page**. Generic lists answer \`meta.pagination\` as \`{limit, page, pages, total}\` when paginated (an empty object otherwise); the sync list always answers \`{current_count, current_page, per_page, total_pages, total_items}\`.

\`meta.filters\`, \`meta.order\` and \`meta.select\` echo what was applied.

Limits, each answered with 400 INVALID_QUERY (414 for the URL): the URL (path and query string) is at most 8 KiB; a parameter's value at most ${QUERY_LIMITS.maxValueLength} characters; at most ${QUERY_LIMITS.maxFilters} filter conditions and ${QUERY_LIMITS.maxInMembers} \`in\` members; \`search\` at most ${QUERY_LIMITS.maxSearchLength} characters; at most one of \`offset\`, \`page\` and \`cursor\` (each parameter's description says so; \`x-mutually-exclusive-parameters\` lists the pairs); each parameter once; no NUL character anywhere. An id that names nothing is 404, whatever its shape. The parameter schemas below are the grammar the server parses: a request they allow is not refused (but \`cursor\`, which takes only a value the server issued). Errors answer \`{msg, error: {code, docs, req_id}}\`; \`docs\` links to the code's page.`;

/** The error statuses of an operation: any request's, the route's own, 403 where a role lacks its permission, 404 where it names an item. */
function errorStatuses(route: CompiledRoute, own: readonly number[]): number[] {
  const { permission } = route;
  const someRoleLacks = permission !== null && isPermission(permission) && !heldByEveryRole(permission);
  return [
    ...new Set([
      ...ANY_REQUEST_STATUSES,
      ...own,
      // A session cookie on a state-changing request without X-Requested-With is 403 whatever the role.
      ...(someRoleLacks || route.spec.method !== 'GET' ? [403] : []),
      ...(route.pathParams.length > 0 ? [404] : []),
    ]),
  ].sort((a, b) => a - b);
}

function errorResponseRefs(statuses: readonly number[]): Record<string, unknown> {
  return Object.fromEntries(
    statuses.map((status) => {
      const response = ERROR_RESPONSES[status];
      if (!response) throw new Error(`no error response documented for HTTP ${status}`);
      return [status, { $ref: `${RESPONSE_REF}${response.name}` }];
    }),
  );
}

function permissionNote(route: CompiledRoute): string {
  const { permission } = route;
  if (!permission || !isPermission(permission)) return '';
  return `\n\nNeeds the permission \`${permission}\` (roles: ${rolesWith(permission).join(', ')}).`;
}

function operationObject(
  route: CompiledRoute,
  operationId = route.spec.operationId,
  summary = route.spec.summary,
): Record<string, unknown> {
  const { spec } = route;
  const created = spec.response.kind === 'item' && spec.response.created !== undefined;
  const streamPath = `${spec.path}${STREAM_PATH_SUFFIX}`;
  return {
    operationId,
    ...(spec.response.kind === 'list'
      ? {
          'x-mutually-exclusive-parameters': [
            ['offset', 'page'],
            ['cursor', 'offset'],
            ['cursor', 'page'],
          ],
          // The exports answer 200 by Accept: kept out of the 200's content so that the JSON is the only body a
          // generated client types there.
          'x-export-media-types': exportContent(route),
        }
      : {}),
    ...(spec.stream ? { 'x-event-stream-operation': spec.stream.operationId } : {}),
    summary,
    description:
      (spec.stream
        ? `${spec.description}\n\n**Event stream.** With \`Accept: text/event-stream\` this path answers the event stream of \`GET ${streamPath}\` (${spec.stream.operationId}) instead: documented there, so that the JSON answer here is the only 200.`
        : spec.description) + permissionNote(route),
    tags: [spec.tag],
    parameters: [...pathParameters(route), ...queryParameters(route), ...(spec.method === 'POST' ? [IDEMPOTENCY_KEY_PARAMETER] : [])],
    ...(spec.body
      ? {
          requestBody: {
            required: spec.body.optional !== true,
            ...(spec.body.optional ? { description: 'No body is needed: send none (or `{}`).' } : {}),
            content: Object.fromEntries(
              spec.body.mediaTypes.map((type) => [type, { schema: spec.body?.schema, example: spec.body?.example }]),
            ),
          },
        }
      : {}),
    responses: {
      [created ? 201 : 200]: {
        description: spec.response.kind === 'list' ? 'The list envelope.' : created ? 'Created: the item envelope.' : 'The item envelope.',
        headers: created
          ? { ...requestIdHeader(), Location: { description: 'The URL of the created item.', schema: { type: 'string', format: 'uri' } } }
          : spec.response.kind === 'list'
            ? { ...requestIdHeader(), Link: NEXT_PAGE_LINK_HEADER }
            : requestIdHeader(),
        content: { 'application/json': { schema: envelopeSchema(route) } },
      },
      ...(spec.response.kind === 'item' && spec.response.nullIsNoContent
        ? { 204: { description: 'Nothing to answer (no body).', headers: requestIdHeader() } }
        : {}),
      ...errorResponseRefs(errorStatuses(route, spec.errors)),
    },
  };
}

/** The event stream of a streamed route, at its own path: the only answer there is `text/event-stream`. */
function streamOperationObject(route: CompiledRoute): Record<string, unknown> {
  const stream = route.spec.stream!;
  return {
    operationId: stream.operationId,
    summary: stream.summary,
    description: `${stream.description}\n\nThe same stream is answered at \`GET ${route.spec.path}\` when the request sends \`Accept: text/event-stream\` (as EventSource does not, use this path with EventSource).${permissionNote(route)}`,
    tags: [route.spec.tag],
    parameters: [
      ...pathParameters(route),
      ...Object.entries(stream.params).map(([name, param]) => ({
        name,
        in: 'query',
        description: param.description,
        schema: plainParamSchema('id'),
      })),
      LAST_EVENT_ID_PARAMETER,
    ],
    responses: {
      200: { description: 'The event stream.', headers: requestIdHeader(), content: { 'text/event-stream': eventStreamContent(route) } },
      ...errorResponseRefs(errorStatuses(route, [...new Set([...route.spec.errors, 404])])),
    },
  };
}

/** The cursor of a list's next page (rest/envelope.ts nextPageLink). */
const NEXT_PAGE_LINK_HEADER = {
  description:
    'RFC 8288: `<URL>; rel="next"` on a page that has rows after it: the same request with `cursor` in place of offset and page. Following it from the first page reaches every row once, in order, at any depth; absent on the last page.',
  schema: { type: 'string' },
};

/** The exports of a list (rest/export.ts): every matching row, by Accept. */
function exportContent(route: CompiledRoute): Record<string, unknown> {
  const shared = `every ${route.spec.itemSchema} the request's filters, select, search and order match, in list order, with no page limit (limit, offset, page and cursor are refused), streamed: the transfer of a cut-off export ends without its last chunk.`;
  return {
    'application/x-ndjson': {
      schema: { type: 'string', description: `With Accept: application/x-ndjson: ${shared} One JSON record (as in \`data\`) a line.` },
      example: '{"id":"syn_…","status":"success",…}\n{"id":"syn_…","status":"failed",…}\n',
    },
    'text/csv': {
      schema: {
        type: 'string',
        description: `With Accept: text/csv: ${shared} A header row of the field names, then a row a record (RFC 4180, CRLF); objects and arrays as JSON text, null as an empty cell.`,
      },
      example: 'id,status\r\nsyn_…,success\r\n',
    },
  };
}

const LAST_EVENT_ID_PARAMETER = {
  name: 'Last-Event-ID',
  in: 'header',
  required: false,
  description:
    "Resume after this event (the `id` of the last message received; EventSource sends it when it reconnects). An id past the tenant's last event is 400; one older than the event retention window gets an `event: error` message with code EVENTS_EXPIRED, then the end of the stream.",
  schema: { type: 'string', pattern: '^[0-9]{1,15}$' },
};

/** The `text/event-stream` answer of a streamed route: its messages, each an event of the item schema. */
function eventStreamContent(route: CompiledRoute): Record<string, unknown> {
  const stream = route.spec.stream!;
  return {
    schema: {
      type: 'string',
      description: `Server-Sent Events. Each change is a message \`id: <event id>\`, \`event: ${stream.event}\`, \`data: <${route.spec.itemSchema} as JSON>\`; an \`event: error\` message carries the error body ({msg, error}) and ends the stream (credential revoked or expired: UNAUTHORIZED; resume point past retention: EVENTS_EXPIRED; the server shutting down or the client too far behind: UNAVAILABLE). Comment lines (\`: heartbeat\`) every 15 s keep an idle stream open. Open streams are capped per credential (429 RATE_LIMITED beyond STREAMS_PER_CREDENTIAL) and per process (503 UNAVAILABLE beyond STREAMS_PER_PROCESS).`,
    },
    example: `id: 42\nevent: ${stream.event}\ndata: {"id":"syn_…","status":"in_progress",…}\n\n`,
  };
}

const IDEMPOTENCY_KEY_PARAMETER = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  description:
    'Does the POST at most once: the same key with the same body within 24 hours answers the first answer again (with Idempotent-Replayed: true) without redoing the work; with another body it is 422 IDEMPOTENCY_KEY_REUSED. Keys are per tenant.',
  schema: { type: 'string', pattern: '^[\\x21-\\x7e]{1,255}$' },
};

function pathParameters(route: CompiledRoute): unknown[] {
  return route.pathParams.map((name) => ({
    name,
    in: 'path',
    required: true,
    description:
      'Identifier of the item. Any string that names no item of the caller is 404; only one longer than 64 characters (or holding NUL) is 400.',
    schema: PATH_ID_SCHEMA,
    ...(route.spec.pathExamples?.[name] ? { example: route.spec.pathExamples[name] } : {}),
  }));
}

function queryParameters(route: CompiledRoute): unknown[] {
  const { response } = route.spec;
  if (response.kind !== 'list') return [];
  const { list } = response;
  const page = route.resource;
  if (!page) throw new Error(`list route ${route.spec.operationId} was compiled without its grammar`);
  const fieldNames = route.fields.map((f) => f.name);
  const sortable = route.fields.filter((f) => f.orderValue !== null).map((f) => f.name);
  const params: Array<Record<string, unknown>> = [];
  const endpointParams = new Set(Object.keys(list.params));
  for (const [name, param] of Object.entries(list.params)) {
    const field = route.fields.find((f) => f.name === name && f.filterKey !== null);
    const plain = plainParamSchema(name.endsWith('_id') ? 'id' : 'text');
    params.push({
      name,
      in: 'query',
      description: field
        ? `${param.description} A value in filter form (\`${name}=operator.value\`) is a filter on the field instead. ${filterDescription(field)}`
        : param.description,
      schema: field ? { anyOf: [plain, filterSchema(field)] } : plain,
    });
  }
  params.push(
    {
      name: 'select',
      in: 'query',
      description: `Comma-separated fields to return (the items then carry only those keys): ${fieldNames.join(', ')}.`,
      schema: selectSchema(fieldNames),
      example: fieldNames.slice(0, 2).join(','),
    },
    {
      name: 'search',
      in: 'query',
      description: `Case-insensitive keyword over ${list.searchFields.join(', ')}; surrounding spaces are ignored.`,
      schema: SEARCH_SCHEMA,
    },
    {
      name: 'order',
      in: 'query',
      description: `Comma-separated sort keys \`field[.asc|.desc][.nullsfirst|.nullslast]\` over ${sortable.join(', ')}; at most ${QUERY_LIMITS.maxOrderKeys}, each field once.`,
      schema: orderSchema(sortable),
    },
    {
      name: 'limit',
      in: 'query',
      description: `Page size, 1 to ${page.maxLimit}; default ${page.defaultLimit}.`,
      schema: { type: 'integer', minimum: 1, maximum: page.maxLimit, default: page.defaultLimit },
    },
    {
      name: 'offset',
      in: 'query',
      // No `default`: a client that fills in defaults (Swagger UI's "Try it out") would send offset and page together.
      description:
        'Items to skip (0 when neither offset nor page is given). Not together with page or cursor: a request with two of offset, page and cursor is 400 INVALID_QUERY.',
      schema: { type: 'integer', minimum: 0, maximum: page.maxOffset },
    },
    {
      name: 'page',
      in: 'query',
      description: `Page number from 1, in pages of limit items. Not together with offset or cursor: a request with two of offset, page and cursor is 400 INVALID_QUERY. The page must start within offset ${page.maxOffset}: ${maxPage(page)} is the last page at every page size.`,
      schema: { type: 'integer', minimum: 1, maximum: maxPage(page) },
    },
    {
      name: 'cursor',
      in: 'query',
      description:
        'Where the page starts: the value a `Link: <…>; rel="next"` header of this same list carries (opaque, signed, bound to the filters, search and order). Not together with offset or page: a request with two of offset, page and cursor is 400 INVALID_QUERY. Pages by cursor reach every row, past the offset limit, each as fast as the first. Any other value is 400 INVALID_QUERY.',
      schema: { type: 'string', minLength: 1, maxLength: 8192, pattern: '^[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+$' },
      // Its schema is its shape only: a value the server did not issue for this list is refused.
      'x-server-issued': true,
    },
  );
  for (const field of route.fields) {
    if (field.filterKey === null || endpointParams.has(field.name)) continue;
    params.push({ name: field.name, in: 'query', description: filterDescription(field), schema: filterSchema(field) });
  }
  return params;
}

function filterDescription(field: RestField): string {
  const { spec } = field;
  const values = spec.type === 'enum' ? ` Values: ${(spec.enumValues ?? []).join(', ')}.` : '';
  const nulls = spec.nullable ? ' Nullable: `is.null`, `is.not_null`.' : '';
  return `Filter on ${field.name} (${spec.type}), as \`${field.name}=operator.value\`.${values}${nulls}`;
}

/** The item of a list answered with `select`: the selected members only, so every member is optional. */
function selectionSchemaName(route: CompiledRoute): string {
  return `${route.spec.itemSchema}Selection`;
}

function selectionSchema(item: JsonSchema): JsonSchema {
  const { required: _required, ...rest } = item;
  return { ...rest, description: 'An item of a list answered with select: only the selected members.' };
}

function envelopeSchema(route: CompiledRoute): JsonSchema {
  const item = { $ref: `${SCHEMA_REF}${route.spec.itemSchema}` };
  const msg = { type: 'string', description: 'Human-readable message.' };
  const { response } = route.spec;
  switch (response.kind) {
    case 'list':
      return {
        type: 'object',
        required: ['msg', 'data', 'meta'],
        additionalProperties: false,
        properties: {
          msg,
          data: {
            type: 'array',
            // Standard OpenAPI for what `select` does, so that validators and generated clients agree with the server:
            // an item is the full one, or (with select) the selection schema, whose members are all optional.
            items: { anyOf: [item, { $ref: `${SCHEMA_REF}${selectionSchemaName(route)}` }] },
            description: `Each item in full (${route.spec.itemSchema}); with \`select\`, only the selected members, in the order select names them (${selectionSchemaName(route)}).`,
          },
          meta: { $ref: `${SCHEMA_REF}${response.list.pagination === 'sync' ? 'SyncListMeta' : 'ListMeta'}` },
        },
      };
    case 'item':
      return { type: 'object', required: ['msg', 'data'], additionalProperties: false, properties: { msg, data: item } };
    case 'item-in-array':
      return {
        type: 'object',
        required: ['msg', 'data'],
        additionalProperties: false,
        properties: { msg, data: { type: 'array', items: item, minItems: 1, maxItems: 1 } },
      };
  }
}

function sharedSchemas(): Record<string, JsonSchema> {
  const echoes = {
    filters: {
      type: 'array',
      description: 'The filters applied, endpoint parameters included; operator carries a `not.` prefix when negated.',
      items: stringObject(['field', 'operator', 'value']),
    },
    order: { type: 'array', description: 'The sort keys applied.', items: stringObject(['field', 'direction', 'nulls']) },
    select: { type: 'array', description: 'The fields selected.', items: { type: 'string' } },
  };
  return {
    ProblemDetails: {
      type: 'array',
      description:
        'For INVALID_QUERY: each problem and what it is about: a query parameter, a path parameter, a header, or a body member by its path (`settings.retry_attempts`; `(body)` for the body as a whole).',
      items: stringObject(['parameter', 'message']),
    },
    GenericPagination: {
      type: 'object',
      required: ['limit', 'page', 'pages', 'total'],
      additionalProperties: false,
      properties: Object.fromEntries(['limit', 'page', 'pages', 'total'].map((k) => [k, { type: 'integer', minimum: 0 }])),
    },
    SyncPagination: {
      type: 'object',
      required: ['current_count', 'current_page', 'per_page', 'total_pages', 'total_items'],
      additionalProperties: false,
      properties: Object.fromEntries(
        ['current_count', 'current_page', 'per_page', 'total_pages', 'total_items'].map((k) => [k, { type: 'integer', minimum: 0 }]),
      ),
    },
    ListMeta: {
      type: 'object',
      required: ['pagination'],
      additionalProperties: false,
      properties: {
        ...echoes,
        pagination: {
          description: 'An empty object, or the page when pagination was asked for (or the default page cut the list short).',
          anyOf: [{ type: 'object', maxProperties: 0 }, { $ref: `${SCHEMA_REF}GenericPagination` }],
        },
      },
    },
    SyncListMeta: {
      type: 'object',
      required: ['pagination'],
      additionalProperties: false,
      properties: { ...echoes, pagination: { $ref: `${SCHEMA_REF}SyncPagination` } },
    },
  };
}

function stringObject(keys: string[]): JsonSchema {
  return {
    type: 'object',
    required: keys,
    additionalProperties: false,
    properties: Object.fromEntries(keys.map((k) => [k, { type: 'string' }])),
  };
}

function requestIdHeader(): Record<string, unknown> {
  return { 'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' } };
}

/** Routes may share an item schema (list and item of the same resource) only when they derive the same one. */
function addComponent(schemas: Record<string, JsonSchema>, name: string, schema: JsonSchema): void {
  const existing = schemas[name];
  if (existing && JSON.stringify(existing) !== JSON.stringify(schema)) {
    throw new Error(`OpenAPI schema ${name} is derived differently by two routes`);
  }
  schemas[name] = schema;
}

/** The component that holds the message of one event type: `sync.in_progress` → `SyncInProgressMessage`. */
function messageSchemaName(type: string): string {
  return `${type
    .split(/[._]/)
    .map((word) => word.charAt(0).toUpperCase() + word.slice(1))
    .join('')}Message`;
}

/**
 * The message of each event type as a component, which both the `webhooks` entries and a delivery's `payload`
 * (the message sent) refer to.
 */
function addMessageSchemas(schemas: Record<string, JsonSchema>): void {
  const settings = (schemas.ConnectedApplication!.properties as Record<string, JsonSchema>).settings!;
  for (const type of WEBHOOK_EVENT_TYPES) schemas[messageSchemaName(type)] = messageSchema(type, schemas.SyncRecord!, settings);
  const messages = { anyOf: WEBHOOK_EVENT_TYPES.map((type) => ({ $ref: `${SCHEMA_REF}${messageSchemaName(type)}` })) };
  for (const name of ['WebhookDelivery', 'WebhookDeliveryListEntry']) {
    const properties = schemas[name]?.properties as Record<string, JsonSchema> | undefined;
    if (properties?.payload) properties.payload = { description: properties.payload.description, ...messages };
  }
}

/**
 * OpenAPI 3.1 `webhooks`: the message each event type sends to an endpoint (POST, JSON, signed), and what the
 * receiver answers.
 */
function webhookMessages(): Record<string, unknown> {
  const signatureHeaders = [
    {
      name: 'webhook-id',
      in: 'header',
      required: true,
      schema: { type: 'string' },
      description: 'The message id (msg_…): the same on every attempt of this message. De-duplicate by it.',
    },
    {
      name: 'webhook-timestamp',
      in: 'header',
      required: true,
      schema: { type: 'string' },
      description: 'Unix seconds when this attempt was signed. Refuse old ones (Standard Webhooks libraries allow 5 minutes).',
    },
    {
      name: 'webhook-signature',
      in: 'header',
      required: true,
      schema: { type: 'string' },
      description:
        'v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>" keyed with the base64-decoded secret after whsec_>.',
    },
  ];
  return Object.fromEntries(
    WEBHOOK_EVENT_TYPES.map((type) => {
      const name = messageSchemaName(type);
      return [
        type,
        {
          post: {
            operationId: name.charAt(0).toLowerCase() + name.slice(1),
            summary: `${type} message`,
            description: `Sent to every enabled endpoint whose event_types include ${type} (or are empty)${type.startsWith('webhook.') ? '' : ", while the connection's settings.webhook_enabled is true"}. Answer 2xx within 10 s; anything else (a redirect too) is retried.`,
            parameters: signatureHeaders,
            requestBody: { required: true, content: { 'application/json': { schema: { $ref: `${SCHEMA_REF}${name}` } } } },
            responses: {
              '2XX': { description: 'Received: no retry.' },
              default: { description: 'Not received: retried on the documented schedule.' },
            },
          },
        },
      ];
    }),
  );
}
