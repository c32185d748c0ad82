import { actorOf } from '../auth/audit.js';
import {
  APPROVAL_COLUMNS,
  APPROVAL_DEFAULT_ORDER,
  type ApprovalRow,
  countOAuthApprovals,
  createOAuthApplication,
  deleteOAuthApplication,
  findOAuthApplication,
  type OAuthApplicationInfo,
  type OAuthApproval,
  readOAuthApprovalPage,
  revokeOAuthApproval,
} from '../auth/oauth-applications.js';
import { OAUTH_SCOPES } from '../auth/oauth-clients.js';
import { ApiError } from '../errors.js';
import { prismaColumns } from '../query/columns.js';
import { likePattern, type OrderInput, orderKeys, searchTerm } from '../query/filter.js';
import { pageBounds } from '../query/page-bounds.js';
import { allOf, filterSql, keysetOrder, sql } from '../query/sql.js';
import { builder } from './builder.js';
import { pageComplexity } from './complexity.js';
import { resourceFilter, resourceOrder } from './filters.js';
import { once } from './idempotency.js';
import { adminRemoval, assertIdLength, removalType } from './ids.js';
import { listPage, listType, pageArgs, pageWindow } from './list.js';
import { NEWEST_FIRST, prismaListField } from './prisma-list.js';
import { activityOriginOf, requireViewer } from './viewer.js';

// Partners' applications (the authorization code flow with PKCE, docs/reference/oauth.md) and the approvals
// members gave them. Admins (access:manage) register and delete applications and see and revoke every approval of
// the organization; a member signed in to the console sees and revokes their own. A client secret appears once,
// in createOAuthApplication's payload.

const SCOPE = `Space-separated scopes (${OAUTH_SCOPES.join(', ')}) the application may ask for.`;

const OAuthApplicationRef = builder.prismaObject('OAuthApplication', {
  description:
    "A partner's application: it sends a member of this organization to the consent page (authorization code flow with PKCE, S256) and, once approved, acts for them with the scopes both its own and the member's role allow.",
  select: { id: true },
  fields: (t) => ({
    id: t.exposeID('id', { description: 'The client_id.' }),
    name: t.exposeString('name'),
    redirectUris: t.exposeStringList('redirectUris', {
      description: 'Where codes are sent; an authorization request must name one exactly.',
    }),
    scope: t.exposeString('scope', { description: SCOPE }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    createdBy: t.exposeString('createdBy', { nullable: true }),
  }),
});

const APPLICATION_COLUMNS = prismaColumns({ id: 'string', name: 'string', scope: 'string', createdAt: 'dateTime' });

prismaListField('oauthApplicationList', {
  item: OAuthApplicationRef,
  listDescription: 'A page of partner applications, newest first unless orderBy says otherwise.',
  description: "A page of the organization's partner applications, with filters and order (what REST's GET /oauth-applications runs).",
  permission: 'access:manage',
  columns: APPLICATION_COLUMNS,
  defaultOrder: NEWEST_FIRST,
  search: { fields: ['name'], description: 'Case-insensitive text in the name.' },
  model: (prisma) => prisma.oAuthApplication,
});

/** The secret only in the first answer (an Idempotency-Key replay has it null). */
type CreatedApplication = OAuthApplicationInfo & { clientSecret: string | null };

const CreatedOAuthApplication = builder.objectRef<CreatedApplication>('CreatedOAuthApplication').implement({
  fields: (t) => ({
    clientId: t.exposeID('id'),
    clientSecret: t.exposeString('clientSecret', {
      nullable: true,
      description: 'The client secret: store it now, it is never shown again (null in the replay of a request with an Idempotency-Key).',
    }),
    name: t.exposeString('name'),
    redirectUris: t.exposeStringList('redirectUris'),
    scope: t.exposeString('scope'),
  }),
});

const DeletedOAuthApplication = removalType('DeletedOAuthApplication');

const OAuthApprovalRef = builder.objectRef<OAuthApproval>('OAuthApproval').implement({
  description: "A member's approval of an application: its refresh and access tokens live as long as it does.",
  fields: (t) => ({
    id: t.exposeID('id'),
    applicationId: t.exposeID('applicationId'),
    applicationName: t.exposeString('applicationName'),
    memberId: t.exposeID('memberId'),
    memberEmail: t.exposeString('memberEmail'),
    scope: t.exposeString('scope', { description: 'The scopes granted: within both the application and the member role.' }),
    approvedAt: t.expose('approvedAt', { type: 'DateTime' }),
    expiresAt: t.expose('expiresAt', { type: 'DateTime', nullable: true }),
  }),
});

const APPROVAL_PAGE = pageBounds(100, 100);
const OAuthApprovalFilter = resourceFilter('OAuthApprovalFilter', APPROVAL_COLUMNS);
const OAuthApprovalOrder = resourceOrder('OAuthApprovalOrder', APPROVAL_COLUMNS);
const OAuthApprovalList = listType(
  'OAuthApprovalList',
  OAuthApprovalRef,
  "A page of members' approvals of partner applications, newest first unless orderBy says otherwise.",
);

const RevokedOAuthApproval = removalType('RevokedOAuthApproval');

builder.queryFields((t) => ({
  oauthApplications: t.prismaField({
    type: ['OAuthApplication'],
    description: "The organization's partner applications, newest first.",
    authScopes: { permission: 'access:manage' },
    resolve: (query, _root, _args, context) =>
      context.db.prisma.oAuthApplication.findMany({
        ...query,
        where: { tenantId: requireViewer(context).tenantId },
        orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
      }),
  }),
  oauthApprovalList: t.field({
    type: OAuthApprovalList,
    complexity: pageComplexity(APPROVAL_PAGE),
    description:
      "A page of approvals, with filters and order (what REST's GET /oauth-approvals runs): an admin's are every approval of the organization, a member's signed in to the console their own, any other credential's none.",
    authScopes: { authenticated: true },
    args: {
      filter: t.arg({ type: OAuthApprovalFilter }),
      search: t.arg.string({ description: "Case-insensitive text in the application's name or the member's email." }),
      orderBy: t.arg({ type: [OAuthApprovalOrder] }),
      ...pageArgs(t.arg, APPROVAL_PAGE, { limitDescription: `Default ${APPROVAL_PAGE.defaultLimit}, at most ${APPROVAL_PAGE.maxLimit}.` }),
    },
    resolve: async (_root, args, context) => {
      const viewer = requireViewer(context);
      const keys = orderKeys(args.orderBy as OrderInput[] | null | undefined, APPROVAL_COLUMNS, [...APPROVAL_DEFAULT_ORDER]);
      const window = await pageWindow(args, APPROVAL_PAGE, context, { list: 'oauthApprovalList', args, keyCount: keys.length });
      const admin = viewer.permissions.has('access:manage');
      const term = searchTerm(args.search);
      const pattern = term ? likePattern({ kind: 'substring', text: term }) : null;
      const query = {
        tenantId: viewer.tenantId,
        // Not an admin: the member's own; a credential that is no member (a token, an engine) has none.
        memberId: admin ? null : viewer.credential === 'session' ? viewer.subject : '',
        where: allOf([
          filterSql(args.filter, APPROVAL_COLUMNS),
          pattern ? sql`("a"."name" ILIKE ${pattern} OR "m"."email" ILIKE ${pattern})` : allOf([]),
        ]),
        ...keysetOrder(keys, window.after),
        take: window.take,
        skip: window.skip,
      };
      return listPage<ApprovalRow>(
        (take) => readOAuthApprovalPage(context.db, { ...query, take }),
        () => countOAuthApprovals(context.db, query),
        window,
        (row) => row.keyValues,
      );
    },
  }),
}));

builder.mutationFields((t) => ({
  createOAuthApplication: t.field({
    type: CreatedOAuthApplication,
    description: "Registers a partner's application; its client secret is in the answer, once.",
    authScopes: { permission: 'access:manage' },
    args: {
      name: t.arg.string({ required: true }),
      redirectUris: t.arg.stringList({ required: true, description: 'https (http only on loopback), without a fragment; 1 to 10.' }),
      scope: t.arg.string({ description: `${SCOPE} Absent: all of them.` }),
    },
    resolve: (_root, args, context) => {
      const viewer = requireViewer(context);
      return once<CreatedApplication>(
        context,
        'createOAuthApplication',
        args,
        (sql) =>
          createOAuthApplication(sql, {
            tenantId: viewer.tenantId,
            name: args.name,
            redirectUris: args.redirectUris,
            scope: args.scope,
            createdBy: actorOf(viewer),
            activity: activityOriginOf(context),
          }),
        (application) => ({ type: 'oauth_application', id: application.id }),
        async (resource) => {
          const application = resource ? await findOAuthApplication(context.db, viewer.tenantId, resource.id) : null;
          if (!application) throw new ApiError('NOT_FOUND', 'no such OAuth application');
          return { ...application, clientSecret: null };
        },
      );
    },
  }),
  deleteOAuthApplication: adminRemoval(
    t,
    {
      type: DeletedOAuthApplication,
      description: 'Deletes an application with every approval of it: its tokens stop working at once.',
      what: 'OAuth application',
    },
    (db, tenantId, applicationId, activity) => deleteOAuthApplication(db, { tenantId, applicationId, activity }),
  ),
  revokeOAuthApproval: t.field({
    type: RevokedOAuthApproval,
    description: "Revokes an approval: the member's own, or (admins) any of the organization. Its tokens stop at once.",
    authScopes: { authenticated: true },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, context) => {
      const viewer = requireViewer(context);
      const admin = viewer.permissions.has('access:manage');
      if (!admin && viewer.credential !== 'session') throw new ApiError('NOT_FOUND', 'no such approval');
      return revokeOAuthApproval(context.db, {
        tenantId: viewer.tenantId,
        approvalId: assertIdLength(args.id, 'approval'),
        memberId: admin ? undefined : viewer.subject,
        activity: activityOriginOf(context),
      });
    },
  }),
}));
