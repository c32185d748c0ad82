import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { openDatabase, type Database } from '../src/db/client.js';
import { createTestDatabase, type TestDatabase } from './fixtures/databases.js';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the CLI as a user would: a separate process, configured only through the environment. */
function cli(args: string[], env: Record<string, string>): Promise<Run> {
  const childEnv: NodeJS.ProcessEnv = { ...process.env, ...env };
  if (!env.DATABASE_URL) delete childEnv.DATABASE_URL;
  return new Promise((resolve) => {
    execFile('node_modules/.bin/tsx', ['src/cli.ts', ...args], { env: childEnv }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

interface Target {
  name: string;
  env(): Promise<Record<string, string>>;
  /** A second client on the database the CLI wrote, to check what it did. */
  open(): Promise<Database>;
  cleanup(): Promise<void>;
}

const dataDir = mkdtempSync(join(tmpdir(), 'gw-cli-'));
let postgres: TestDatabase | undefined;

const targets: Target[] = [
  {
    name: 'PGlite (DATA_DIR)',
    env: async () => ({ DATA_DIR: dataDir }),
    open: () => openDatabase({ dataDir }),
    cleanup: async () => rmSync(dataDir, { recursive: true, force: true }),
  },
];
if (process.env.TEST_DATABASE_URL) {
  targets.push({
    name: 'PostgreSQL (DATABASE_URL)',
    async env() {
      postgres = await createTestDatabase('postgres');
      return { DATABASE_URL: postgres.url! };
    },
    open: async () => postgres!,
    cleanup: async () => postgres?.dispose(),
  });
}

afterAll(async () => {
  for (const target of targets) await target.cleanup();
});

test('an unknown command prints the usage and exits 2 without touching a database', async () => {
  const neverCreated = join(dataDir, 'never-created');
  const run = await cli(['frobnicate', 'now'], { DATA_DIR: neverCreated });
  expect(existsSync(neverCreated)).toBe(false);
  expect(run.code).toBe(2);
  expect(run.stdout).toBe('');
  expect(run.stderr).toMatch(/unknown command: frobnicate now/);
  expect(run.stderr).toMatch(/usage: npm run --silent cli -- <command>/);
  expect(run.stderr).toMatch(/tenant create <slug>/);
});

test('a bad option is a usage error before any database is opened; an invalid environment is one line, exit 1', async () => {
  const neverCreated = join(dataDir, 'never-created');
  const badOption = await cli(['seed', 'load', '--tenant', 'x', '--connections', 'many', '--syncs', '1'], {
    DATA_DIR: neverCreated,
  });
  expect(badOption.code).toBe(2);
  expect(badOption.stderr).toMatch(/--connections must be a non-negative integer/);
  expect(existsSync(neverCreated)).toBe(false);

  const badEnv = await cli(['db', 'migrate'], { DATABASE_URL: 'mysql://nope' });
  expect(badEnv.code).toBe(1);
  expect(badEnv.stderr.trim().split('\n')).toHaveLength(1);
  expect(badEnv.stderr).toMatch(/DATABASE_URL/);
});

describe.each(targets)('on $name', (target) => {
  test('migrates, creates a tenant, refuses a duplicate, seeds demo and load data', async () => {
    const env = await target.env();

    const migrated = await cli(['db', 'migrate'], env);
    expect(migrated).toMatchObject({ code: 0, stdout: '' });

    const created = await cli(['tenant', 'create', 'acme', '--name', 'Acme Hotels'], env);
    expect(created.stderr).toBe('');
    expect(created.code).toBe(0);
    expect(created.stdout).toMatch(/^ten_[0-9a-z]+\n$/);
    const tenantId = created.stdout.trim();

    const duplicate = await cli(['tenant', 'create', 'acme'], env);
    expect(duplicate.code).not.toBe(0);
    expect(duplicate.stdout).toBe('');
    expect(duplicate.stderr).toMatch(/tenant "acme" already exists/);
    expect(duplicate.stderr).not.toMatch(/\n\s+at /);

    const demo = await cli(['seed', 'demo', '--tenant', 'acme'], env);
    expect(demo.code).toBe(0);
    expect(demo.stderr).toMatch(/added \d+ connections and \d+ syncs/);

    const load = await cli(['seed', 'load', '--tenant', 'acme', '--connections', '5', '--syncs', '1000'], env);
    expect(load.code).toBe(0);

    // Each PGlite process boots for seconds; this error path is the same code on both, so it runs once.
    if (target === targets[targets.length - 1]) {
      const missing = await cli(['seed', 'demo', '--tenant', 'ghost'], env);
      expect(missing.code).toBe(1);
      expect(missing.stderr).toBe('error: tenant "ghost" does not exist\n');
    }

    const db = await target.open();
    try {
      const tenant = await db.prisma.tenant.findUniqueOrThrow({ where: { slug: 'acme' } });
      expect(tenant).toMatchObject({ id: tenantId, name: 'Acme Hotels' });
      const statuses = await db.prisma.sync.groupBy({ by: ['status'], where: { tenantId }, _count: true });
      expect(statuses.map((s) => s.status).sort()).toEqual(['failed', 'in_progress', 'pending', 'success']);
      const syncs = statuses.reduce((sum, s) => sum + s._count, 0);
      expect(syncs).toBeGreaterThanOrEqual(1200);
      const demoSyncs = Number(demo.stderr.match(/and (\d+) syncs/)![1]);
      expect(syncs).toBe(demoSyncs + 1000);
      expect(await db.prisma.connection.count({ where: { tenantId } })).toBeGreaterThanOrEqual(6 + 5);
    } finally {
      if (target.name.startsWith('PGlite')) await db.close();
    }
  });
});
