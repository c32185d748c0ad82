import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { verifyPersonalAccessToken } from '../src/auth/tokens.js';
import { parseExpiry } from '../src/cli/token.js';
import { openDatabase, type Database } from '../src/db/client.js';
import { runCliOn, runCliProcess, type CliRun as Run } from './fixtures/cli.js';
import { createTestDatabase, databaseKinds, migratedPgliteDataDir, type TestDatabase } from './fixtures/databases.js';

const TOKEN_FORMAT = /^igw_pat_[0-9a-z]{12}_[A-Za-z0-9_-]{43}$/;
const DAY = 86_400_000;
const isoDate = (days: number) => new Date(Date.now() + days * DAY).toISOString().slice(0, 10);

/** The commands run in-process on this database; `withDb` checks what they did. */
interface Target {
  withDb<T>(check: (db: Database) => Promise<T>): Promise<T>;
  db: TestDatabase;
  dispose(): Promise<void>;
}

async function createTarget(kind: 'pglite' | 'postgres'): Promise<Target> {
  // A copy of the seeded, migrated database the global setup made (its tenants are not acme).
  const db = await createTestDatabase(kind, { template: inject('seededDatabases')[kind]?.template });
  return { db, withDb: (check) => check(db), dispose: () => db.dispose() };
}

it('as a process: token create prints the value alone on stdout', async () => {
  const dataDir = migratedPgliteDataDir('igw-cli-access-');
  const env = { DATA_DIR: dataDir, SEED: 'none' };
  try {
    // The tenant and the service user are made in this process (one PGlite boot); only the command whose
    // stdout is under test runs as a process of its own.
    const db = await openDatabase({ dataDir });
    try {
      expect((await runCliOn(db, 'tenant', 'create', 'acme')).code).toBe(0);
      expect((await runCliOn(db, 'service-user', 'create', '--tenant', 'acme', '--name', 'bot', '--role', 'reader')).code).toBe(0);
    } finally {
      await db.close();
    }
    const created = await runCliProcess(['token', 'create', '--tenant', 'acme', '--service-user', 'bot', '--expires', isoDate(5)], env);
    expect(created.stderr).toBe('');
    expect(created.code).toBe(0);
    expect(created.stdout.trimEnd()).toMatch(TOKEN_FORMAT);
    expect(created.stdout.split('\n')).toHaveLength(2);
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}, 180_000);

describe.each(databaseKinds)('access CLI on %s', (kind) => {
  let target: Target;
  let run: (...args: string[]) => Promise<Run>;
  let plainToken: string;
  let jsonToken: { id: string; token: string; expires_at: string };

  beforeAll(async () => {
    target = await createTarget(kind);
    run = (...args) => runCliOn(target.db, ...args);
    expect((await run('tenant', 'create', 'acme')).code).toBe(0);
  });
  afterAll(async () => {
    await target?.dispose();
  });

  it('creates a service user and prints only its id', async () => {
    const created = await run('service-user', 'create', '--tenant', 'acme', '--name', 'ci-bot', '--role', 'admin');
    expect(created).toMatchObject({ code: 0, stderr: '' });
    expect(created.stdout).toMatch(/^usr_[0-9a-z]+\n$/);

    const duplicate = await run('service-user', 'create', '--tenant', 'acme', '--name', 'ci-bot', '--role', 'reader');
    expect(duplicate.code).toBe(1);
    expect(duplicate.stdout).toBe('');
    expect(duplicate.stderr.trim().split('\n')).toHaveLength(1);
    expect(duplicate.stderr).toContain('already exists');

    const noTenant = await run('service-user', 'create', '--tenant', 'nope', '--name', 'x', '--role', 'reader');
    expect(noTenant.code).toBe(1);

    const engine = await run('service-user', 'create', '--tenant', 'acme', '--name', 'sync-engine', '--role', 'engine');
    expect(engine).toMatchObject({ code: 0, stderr: '' });
    const badRole = await run('service-user', 'create', '--tenant', 'acme', '--name', 'x', '--role', 'owner');
    expect(badRole.code).not.toBe(0);
    expect(badRole.stderr).toContain('admin, reader, engine');
  });

  it('prints the token value alone, or JSON with --json', async () => {
    const expires = new Date(Date.now() + 30 * DAY).toISOString();
    const plain = await run('token', 'create', '--tenant', 'acme', '--service-user', 'ci-bot', '--expires', expires);
    expect(plain).toMatchObject({ code: 0, stderr: '' });
    expect(plain.stdout.endsWith('\n')).toBe(true);
    plainToken = plain.stdout.trimEnd();
    expect(plainToken).toMatch(TOKEN_FORMAT);

    // A date alone ends at the end of that day in this machine's time zone.
    const day = isoDate(10);
    const json = await run('token', 'create', '--tenant', 'acme', '--service-user', 'ci-bot', '--expires', day, '--json');
    expect(json).toMatchObject({ code: 0, stderr: '' });
    jsonToken = JSON.parse(json.stdout);
    expect(Object.keys(jsonToken).sort()).toEqual(['expires_at', 'id', 'token']);
    expect(jsonToken.id).toMatch(/^tok_/);
    expect(jsonToken.token).toMatch(TOKEN_FORMAT);
    const [year, month, date] = day.split('-').map(Number) as [number, number, number];
    expect(jsonToken.expires_at).toBe(new Date(new Date(year, month - 1, date + 1).getTime() - 1).toISOString());
  });

  it('names a token with --name: in its JSON, the list and the activity log; a name too long or unprintable is refused', async () => {
    const created = await run(
      'token',
      'create',
      '--tenant',
      'acme',
      '--service-user',
      'ci-bot',
      '--expires',
      isoDate(20),
      '--name',
      '  Nightly export  ',
      '--json',
    );
    expect(created).toMatchObject({ code: 0, stderr: '' });
    const named = JSON.parse(created.stdout) as { id: string; name: string };
    expect(Object.keys(named).sort()).toEqual(['expires_at', 'id', 'name', 'token']);
    expect(named.name).toBe('Nightly export');

    const table = await run('token', 'list', '--tenant', 'acme');
    expect(table.stdout.split('\n')[0]).toMatch(/^ID\s+NAME\s+PREFIX\s/);
    expect(table.stdout.split('\n').find((line) => line.startsWith(named.id))).toContain('Nightly export');
    const lines = await run('token', 'list', '--tenant', 'acme', '--json');
    const entries = lines.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { id: string; name: string | null });
    expect(entries.find((e) => e.id === named.id)?.name).toBe('Nightly export');
    expect(entries.find((e) => e.id === jsonToken.id)?.name).toBeNull();

    const entry = await target.withDb((db) =>
      db.prisma.activityEntry.findFirstOrThrow({
        where: { action: 'token.created', targetId: named.id },
        select: { targetName: true, actorKind: true },
      }),
    );
    expect(entry.actorKind).toBe('cli');
    expect(entry.targetName).toMatch(/^Nightly export \(igw_pat_[0-9a-z]{12}\)$/);

    for (const name of ['x'.repeat(101), 'tab\there']) {
      const refused = await run(
        'token',
        'create',
        '--tenant',
        'acme',
        '--service-user',
        'ci-bot',
        '--expires',
        isoDate(20),
        '--name',
        name,
      );
      expect(refused.code, name).toBe(1);
      expect(refused.stdout).toBe('');
      expect(refused.stderr).toMatch(/^error: --name: a token name must be/);
    }
  });

  it('refuses an expiry in the past and an unknown service user', async () => {
    for (const expires of [isoDate(-1), isoDate(400)]) {
      const refused = await run('token', 'create', '--tenant', 'acme', '--service-user', 'ci-bot', '--expires', expires);
      expect(refused.code, expires).toBe(1);
      expect(refused.stdout).toBe('');
      expect(refused.stderr.trim().split('\n')).toHaveLength(1);
      expect(refused.stderr).toMatch(/expires/);
    }
    const unknownUser = await run('token', 'create', '--tenant', 'acme', '--service-user', 'ghost', '--expires', isoDate(3));
    expect(unknownUser.code).toBe(1);
    expect(unknownUser.stderr).toContain('ghost');
  });

  it('lists tokens without their values', async () => {
    const list = await run('token', 'list', '--tenant', 'acme');
    expect(list.code).toBe(0);
    expect(list.stdout).toContain(jsonToken.id);
    const lines = await run('token', 'list', '--tenant', 'acme', '--json');
    expect(lines.code).toBe(0);
    const entries = lines.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(entries.map((e) => e.id)).toContain(jsonToken.id);
    for (const output of [list.stdout, lines.stdout]) {
      for (const value of [plainToken, jsonToken.token]) {
        expect(output).not.toContain(value);
        expect(output).not.toContain(value.slice(-43));
      }
    }
  });

  it('revokes a token', async () => {
    expect(await target.withDb((db) => verifyPersonalAccessToken(db, jsonToken.token))).not.toBeNull();

    const revoked = await run('token', 'revoke', jsonToken.id);
    expect(revoked.code).toBe(0);
    expect(revoked.stdout).toBe('');
    const again = await run('token', 'revoke', jsonToken.id);
    expect(again.code).toBe(0);
    const unknown = await run('token', 'revoke', 'tok_doesnotexist');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr.trim().split('\n')).toHaveLength(1);

    const lines = await run('token', 'list', '--tenant', 'acme', '--json');
    const entry = lines.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line))
      .find((e) => e.id === jsonToken.id);
    expect(entry).toMatchObject({ status: 'revoked' });
    expect(entry.revoked_at).toEqual(expect.any(String));

    await target.withDb(async (db) => {
      expect(await verifyPersonalAccessToken(db, jsonToken.token)).toBeNull();
      expect(await verifyPersonalAccessToken(db, plainToken)).not.toBeNull();
    });
  });
});

describe('--expires parsing', () => {
  it('reads dates as the end of that day in the time zone and datetimes with their offset', () => {
    expect(parseExpiry('2027-01-31', 'UTC').toISOString()).toBe('2027-01-31T23:59:59.999Z');
    expect(parseExpiry('2028-02-29', 'UTC').toISOString()).toBe('2028-02-29T23:59:59.999Z');
    expect(parseExpiry('2027-01-31', 'Asia/Kolkata').toISOString()).toBe('2027-01-31T18:29:59.999Z');
    expect(parseExpiry('2027-01-31', 'America/New_York').toISOString()).toBe('2027-02-01T04:59:59.999Z');
    // The day summer time starts in New York is 23 hours long; the next day starts at 04:00Z, no longer 05:00Z.
    expect(parseExpiry('2027-03-14', 'America/New_York').toISOString()).toBe('2027-03-15T03:59:59.999Z');
    expect(parseExpiry('2027-11-07', 'America/New_York').toISOString()).toBe('2027-11-08T04:59:59.999Z');
    expect(parseExpiry('2027-01-31T12:00:00Z', 'Asia/Kolkata').toISOString()).toBe('2027-01-31T12:00:00.000Z');
    expect(parseExpiry('2027-01-31T12:00:00Z').toISOString()).toBe('2027-01-31T12:00:00.000Z');
    expect(parseExpiry('2027-01-31T12:00+02:00').toISOString()).toBe('2027-01-31T10:00:00.000Z');
    expect(parseExpiry('2027-01-31T12:00:30.5-05:00').toISOString()).toBe('2027-01-31T17:00:30.500Z');
  });

  it('refuses anything else', () => {
    for (const value of ['tomorrow', '2027-02-30', '2027-13-01', '2027-1-5', '2027-01-31T12:00', '2027-01-31T25:00Z', '1738368000', '']) {
      expect(() => parseExpiry(value), value).toThrow(/expires/);
    }
  });
});
