import type { Command } from './commands.js';

export const dbCommands: Command[] = [
  {
    name: ['db', 'migrate'],
    usage: '',
    summary: 'apply pending migrations',
    // The dispatcher migrates before every command; this one only reports what that did.
    async run({ appliedMigrations, err }) {
      if (appliedMigrations.length === 0) err('database is up to date');
      for (const name of appliedMigrations) err(`applied ${name}`);
    },
  },
];
