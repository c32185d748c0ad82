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
  const [templates, ...builds] = await Promise.allSettled([
    Promise.all(databaseKinds.map((kind) => createTemplateDatabase(kind, seedTestTenants))),
    buildDist(),
    compileChildScripts(childScriptsDir),
  ]);
  const teardown = async () => {
    rmSync(childScriptsDir, { recursive: true, force: true });
    if (templates.status === 'fulfilled') await Promise.all(templates.value.map((t) => t.dispose()));
  };
  const failed = [templates, ...builds].find((result) => result.status === 'rejected');
  if (failed || templates.status === 'rejected') {
    await teardown();
    throw failed?.reason;
  }
  const seeded = templates.value;
  project.provide(
    'seededDatabases',
    Object.fromEntries(databaseKinds.map((kind, i) => [kind, { template: seeded[i]!.template, tenants: seeded[i]!.filled }])),
  );
  project.provide('migratedDatabases', Object.fromEntries(databaseKinds.map((kind, i) => [kind, seeded[i]!.migrated])));
  project.provide('migratedPgliteDataDir', seeded[databaseKinds.indexOf('pglite')]!.migratedDataDir!);
  project.provide('childScriptsDir', childScriptsDir);
  return teardown;
}
