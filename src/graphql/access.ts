import { actorOf } from '../auth/audit.js';
import { changeServiceUserRole, createServiceUser, deleteServiceUser } from '../auth/service-users.js';
import { createToken, MAX_TOKEN_NAME_LENGTH, revokeToken } from '../auth/tokens.js';
import { ApiError } from '../errors.js';
import { Role as RoleValues } from '../generated/prisma/enums.js';
import { builder } from './builder.js';
import { adminRemoval, assertIdLength } from './ids.js';
import { activityOriginOf, requireViewer } from './viewer.js';

// The portal's "Service Users" section as GraphQL: admin-only (access:manage), always within the caller's
// tenant. Token values appear exactly once, in createToken's payload; nothing else can read them.

const TOKEN_NAME = `What the token is for, as its creator named it (printable, at most ${MAX_TOKEN_NAME_LENGTH} characters)`;

const CREATED_BY = 'Who created it: member:<id>, token:<id>, jwt:<sub> or cli; null when made before this was recorded.';

export const Role = builder.enumType(RoleValues, {
  name: 'Role',
  description:
    'admin: everything within the tenant. reader: read-only. engine: a sync engine (worker): reads connections and runs, claims runs and reports on them; nothing else.',
});

builder.prismaObject('Token', {
  description: 'Metadata of a personal access token. The value is shown only once, at creation.',
  select: { id: true },
  fields: (t) => ({
    id: t.exposeID('id'),
    name: t.exposeString('name', { nullable: true, description: `${TOKEN_NAME}; null when unnamed.` }),
    prefix: t.exposeString('prefix', { description: 'Public part of the value (igw_pat_<prefix>_…), for recognition.' }),
    expiresAt: t.expose('expiresAt', { type: 'DateTime' }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    lastUsedAt: t.expose('lastUsedAt', { type: 'DateTime', nullable: true, description: 'Updated at most once a minute.' }),
    revokedAt: t.expose('revokedAt', { type: 'DateTime', nullable: true }),
    createdBy: t.exposeString('createdBy', { nullable: true, description: CREATED_BY }),
    serviceUser: t.relation('serviceUser'),
  }),
});

builder.prismaObject('ServiceUser', {
  description: 'A non-human user of the API; its tokens act with its role.',
  select: { id: true },
  fields: (t) => ({
    id: t.exposeID('id'),
    name: t.exposeString('name'),
    role: t.expose('role', { type: Role }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime' }),
    createdBy: t.exposeString('createdBy', { nullable: true, description: CREATED_BY }),
    tokens: t.relation('tokens', { query: { orderBy: [{ createdAt: 'desc' }, { id: 'desc' }] } }),
  }),
});

const CreatedToken = builder
  .objectRef<{ id: string; token: string; prefix: string; name: string | null; expiresAt: Date }>('CreatedToken')
  .implement({
    fields: (t) => ({
      id: t.exposeID('id'),
      name: t.exposeString('name', { nullable: true, description: `${TOKEN_NAME}; null when unnamed.` }),
      token: t.exposeString('token', { description: 'The token value. Store it now: it is never shown again.' }),
      prefix: t.exposeString('prefix'),
      expiresAt: t.expose('expiresAt', { type: 'DateTime' }),
    }),
  });

const DeletedServiceUser = builder.objectRef<{ id: string; deletedTokens: number }>('DeletedServiceUser').implement({
  fields: (t) => ({ id: t.exposeID('id'), deletedTokens: t.exposeInt('deletedTokens') }),
});

builder.queryFields((t) => ({
  serviceUsers: t.prismaField({
    type: ['ServiceUser'],
    description: "The caller tenant's service users by name, with their tokens' metadata.",
    authScopes: { permission: 'access:manage' },
    resolve: (query, _root, _args, context) =>
      context.db.prisma.serviceUser.findMany({
        ...query,
        where: { tenantId: requireViewer(context).tenantId },
        orderBy: [{ name: 'asc' }, { id: 'asc' }],
      }),
  }),
}));

function serviceUserById(tenantId: string, id: string) {
  return { tenantId_id: { tenantId, id } };
}

builder.mutationFields((t) => ({
  createServiceUser: t.prismaField({
    type: 'ServiceUser',
    authScopes: { permission: 'access:manage' },
    args: { name: t.arg.string({ required: true }), role: t.arg({ type: Role, required: true }) },
    resolve: async (query, _root, args, context) => {
      const { tenantId } = requireViewer(context);
      const user = await createServiceUser(context.db, {
        tenantId,
        name: args.name,
        role: args.role,
        createdBy: actorOf(requireViewer(context)),
        activity: activityOriginOf(context),
      });
      return context.db.prisma.serviceUser.findUniqueOrThrow({ ...query, where: serviceUserById(tenantId, user.id) });
    },
  }),
  changeServiceUserRole: t.prismaField({
    type: 'ServiceUser',
    description: "The new role applies to the user's tokens from their next request.",
    authScopes: { permission: 'access:manage' },
    args: { id: t.arg.id({ required: true }), role: t.arg({ type: Role, required: true }) },
    resolve: async (query, _root, args, context) => {
      const { tenantId } = requireViewer(context);
      const id = assertIdLength(args.id, 'service user');
      await changeServiceUserRole(context.db, { tenantId, serviceUserId: id, role: args.role, activity: activityOriginOf(context) });
      return context.db.prisma.serviceUser.findUniqueOrThrow({ ...query, where: serviceUserById(tenantId, id) });
    },
  }),
  deleteServiceUser: adminRemoval(
    t,
    { type: DeletedServiceUser, description: 'Deletes a service user together with its tokens.', what: 'service user' },
    (db, tenantId, serviceUserId, activity) => deleteServiceUser(db, { tenantId, serviceUserId, activity }),
  ),
  createToken: t.field({
    type: CreatedToken,
    description:
      'Creates a personal access token for a service user. The expiry must be in the future, at most 366 days ahead. CONFLICT when the service user or the tenant already holds as many active tokens as allowed (TOKENS_PER_SERVICE_USER, TOKENS_PER_TENANT): revoke one first.',
    authScopes: { permission: 'access:manage' },
    args: {
      serviceUserId: t.arg.id({ required: true }),
      expiresAt: t.arg({ type: 'DateTime', required: true }),
      name: t.arg.string({ description: `${TOKEN_NAME}. Absent or blank: no name.` }),
    },
    resolve: async (_root, args, context) => {
      const { tenantId } = requireViewer(context);
      const serviceUserId = assertIdLength(args.serviceUserId, 'service user');
      const user = await context.db.prisma.serviceUser.findUnique({
        where: serviceUserById(tenantId, serviceUserId),
        select: { id: true },
      });
      if (!user) throw new ApiError('NOT_FOUND', `service user ${serviceUserId} not found`);
      return createToken(
        context.db,
        {
          tenantId,
          serviceUserId,
          expiresAt: args.expiresAt,
          name: args.name,
          createdBy: actorOf(requireViewer(context)),
          activity: activityOriginOf(context),
        },
        new Date(),
        context.tokenCaps,
      );
    },
  }),
  revokeToken: t.prismaField({
    type: 'Token',
    description: 'Revokes a token; revoking it again keeps the first revocation time.',
    authScopes: { permission: 'access:manage' },
    args: { id: t.arg.id({ required: true }) },
    resolve: async (query, _root, args, context) => {
      const { tenantId } = requireViewer(context);
      const id = assertIdLength(args.id, 'token');
      if ((await revokeToken(context.db, id, tenantId, new Date(), activityOriginOf(context))) === 'not_found') {
        throw new ApiError('NOT_FOUND', `token ${id} not found`);
      }
      return context.db.prisma.token.findFirstOrThrow({ ...query, where: { id, tenantId } });
    },
  }),
}));
