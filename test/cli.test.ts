import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, onTestFinished, test } from 'vitest';
import { openDatabase } from '../src/db/client.js';
import { runCliOn, runCliProcess as cliProcess, runCliWith as cli } from './fixtures/cli.js';
import { createTestDatabase, databaseKinds, migratedPgliteDataDir, type TestDatabase } from './fixtures/databases.js';

const dataDir = mkdtempSync(join(tmpdir(), 'gw-cli-'));

afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

// A process where one is the point: the exit code and stderr of `node dist/cli.js`, and a PGlite data
// directory held by another process. The rest runs runCli in this process (runCliWith, runCliOn).
test('as a process: an unknown command prints the usage and exits 2 without touching a database', async () => {
  const neverCreated = join(dataDir, 'never-created');
  const run = await cliProcess(['frobnicate', 'now'], { DATA_DIR: neverCreated });
  expect(existsSync(neverCreated)).toBe(false);
  expect(run.code).toBe(2);
  expect(run.stdout).toBe('');
  expect(run.stderr).toMatch(/unknown command: frobnicate now/);
  expect(run.stderr).toMatch(/usage: npm run --silent cli -- <command>/);
  expect(run.stderr).toMatch(/tenant create <slug>/);
});

test('help fits an 80-column terminal, its summaries in one case; the engine says what is missing on a line of its own', async () => {
  const neverCreated = join(dataDir, 'never-created');
  const overall = await cli({ DATA_DIR: neverCreated }, '--help');
  expect(overall.code).toBe(0);
  const pages = [overall.stdout];
  for (const command of [['export'], ['token', 'create'], ['member', 'invite'], ['webhooks', 'reseal']]) {
    const help = await cli({ DATA_DIR: neverCreated }, ...command, '--help');
    expect(help.code, command.join(' ')).toBe(0);
    pages.push(help.stdout);
  }
  const engine = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(process.execPath, ['dist/engine.js', '--help'], { timeout: 30_000 }, (error, stdout, stderr) =>
      resolve({ code: error ? Number(error.code) : 0, stdout, stderr }),
    );
  });
  expect(engine.code).toBe(0);
  pages.push(engine.stdout);
  for (const page of pages) {
    for (const line of page.split('\n')) expect(line.length, line).toBeLessThanOrEqual(80);
  }
  // Each command's summary (the indented line under it) starts in lower case, as the usage lines do.
  const lines = overall.stdout.split('\n');
  const summaries = lines.filter((line, i) => line.startsWith('      ') && /^ {2}\S/.test(lines[i - 1] ?? ''));
  expect(summaries.length).toBeGreaterThan(5);
  for (const summary of summaries) expect(summary.trim()[0], summary).toMatch(/[a-z"'`]/);

  const environment = { ...process.env };
  delete environment.ENGINE_TOKEN;
  const noToken = await new Promise<{ code: number; stderr: string }>((resolve) => {
    execFile(process.execPath, ['dist/engine.js', '--simulate'], { env: environment, timeout: 30_000 }, (error, _stdout, stderr) =>
      resolve({ code: error ? Number(error.code) : 0, stderr }),
    );
  });
  expect(noToken.code).toBe(2);
  expect(noToken.stderr.split('\n')[0]).toBe('No token: set ENGINE_TOKEN to an engine token.');
  expect(noToken.stderr).toMatch(/\nStop it with Ctrl-C\.\n$/);
});

test('a bad option is a usage error before any database is opened; an invalid environment is one line, exit 1', async () => {
  const neverCreated = join(dataDir, 'never-created');
  const badOption = await cli({ DATA_DIR: neverCreated }, 'seed', 'load', '--tenant', 'x', '--connections', 'many', '--syncs', '1');
  expect(badOption.code).toBe(2);
  expect(badOption.stderr).toMatch(/--connections must be a non-negative integer/);
  expect(existsSync(neverCreated)).toBe(false);

  const badEnv = await cli({ DATABASE_URL: 'mysql://nope' }, 'db', 'migrate');
  expect(badEnv.code).toBe(1);
  expect(badEnv.stderr.trim().split('\n')).toHaveLength(1);
  expect(badEnv.stderr).toMatch(/DATABASE_URL/);
});

test('as a process on a fresh PGlite DATA_DIR: migrates it and prints only the new tenant id on stdout', async () => {
  const fresh = join(dataDir, 'fresh');
  const created = await cliProcess(['tenant', 'create', 'solo'], { DATA_DIR: fresh });
  expect(created).toMatchObject({ code: 0, stderr: '' });
  expect(created.stdout).toMatch(/^ten_[0-9a-z]+\n$/);
  const db = await openDatabase({ dataDir: fresh });
  try {
    expect(await runCliOn(db, 'db', 'migrate')).toEqual({ code: 0, stdout: '', stderr: 'database is up to date\n' });
    expect((await db.prisma.tenant.findUniqueOrThrow({ where: { slug: 'solo' } })).id).toBe(created.stdout.trim());
  } finally {
    await db.close();
  }
}, 180_000);

test('refuses a PGlite DATA_DIR another process holds open, and takes over a claim its holder left behind', async () => {
  const held = migratedPgliteDataDir('gw-cli-held-');
  onTestFinished(() => rmSync(held, { recursive: true, force: true }));
  const db = await openDatabase({ dataDir: held });
  try {
    // This test process holds the directory, as a running server would.
    const refused = await cliProcess(['tenant', 'create', 'second'], { DATA_DIR: held });
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe('');
    expect(refused.stderr.trim().split('\n')).toHaveLength(1);
    expect(refused.stderr).toContain(`data directory ${held} is in use by process ${process.pid}`);
    await expect(openDatabase({ dataDir: held })).rejects.toThrow(/is in use by process/);
  } finally {
    await db.close();
  }
  expect(existsSync(join(held, 'gateway.pid'))).toBe(false);
  // A process that died without closing leaves its claim; a pid that no longer runs does not hold anything.
  writeFileSync(join(held, 'gateway.pid'), '2147483646');
  const created = await cli({ DATA_DIR: held }, 'tenant', 'create', 'after');
  expect(created).toMatchObject({ code: 0, stderr: '' });
  expect(existsSync(join(held, 'gateway.pid'))).toBe(false);
}, 180_000);

describe.each(databaseKinds)('commands on %s', (kind) => {
  let db: TestDatabase;
  beforeAll(async () => {
    // A copy of the seeded, migrated database the global setup made (its tenants are not acme): no initdb or
    // migrations to repeat here.
    db = await createTestDatabase(kind, { template: inject('seededDatabases')[kind]?.template });
  });
  afterAll(() => db?.dispose());

  test('migrates, creates a tenant, refuses a duplicate, seeds demo and load data', async () => {
    const run = (...args: string[]) => runCliOn(db, ...args);

    const migrated = await run('db', 'migrate');
    expect(migrated).toMatchObject({ code: 0, stdout: '' });

    const created = await run('tenant', 'create', 'acme', '--name', 'Acme Hotels');
    expect(created.stderr).toBe('');
    expect(created.code).toBe(0);
    expect(created.stdout).toMatch(/^ten_[0-9a-z]+\n$/);
    const tenantId = created.stdout.trim();

    const duplicate = await run('tenant', 'create', 'acme');
    expect(duplicate.code).not.toBe(0);
    expect(duplicate.stdout).toBe('');
    expect(duplicate.stderr).toMatch(/tenant "acme" already exists/);
    expect(duplicate.stderr).not.toMatch(/\n\s+at /);

    const listed = await run('tenant', 'list', '--json');
    expect(listed).toMatchObject({ code: 0, stderr: '' });
    expect(
      listed.stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line)),
    ).toContainEqual(expect.objectContaining({ id: tenantId, slug: 'acme', name: 'Acme Hotels', service_users: 0 }));
    const table = await run('tenant', 'list');
    expect(table.stdout.split('\n')[0]).toMatch(/^ID\s+SLUG\s+NAME\s+CREATED\s+SERVICE USERS$/);
    expect(table.stdout).toMatch(new RegExp(`^${tenantId}\\s+acme\\s+Acme Hotels\\s`, 'm'));

    const demo = await run('seed', 'demo', '--tenant', 'acme');
    expect(demo.code).toBe(0);
    expect(demo.stderr).toMatch(/added \d+ connections and \d+ syncs/);

    const load = await run('seed', 'load', '--tenant', 'acme', '--connections', '5', '--syncs', '1000');
    expect(load.code).toBe(0);

    const missing = await run('seed', 'demo', '--tenant', 'ghost');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe('error: tenant "ghost" does not exist\n');

    {
      const tenant = await db.prisma.tenant.findUniqueOrThrow({ where: { slug: 'acme' } });
      expect(tenant).toMatchObject({ id: tenantId, name: 'Acme Hotels' });
      const statuses = await db.prisma.sync.groupBy({ by: ['status'], where: { tenantId }, _count: true });
      expect(statuses.map((s) => s.status).sort()).toEqual(['failed', 'in_progress', 'pending', 'success']);
      const syncs = statuses.reduce((sum, s) => sum + s._count, 0);
      expect(syncs).toBeGreaterThanOrEqual(1200);
      const demoSyncs = Number(demo.stderr.match(/and (\d+) syncs/)![1]);
      expect(syncs).toBe(demoSyncs + 1000);
      expect(await db.prisma.connection.count({ where: { tenantId } })).toBeGreaterThanOrEqual(6 + 5);
    }
  });
});
