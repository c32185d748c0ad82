import { seedDemoTenant } from '../seed/demo.js';
import { seedLoad } from '../seed/load.js';
import { integerOption, stringOption, UsageError, type Command, type CommandInput } from './commands.js';
import { requireTenant } from './tenant.js';

const seedOption = (seed: number | undefined) => (seed === undefined ? {} : { seed });

function parseDemo(input: CommandInput) {
  return { tenant: stringOption(input, 'tenant', true), seed: integerOption(input, 'seed') };
}

function parseLoad(input: CommandInput) {
  const args = {
    tenant: stringOption(input, 'tenant', true),
    connections: integerOption(input, 'connections', true),
    syncs: integerOption(input, 'syncs', true),
    seed: integerOption(input, 'seed'),
  };
  if (args.syncs > 0 && args.connections === 0) throw new UsageError('--syncs needs --connections of at least 1');
  return args;
}

export const seedCommands: Command[] = [
  {
    name: ['seed', 'demo'],
    usage: '--tenant <slug> [--seed <n>]',
    summary: 'add demo connections and six months of sync history to a tenant',
    options: { tenant: { type: 'string' }, seed: { type: 'string' } },
    check: (input) => void parseDemo(input),
    async run({ db, err }, input) {
      const args = parseDemo(input);
      const tenant = await requireTenant(db, args.tenant);
      const result = await seedDemoTenant(db, tenant.slug, seedOption(args.seed));
      err(`tenant ${tenant.slug}: added ${result.connections} connections and ${result.syncs} syncs`);
    },
  },
  {
    name: ['seed', 'load'],
    usage: '--tenant <slug> --connections <n> --syncs <m> [--seed <n>]',
    summary: 'add bulk synthetic connections and syncs for benchmarks',
    options: {
      tenant: { type: 'string' },
      connections: { type: 'string' },
      syncs: { type: 'string' },
      seed: { type: 'string' },
    },
    check: (input) => void parseLoad(input),
    async run({ db, err }, input) {
      const args = parseLoad(input);
      const tenant = await requireTenant(db, args.tenant);
      const started = Date.now();
      const result = await seedLoad(db, tenant.slug, {
        connections: args.connections,
        syncs: args.syncs,
        ...seedOption(args.seed),
      });
      const seconds = ((Date.now() - started) / 1000).toFixed(1);
      err(`tenant ${tenant.slug}: added ${result.connections} connections and ${result.syncs} syncs in ${seconds}s`);
    },
  },
];
