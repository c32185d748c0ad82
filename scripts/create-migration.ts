// Creates prisma/migrations/<timestamp>_<name>/migration.sql with the SQL that takes the migrations folder
// to schema.prisma, like `prisma migrate dev --create-only`, but offline: Prisma's Wasm schema engine diffs
// against a shadow database that is an in-memory PGlite (the CLI would download a native engine).
// Usage: npm run migration:create -- <name>
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { PrismaPGlite } from 'pglite-prisma-adapter';
import { pgliteOptions } from '../src/db/client.js';
import { MIGRATIONS_DIR, readMigrations } from '../src/db/migrate.js';
import { NO_FILTERS, openSchemaEngine, readPrismaSchema, SCHEMA_PATH } from '../src/db/schema-engine.js';

const name = process.argv[2];
if (!name || !/^[a-z0-9_]+$/.test(name)) {
  process.stderr.write('usage: npm run migration:create -- <name: lowercase letters, digits, _>\n');
  process.exit(2);
}

const schema = readPrismaSchema();
const engine = await openSchemaEngine(new PrismaPGlite(new PGlite(await pgliteOptions())), schema);
const migrations = readMigrations();
const result = await engine.diff({
  from: {
    tag: 'migrations',
    baseDir: join(process.cwd(), MIGRATIONS_DIR),
    lockfile: { path: 'migration_lock.toml', content: 'provider = "postgresql"\n' },
    shadowDbInitScript: '',
    migrationDirectories: migrations.map((m) => ({
      path: m.name,
      migrationFile: { path: 'migration.sql', content: { tag: 'ok', value: m.sql } },
    })),
  },
  to: { tag: 'schemaDatamodel', files: [{ path: SCHEMA_PATH, content: schema }] },
  script: true,
  exitCode: true,
  filters: NO_FILTERS,
});
if (result.exitCode === 0) {
  process.stderr.write('schema.prisma and the migrations agree: nothing to create\n');
  process.exit(0);
}
const stamp = new Date().toISOString().replace(/\D/g, '').slice(0, 14);
const dir = join(MIGRATIONS_DIR, `${stamp}_${name}`);
mkdirSync(dir, { recursive: true });
writeFileSync(join(dir, 'migration.sql'), result.stdout ?? '');
process.stdout.write(`${dir}/migration.sql\n`);
// The engine leaves a timer behind after a shadow-database diff.
process.exit(0);
