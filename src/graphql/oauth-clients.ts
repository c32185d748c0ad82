import { actorOf } from '../auth/audit.js';
import type { CreatedOAuthClient as CreatedClient } from '../auth/oauth-clients.js';
import { createOAuthClient, deleteOAuthClient, findOAuthClient, OAUTH_SCOPES } from '../auth/oauth-clients.js';
import { ApiError } from '../errors.js';
import { prismaColumns } from '../query/columns.js';
import { builder } from './builder.js';
import { once } from './idempotency.js';
import { adminRemoval, assertIdLength, removalType } from './ids.js';
import { NEWEST_FIRST, prismaListField } from './prisma-list.js';
import { activityOriginOf, requireViewer } from './viewer.js';

// OAuth clients of service users, for the gateway's authorization server (docs/reference/oauth.md): admin-only
// (access:manage), always within the caller's tenant. A client secret appears exactly once, in
// createOAuthClient's payload.

const SCOPE = `Space-separated scopes (${OAUTH_SCOPES.join(', ')}) the client may ask for, within its service user's role.`;

const OAuthClientRef = builder.prismaObject('OAuthClient', {
  description:
    "An OAuth 2.0 client of a service user: it gets short-lived access tokens (client credentials grant at /oauth/token) that act with the service user's tenant and at most its role.",
  select: { id: true },
  fields: (t) => ({
    id: t.exposeID('id', { description: 'The client_id.' }),
    name: t.exposeString('name', { nullable: true }),
    authMethod: t.exposeString('authMethod', { description: 'client_secret_basic (client_secret_post also accepted) or private_key_jwt.' }),
    scope: t.exposeString('scope', { description: SCOPE }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    createdBy: t.exposeString('createdBy', { nullable: true }),
    serviceUserId: t.exposeID('serviceUserId', { description: 'The service user it acts as.' }),
    serviceUser: t.relation('serviceUser'),
  }),
});

const CLIENT_COLUMNS = prismaColumns({
  id: 'string',
  name: 'string?',
  serviceUserId: 'string',
  authMethod: 'string',
  scope: 'string',
  createdAt: 'dateTime',
});

prismaListField('oauthClientList', {
  item: OAuthClientRef,
  listDescription: 'A page of OAuth clients, newest first unless orderBy says otherwise.',
  description: "A page of the tenant's OAuth clients, with filters and order (what REST's GET /oauth-clients runs).",
  permission: 'access:manage',
  columns: CLIENT_COLUMNS,
  defaultOrder: NEWEST_FIRST,
  search: { fields: ['name'], description: 'Case-insensitive text in the name.' },
  model: (prisma) => prisma.oAuthClient,
});

const CreatedOAuthClient = builder.objectRef<CreatedClient>('CreatedOAuthClient').implement({
  fields: (t) => ({
    clientId: t.exposeID('id'),
    clientSecret: t.exposeString('clientSecret', {
      nullable: true,
      description:
        'The client secret: store it now, it is never shown again. Null for a private_key_jwt client, and in the replay of a request with an Idempotency-Key.',
    }),
    scope: t.exposeString('scope'),
    authMethod: t.exposeString('authMethod'),
    serviceUserId: t.exposeID('serviceUserId'),
    name: t.exposeString('name', { nullable: true }),
  }),
});

const DeletedOAuthClient = removalType('DeletedOAuthClient');

builder.queryFields((t) => ({
  oauthClients: t.prismaField({
    type: ['OAuthClient'],
    description: "The caller tenant's OAuth clients, newest first.",
    authScopes: { permission: 'access:manage' },
    resolve: (query, _root, _args, context) =>
      context.db.prisma.oAuthClient.findMany({
        ...query,
        where: { tenantId: requireViewer(context).tenantId },
        orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
      }),
  }),
}));

builder.mutationFields((t) => ({
  createOAuthClient: t.field({
    type: CreatedOAuthClient,
    description:
      'Creates an OAuth client for a service user of the tenant. Without jwks it authenticates with a client secret (in the answer, once); with jwks (public keys), by private_key_jwt.',
    authScopes: { permission: 'access:manage' },
    args: {
      serviceUserId: t.arg.id({ required: true }),
      name: t.arg.string(),
      scope: t.arg.string({ description: `${SCOPE} Absent: every scope the role holds.` }),
      jwks: t.arg({ type: 'JSONObject', description: 'A JWK Set of public keys: the client authenticates by private_key_jwt.' }),
    },
    resolve: (_root, args, context) => {
      const viewer = requireViewer(context);
      return once<CreatedClient>(
        context,
        'createOAuthClient',
        args,
        (sql) =>
          createOAuthClient(sql, {
            tenantId: viewer.tenantId,
            serviceUserId: assertIdLength(args.serviceUserId, 'service user'),
            name: args.name,
            scope: args.scope,
            jwks: args.jwks ?? undefined,
            createdBy: actorOf(viewer),
            activity: activityOriginOf(context),
          }),
        (client) => ({ type: 'oauth_client', id: client.id }),
        async (resource) => {
          const client = resource ? await findOAuthClient(context.db, viewer.tenantId, resource.id) : null;
          if (!client) throw new ApiError('NOT_FOUND', 'no such OAuth client');
          return { ...client, clientSecret: null };
        },
      );
    },
  }),
  deleteOAuthClient: adminRemoval(
    t,
    { type: DeletedOAuthClient, description: 'Deletes an OAuth client: its access tokens stop working at once.', what: 'OAuth client' },
    (db, tenantId, clientId, activity) => deleteOAuthClient(db, { tenantId, clientId, activity }),
  ),
}));
