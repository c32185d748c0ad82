import { actorOf } from '../auth/audit.js';
import type { Context } from '../context.js';
import {
  createWebhookEndpoint,
  deleteWebhookEndpoint,
  latestDeliveries,
  redeliverWebhook,
  rotateWebhookSecret,
  updateWebhookEndpoint,
  type WebhookDeliveryRow,
  type WebhookEndpointRow,
} from '../db/webhooks.js';
import { parseCreateWebhookEndpoint, parseWebhookEndpointPatch } from '../domain/webhook-input.js';
import { invalidGraphQLInput } from '../domain/problems.js';
import { ApiError } from '../errors.js';
import { WEBHOOK_EVENT_TYPES } from '../domain/webhook-messages.js';
import { DEFAULT_RETRY_SCHEDULE_SECONDS } from '../webhooks/retry-schedule.js';
import { builder } from './builder.js';
import { type PrismaColumn, prismaColumns } from '../query/columns.js';
import type { OrderKey } from '../query/filter.js';
import { assertIdLength, removalType } from './ids.js';
import { prismaListField } from './prisma-list.js';
import { pageBounds } from '../query/page-bounds.js';
import { activityOriginOf, requireViewer } from './viewer.js';
import { once } from './idempotency.js';
import { bodyOf } from './mutation-args.js';

// Webhooks on GraphQL, admin only (webhooks:manage): the tenant's endpoints, their delivery
// log, and the writes (create, change, delete, rotate the secret, redeliver). The secret is in the answer of
// createWebhookEndpoint and rotateWebhookSecret only. The REST routes under /webhooks run these operations.

/** An endpoint as the API shows it; `secret` only right after create or rotate. */
type EndpointView = WebhookEndpointRow & { secret?: string | undefined };

type DeliveryView = WebhookDeliveryRow;

interface AttemptView {
  attempt: number;
  startedAt: Date;
  statusCode: number | null;
  latencyMs: number;
  responseBody: string;
  error: string | null;
  nextRetryAt: Date | null;
}

const retryScheduleText = DEFAULT_RETRY_SCHEDULE_SECONDS.map((s) =>
  s < 60 ? `${s} s` : s < 3600 ? `${s / 60} min` : `${s / 3600} h`,
).join(', ');

/** The event types, as REST and the messages name them (strings, not a GraphQL enum, so both surfaces say `sync.failed`). */
const EVENT_TYPES_TEXT = WEBHOOK_EVENT_TYPES.join(', ');

export const WebhookDeliveryStatus = builder.enumType('WebhookDeliveryStatus', {
  description: `pending: to be sent (again) at nextAttemptAt. succeeded: an attempt got a 2xx. failed: the retries (${retryScheduleText}, ±20%) are spent, or the endpoint was disabled.`,
  values: ['pending', 'succeeded', 'failed'] as const,
});

const WebhookAttempt = builder.objectRef<AttemptView>('WebhookAttempt').implement({
  description: 'One HTTP attempt of a delivery.',
  fields: (t) => ({
    attempt: t.exposeInt('attempt', { description: '1 for the first attempt.' }),
    startedAt: t.expose('startedAt', { type: 'DateTime' }),
    statusCode: t.exposeInt('statusCode', { nullable: true, description: 'null when no HTTP answer came (timeout, refused, SSRF guard).' }),
    latencyMs: t.exposeInt('latencyMs'),
    responseBody: t.exposeString('responseBody', { description: 'The first 1 KB of the answer.' }),
    error: t.exposeString('error', { nullable: true, description: 'Why the attempt failed; null after a 2xx.' }),
    nextRetryAt: t.expose('nextRetryAt', {
      type: 'DateTime',
      nullable: true,
      description: 'When the next attempt was planned; null after a 2xx or the last retry.',
    }),
  }),
});

export const WebhookDelivery = builder.objectRef<DeliveryView>('WebhookDelivery').implement({
  description:
    'One event to send to one endpoint. Its id is the Standard Webhooks message id (webhook-id header), the same on every attempt.',
  fields: (t) => ({
    id: t.exposeID('id'),
    endpointId: t.exposeID('endpointId'),
    eventId: t.int({ description: "The event's id in the tenant's event log.", resolve: (d) => Number(d.eventId) }),
    eventType: t.exposeString('eventType', { description: `One of ${EVENT_TYPES_TEXT}.` }),
    status: t.field({ type: WebhookDeliveryStatus, resolve: (d) => d.status as 'pending' | 'succeeded' | 'failed' }),
    attempts: t.exposeInt('attempts', { description: 'Attempts made so far.' }),
    nextAttemptAt: t.expose('nextAttemptAt', { type: 'DateTime', nullable: true }),
    lastStatusCode: t.exposeInt('lastStatusCode', { nullable: true }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime' }),
    payload: t.field({
      type: 'JSONObject',
      description: 'The message body sent: {type, timestamp, event_id, data}.',
      resolve: (d) => d.payload as Record<string, unknown>,
    }),
    attemptLog: t.field({
      type: [WebhookAttempt],
      description: 'Every attempt, first to last.',
      resolve: (d, _args, context) =>
        context.db.prisma.webhookAttempt.findMany({
          where: { tenantId: requireViewer(context).tenantId, deliveryId: d.id },
          orderBy: { attempt: 'asc' },
        }),
    }),
  }),
});

export const WebhookEndpoint = builder.objectRef<EndpointView>('WebhookEndpoint').implement({
  description:
    "A tenant's webhook endpoint. Events are POSTed to it signed with Standard Webhooks (webhook-id, webhook-timestamp, webhook-signature).",
  fields: (t) => ({
    id: t.exposeID('id'),
    url: t.exposeString('url'),
    description: t.exposeString('description'),
    eventTypes: t.exposeStringList('eventTypes', { description: `The event types sent (${EVENT_TYPES_TEXT}); empty: every type.` }),
    enabled: t.exposeBoolean('enabled'),
    disabledReason: t.exposeString('disabledReason', {
      nullable: true,
      description: 'Set when the service disabled it after consecutive failed deliveries.',
    }),
    consecutiveFailures: t.exposeInt('consecutiveFailures', {
      description:
        'Deliveries in a row that failed for good (every retry spent), since the last one that succeeded. A delivery still being retried is not counted (its failed attempts are in the delivery log).',
    }),
    latestDelivery: t.loadable({
      type: WebhookDelivery,
      nullable: true,
      description:
        "The delivery of the newest event sent to the endpoint, with its status and attempts so far (a failing endpoint's retries show here before they are spent); null before any. A page of endpoints loads them in one statement.",
      load: (ids: string[], context) => latestDeliveries(context.db.raw, requireViewer(context).tenantId, ids),
      sort: (delivery) => delivery.endpointId,
      resolve: (endpoint) => endpoint.id,
    }),
    secret: t.string({
      nullable: true,
      description: 'The signing secret (whsec_…). Only in the answer of createWebhookEndpoint and rotateWebhookSecret: store it then.',
      resolve: (e) => e.secret ?? null,
    }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime' }),
    createdBy: t.exposeString('createdBy', { nullable: true, description: 'Who created it: member:<id>, token:<id>, jwt:<sub> or cli.' }),
  }),
});

const ENDPOINT_COLUMNS = prismaColumns({
  id: 'string',
  url: 'string',
  description: 'string',
  enabled: 'boolean',
  createdAt: 'dateTime',
  updatedAt: 'dateTime',
});

const DELIVERY_COLUMNS = prismaColumns({
  id: 'string',
  eventType: 'string',
  status: 'enum',
  createdAt: 'dateTime',
  updatedAt: 'dateTime',
  nextAttemptAt: 'dateTime?',
});

/** The deliveries' order when the caller gives none; the event id is no filter or order field of the API. */
const DELIVERY_DEFAULT_KEYS: readonly OrderKey<PrismaColumn>[] = [
  { column: DELIVERY_COLUMNS.createdAt, descending: true, nulls: null },
  { column: { field: 'eventId', kind: 'string', nullable: false, bigint: true }, descending: true, nulls: null },
];

/** Columns an endpoint read shows: never the secret, the lease or the back-off. */
const ENDPOINT_OMIT = { secret: true, leaseOwner: true, leaseUntil: true, consecutiveTimeouts: true, backoffUntil: true } as const;

/** One endpoint of the caller's tenant, never with its secret. */
function endpointOf(context: Context, id: string): Promise<EndpointView | null> {
  return context.db.prisma.webhookEndpoint.findUnique({
    where: { id: assertIdLength(id, 'webhook endpoint'), tenantId: requireViewer(context).tenantId },
    omit: ENDPOINT_OMIT,
  });
}

function guardOf(context: Context) {
  return { allowPrivate: context.webhooks.allowPrivate };
}

prismaListField('webhookEndpoints', {
  item: WebhookEndpoint,
  listDescription: 'A page of webhook endpoints.',
  description: "The tenant's webhook endpoints, oldest first unless orderBy says otherwise.",
  permission: 'webhooks:manage',
  columns: ENDPOINT_COLUMNS,
  defaultOrder: [{ field: 'createdAt' }, { field: 'id' }],
  search: { fields: ['url', 'description'], description: 'Case-insensitive text in url or description.' },
  model: (prisma) => prisma.webhookEndpoint,
  omit: ENDPOINT_OMIT,
});

prismaListField('webhookDeliveries', {
  item: WebhookDelivery,
  listDescription: 'A page of deliveries, newest first unless orderBy says otherwise.',
  description: "An endpoint's delivery log, newest first unless orderBy says otherwise. NOT_FOUND when the tenant has no such endpoint.",
  permission: 'webhooks:manage',
  columns: DELIVERY_COLUMNS,
  enums: { status: WebhookDeliveryStatus },
  defaultOrder: DELIVERY_DEFAULT_KEYS,
  search: { fields: ['eventType'], description: 'Case-insensitive text in the event type.' },
  page: pageBounds(20, 100),
  model: (prisma) => prisma.webhookDelivery,
  args: (arg) => ({ endpointId: arg.id({ required: true }) }),
  where: async (args, context) => {
    const endpoint = await endpointOf(context, args.endpointId as string);
    if (!endpoint) throw new ApiError('NOT_FOUND', 'webhook endpoint not found');
    return { endpointId: endpoint.id };
  },
});

builder.queryFields((t) => ({
  webhookEndpoint: t.field({
    type: WebhookEndpoint,
    nullable: true,
    description: 'One webhook endpoint of the tenant, or null.',
    authScopes: { permission: 'webhooks:manage' },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, context) => endpointOf(context, args.id),
  }),
  webhookDelivery: t.field({
    type: WebhookDelivery,
    nullable: true,
    description: "One delivery of one of the tenant's endpoints, with its attempts, or null.",
    authScopes: { permission: 'webhooks:manage' },
    args: { endpointId: t.arg.id({ required: true }), id: t.arg.id({ required: true }) },
    resolve: (_root, args, context) =>
      context.db.prisma.webhookDelivery.findUnique({
        where: {
          id: assertIdLength(args.id, 'webhook delivery'),
          tenantId: requireViewer(context).tenantId,
          endpointId: assertIdLength(args.endpointId, 'webhook endpoint'),
        },
      }),
  }),
}));

const CreateWebhookEndpointInput = builder.inputType('CreateWebhookEndpointInput', {
  fields: (t) => ({
    url: t.string({ required: true, description: 'https (http and private addresses only with WEBHOOK_ALLOW_PRIVATE=1).' }),
    description: t.string(),
    eventTypes: t.stringList({ description: `Of ${EVENT_TYPES_TEXT}. Left out or empty: every type.` }),
    enabled: t.boolean({ description: 'Default true.' }),
  }),
});

const UpdateWebhookEndpointInput = builder.inputType('UpdateWebhookEndpointInput', {
  description:
    'A merge patch: members left out stay; null empties description and eventTypes (every type). enabled: true again clears the failure count.',
  fields: (t) => ({
    url: t.string(),
    description: t.string(),
    eventTypes: t.stringList(),
    enabled: t.boolean(),
  }),
});

/** A write's result, or NOT_FOUND when the tenant has no such endpoint or delivery (another tenant's included). */
function found<T>(value: T | null, what: string, id: string): T {
  if (value === null) throw new ApiError('NOT_FOUND', `${what} ${id} not found`);
  return value;
}

function problemsOrValue<T>(result: { value: T } | { problems: { field: string; message: string }[] }): T {
  if ('problems' in result) throw invalidGraphQLInput(result.problems, 'input');
  return result.value;
}

builder.mutationFields((t) => ({
  createWebhookEndpoint: t.field({
    type: WebhookEndpoint,
    description:
      'Adds a webhook endpoint; the answer carries its secret, shown this once. 400 lists every problem (the SSRF guard among them).',
    authScopes: { permission: 'webhooks:manage' },
    args: { input: t.arg({ type: CreateWebhookEndpointInput, required: true }) },
    resolve: async (_root, args, context) => {
      const input = problemsOrValue(await parseCreateWebhookEndpoint(bodyOf(args.input, 'input'), guardOf(context)));
      const tenantId = requireViewer(context).tenantId;
      return once<EndpointView>(
        context,
        'createWebhookEndpoint',
        args.input,
        (sql) => createWebhookEndpoint(sql, tenantId, input, context.webhooks, actorOf(requireViewer(context)), activityOriginOf(context)),
        (created) => ({ type: 'webhook_endpoint', id: created.id }),
        // A replay shows the endpoint without its secret: the secret is in the first answer only, and the
        // endpoint's secret now may be a later rotation's (lost the first answer? rotate the secret).
        async (resource) => (await endpointOf(context, resource?.id ?? ''))!,
      );
    },
  }),
  updateWebhookEndpoint: t.field({
    type: WebhookEndpoint,
    description:
      'Changes an endpoint (merge patch); NOT_FOUND when the tenant has none with this id. Disabling it fails its pending deliveries.',
    authScopes: { permission: 'webhooks:manage' },
    args: { id: t.arg.id({ required: true }), input: t.arg({ type: UpdateWebhookEndpointInput, required: true }) },
    resolve: async (_root, args, context) => {
      const patch = problemsOrValue(await parseWebhookEndpointPatch(bodyOf(args.input, 'input'), guardOf(context)));
      const id = assertIdLength(args.id, 'webhook endpoint');
      return found(
        await updateWebhookEndpoint(context.db.raw, requireViewer(context).tenantId, id, patch, activityOriginOf(context)),
        'webhook endpoint',
        id,
      );
    },
  }),
  deleteWebhookEndpoint: t.field({
    type: removalType('DeletedWebhookEndpoint'),
    description: 'Deletes an endpoint with its delivery log; NOT_FOUND when the tenant has none with this id.',
    authScopes: { permission: 'webhooks:manage' },
    args: { id: t.arg.id({ required: true }) },
    resolve: async (_root, args, context) => {
      const id = assertIdLength(args.id, 'webhook endpoint');
      return found(
        await deleteWebhookEndpoint(context.db.raw, requireViewer(context).tenantId, id, activityOriginOf(context)),
        'webhook endpoint',
        id,
      );
    },
  }),
  rotateWebhookSecret: t.field({
    type: WebhookEndpoint,
    description:
      'Gives the endpoint a new secret, used from the next attempt on; the answer carries it, shown this once. NOT_FOUND when the tenant has no such endpoint.',
    authScopes: { permission: 'webhooks:manage' },
    args: { id: t.arg.id({ required: true }) },
    resolve: async (_root, args, context) => {
      const id = assertIdLength(args.id, 'webhook endpoint');
      const tenantId = requireViewer(context).tenantId;
      const rotated = await once<EndpointView | null>(
        context,
        'rotateWebhookSecret',
        args,
        (sql) => rotateWebhookSecret(sql, tenantId, id, context.webhooks.secretKeys, activityOriginOf(context)),
        (result) => (result ? { type: 'webhook_endpoint', id: result.id } : null),
        // Without the secret, as a replayed creation (see createWebhookEndpoint).
        async (resource) => (resource ? endpointOf(context, resource.id) : null),
      );
      return found(rotated, 'webhook endpoint', id);
    },
  }),
  redeliverWebhook: t.field({
    type: WebhookDelivery,
    description:
      'Sends a delivery again now (its attempts keep counting); NOT_FOUND when the tenant has no such delivery. CONFLICT while the endpoint is disabled.',
    authScopes: { permission: 'webhooks:manage' },
    args: { endpointId: t.arg.id({ required: true }), id: t.arg.id({ required: true }) },
    resolve: async (_root, args, context) => {
      const tenantId = requireViewer(context).tenantId;
      const endpointId = assertIdLength(args.endpointId, 'webhook endpoint');
      const id = assertIdLength(args.id, 'webhook delivery');
      const delivery = () => context.db.prisma.webhookDelivery.findUnique({ where: { id, tenantId, endpointId } });
      found(await delivery(), 'webhook delivery', id);
      await once(
        context,
        'redeliverWebhook',
        args,
        (sql) => redeliverWebhook(sql, tenantId, id),
        (redelivered) => (redelivered ? { type: 'webhook_delivery', id: redelivered.id } : null),
        async (resource) => resource,
      );
      return found(await delivery(), 'webhook delivery', id);
    },
  }),
}));
