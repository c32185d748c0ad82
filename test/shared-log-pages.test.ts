// Replays that read the same page of a tenant's log share one read (src/live/shared-log-pages.ts), on a real
// database: a page before the log's end is the same objects for every replay that asks for it, and is kept within
// its bound in bytes; the log's last page is read again by each replay, so an event appended since is not missed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appendEvents, lastEventId, syncEvent } from '../src/db/events.js';
import { triggerSync } from '../src/db/sync-runs.js';
import { SHARED_PAGE_BYTES, sharedEventPage } from '../src/live/shared-log-pages.js';
import { seedCatalog } from '../src/seed/catalog.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from './fixtures/databases.js';
import { connectApp, createTenant } from './fixtures/write-side.js';

describe.each(databaseKinds)('replays sharing pages of the log, on %s', (kind) => {
  let db: TestDatabase;
  let tenant: string;
  let other: string;
  let append: (tenantId: string, count: number, bytes?: number) => Promise<void>;

  beforeAll(async () => {
    db = await createTestDatabase(kind);
    await seedCatalog(db);
    tenant = await createTenant(db, 'pages');
    other = await createTenant(db, 'pages-other');
    const runs = new Map<string, Parameters<typeof syncEvent>[0]>();
    for (const id of [tenant, other]) {
      const connection = await connectApp(db, id, { status: 'active', name: 'pages' });
      runs.set(id, await triggerSync(db.raw, id, { connectionId: connection.id }));
    }
    append = async (tenantId, count, bytes = 10) => {
      const event = syncEvent({ ...runs.get(tenantId)!, errorMessage: 'x'.repeat(bytes) });
      await db.raw.transaction((tx) =>
        appendEvents(
          tx,
          tenantId,
          Array.from({ length: count }, () => event),
        ),
      );
    };
  });
  afterAll(() => db?.dispose());

  /** The ids of the tenant's log start after its run was queued (its event): `base + 1` is the first appended here. */
  let base: number;

  it('hands every replay asking for a page before the log’s end the same events, read once', async () => {
    base = await lastEventId(db.raw, tenant);
    await append(tenant, 5);
    await append(other, 5);
    const bounds = { rows: 2, bytes: 1_000_000 };
    const [first, second] = await Promise.all([
      sharedEventPage(db.raw, tenant, base, bounds),
      sharedEventPage(db.raw, tenant, base, bounds),
    ]);
    expect(first.more).toBe(true);
    expect(first.events.map((event) => event.id - base)).toEqual([1, 2]);
    expect(second).toBe(first);
    // Later too, while it is kept.
    expect(await sharedEventPage(db.raw, tenant, base, bounds)).toBe(first);
    // Another start, other bounds, another tenant: pages of their own.
    expect((await sharedEventPage(db.raw, tenant, base + 2, bounds)).events.map((event) => event.id - base)).toEqual([3, 4]);
    expect(await sharedEventPage(db.raw, tenant, base, { rows: 3, bytes: 1_000_000 })).not.toBe(first);
    const others = await sharedEventPage(db.raw, other, 0, bounds);
    expect(others).not.toBe(first);
    expect(others.events.every((event) => event.tenantId === other)).toBe(true);
  });

  it('reads the log’s last page again for each replay: an event appended since is delivered', async () => {
    const bounds = { rows: 10, bytes: 1_000_000 };
    const last = await sharedEventPage(db.raw, tenant, base + 4, bounds);
    expect(last.more).toBe(false);
    expect(last.events.map((event) => event.id - base)).toEqual([5]);
    await append(tenant, 1);
    const again = await sharedEventPage(db.raw, tenant, base + 4, bounds);
    expect(again.events.map((event) => event.id - base)).toEqual([5, 6]);
  });

  it('keeps pages within its bound in bytes, the least recently used going first', async () => {
    // Pages of one ~1 MB event each: more of them than the bound keeps.
    const size = 1_000_000;
    const pages = Math.ceil(SHARED_PAGE_BYTES / size) + 4;
    const start = base + 6;
    await append(tenant, pages + 1, size);
    const bounds = { rows: 10, bytes: 256 * 1024 };
    const read: Awaited<ReturnType<typeof sharedEventPage>>[] = [];
    for (let i = 0; i < pages; i++) read.push(await sharedEventPage(db.raw, tenant, start + i, bounds));
    expect(read.every((page) => page.events.length === 1 && page.more)).toBe(true);
    // The latest are still shared; the first were let go, and are read anew.
    expect(await sharedEventPage(db.raw, tenant, start + pages - 1, bounds)).toBe(read.at(-1));
    expect(await sharedEventPage(db.raw, tenant, start, bounds)).not.toBe(read[0]);
  });
});
