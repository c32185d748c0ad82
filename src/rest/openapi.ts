import { messageSchema, WEBHOOK_EVENT_TYPES } from '../domain/webhook-messages.js';
import { SESSION_SECURITY_SCHEME, signInPaths, signInSchemas } from './sign-in-openapi.js';
import { ERROR_CODES, type ErrorCode } from '../errors.js';
import type { CompiledRoute, JsonSchema, RestField } from './compile-routes.js';
import { filterSchema, maxPage, orderSchema, PATH_ID_SCHEMA, plainParamSchema, SEARCH_SCHEMA, selectSchema } from './openapi-grammar.js';
import { QUERY_LIMITS } from './query-params.js';

// OpenAPI 3.1 for the REST routes, built from the compiled route table: parameters from each route's
// fields (which the document's selection and the schema determine), response schemas from the same
// fields. Nothing here is written per endpoint, so the document cannot drift from what is served.

const SCHEMA_REF = '#/components/schemas/';
const RESPONSE_REF = '#/components/responses/';

const ERROR_RESPONSES: Record<number, { name: string; code: ErrorCode; description: string }> = {
  400: { name: 'InvalidQuery', code: 'INVALID_QUERY', description: 'The query string, a path parameter or a value is invalid; msg lists every problem.' },
  401: { name: 'Unauthorized', code: 'UNAUTHORIZED', description: 'The credential is missing, malformed, unknown, expired or revoked.' },
  403: { name: 'Forbidden', code: 'UNAUTHORIZED', description: 'The credential is valid but its role lacks the permission (e.g. a reader deleting).' },
  404: { name: 'NotFound', code: 'NOT_FOUND', description: "No such item for the calling tenant (another tenant's items are not found either)." },
  409: { name: 'Conflict', code: 'CONFLICT', description: 'The request conflicts with the current state of the resource.' },
  413: { name: 'PayloadTooLarge', code: 'PAYLOAD_TOO_LARGE', description: 'The request body is over 1 MiB.' },
  422: { name: 'IdempotencyKeyReused', code: 'IDEMPOTENCY_KEY_REUSED', description: 'The Idempotency-Key was used within 24 hours for another request.' },
  415: { name: 'UnsupportedMediaType', code: 'UNSUPPORTED_MEDIA_TYPE', description: 'The body is not sent as one of the media types the operation takes.' },
  429: {
    name: 'RateLimited',
    code: 'RATE_LIMITED',
    description: 'Too many requests for this credential, or (event streams) too many open streams for it; retry after Retry-After seconds.',
  },
  500: { name: 'Internal', code: 'INTERNAL', description: 'An unexpected error; it carries no details, and req_id identifies it in the server log.' },
  503: {
    name: 'Unavailable',
    code: 'UNAVAILABLE',
    description: 'The database is unreachable, or (event streams) the server holds as many open streams as it serves; retry after Retry-After seconds.',
  },
};

const ALWAYS_DOCUMENTED = [401, 500, 503];

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
  }
  Object.assign(paths, signInPaths());
  Object.assign(schemas, signInSchemas());
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
      { name: 'Sign-in', description: 'Members sign in and out, and choose a password with an invitation. The session cookie is then a credential on every endpoint.' },
      {
        name: 'Webhooks',
        description:
          'Endpoints that receive the events, signed with Standard Webhooks (webhook-id, webhook-timestamp, webhook-signature: v1,<base64 HMAC-SHA256>), and their delivery log. The messages are listed under webhooks.',
      },
    ],
    security: [{ token: [] }, { bearer: [] }, { session: [] }],
    paths,
    webhooks: webhookMessages(),
    components: {
      schemas,
      responses: Object.fromEntries(
        Object.values(ERROR_RESPONSES).map(({ name, description }) => [
          name,
          { description, headers: requestIdHeader(), content: { 'application/json': { schema: { $ref: `${SCHEMA_REF}ErrorBody` } } } },
        ]),
      ),
      headers: {
        'X-Request-Id': { description: 'The request id (`req_<digits>`), as error bodies show it.', schema: { type: 'string', pattern: '^req_\\d+$' } },
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
        session: SESSION_SECURITY_SCHEME,
      },
    },
  };
}

const API_DESCRIPTION = `REST facade of the Integrations & Sync API. Every endpoint needs \`Authorization: Token <personal access token>\` or \`Authorization: Bearer <JWT>\`.

List endpoints accept:
- **Filters** \`field=operator.value\`: eq, neq, in (\`in.(a,b,"c,d")\`), is (\`is.null\`, \`is.not_null\`, \`is.true\`, \`is.false\`), gt, lt, gte, lte, like and ilike (\`*\` is the wildcard, at the start and/or end). Prefix \`not.\` negates; several conditions are combined with AND. Timestamps are ISO 8601 with Z or an offset, or a date.
- **select** \`select=id,name\`: only those fields are returned (and fetched).
- **search** a case-insensitive keyword over the fields the endpoint names.
- **order** \`order=started_at.desc.nullslast,id.asc\`.
- **limit** with **offset** or **page**. Generic lists answer \`meta.pagination\` as \`{limit, page, pages, total}\` when paginated (an empty object otherwise); the sync list always answers \`{current_count, current_page, per_page, total_pages, total_items}\`.

\`meta.filters\`, \`meta.order\` and \`meta.select\` echo what was applied.

Limits, each answered with 400 INVALID_QUERY (414 for the URL): the URL (path and query string) is at most 8 KiB; a parameter's value at most ${QUERY_LIMITS.maxValueLength} characters; at most ${QUERY_LIMITS.maxFilters} filter conditions and ${QUERY_LIMITS.maxInMembers} \`in\` members; \`search\` at most ${QUERY_LIMITS.maxSearchLength} characters; \`offset\` and \`page\` not together (\`x-mutually-exclusive-parameters\`); each parameter once; no NUL character anywhere. An id that names nothing is 404, whatever its shape. The parameter schemas below are the grammar the server parses: a request they allow is not refused. Errors answer \`{msg, error: {code, docs, req_id}}\`; \`docs\` links to the code's page.`;

function operationObject(route: CompiledRoute): Record<string, unknown> {
  const { spec } = route;
  const created = spec.response.kind === 'item' && spec.response.created !== undefined;
  const statuses = [...new Set([...spec.errors, ...ALWAYS_DOCUMENTED])].sort((a, b) => a - b);
  return {
    operationId: spec.operationId,
    ...(spec.response.kind === 'list' ? { 'x-mutually-exclusive-parameters': [['offset', 'page']] } : {}),
    summary: spec.summary,
    description: spec.stream ? `${spec.description}\n\n**Event stream.** ${spec.stream.description}` : spec.description,
    tags: [spec.tag],
    parameters: [
      ...pathParameters(route),
      ...queryParameters(route),
      ...(spec.method === 'POST' ? [IDEMPOTENCY_KEY_PARAMETER] : []),
      ...(spec.stream ? [LAST_EVENT_ID_PARAMETER] : []),
    ],
    ...(spec.body
      ? {
          requestBody: {
            required: true,
            content: Object.fromEntries(spec.body.mediaTypes.map((type) => [type, { schema: spec.body?.schema, example: spec.body?.example }])),
          },
        }
      : {}),
    responses: {
      [created ? 201 : 200]: {
        description: spec.response.kind === 'list' ? 'The list envelope.' : created ? 'Created: the item envelope.' : 'The item envelope.',
        headers: created
          ? { ...requestIdHeader(), Location: { description: 'The URL of the created item.', schema: { type: 'string', format: 'uri' } } }
          : requestIdHeader(),
        content: {
          'application/json': { schema: envelopeSchema(route) },
          ...(spec.stream ? { 'text/event-stream': eventStreamContent(route) } : {}),
        },
      },
      ...(spec.response.kind === 'item' && spec.response.nullIsNoContent
        ? { 204: { description: 'Nothing to answer (no body).', headers: requestIdHeader() } }
        : {}),
      ...Object.fromEntries(
        statuses.map((status) => {
          const response = ERROR_RESPONSES[status];
          if (!response) throw new Error(`no error response documented for HTTP ${status}`);
          return [status, { $ref: `${RESPONSE_REF}${response.name}` }];
        }),
      ),
    },
  };
}

const LAST_EVENT_ID_PARAMETER = {
  name: 'Last-Event-ID',
  in: 'header',
  required: false,
  description:
    'With Accept: text/event-stream only: resume after this event (the `id` of the last message received; EventSource sends it when it reconnects). An id past the tenant\'s last event is 400; one older than the event retention window gets an `event: error` message with code EVENTS_EXPIRED, then the end of the stream.',
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
    description: 'Identifier of the item. Any string that names no item of the caller is 404; only one longer than 64 characters (or holding NUL) is 400.',
    schema: PATH_ID_SCHEMA,
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
      description: 'Items to skip (0 when neither offset nor page is given); not together with page.',
      schema: { type: 'integer', minimum: 0, maximum: page.maxOffset },
    },
    {
      name: 'page',
      in: 'query',
      description: `Page number from 1, in pages of limit items; not together with offset. The page must start within offset ${page.maxOffset}: ${maxPage(page)} is the last page at every page size.`,
      schema: { type: 'integer', minimum: 1, maximum: maxPage(page) },
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
          data: { type: 'array', items: { anyOf: [item, { $ref: `${SCHEMA_REF}${selectionSchemaName(route)}` }] } },
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
    ErrorBody: {
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
            code: { type: 'string', enum: Object.keys(ERROR_CODES) },
            docs: { type: 'string', format: 'uri', description: 'Documentation of the code.' },
            req_id: { type: 'string', pattern: '^req_\\d+$' },
            details: {
              type: 'array',
              description: 'For INVALID_QUERY: each problem and the parameter it is about.',
              items: stringObject(['parameter', 'message']),
            },
          },
        },
      },
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

/**
 * OpenAPI 3.1 `webhooks`: the message each event type sends to an endpoint (POST, JSON, signed), and what the
 * receiver answers.
 */
function webhookMessages(): Record<string, unknown> {
  const signatureHeaders = [
    { name: 'webhook-id', in: 'header', required: true, schema: { type: 'string' }, description: 'The message id (msg_…): the same on every attempt of this message. De-duplicate by it.' },
    { name: 'webhook-timestamp', in: 'header', required: true, schema: { type: 'string' }, description: 'Unix seconds when this attempt was signed. Refuse old ones (Standard Webhooks libraries allow 5 minutes).' },
    {
      name: 'webhook-signature',
      in: 'header',
      required: true,
      schema: { type: 'string' },
      description: 'v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>" keyed with the base64-decoded secret after whsec_>.',
    },
  ];
  return Object.fromEntries(
    WEBHOOK_EVENT_TYPES.map((type) => [
      type,
      {
        post: {
          summary: `${type} message`,
          description: `Sent to every enabled endpoint whose event_types include ${type} (or are empty)${type.startsWith('webhook.') ? '' : ", while the connection's settings.webhook_enabled is true"}. Answer 2xx within 10 s; anything else (a redirect too) is retried.`,
          parameters: signatureHeaders,
          requestBody: { required: true, content: { 'application/json': { schema: messageSchema(type) } } },
          responses: { '2XX': { description: 'Received: no retry.' }, default: { description: 'Not received: retried on the documented schedule.' } },
        },
      },
    ]),
  );
}
