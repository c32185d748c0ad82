import { CLI_ORIGIN } from '../db/activity.js';
import { createServiceUser, deleteServiceUser, findServiceUserByName, listServiceUsers } from '../auth/service-users.js';
import { isRole } from '../auth/permissions.js';
import { Role } from '../generated/prisma/enums.js';
import { CliError, printList, stringOption, UsageError, type Command } from './commands.js';
import { requireTenant } from './tenant.js';

const ROLES = Object.keys(Role) as Role[];

function roleOption(value: string): Role {
  if (!isRole(value)) {
    throw new UsageError(`--role must be one of ${ROLES.join(', ')}, got "${value}"`);
  }
  return value;
}

export const serviceUserCommands: Command[] = [
  {
    name: ['service-user', 'create'],
    usage: '--tenant <slug> --name <name> --role <admin|reader|engine>',
    summary: 'create a service user; prints its id alone on stdout',
    options: { tenant: { type: 'string' }, name: { type: 'string' }, role: { type: 'string' } },
    async run({ db, out }, input) {
      const tenant = await requireTenant(db, stringOption(input, 'tenant', true));
      const name = stringOption(input, 'name', true);
      const role = roleOption(stringOption(input, 'role', true));
      const user = await createServiceUser(db, { tenantId: tenant.id, name, role, createdBy: 'cli', activity: CLI_ORIGIN });
      out(user.id);
    },
  },
  {
    name: ['service-user', 'list'],
    usage: '--tenant <slug> [--json]',
    summary: "list a tenant's service users (JSON lines with --json)",
    options: { tenant: { type: 'string' }, json: { type: 'boolean' } },
    async run({ db, out }, input) {
      const tenant = await requireTenant(db, stringOption(input, 'tenant', true));
      const users = await listServiceUsers(db, tenant.id);
      const now = Date.now();
      const activeTokens = (user: (typeof users)[number]) =>
        user.tokens.filter((t) => t.revokedAt === null && t.expiresAt.getTime() > now).length;
      printList(out, input, users, {
        json: (user) => ({
          id: user.id,
          name: user.name,
          role: user.role,
          created_at: user.createdAt.toISOString(),
          tokens: user.tokens.length,
          active_tokens: activeTokens(user),
        }),
        header: ['ID', 'NAME', 'ROLE', 'CREATED', 'ACTIVE TOKENS'],
        row: (u) => [u.id, u.name, u.role, u.createdAt.toISOString(), String(activeTokens(u))],
      });
    },
  },
  {
    name: ['service-user', 'delete'],
    usage: '--tenant <slug> --name <name>',
    summary: 'delete a service user and all its tokens',
    options: { tenant: { type: 'string' }, name: { type: 'string' } },
    async run({ db, err }, input) {
      const tenant = await requireTenant(db, stringOption(input, 'tenant', true));
      const name = stringOption(input, 'name', true);
      const user = await findServiceUserByName(db, tenant.id, name);
      if (!user) throw new CliError(`service user "${name}" does not exist in tenant "${tenant.slug}"`);
      const { deletedTokens } = await deleteServiceUser(db, { tenantId: tenant.id, serviceUserId: user.id, activity: CLI_ORIGIN });
      err(`deleted service user ${user.id} (${name}) and ${deletedTokens} token(s)`);
    },
  },
];
