import { ACTIVITY_TARGET_TYPES, ACTOR_KINDS } from '../db/activity.js';
import type { ActivityEntry as ActivityRow } from '../generated/prisma/client.js';
import { prismaColumns } from '../query/columns.js';
import { pageBounds } from '../query/page-bounds.js';
import { builder } from './builder.js';
import { NEWEST_FIRST, prismaListField } from './prisma-list.js';

// The activity log (src/db/activity.ts) as GraphQL: admin only (access:manage), always within the caller's
// tenant, newest first. REST's GET /activity runs `activity` (schema/operations/ListActivity.graphql).

const ActorKind = builder.enumType('ActorKind', {
  values: ACTOR_KINDS,
  description: "member: a signed-in person. token: a service user's token. jwt: a JWT's subject. cli: an operator at the command line.",
});

const ActivityTargetType = builder.enumType('ActivityTargetType', {
  values: ACTIVITY_TARGET_TYPES,
  description: 'What an activity entry changed.',
});

const ActivityEntry = builder.objectRef<ActivityRow>('ActivityEntry').implement({
  description: 'One change of the organization: who made it, when, from where, and to what.',
  fields: (t) => ({
    id: t.exposeID('id'),
    action: t.exposeString('action', {
      description:
        'What was done: member.invited, member.role_changed, member.removed, service_user.created, service_user.role_changed, service_user.deleted, token.created, token.revoked, connection.created, connection.updated, connection.deleted, webhook_endpoint.created, webhook_endpoint.updated, webhook_endpoint.deleted, webhook_endpoint.secret_rotated.',
    }),
    actorKind: t.field({ type: ActorKind, resolve: (entry) => entry.actorKind as (typeof ACTOR_KINDS)[number] }),
    actorId: t.exposeString('actorId', {
      nullable: true,
      description: "The member's id, the token's id or the JWT's subject; null for the CLI.",
    }),
    actorName: t.exposeString('actorName', {
      nullable: true,
      description: "The member's email or the token's service user name as it was then; the subject for a JWT.",
    }),
    targetType: t.field({ type: ActivityTargetType, resolve: (entry) => entry.targetType as (typeof ACTIVITY_TARGET_TYPES)[number] }),
    targetId: t.exposeString('targetId'),
    targetName: t.exposeString('targetName', {
      nullable: true,
      description: "The target's email, name, token prefix or URL as it was then.",
    }),
    address: t.exposeString('address', {
      nullable: true,
      description: 'The client address the request came from, as the rate limiter counts it; null for the CLI.',
    }),
    requestId: t.exposeString('requestId', { nullable: true, description: "The request's X-Request-Id; null for the CLI." }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
  }),
});

const ACTIVITY_COLUMNS = prismaColumns({
  id: 'string',
  action: 'string',
  actorKind: 'enum',
  actorId: 'string?',
  actorName: 'string?',
  targetType: 'enum',
  targetId: 'string',
  createdAt: 'dateTime',
});

prismaListField('activity', {
  name: 'Activity',
  item: ActivityEntry,
  listDescription: 'A page of the activity log, newest first unless orderBy says otherwise.',
  description:
    "The organization's activity log: who changed members, service users, tokens, connections and webhook endpoints, when and from where. Filter by action, actor, target type and time (createdAt: {gte, lt}).",
  permission: 'access:manage',
  columns: ACTIVITY_COLUMNS,
  enums: { actorKind: ActorKind, targetType: ActivityTargetType },
  defaultOrder: NEWEST_FIRST,
  search: {
    fields: ['action', 'actorName', 'targetName'],
    description: "Case-insensitive text in the action, the actor's name or the target's name.",
  },
  page: pageBounds(50, 100),
  model: (prisma) => prisma.activityEntry,
});
