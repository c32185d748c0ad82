import { actorOf } from '../auth/audit.js';
import { changeMemberRole, codePath, type CodePurpose, inviteMember, issueMemberCode, removeMember } from '../auth/members.js';
import type { Context } from '../context.js';
import { prismaColumns } from '../query/columns.js';
import { builder } from './builder.js';
import { prismaListField } from './prisma-list.js';
import { adminRemoval, assertIdLength, removalType } from './ids.js';
import { activityOriginOf, requireViewer } from './viewer.js';
import { once } from './idempotency.js';

// The organization's members (people who sign in), admin only (access:manage), always within the caller's
// tenant. The API the console builds on; it stays as it is:
//
//   type Member { id, email, role: MemberRole, pending: Boolean!, createdAt, lastSeenAt, createdBy }
//   enum MemberRole { admin reader }
//   Query.members: [Member!]!                              admin
//   Query.memberList(filter, search, orderBy, limit, offset): MemberList { totalCount nodes }   admin (REST's list)
//   Query.currentMember: Member                            the signed-in member; null for a token or a JWT
//   Mutation.inviteMember(email: String!, role: MemberRole!): MemberInvitation!   admin
//     MemberInvitation { member: Member!, code: String! (shown once), path: String! (/console/invite/<code>), expiresAt }
//   Mutation.resendInvitation(id: ID!): MemberInvitation!     admin; a pending member's new code, earlier ones void
//   Mutation.createPasswordReset(id: ID!): MemberInvitation!  admin; a code (/console/reset/<code>) for a member with a
//     password to choose a new one: signed in, its other sessions end (a pending member's is a new invitation)
//   Mutation.changeMemberRole(id: ID!, role: MemberRole!): Member!                admin; ends the member's sessions
//   Mutation.removeMember(id: ID!): RemovedMember! { id }                         admin; ends the member's sessions
//
// Inviting an email again clears its password at once; a password reset keeps it until the code is used. The last
// admin member who can sign in is neither demoted nor removed (409 CONFLICT).

const MemberRole = builder.enumType('MemberRole', {
  values: ['admin', 'reader'] as const,
  description: "admin: everything within the organization. reader: read-only. (engine is a service user role, never a member's.)",
});

const Member = builder.prismaObject('Member', {
  description: 'A person of the organization, who signs in with an email and a password.',
  select: { id: true },
  fields: (t) => ({
    id: t.exposeID('id'),
    email: t.exposeString('email'),
    role: t.field({ type: MemberRole, select: { role: true }, resolve: (member) => (member.role === 'admin' ? 'admin' : 'reader') }),
    pending: t.boolean({
      description: 'True until the invitation is accepted (and again after a new invitation, until that one is).',
      select: { passwordHash: true },
      resolve: (member) => member.passwordHash === null,
    }),
    singleSignOn: t.boolean({
      description: "True once the member has signed in with the organization's identity provider (linked to its account there).",
      select: { providerSubject: true },
      resolve: (member) => member.providerSubject !== null,
    }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    lastSeenAt: t.expose('lastSeenAt', {
      type: 'DateTime',
      nullable: true,
      description:
        'The last request of one of its sessions (written at most once a minute, or every tenth of the session idle timeout when that is shorter).',
    }),
    createdBy: t.exposeString('createdBy', {
      nullable: true,
      description: 'Who invited it first: member:<id>, token:<id>, jwt:<sub> or cli.',
    }),
  }),
});

const MEMBER_COLUMNS = prismaColumns({ id: 'string', email: 'string', role: 'enum', createdAt: 'dateTime', lastSeenAt: 'dateTime?' });

prismaListField('memberList', {
  item: Member,
  listDescription: 'A page of members, by email unless orderBy says otherwise.',
  description: "A page of the organization's members, with filters and order (what REST's GET /members runs).",
  permission: 'access:manage',
  columns: MEMBER_COLUMNS,
  enums: { role: MemberRole },
  defaultOrder: [{ field: 'email' }, { field: 'id' }],
  search: { fields: ['email'], description: 'Case-insensitive text in the email.' },
  model: (prisma) => prisma.member,
});

/** An invitation as the API shows it; `code` only in the first answer (an Idempotency-Key replay has it null). */
interface Invitation {
  memberId: string;
  tenantId: string;
  purpose: CodePurpose;
  code: string | null;
  expiresAt: Date;
}

const MemberInvitation = builder.objectRef<Invitation>('MemberInvitation').implement({
  fields: (t) => ({
    member: t.prismaField({
      type: Member,
      resolve: (query, invitation, _args, context) =>
        context.db.prisma.member.findUniqueOrThrow({
          ...query,
          where: { tenantId_id: { tenantId: invitation.tenantId, id: invitation.memberId } },
        }),
    }),
    code: t.exposeString('code', {
      nullable: true,
      description: 'The invitation or reset code: single use, shown only now (null in the replay of a request with an Idempotency-Key).',
    }),
    path: t.string({
      nullable: true,
      description:
        'The console page that accepts it, /console/invite/<code> or /console/reset/<code> (prefix it with the server origin); null in the replay of a request with an Idempotency-Key.',
      resolve: (invitation) => (invitation.code === null ? null : codePath(invitation.purpose, invitation.code)),
    }),
    expiresAt: t.expose('expiresAt', { type: 'DateTime' }),
  }),
});

const RemovedMember = removalType('RemovedMember');

builder.queryFields((t) => ({
  members: t.prismaField({
    type: [Member],
    description: "The organization's members by email.",
    authScopes: { permission: 'access:manage' },
    resolve: (query, _root, _args, context) =>
      context.db.prisma.member.findMany({
        ...query,
        where: { tenantId: requireViewer(context).tenantId },
        orderBy: [{ email: 'asc' }, { id: 'asc' }],
      }),
  }),
  currentMember: t.prismaField({
    type: Member,
    nullable: true,
    description: 'The signed-in member (a session); null for a token or a JWT.',
    authScopes: { authenticated: true },
    resolve: (query, _root, _args, context) => {
      const viewer = requireViewer(context);
      // Taken before the early null too: Pothos counts a prisma field whose query is never read as a mistake and
      // warns of it on every token's request.
      const selection = { ...query };
      if (viewer.credential !== 'session') return null;
      return context.db.prisma.member.findUnique({
        ...selection,
        where: { tenantId_id: { tenantId: viewer.tenantId, id: viewer.subject } },
      });
    },
  }),
}));

builder.mutationFields((t) => ({
  inviteMember: t.field({
    type: MemberInvitation,
    description: 'Invites an email (or invites it again: its password is reset and its sessions end). The code is valid 7 days, once.',
    authScopes: { permission: 'access:manage' },
    args: { email: t.arg.string({ required: true }), role: t.arg({ type: MemberRole, required: true }) },
    resolve: async (_root, args, context): Promise<Invitation> => {
      const viewer = requireViewer(context);
      return once<Invitation>(
        context,
        'inviteMember',
        args,
        async (sql) => {
          const input = {
            tenantId: viewer.tenantId,
            email: args.email,
            role: args.role,
            createdBy: actorOf(viewer),
            activity: activityOriginOf(context),
          };
          const { member, code, expiresAt } = await inviteMember(sql, input);
          return { memberId: member.id, tenantId: viewer.tenantId, purpose: 'invitation', code, expiresAt };
        },
        (invitation) => ({ type: 'member', id: invitation.memberId }),
        (resource) => replayedCode(context, 'invitation', resource?.id ?? ''),
      );
    },
  }),
  resendInvitation: t.field({
    type: MemberInvitation,
    description:
      'Gives a pending member a new invitation code (valid 7 days, once); the earlier one stops working. CONFLICT for a member who has a password (create a password reset instead).',
    authScopes: { permission: 'access:manage' },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, context) => issueCodeOnce(context, 'resendInvitation', 'invitation', args),
  }),
  createPasswordReset: t.field({
    type: MemberInvitation,
    description:
      "Gives a member with a password a reset code (valid 7 days, once; its page is /console/reset/<code>): its holder chooses a new password and is signed in, and the member's other sessions end. The old password works until then. Earlier codes stop working. For a pending member it is a new invitation (/console/invite/<code>).",
    authScopes: { permission: 'access:manage' },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, context) => issueCodeOnce(context, 'createPasswordReset', 'password_reset', args),
  }),
  changeMemberRole: t.prismaField({
    type: Member,
    description: "Changes a member's role; the member's sessions end (it signs in again with the new role).",
    authScopes: { permission: 'access:manage' },
    args: { id: t.arg.id({ required: true }), role: t.arg({ type: MemberRole, required: true }) },
    resolve: async (query, _root, args, context) => {
      const { tenantId } = requireViewer(context);
      const id = assertIdLength(args.id, 'member');
      await changeMemberRole(context.db, { tenantId, memberId: id, role: args.role, activity: activityOriginOf(context) });
      return context.db.prisma.member.findUniqueOrThrow({ ...query, where: { tenantId_id: { tenantId, id } } });
    },
  }),
  removeMember: adminRemoval(
    t,
    { type: RemovedMember, description: 'Removes a member with its sessions and invitations.', what: 'member' },
    (db, tenantId, memberId, activity) => removeMember(db, { tenantId, memberId, activity }),
  ),
}));

/** A new code of a member (resendInvitation, createPasswordReset), at most once per Idempotency-Key. */
function issueCodeOnce(context: Context, operation: string, purpose: CodePurpose, args: { id: string }): Promise<Invitation> {
  const { tenantId } = requireViewer(context);
  const memberId = assertIdLength(args.id, 'member');
  return once<Invitation>(
    context,
    operation,
    args,
    async (sql) => {
      const issued = await issueMemberCode(sql, { tenantId, memberId, purpose, activity: activityOriginOf(context) });
      return { memberId, tenantId, purpose: issued.purpose, code: issued.code, expiresAt: issued.expiresAt };
    },
    (issued) => ({ type: 'member', id: issued.memberId }),
    (resource) => replayedCode(context, purpose, resource?.id ?? memberId),
  );
}

/**
 * A replay shows the code's answer without the code: only its hash is kept (lost the first answer? ask again,
 * with a new key).
 */
async function replayedCode(context: Context, purpose: CodePurpose, memberId: string): Promise<Invitation> {
  const { tenantId } = requireViewer(context);
  const { expiresAt } = await context.db.prisma.memberInvitation.findFirstOrThrow({
    where: { tenantId, memberId },
    orderBy: { createdAt: 'desc' },
    select: { expiresAt: true },
  });
  return { memberId, tenantId, purpose, code: null, expiresAt };
}
