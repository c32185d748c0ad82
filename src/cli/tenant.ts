import type { Database } from '../db/client.js';
import { isConstraintViolation } from '../db/constraint-violations.js';
import { newId } from '../prefixed-ids.js';
import { CliError, printList, stringOption, UsageError, type Command, type CommandInput } from './commands.js';

const TENANT_SLUG = /^[a-z0-9][a-z0-9-]{1,62}$/;

function checkTenant(slug: string, name: string): void {
  if (!TENANT_SLUG.test(slug)) {
    throw new UsageError(`invalid tenant slug "${slug}": 2-63 characters, lowercase letters, digits and "-", not starting with "-"`);
  }
  if (name.trim() === '' || name.length > 200) throw new UsageError('--name must be 1-200 characters');
}

async function createTenant(db: Database, slug: string, name: string): Promise<string> {
  checkTenant(slug, name);
  if (await db.prisma.tenant.findUnique({ where: { slug }, select: { id: true } })) {
    throw new CliError(`tenant "${slug}" already exists`);
  }
  try {
    const tenant = await db.prisma.tenant.create({ data: { id: newId('ten'), slug, name: name.trim() } });
    return tenant.id;
  } catch (error) {
    // Another process created the same slug between the check and the insert.
    if (isConstraintViolation(error, 'unique')) {
      throw new CliError(`tenant "${slug}" already exists`);
    }
    throw error;
  }
}

/** Resolves `--tenant <slug>` for commands that act on an existing tenant. */
export async function requireTenant(db: Database, slug: string): Promise<{ id: string; slug: string }> {
  const tenant = await db.prisma.tenant.findUnique({ where: { slug }, select: { id: true, slug: true } });
  if (!tenant) throw new CliError(`tenant "${slug}" does not exist`);
  return tenant;
}

function parseCreate(input: CommandInput): { slug: string; name: string } {
  const slug = input.positionals[0]!;
  const name = stringOption(input, 'name') ?? slug;
  checkTenant(slug, name);
  return { slug, name };
}

export const tenantCommands: Command[] = [
  {
    name: ['tenant', 'create'],
    usage: '<slug> [--name <name>]',
    summary: 'create a tenant; prints its id alone on stdout',
    options: { name: { type: 'string' } },
    positionals: { min: 1, max: 1 },
    check: (input) => void parseCreate(input),
    async run({ db, out }, input) {
      const { slug, name } = parseCreate(input);
      out(await createTenant(db, slug, name));
    },
  },
  {
    name: ['tenant', 'list'],
    usage: '[--json]',
    summary: 'list the tenants (JSON lines with --json)',
    options: { json: { type: 'boolean' } },
    async run({ db, out }, input) {
      const tenants = await db.prisma.tenant.findMany({
        orderBy: { slug: 'asc' },
        select: { id: true, slug: true, name: true, createdAt: true, _count: { select: { serviceUsers: true } } },
      });
      printList(out, input, tenants, {
        json: ({ id, slug, name, createdAt, _count }) => ({
          id,
          slug,
          name,
          created_at: createdAt.toISOString(),
          service_users: _count.serviceUsers,
        }),
        header: ['ID', 'SLUG', 'NAME', 'CREATED', 'SERVICE USERS'],
        row: (t) => [t.id, t.slug, t.name, t.createdAt.toISOString(), String(t._count.serviceUsers)],
      });
    },
  },
];
