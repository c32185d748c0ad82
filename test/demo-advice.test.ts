import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { demoTokenAdvice, startApp } from '../src/http/start-app.js';
import { createServiceUser } from '../src/auth/service-users.js';
import { createToken, revokeToken } from '../src/auth/tokens.js';
import type { Database } from '../src/db/client.js';
import { parseConfig } from '../src/env.js';
import { createLogger } from '../src/logger.js';
import { ensureDemo } from '../src/seed/demo.js';
import { createTestDatabase, databaseKinds, migratedPgliteDataDir, type TestDatabase } from './fixtures/databases.js';

// What a server start says about the demo tenant's admin token (src/http/start-app.ts demoTokenAdvice, src/seed/demo.ts
// ensureDemo), and that a restart reads it without Prisma: the start then loads no Prisma query compiler before it
// listens.

const config = parseConfig({ DATA_DIR: '/srv/gateway-data' });
const DAY = 86_400_000;

describe.each(databaseKinds)('the demo tenant at a server start on %s', (kind) => {
  let db: TestDatabase;
  /** The database as the start sees it, its `prisma` counted: nothing on a restart's path may touch it. */
  let watched: Database;
  let prismaUses = 0;
  beforeAll(async () => {
    db = await createTestDatabase(kind);
    watched = Object.create(db, {
      prisma: {
        get: () => {
          prismaUses += 1;
          return db.prisma;
        },
      },
    }) as Database;
  });
  afterAll(() => db?.dispose());

  const commandsOf = (advice: string | undefined) =>
    (advice ?? '')
      .split('\n')
      .filter((line) => line.startsWith('  '))
      .map((line) => line.trim());

  it("says nothing without a demo tenant, seeds an empty database once, and reads a restart's state without Prisma", async () => {
    expect(await demoTokenAdvice(watched, config)).toBeUndefined();
    const tenantId = await ensureDemo(db);
    expect(tenantId).toMatch(/^ten_/);
    prismaUses = 0;
    expect(await ensureDemo(watched)).toBeUndefined();
    const advice = await demoTokenAdvice(watched, config);
    expect(prismaUses).toBe(0);

    // No admin at all: create one (named after the date, so a second run does not collide), then its token.
    expect(advice).toContain('Demo tenant "demo" has no usable admin token');
    const [create, token] = commandsOf(advice);
    expect(create).toMatch(
      /^DATA_DIR='\/srv\/gateway-data' npm run --silent cli -- service-user create --tenant demo --name demo-admin-(\d{4}-\d{2}-\d{2}) --role admin$/,
    );
    const name = /--name (\S+)/.exec(create!)![1];
    expect(token).toBe(
      `DATA_DIR='/srv/gateway-data' npm run --silent cli -- token create --tenant demo --service-user ${name} --expires ${name!.slice('demo-admin-'.length)}`,
    );
  });

  it("counts only an admin's token that is neither revoked nor expired, and names demo-admin before other admins", async () => {
    const [{ id: tenantId }] = (await db.raw.query<{ id: string }>("SELECT id FROM tenants WHERE slug = 'demo'")) as [{ id: string }];
    const soon = new Date(Date.now() + DAY);
    // A reader's valid token and an admin's expired one do not count.
    const reader = await createServiceUser(db, { tenantId, name: 'a-reader', role: 'reader' });
    await createToken(db, { tenantId, serviceUserId: reader.id, expiresAt: soon });
    const early = await createServiceUser(db, { tenantId, name: 'a-admin', role: 'admin' });
    await createToken(db, { tenantId, serviceUserId: early.id, expiresAt: soon });
    await db.raw.query(
      "UPDATE tokens SET created_at = now() - interval '2 days', expires_at = now() - interval '1 day' WHERE service_user_id = $1",
      [early.id],
    );
    let advice = await demoTokenAdvice(db, config);
    expect(advice).toContain('has no usable admin token');
    // The first admin by name, when there is no demo-admin.
    expect(commandsOf(advice)).toEqual([expect.stringMatching(/ token create --tenant demo --service-user a-admin --expires /)]);

    // demo-admin with a valid token: usable, and demo-admin is the one named.
    const admin = await createServiceUser(db, { tenantId, name: 'demo-admin', role: 'admin' });
    const created = await createToken(db, { tenantId, serviceUserId: admin.id, expiresAt: soon });
    advice = await demoTokenAdvice(db, config);
    expect(advice).toContain('its admin token was printed when this database was created. Lost it?');
    expect(commandsOf(advice)).toEqual([expect.stringMatching(/ token create --tenant demo --service-user demo-admin --expires /)]);

    // Revoked, it no longer counts.
    expect(await revokeToken(db, created.id)).toBe('revoked');
    expect(await demoTokenAdvice(db, config)).toContain('has no usable admin token');
  });
});

describe('what a new database gets at a server start', () => {
  const quiet = { LOG_LEVEL: 'silent', SCHEDULER: 'off', WEBHOOKS: 'off' } as const;
  /** Starts the app on `env`, reads what the start seeded, and stops it. */
  async function startOnce(env: Record<string, string>) {
    const app = await startApp(parseConfig({ ...quiet, ...env }), createLogger('silent'));
    try {
      const [counts] = await app.db.raw.query<{ tenants: number; categories: number; tokens: number }>(
        'SELECT (SELECT count(*)::int FROM tenants) AS tenants, (SELECT count(*)::int FROM categories) AS categories, (SELECT count(*)::int FROM tokens) AS tokens',
      );
      return { demoToken: app.demoToken, ...counts! };
    } finally {
      await app.gateway.dispose();
      await app.db.close();
    }
  }

  it.runIf(databaseKinds.includes('postgres'))(
    'PostgreSQL: the catalog only, no demo tenant and no printed token, unless SEED=demo',
    async () => {
      const plain = await createTestDatabase('postgres');
      const demo = await createTestDatabase('postgres');
      try {
        const first = await startOnce({ DATABASE_URL: plain.url! });
        expect(first).toMatchObject({ demoToken: undefined, tenants: 0, tokens: 0 });
        expect(first.categories).toBeGreaterThan(0);
        // A restart changes nothing.
        expect(await startOnce({ DATABASE_URL: plain.url! })).toEqual(first);
        const seeded = await startOnce({ DATABASE_URL: demo.url!, SEED: 'demo' });
        expect(seeded.demoToken).toMatch(/^igw_pat_/);
        expect(seeded).toMatchObject({ tenants: 1, tokens: 1 });
      } finally {
        await plain.dispose();
        await demo.dispose();
      }
    },
  );

  it('PGlite: the zero set-up demo, with its admin token printed once; SEED=none the catalog alone', async () => {
    const dataDir = migratedPgliteDataDir('gw-first-start-');
    const bare = migratedPgliteDataDir('gw-first-start-bare-');
    try {
      const first = await startOnce({ DATA_DIR: dataDir });
      expect(first.demoToken).toMatch(/^igw_pat_/);
      expect(first).toMatchObject({ tenants: 1, tokens: 1 });
      expect((await startOnce({ DATA_DIR: dataDir })).demoToken).toBeUndefined();
      const none = await startOnce({ DATA_DIR: bare, SEED: 'none' });
      expect(none).toMatchObject({ demoToken: undefined, tenants: 0, tokens: 0 });
      expect(none.categories).toBeGreaterThan(0);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
      rmSync(bare, { recursive: true, force: true });
    }
  });
});
