import { CLI_ORIGIN } from '../db/activity.js';
import { invitationUrl, inviteMember, issueMemberCode, MEMBER_ROLES, normalizeEmail, publicOriginOf } from '../auth/members.js';
import { ApiError } from '../errors.js';
import { CliError, stringOption, UsageError, type Command } from './commands.js';
import { requireTenant } from './tenant.js';

export const memberCommands: Command[] = [
  {
    name: ['member', 'invite'],
    usage: '--tenant <slug> --email <email> --role <admin|reader>',
    summary: 'invite a person (or invite again: resets the password); prints the invitation URL alone on stdout',
    options: { tenant: { type: 'string' }, email: { type: 'string' }, role: { type: 'string' } },
    check(input) {
      const role = stringOption(input, 'role', true);
      if (!(MEMBER_ROLES as readonly string[]).includes(role))
        throw new UsageError(`--role must be one of ${MEMBER_ROLES.join(', ')}, got "${role}"`);
      stringOption(input, 'email', true);
    },
    async run({ db, config, out, err }, input) {
      const tenant = await requireTenant(db, stringOption(input, 'tenant', true));
      try {
        const { member, code, expiresAt } = await inviteMember(db.raw, {
          tenantId: tenant.id,
          email: stringOption(input, 'email', true),
          role: stringOption(input, 'role', true),
          createdBy: 'cli',
          activity: CLI_ORIGIN,
        });
        out(invitationUrl(publicOriginOf(config), code));
        err(`invited ${member.email} (${member.role}) to ${tenant.slug}; the URL works once, until ${expiresAt.toISOString()}`);
      } catch (error) {
        if (error instanceof ApiError) throw new CliError(error.message);
        throw error;
      }
    },
  },
  {
    name: ['member', 'reset-password'],
    usage: '--tenant <slug> --email <email>',
    summary: 'a password reset link for a member who has a password (it works until the new one is chosen); prints the URL alone on stdout',
    options: { tenant: { type: 'string' }, email: { type: 'string' } },
    check(input) {
      stringOption(input, 'email', true);
    },
    async run({ db, config, out, err }, input) {
      const tenant = await requireTenant(db, stringOption(input, 'tenant', true));
      try {
        const email = normalizeEmail(stringOption(input, 'email', true));
        const member = await db.prisma.member.findUnique({
          where: { tenantId_email: { tenantId: tenant.id, email } },
          select: { id: true },
        });
        if (!member) throw new CliError(`${email} is no member of ${tenant.slug}`);
        const { code, expiresAt, purpose } = await issueMemberCode(db.raw, {
          tenantId: tenant.id,
          memberId: member.id,
          purpose: 'password_reset',
          activity: CLI_ORIGIN,
        });
        out(invitationUrl(publicOriginOf(config), code, purpose));
        err(`a new password for ${email} in ${tenant.slug}; the URL works once, until ${expiresAt.toISOString()}`);
      } catch (error) {
        if (error instanceof ApiError) throw new CliError(error.message);
        throw error;
      }
    },
  },
];
