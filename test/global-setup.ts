import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { compileChildScripts } from './fixtures/children.js';
import { createTemplateDatabase, databaseKinds } from './fixtures/databases.js';
import { seedTestTenants } from './fixtures/gateway.js';
import { ROOT } from './fixtures/server-process.js';

/** `node scripts/build.mjs`, its output shown; resolves once it succeeded. */
function buildDist(): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['scripts/build.mjs'], { cwd: ROOT, stdio: 'inherit' });
    child.once('error', reject);
    child.once('exit', (code, signal) => (code === 0 ? resolve() : reject(new Error(`scripts/build.mjs failed (${signal ?? code})`))));
  });
}

/**
 * Once per run: compiles src/ to dist/, so the tests that start the real processes (the server, the CLI) run
 * the code under test and not a stale build; bundles the scripts tests run in processes of their own
 * (startChild) from src/ as well; and migrates, then seeds, one database per kind for the test files to copy
 * (createTestDatabase, createTestGateway), instead of each file booting, migrating and seeding its own. The
 * two builds run beside the databases' set-up, which is mostly PGlite's initdb in this process.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const cache = join(ROOT, 'node_modules', '.cache');
  mkdirSync(cache, { recursive: true });
  // One directory per run, inside the project (the bundles' external dependencies resolve from it): two runs
  // share no bundle, and none outlives its run.
  const childScriptsDir = mkdtempSync(join(cache, 'gw-test-children-'));
  const templates = databaseKinds.map((kind) => createTemplateDatabase(kind, seedTestTenants));
  // Every part settles, so that the templates made are removed when another part failed.
  const settled = await Promise.allSettled<unknown>([...templates, buildDist(), compileChildScripts(childScriptsDir)]);
  const seeded = (await Promise.allSettled(templates)).flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
  const teardown = async () => {
    rmSync(childScriptsDir, { recursive: true, force: true });
    await Promise.all(seeded.map((t) => t.dispose()));
  };
  const failures = settled.flatMap((result) => (result.status === 'rejected' ? [result.reason as unknown] : []));
  if (failures.length > 0) {
    await teardown();
    throw failures.length === 1 ? failures[0] : new AggregateError(failures, 'the global setup failed');
  }
  project.provide(
    'seededDatabases',
    Object.fromEntries(databaseKinds.map((kind, i) => [kind, { template: seeded[i]!.template, tenants: seeded[i]!.filled }])),
  );
  project.provide('migratedDatabases', Object.fromEntries(databaseKinds.map((kind, i) => [kind, seeded[i]!.migrated])));
  project.provide('migratedPgliteDataDir', seeded[databaseKinds.indexOf('pglite')]!.migratedDataDir!);
  project.provide('childScriptsDir', childScriptsDir);
  return teardown;
}
