import { execFileSync } from 'node:child_process';
import type { TestProject } from 'vitest/node';
import { createTemplateDatabase, databaseKinds } from './fixtures/databases.js';
import { seedTestTenants } from './fixtures/gateway.js';

/**
 * Once per run: compiles src/ to dist/, so the tests that start the real processes (`npm start`, the CLI) run
 * the code under test and not a stale build; and seeds one database per kind for the test files to copy
 * (createTestGateway), instead of each file booting, migrating and seeding its own.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  execFileSync(process.execPath, ['scripts/build.mjs'], { stdio: 'inherit' });
  const templates = await Promise.all(databaseKinds.map((kind) => createTemplateDatabase(kind, seedTestTenants)));
  project.provide(
    'seededDatabases',
    Object.fromEntries(databaseKinds.map((kind, i) => [kind, { template: templates[i]!.template, tenants: templates[i]!.filled }])),
  );
  project.provide('migratedPgliteDataDir', templates[databaseKinds.indexOf('pglite')]!.migratedDataDir!);
  return async () => {
    await Promise.all(templates.map((t) => t.dispose()));
  };
}
