import type { DocumentNode } from 'graphql';
import { INTEGRATIONS_BASE } from '../paths.js';
import { CONNECTION_BODY_SCHEMAS, createConnectionProblems, parseConnectionPatch } from '../domain/connection-input.js';
import { catalogId } from '../domain/category-kinds.js';
import { demoExamples } from '../seed/demo-examples.js';
import { camelCaseName, type FieldProblem } from '../domain/problems.js';
import { WEBHOOK_BODY_SCHEMAS, webhookBodyProblems } from '../domain/webhook-input.js';
import { parseClaimBody, parseSyncReport, parseTriggerBody, SYNC_BODY_SCHEMAS } from '../domain/sync-reports.js';
import { MEMBER_BODY_SCHEMAS, memberBodyProblems } from '../domain/member-input.js';
import { IDENTITY_PROVIDER_BODY_SCHEMA, identityProviderBodyProblems } from '../domain/identity-provider-input.js';
import {
  OAUTH_APPLICATION_BODY_SCHEMA,
  OAUTH_CLIENT_BODY_SCHEMA,
  oauthApplicationBodyProblems,
  oauthClientBodyProblems,
} from '../domain/oauth-application-input.js';
import * as operationDocuments from '../generated/graphql/graphql.js';
import type { RestContext } from './request-context.js';

// The REST surface as data, keyed by the operation each route runs: a route's operationId is the name of the
// GraphQL operation it runs (`listSyncs` runs `ListSyncs`, src/rest/operations/). A route says how path and
// query become variables, and which envelope the result goes into; it holds no resolver logic. Field names, their types, and which of them can be filtered or sorted are read from the
// document's selection (aliases are the REST names) and from the schema at start (see compile-routes.ts).

type HttpMethod = 'GET' | 'DELETE' | 'POST' | 'PATCH';

/** A JSON request body: how it is checked and which operation variables it sets. */
export interface BodySpec {
  /** Media types it may be sent as (the first is the documented one); anything else is 415. */
  mediaTypes: readonly string[];
  /** The body may be left out (no Content-Type, no bytes): it is then `{}`. */
  optional?: boolean;
  /**
   * Every problem of the body, named as the body names them, by the domain's one schema (and the catalog, for
   * what depends on it); none when valid.
   */
  problems: (body: unknown, context: RestContext) => readonly FieldProblem[] | Promise<readonly FieldProblem[]>;
  /** The operation variables a valid body sets; path parameters are added by name. */
  variables: (body: Record<string, unknown>) => Record<string, unknown>;
  /** JSON Schema of the body (the same parser's), and an example, for the OpenAPI document. */
  schema: Record<string, unknown>;
  example: Record<string, unknown>;
}

/** A query parameter with its own meaning on an endpoint (not a `field=op.value` filter). */
interface EndpointParam {
  /** The operation variable it sets. */
  variable: string;
  description: string;
  /** How it is echoed in meta.filters: the operator with the same meaning, and the value as that operator reads it. */
  echo: { operator: 'eq' | 'ilike'; value: (raw: string) => string };
}

export interface ListSpec {
  /** Pagination members of meta: the generic `{limit, page, pages, total}` or the sync list's own shape. */
  pagination: 'generic' | 'sync';
  params: Record<string, EndpointParam>;
  /** Which fields `search` scans, for the docs (the GraphQL field's `search` argument does the work). */
  searchFields: readonly string[];
  noun: { one: string; many: string };
}

type ResponseSpec =
  /** `{msg, data: [...], meta}`. */
  | { kind: 'list'; list: ListSpec }
  /**
   * `{msg, data: {...}}`; a null result is 404, or 204 without a body with `nullIsNoContent`. `created` answers
   * 201 with a `Location` of the item's own path (`{id}` is the item's id). `shownOnce` names members of `data`
   * that only the first answer carries (a secret): the answer kept for an Idempotency-Key replay has them null.
   */
  | {
      kind: 'item';
      msg: string;
      notFound: string;
      created?: { location: string };
      nullIsNoContent?: boolean;
      shownOnce?: readonly string[];
    }
  /** `{msg, data: [item]}`: a single item shown as a one-element array, as the spec does for endpoint 3. */
  | { kind: 'item-in-array'; msg: string; notFound: string };

/** The answer as an Idempotency-Key keeps it for replays: the `shownOnce` members of its `data` are null. */
export function replayableBody(response: ResponseSpec, body: unknown): unknown {
  if (response.kind !== 'item' || !response.shownOnce) return body;
  const data = (body as { data?: unknown } | null)?.data;
  if (typeof data !== 'object' || data === null) return body;
  return { ...(body as object), data: { ...data, ...Object.fromEntries(response.shownOnce.map((member) => [member, null])) } };
}

export interface RouteSpec {
  operationId: string;
  method: HttpMethod;
  /** `{name}` segments are path parameters; each sets the operation variable of the same name. */
  path: string;
  document: DocumentNode;
  summary: string;
  description: string;
  tag:
    | 'Catalog'
    | 'Connections'
    | 'Syncs'
    | 'Webhooks'
    | 'Members'
    | 'Activity'
    | 'Single sign-on'
    | 'OAuth applications'
    | 'OAuth approvals'
    | 'OAuth clients';
  response: ResponseSpec;
  /** Name of the data item's schema in the OpenAPI components. */
  itemSchema: string;
  /** Object-valued fields whose null members are left out rather than shown as null. */
  omitNullMembers?: readonly string[];
  /**
   * Served as a stream of `event` messages (Server-Sent Events) when the request asks for
   * `Accept: text/event-stream`: the subscription `document` runs with the path parameters and the query
   * parameters named in `params` (each sets its variable), and each result's root field is one message.
   */
  stream?: {
    document: DocumentNode;
    /** The stream is also served, whatever the Accept header, at the route's path + STREAM_PATH_SUFFIX: its own operation. */
    operationId: string;
    summary: string;
    event: string;
    params: Record<string, { variable: string; description: string }>;
    description: string;
  };
  /** Example values of path parameters that name demo data (the catalog's, the same in every database, or seed/demo-examples.ts'). */
  pathExamples?: Record<string, string>;
  /** Operation-specific statuses to document besides the shared error responses. */
  errors: readonly number[];
  /** POST and PATCH routes: their JSON body. */
  body?: BodySpec;
}

/** A streamed route's stream has its own path too: `/syncs/{id}/events` streams what `/syncs/{id}` streams with Accept. */
export const STREAM_PATH_SUFFIX = '/events';

/** A POST that takes nothing: no body at all, or `{}`. */
const NO_BODY: WrittenBody = {
  optional: true,
  problems: (body) => Object.keys(body as object).map((key) => ({ field: key, message: 'unknown member (this request takes no body)' })),
  variables: () => ({}),
  schema: { type: 'object', additionalProperties: false },
  example: {},
};

function problemsOf(result: object): readonly FieldProblem[] {
  return 'problems' in result ? (result.problems as FieldProblem[]) : [];
}

/**
 * `{application_id, settings: {sync_interval}}` → `{applicationId, settings: {syncInterval}}`: a REST body as
 * the GraphQL input names it, at every depth (GraphQL inputs are camelCase throughout, JSON members included).
 */
function camelMembers(body: Record<string, unknown>): Record<string, unknown> {
  const convert = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(convert);
    if (typeof value !== 'object' || value === null) return value;
    return Object.fromEntries(Object.entries(value).map(([key, member]) => [camelCaseName(key), convert(member)]));
  };
  return convert(body) as Record<string, unknown>;
}

function withoutSchemaKeyword(schema: Record<string, unknown>): Record<string, unknown> {
  const { $schema: _dialect, ...rest } = schema;
  return rest;
}

const KEYWORD_SEARCH = ['name', 'slug', 'description', 'keywords'] as const;

/** A catalog application for the examples: catalog ids derive from slugs, so it names Stripe in every database. */
const DEMO_APPLICATION_ID = catalogId('app', 'stripe');

/** The demo items the examples name, so that the API reference's "Try it out" works with its defaults. */
const DEMO = demoExamples();

type DocumentName = Extract<keyof typeof operationDocuments, `${string}Document`>;
type OperationIdOf<Name> = Name extends `${infer Operation}Document` ? Uncapitalize<Operation> : never;

/**
 * A route as the table writes it: its method and its path under INTEGRATIONS_BASE in one, and no document, since
 * it runs the operation its operationId names.
 */
type WrittenRoute = Omit<RouteSpec, 'operationId' | 'method' | 'path' | 'document' | 'body'> & {
  operationId: OperationIdOf<DocumentName>;
  route: `${HttpMethod} /${string}`;
  body?: WrittenBody;
};

/** A body as a route writes it: its media types follow from the method, its schema is the domain's as it is. */
type WrittenBody = Omit<BodySpec, 'mediaTypes'>;

/** What a body may be sent as: JSON, and for a PATCH a JSON Merge Patch (RFC 7396) first. */
const BODY_MEDIA_TYPES = { POST: ['application/json'], PATCH: ['application/merge-patch+json', 'application/json'] } as const;

function routeSpec({ route, body, ...written }: WrittenRoute): RouteSpec {
  const [method, path] = route.split(' ') as [HttpMethod, string];
  const documentName = `${written.operationId[0]!.toUpperCase()}${written.operationId.slice(1)}Document` as DocumentName;
  return {
    ...written,
    method,
    path: `${INTEGRATIONS_BASE}${path}`,
    // biome-ignore lint/performance/noDynamicNamespaceImportAccess: every document of the module is a route's or its stream's.
    document: operationDocuments[documentName],
    ...(body && {
      body: { ...body, mediaTypes: BODY_MEDIA_TYPES[method as 'POST' | 'PATCH'], schema: withoutSchemaKeyword(body.schema) },
    }),
  };
}

/** A list route's answer, `{msg, data: [...], meta}`, paginated as most lists are unless `more` says otherwise. */
function list(
  [one, many]: [one: string, many: string],
  searchFields: readonly string[],
  more: Partial<Pick<ListSpec, 'pagination' | 'params'>> = {},
): ResponseSpec {
  return { kind: 'list', list: { pagination: 'generic', params: {}, ...more, searchFields, noun: { one, many } } };
}

const WRITTEN_ROUTES: readonly WrittenRoute[] = [
  {
    operationId: 'listCategories',
    route: 'GET /categories',
    tag: 'Catalog',
    summary: 'List categories',
    description:
      'The catalog categories, ordered by sort_order then name. The spec does not show this body; it is answered as a list envelope like the other catalog list, with meta.pagination an empty object unless pagination is asked for.',
    itemSchema: 'Category',
    response: list(['category', 'categories'], ['name', 'slug', 'description']),
    errors: [400],
  },
  {
    operationId: 'listAvailableApplications',
    route: 'GET /available',
    tag: 'Catalog',
    summary: 'List available applications',
    description: 'The catalog of applications a tenant can connect, by name. application_id is an empty string in catalog entries.',
    itemSchema: 'AvailableApplication',
    response: list(['application', 'applications'], KEYWORD_SEARCH),
    errors: [400],
  },
  {
    operationId: 'getAvailableApplication',
    route: 'GET /available/{id}',
    tag: 'Catalog',
    summary: 'Read one available application',
    description: 'One catalog application. As the spec shows it, `data` is an array holding that one application.',
    itemSchema: 'AvailableApplication',
    pathExamples: { id: DEMO_APPLICATION_ID },
    response: { kind: 'item-in-array', msg: 'OK', notFound: 'application not found' },
    errors: [400, 404],
  },
  {
    operationId: 'listConnections',
    route: 'GET /connected',
    tag: 'Connections',
    summary: 'List connected applications',
    description: "The calling tenant's connections, by name. metadata and settings show only the members set for the kind of connection.",
    itemSchema: 'ConnectedApplicationListEntry',
    omitNullMembers: ['metadata', 'settings'],
    response: list(['connection', 'connections'], KEYWORD_SEARCH, {
      params: {
        category_id: {
          variable: 'categoryId',
          description: 'Only connections of applications in this category (exact category id).',
          echo: { operator: 'eq', value: (raw) => raw },
        },
        name: {
          variable: 'name',
          description: 'Only connections whose name contains this text, case-insensitively.',
          echo: { operator: 'ilike', value: (raw) => `*${raw}*` },
        },
      },
    }),
    errors: [400],
  },
  {
    operationId: 'getConnection',
    route: 'GET /connected/{id}',
    tag: 'Connections',
    summary: 'Read one connected application',
    description:
      "One connection of the calling tenant: the list entry plus features and additional_information; metadata shows region and version only. A deleted connection, or another tenant's, is 404.",
    itemSchema: 'ConnectedApplication',
    omitNullMembers: ['metadata', 'settings'],
    response: { kind: 'item', msg: 'OK', notFound: 'connection not found' },
    pathExamples: { id: DEMO.connections.read },
    errors: [400, 404],
  },
  {
    operationId: 'deleteConnection',
    route: 'DELETE /connected/{id}',
    tag: 'Connections',
    summary: 'Delete a connected application',
    description:
      'Deletes the connection. Afterwards it is 404 everywhere, while its sync history stays readable through /syncs. Needs the admin role (a reader gets 403).',
    itemSchema: 'DeletedConnection',
    response: { kind: 'item', msg: 'connection deleted', notFound: 'connection not found' },
    pathExamples: { id: DEMO.connections.delete },
    errors: [400, 403, 404],
  },
  {
    operationId: 'listSyncs',
    route: 'GET /syncs',
    tag: 'Syncs',
    summary: 'List sync records',
    description:
      "The calling tenant's sync history, newest started_at first, 10 per page unless limit says otherwise. Also served at /syncs/ (with a trailing slash). summary, diff and checksum are JSON-encoded objects in strings.",
    itemSchema: 'SyncRecord',
    response: list(['sync record', 'sync records'], ['error_message', 'status'], {
      pagination: 'sync',
      params: {
        connection_id: {
          variable: 'connectionId',
          description: 'Only runs of this connection (exact id); runs of deleted connections stay listed.',
          echo: { operator: 'eq', value: (raw) => raw },
        },
      },
    }),
    stream: {
      document: operationDocuments.StreamSyncsDocument,
      operationId: 'streamSyncs',
      summary: "Stream the changes of the tenant's sync records",
      event: 'sync',
      params: { connection_id: { variable: 'connectionId', description: 'Only runs of this connection (404 when it names none).' } },
      description:
        "With Accept: text/event-stream: every change of the tenant's runs (of one connection with connection_id) from now on, as `event: sync` messages whose data is the sync record and whose id is the event id; Last-Event-ID resumes after it. No other query parameter is taken.",
    },
    errors: [400, 404, 429],
  },
  // Before /syncs/{id}: the reference lists the paths in this order, and a run is claimed before it is reported on.
  {
    operationId: 'claimSync',
    route: 'POST /syncs/claim',
    tag: 'Syncs',
    summary: 'Claim the oldest due run (engines)',
    description:
      'Atomically takes the oldest due pending run of the tenant (optionally of one connection or application), moves it to in_progress with a lease of lease_seconds (default 60) and answers it; 204 when nothing is due. Only the claimer may report on it, within the lease. Needs the engine or admin role.',
    itemSchema: 'SyncRecord',
    response: { kind: 'item', msg: 'sync claimed', notFound: 'nothing to claim', nullIsNoContent: true },
    errors: [400, 403, 413, 415, 422],
    body: {
      problems: (body) => problemsOf(parseClaimBody(body)),
      variables: (body) => camelMembers(body),
      schema: SYNC_BODY_SCHEMAS.claim,
      example: { lease_seconds: 600, connection_id: DEMO.connections.claim },
    },
  },
  {
    operationId: 'getSync',
    route: 'GET /syncs/{id}',
    tag: 'Syncs',
    summary: 'Read one sync record',
    description: 'One sync record of the calling tenant, also when its connection was deleted.',
    itemSchema: 'SyncRecord',
    response: { kind: 'item', msg: 'OK', notFound: 'sync record not found' },
    pathExamples: { id: DEMO.syncs.read },
    stream: {
      document: operationDocuments.StreamSyncsDocument,
      operationId: 'streamSync',
      summary: 'Stream the changes of one sync record',
      event: 'sync',
      params: {},
      description:
        'With Accept: text/event-stream: the run as it is now, then at each change, as `event: sync` messages whose data is the sync record and whose id is the event id; the stream ends after the terminal status (success or failed). Last-Event-ID resumes after that event instead of starting with the current state.',
    },
    errors: [400, 404, 429],
  },
  // The write side: connections (admin), runs (trigger: admin; claim and reports: engine or admin).
  {
    operationId: 'createConnection',
    route: 'POST /connected',
    tag: 'Connections',
    summary: 'Connect an application',
    description:
      'Connects a catalog application. It is pending until its first successful run. Name and description default from the application, settings members from its kind. 400 lists every problem of the body. Needs the admin role.',
    itemSchema: 'ConnectedApplication',
    omitNullMembers: ['metadata', 'settings'],
    response: {
      kind: 'item',
      msg: 'connection created',
      notFound: 'connection not found',
      created: { location: `${INTEGRATIONS_BASE}/connected/{id}` },
    },
    errors: [400, 403, 413, 415, 422],
    body: {
      problems: (body, context) => createConnectionProblems(body, context.applicationCategory),
      variables: (body) => ({ input: camelMembers(body) }),
      schema: CONNECTION_BODY_SCHEMAS.create,
      example: { application_id: DEMO_APPLICATION_ID, name: 'Stripe US', settings: { sync_interval: '1h', retry_attempts: 3 } },
    },
  },
  {
    operationId: 'updateConnection',
    route: 'PATCH /connected/{id}',
    tag: 'Connections',
    summary: 'Change a connected application',
    description:
      'A JSON Merge Patch (RFC 7396) on name, description, status, metadata and settings: members left out stay, null removes a member. status follows the state machine (active ↔ paused, error → active or paused); another change is 409 and changes nothing. Needs the admin role.',
    itemSchema: 'ConnectedApplication',
    omitNullMembers: ['metadata', 'settings'],
    response: { kind: 'item', msg: 'connection updated', notFound: 'connection not found' },
    pathExamples: { id: DEMO.connections.update },
    errors: [400, 403, 404, 409, 413, 415],
    body: {
      problems: (body) => problemsOf(parseConnectionPatch(body)),
      variables: (body) => ({ input: camelMembers(body) }),
      schema: CONNECTION_BODY_SCHEMAS.patch,
      example: { status: 'paused', settings: { sync_interval: '1h' } },
    },
  },
  {
    operationId: 'triggerSync',
    route: 'POST /syncs',
    tag: 'Syncs',
    summary: 'Trigger a sync run',
    description:
      'Queues a run of the connection now: pending, with summary {queued: true, estimated_items?}. A connection has one pending or in-progress run at a time: a second trigger is 409 and names the active run. Needs the admin role.',
    itemSchema: 'SyncRecord',
    response: {
      kind: 'item',
      msg: 'sync queued',
      notFound: 'sync record not found',
      created: { location: `${INTEGRATIONS_BASE}/syncs/{id}` },
    },
    errors: [400, 403, 404, 409, 413, 415, 422],
    body: {
      problems: (body) => problemsOf(parseTriggerBody(body)),
      variables: (body) => camelMembers(body),
      schema: SYNC_BODY_SCHEMAS.trigger,
      example: { connection_id: DEMO.connections.trigger, estimated_items: 1200 },
    },
  },
  {
    operationId: 'reportSync',
    route: 'PATCH /syncs/{id}',
    tag: 'Syncs',
    summary: 'Report progress or the outcome of a claimed run (engines)',
    description:
      '{summary: {processed, estimated_items}} records progress and extends the lease (a heartbeat). {status: "success", summary: {processed, inserted, updated, deleted}, file_url?, diff?, checksum?} or {status: "failed", error_message, summary: {errors, processed}} records the outcome; finished_at is the server clock. An illegal transition or a lost lease is 409 naming the current status. Needs the engine or admin role, and the claim.',
    itemSchema: 'SyncRecord',
    response: { kind: 'item', msg: 'sync updated', notFound: 'sync record not found' },
    pathExamples: { id: DEMO.syncs.claimed },
    errors: [400, 403, 404, 409, 413, 415],
    body: {
      problems: (body) => problemsOf(parseSyncReport(body)),
      variables: (body) => ({ report: camelMembers(body) }),
      schema: SYNC_BODY_SCHEMAS.report,
      example: { status: 'success', summary: { processed: 1200, inserted: 40, updated: 1100, deleted: 60 } },
    },
  },
  // Webhooks: the tenant's endpoints and their delivery log (admin only).
  {
    operationId: 'listWebhookEndpoints',
    route: 'GET /webhooks',
    tag: 'Webhooks',
    summary: 'List webhook endpoints',
    description: "The calling tenant's webhook endpoints, oldest first. The secret is never shown here. Needs the admin role.",
    itemSchema: 'WebhookEndpointListEntry',
    response: list(['webhook endpoint', 'webhook endpoints'], ['url', 'description']),
    errors: [400, 403],
  },
  {
    operationId: 'createWebhookEndpoint',
    route: 'POST /webhooks',
    tag: 'Webhooks',
    summary: 'Add a webhook endpoint',
    description:
      'Adds an endpoint that receives the events of event_types (all when left out), signed with Standard Webhooks. The answer carries the secret (whsec_…), shown this once: a replay of the request with its Idempotency-Key answers secret null, since no stored answer keeps a secret. The URL must be https and must not resolve to a loopback, private, link-local or metadata address (unless the server runs with WEBHOOK_ALLOW_PRIVATE=1, the default of the demo listening on loopback, whose receiver on this machine the example names). 400 lists every problem. Needs the admin role.',
    itemSchema: 'WebhookEndpointWithSecret',
    response: {
      kind: 'item',
      msg: 'webhook endpoint created',
      notFound: 'webhook endpoint not found',
      created: { location: `${INTEGRATIONS_BASE}/webhooks/{id}` },
      shownOnce: ['secret'],
    },
    errors: [400, 403, 409, 413, 415, 422],
    body: {
      problems: (body, context) => webhookBodyProblems('create', body, context),
      variables: (body) => ({ input: camelMembers(body) }),
      schema: WEBHOOK_BODY_SCHEMAS.create,
      example: { url: DEMO.webhooks.url, event_types: ['sync.success', 'sync.failed'] },
    },
  },
  {
    operationId: 'getWebhookEndpoint',
    route: 'GET /webhooks/{id}',
    tag: 'Webhooks',
    summary: 'Read one webhook endpoint',
    description: 'One endpoint of the calling tenant (secret: null). Needs the admin role.',
    itemSchema: 'WebhookEndpoint',
    response: { kind: 'item', msg: 'OK', notFound: 'webhook endpoint not found' },
    pathExamples: { id: DEMO.webhooks.endpoint },
    errors: [400, 403, 404],
  },
  {
    operationId: 'updateWebhookEndpoint',
    route: 'PATCH /webhooks/{id}',
    tag: 'Webhooks',
    summary: 'Change a webhook endpoint',
    description:
      'A JSON Merge Patch on url, description, event_types (null: every type) and enabled. enabled: false fails its pending deliveries; enabled: true again clears disabled_reason and the failure count. Needs the admin role.',
    itemSchema: 'WebhookEndpoint',
    response: { kind: 'item', msg: 'webhook endpoint updated', notFound: 'webhook endpoint not found' },
    pathExamples: { id: DEMO.webhooks.endpoint },
    errors: [400, 403, 404, 413, 415],
    body: {
      problems: (body, context) => webhookBodyProblems('patch', body, context),
      variables: (body) => ({ input: camelMembers(body) }),
      schema: WEBHOOK_BODY_SCHEMAS.patch,
      example: { enabled: true },
    },
  },
  {
    operationId: 'deleteWebhookEndpoint',
    route: 'DELETE /webhooks/{id}',
    tag: 'Webhooks',
    summary: 'Delete a webhook endpoint',
    description: 'Deletes the endpoint with its delivery log; nothing more is sent to it. Needs the admin role.',
    itemSchema: 'DeletedWebhookEndpoint',
    response: { kind: 'item', msg: 'webhook endpoint deleted', notFound: 'webhook endpoint not found' },
    pathExamples: { id: DEMO.webhooks.deleted },
    errors: [400, 403, 404],
  },
  {
    operationId: 'rotateWebhookSecret',
    route: 'POST /webhooks/{id}/rotate-secret',
    tag: 'Webhooks',
    summary: 'Rotate the signing secret',
    description:
      'Gives the endpoint a new secret, used from the next attempt on; the answer carries it, shown this once. No body. Needs the admin role.',
    itemSchema: 'WebhookEndpointWithSecret',
    response: { kind: 'item', msg: 'webhook secret rotated', notFound: 'webhook endpoint not found', shownOnce: ['secret'] },
    pathExamples: { id: DEMO.webhooks.endpoint },
    errors: [400, 403, 404, 415, 422],
    body: NO_BODY,
  },
  {
    operationId: 'listWebhookDeliveries',
    route: 'GET /webhooks/{id}/deliveries',
    tag: 'Webhooks',
    summary: "List an endpoint's deliveries",
    description:
      "The endpoint's delivery log, newest first: each event sent (or to send) to it, its status, attempts and next attempt. Needs the admin role.",
    itemSchema: 'WebhookDeliveryListEntry',
    response: list(['delivery', 'deliveries'], ['event_type']),
    pathExamples: { id: DEMO.webhooks.endpoint },
    errors: [400, 403, 404],
  },
  {
    operationId: 'getWebhookDelivery',
    route: 'GET /webhooks/{id}/deliveries/{delivery_id}',
    tag: 'Webhooks',
    summary: 'Read one delivery with its attempts',
    description:
      'One delivery: the message sent (payload), and every attempt with its status code, latency, the first 1 KB of the answer and the retry it led to. Needs the admin role.',
    itemSchema: 'WebhookDelivery',
    response: { kind: 'item', msg: 'OK', notFound: 'webhook delivery not found' },
    pathExamples: { id: DEMO.webhooks.endpoint, delivery_id: DEMO.webhooks.delivery },
    errors: [400, 403, 404],
  },
  {
    operationId: 'redeliverWebhook',
    route: 'POST /webhooks/{id}/deliveries/{delivery_id}/redeliver',
    tag: 'Webhooks',
    summary: 'Send a delivery again',
    description:
      'Sends the delivery again now, with the same webhook-id; its attempts keep counting. 409 while the endpoint is disabled. No body. Needs the admin role.',
    itemSchema: 'WebhookDelivery',
    response: { kind: 'item', msg: 'webhook redelivery queued', notFound: 'webhook delivery not found' },
    pathExamples: { id: DEMO.webhooks.endpoint, delivery_id: DEMO.webhooks.delivery },
    errors: [400, 403, 404, 409, 415, 422],
    body: NO_BODY,
  },
  // Members: the people of the organization, who sign in (admin only; docs/how-to/sign-in.md).
  {
    operationId: 'listMembers',
    route: 'GET /members',
    tag: 'Members',
    summary: 'List members',
    description:
      "The organization's members by email: role, whether the invitation is still pending, when they were invited and last seen, and who invited them. Needs the admin role.",
    itemSchema: 'MemberListEntry',
    response: list(['member', 'members'], ['email']),
    errors: [400, 403],
  },
  {
    operationId: 'inviteMember',
    route: 'POST /members',
    tag: 'Members',
    summary: 'Invite a member',
    description:
      'Invites an email with a role (admin or reader). The answer carries the invitation code and its console path (/console/invite/<code>), shown this once: a replay of the request with its Idempotency-Key answers both null, since no stored answer keeps a code. The code works once, for 7 days; its holder chooses a password and is signed in. Inviting a member again resets its password and ends its sessions (to keep the password until a new one is chosen, create a password reset). The answer is the same whether or not the email is a member of another organization, which keeps its own membership. Needs the admin role.',
    itemSchema: 'MemberInvitation',
    response: { kind: 'item', msg: 'member invited', notFound: 'member not found', shownOnce: ['code', 'path'] },
    errors: [400, 403, 409, 413, 415, 422],
    body: {
      problems: (body) => memberBodyProblems('invite', body),
      variables: (body) => body,
      schema: MEMBER_BODY_SCHEMAS.invite,
      example: { email: 'ada@example.com', role: 'reader' },
    },
  },
  {
    operationId: 'resendInvitation',
    route: 'POST /members/{id}/invitation',
    tag: 'Members',
    summary: "Resend a pending member's invitation",
    description:
      'Gives a member who has not chosen a password yet a new invitation code, with its console path (/console/invite/<code>), shown this once (null in an Idempotency-Key replay); the earlier code stops working. The code works once, for 7 days. 409 for a member who has a password: create a password reset instead. No body. Needs the admin role.',
    itemSchema: 'MemberInvitation',
    response: { kind: 'item', msg: 'invitation issued', notFound: 'member not found', shownOnce: ['code', 'path'] },
    pathExamples: { id: DEMO.members.changed.id },
    errors: [400, 403, 404, 409, 415, 422],
    body: NO_BODY,
  },
  {
    operationId: 'createPasswordReset',
    route: 'POST /members/{id}/password-reset',
    tag: 'Members',
    summary: 'Create a password reset link for a member',
    description:
      "For a member who forgot the password: a reset code, with its console path (/console/reset/<code>), shown this once (null in an Idempotency-Key replay); no email is sent, hand the link over. Its holder chooses a new password (POST /api/v1/auth/invitations/{code}) and is signed in; the member's other sessions end. The old password works until then. The code works once, for 7 days; earlier codes stop working. For a member still pending, the code is a new invitation (/console/invite/<code>). No body. Needs the admin role.",
    itemSchema: 'MemberInvitation',
    response: { kind: 'item', msg: 'password reset created', notFound: 'member not found', shownOnce: ['code', 'path'] },
    pathExamples: { id: DEMO.members.changed.id },
    errors: [400, 403, 404, 409, 415, 422],
    body: NO_BODY,
  },
  {
    operationId: 'changeMemberRole',
    route: 'PATCH /members/{id}',
    tag: 'Members',
    summary: "Change a member's role",
    description:
      "Sets the role (admin or reader); the member's sessions and open streams end. The last admin who can sign in cannot be demoted (409). Needs the admin role.",
    itemSchema: 'Member',
    response: { kind: 'item', msg: 'member updated', notFound: 'member not found' },
    pathExamples: { id: DEMO.members.changed.id },
    errors: [400, 403, 404, 409, 413, 415],
    body: {
      problems: (body) => memberBodyProblems('patch', body),
      variables: (body) => body,
      schema: MEMBER_BODY_SCHEMAS.patch,
      example: { role: 'admin' },
    },
  },
  {
    operationId: 'removeMember',
    route: 'DELETE /members/{id}',
    tag: 'Members',
    summary: 'Remove a member',
    description:
      'Removes the member with its sessions (its open streams end) and invitations. The last admin who can sign in cannot be removed (409). Needs the admin role.',
    itemSchema: 'RemovedMember',
    response: { kind: 'item', msg: 'member removed', notFound: 'member not found' },
    pathExamples: { id: DEMO.members.changed.id },
    errors: [400, 403, 404, 409],
  },
  // Single sign-on: the organization's identity provider (admin only; docs/how-to/single-sign-on.md).
  {
    operationId: 'getIdentityProvider',
    route: 'GET /identity-provider',
    tag: 'Single sign-on',
    summary: "Read the organization's identity provider",
    description:
      'The OpenID Connect provider whose accounts sign the members in: issuer, client id, email domains, what a first sign-in gets, and whether password sign-in is off. The client secret is never shown. 404 when the organization has none. Needs the admin role.',
    itemSchema: 'IdentityProvider',
    response: { kind: 'item', msg: 'OK', notFound: 'the organization has no identity provider' },
    errors: [403, 404],
  },
  {
    operationId: 'configureIdentityProvider',
    route: 'PATCH /identity-provider',
    tag: 'Single sign-on',
    summary: "Set up or change the organization's identity provider",
    description:
      "A JSON Merge Patch (RFC 7396): members left out keep their value. A new provider needs issuer, client_id, client_secret and email_domains. The issuer's discovery document is read at once: an issuer that cannot be used is 400. client_secret is stored sealed and never shown again. first_sign_in: invitation (a person must be invited), reader, or claim (role_claim names the ID token claim holding admin or reader). required: true turns password sign-in off for the members, and needs an admin who has signed in with the provider (409 otherwise). A changed issuer unlinks the members from the previous provider's accounts. Register <this server's origin>/api/v1/auth/sso/callback as the redirect URI at the provider. Needs the admin role.",
    itemSchema: 'IdentityProvider',
    response: { kind: 'item', msg: 'identity provider saved', notFound: 'the organization has no identity provider' },
    errors: [400, 403, 409, 413, 415],
    body: {
      problems: (body) => identityProviderBodyProblems(body),
      variables: (body) => ({ input: camelMembers(body) }),
      schema: IDENTITY_PROVIDER_BODY_SCHEMA,
      example: {
        issuer: 'https://login.example.com',
        client_id: 'integrations-gateway',
        client_secret: 'the-secret-the-provider-gave',
        email_domains: ['example.com'],
        first_sign_in: 'invitation',
      },
    },
  },
  {
    operationId: 'removeIdentityProvider',
    route: 'DELETE /identity-provider',
    tag: 'Single sign-on',
    summary: "Remove the organization's identity provider",
    description:
      'Members sign in with their passwords again (those who have one); removed is false when there was none. Needs the admin role.',
    itemSchema: 'RemovedIdentityProvider',
    response: { kind: 'item', msg: 'identity provider removed', notFound: 'the organization has no identity provider' },
    errors: [403],
  },
  // Partners' applications of the authorization server (admin only; docs/how-to/partner-application-with-pkce.md).
  {
    operationId: 'listOAuthApplications',
    route: 'GET /oauth-applications',
    tag: 'OAuth applications',
    summary: 'List partner applications',
    description:
      "The organization's partner applications (OAuth 2.0 authorization code with PKCE), newest first: name, redirect URIs, the scopes they may ask for, when and by whom they were registered. Never their secrets. Needs the admin role.",
    itemSchema: 'OAuthApplicationListEntry',
    response: list(['application', 'applications'], ['name']),
    errors: [400, 403],
  },
  {
    operationId: 'createOAuthApplication',
    route: 'POST /oauth-applications',
    tag: 'OAuth applications',
    summary: "Register a partner's application",
    description:
      'Registers an application that members approve on the console consent page (authorization code with PKCE, S256). The answer carries its client_id and client_secret, the secret shown this once (null in the replay of a request with an Idempotency-Key). Redirect URIs are compared exactly: https (http only on 127.0.0.1, [::1] or localhost), without a fragment. Needs the admin role.',
    itemSchema: 'CreatedOAuthApplication',
    response: { kind: 'item', msg: 'OAuth application registered', notFound: 'OAuth application not found', shownOnce: ['client_secret'] },
    errors: [400, 403, 413, 415, 422],
    body: {
      problems: (body) => oauthApplicationBodyProblems(body),
      variables: (body) => ({ name: body.name, redirectUris: body.redirect_uris, scope: body.scope }),
      schema: OAUTH_APPLICATION_BODY_SCHEMA,
      example: { name: 'Partner Planner', redirect_uris: ['https://partner.example/callback'], scope: 'read write' },
    },
  },
  {
    operationId: 'deleteOAuthApplication',
    route: 'DELETE /oauth-applications/{id}',
    tag: 'OAuth applications',
    summary: "Delete a partner's application",
    description:
      'Deletes the application with every approval of it: its authorization codes, refresh and access tokens stop working at once. Needs the admin role.',
    itemSchema: 'DeletedOAuthApplication',
    response: { kind: 'item', msg: 'OAuth application deleted', notFound: 'OAuth application not found' },
    pathExamples: { id: DEMO.oauth.deletedApplication },
    errors: [400, 403, 404],
  },
  // Members' approvals of partner applications: a member's own, or (admins) every one of the organization.
  {
    operationId: 'listOAuthApprovals',
    route: 'GET /oauth-approvals',
    tag: 'OAuth approvals',
    summary: 'List approvals of partner applications',
    description:
      "Approvals members gave partner applications on the consent page, newest first: the application, the member, the scopes granted, when, and until when the approval lasts. An admin sees every approval of the organization (member_id=eq.<id> narrows it to one member's); a member signed in with the session cookie sees their own; any other credential sees none.",
    itemSchema: 'OAuthApprovalListEntry',
    response: list(['approval', 'approvals'], ['application_name', 'member_email']),
    errors: [400],
  },
  {
    operationId: 'revokeOAuthApproval',
    route: 'DELETE /oauth-approvals/{id}',
    tag: 'OAuth approvals',
    summary: 'Revoke an approval of a partner application',
    description:
      "Revokes the approval: the application's authorization codes, refresh and access tokens for that member stop working at once. A member signed in with the session cookie revokes their own; an admin any of the organization; another's approval is 404 to a member.",
    itemSchema: 'RevokedOAuthApproval',
    response: { kind: 'item', msg: 'OAuth approval revoked', notFound: 'OAuth approval not found' },
    pathExamples: { id: DEMO.oauth.revokedApproval },
    errors: [400, 404],
  },
  // Service users' OAuth clients (client credentials; admin only; docs/how-to/backend-with-client-credentials.md).
  {
    operationId: 'listOAuthClients',
    route: 'GET /oauth-clients',
    tag: 'OAuth clients',
    summary: "List service users' OAuth clients",
    description:
      "The tenant's OAuth clients (client credentials grant), newest first: the service user each acts as, how it authenticates, the scopes it may ask for, when and by whom it was created. Never their secrets. Needs the admin role.",
    itemSchema: 'OAuthClientListEntry',
    response: list(['client', 'clients'], ['name']),
    errors: [400, 403],
  },
  {
    operationId: 'createOAuthClient',
    route: 'POST /oauth-clients',
    tag: 'OAuth clients',
    summary: 'Create an OAuth client for a service user',
    description:
      "Creates a client that gets short-lived access tokens (POST /oauth/token, grant_type=client_credentials) acting with the service user's tenant and at most its role. Without jwks it authenticates with a client secret, in the answer this once (null in the replay of a request with an Idempotency-Key); with jwks (public keys), by private_key_jwt. 404 for a service user of no such id. Needs the admin role.",
    itemSchema: 'CreatedOAuthClient',
    response: { kind: 'item', msg: 'OAuth client created', notFound: 'service user not found', shownOnce: ['client_secret'] },
    errors: [400, 403, 404, 413, 415, 422],
    body: {
      problems: (body) => oauthClientBodyProblems(body),
      variables: (body) => ({ serviceUserId: body.service_user_id, name: body.name, scope: body.scope, jwks: body.jwks }),
      schema: OAUTH_CLIENT_BODY_SCHEMA,
      example: { service_user_id: DEMO.oauth.serviceUser, name: 'nightly report', scope: 'read' },
    },
  },
  {
    operationId: 'deleteOAuthClient',
    route: 'DELETE /oauth-clients/{id}',
    tag: 'OAuth clients',
    summary: 'Delete an OAuth client',
    description: 'Deletes the client: its access tokens stop working at once. Needs the admin role.',
    itemSchema: 'DeletedOAuthClient',
    response: { kind: 'item', msg: 'OAuth client deleted', notFound: 'OAuth client not found' },
    pathExamples: { id: DEMO.oauth.deletedClient },
    errors: [400, 403, 404],
  },
  {
    operationId: 'listActivity',
    route: 'GET /activity',
    tag: 'Activity',
    summary: 'List the activity log',
    description:
      "Who changed the organization's members, service users, tokens, connections and webhook endpoints, newest first: the action, the actor (kind, id, name as it was), the target, the time, the client address and the request id. Filter by action (action=eq.token.created), actor (actor_name, actor_kind), target (target_type, target_id) and time (created_at=gte.…). Needs the admin role.",
    itemSchema: 'ActivityListEntry',
    response: list(['entry', 'entries'], ['action', 'actor_name', 'target_name']),
    errors: [400, 403],
  },
];

export const routes: readonly RouteSpec[] = WRITTEN_ROUTES.map(routeSpec);
