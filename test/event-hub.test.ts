import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../src/db/client.js';
import { updateConnection } from '../src/db/connection-writes.js';
import { reportSyncProgress, claimSync, finishSync, triggerSync } from '../src/db/sync-runs.js';
import { lastEventId, type StoredEvent } from '../src/db/events.js';
import { EventHub } from '../src/live/event-hub.js';
import { seedCatalog } from '../src/seed/catalog.js';
import { startChild } from './fixtures/children.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from './fixtures/databases.js';
import { connectApp, createTenant, waitFor } from './fixtures/write-side.js';

const WORKER = 'usr_engine_1';

describe.each(databaseKinds)('the event hub on %s', (kind) => {
  let db: TestDatabase;
  let hub: EventHub;

  beforeAll(async () => {
    db = await createTestDatabase(kind, { poolSize: 12 });
    await seedCatalog(db);
    // A long poll: the tests see what NOTIFY delivers.
    hub = new EventHub({ db, pollMs: 60_000, progressMs: 200 });
    await hub.start();
  });
  afterAll(async () => {
    await hub?.stop();
    await db?.dispose();
  });

  function collect(events: StoredEvent[]) {
    return (event: StoredEvent) => void events.push(event);
  }

  it('concurrent writers: a subscriber gets every event of its tenant once, in id order; another tenant’s gets none', async () => {
    const acme = await createTenant(db, 'hub-acme');
    const globex = await createTenant(db, 'hub-globex');
    const connections = await Promise.all(Array.from({ length: 6 }, () => connectApp(db, acme, { status: 'active' })));
    const start = await lastEventId(db.raw, acme);
    const seen: StoredEvent[] = [];
    const other: StoredEvent[] = [];
    const stop = await hub.subscribe(acme, collect(seen));
    const stopOther = await hub.subscribe(globex, collect(other));
    await Promise.all(
      connections.map(async (connection) => {
        for (let i = 0; i < 4; i++) {
          const run = await triggerSync(db.raw, acme, { connectionId: connection.id });
          await claimSync(db.raw, acme, { workerId: WORKER, connectionId: connection.id });
          await finishSync(db.raw, acme, { syncId: run.id, workerId: WORKER, outcome: { status: 'success', summary: {} } });
        }
      }),
    );
    const total = 6 * 4 * 3;
    await waitFor(async () => seen.length >= total, 10_000);
    expect(seen.map((e) => e.id)).toEqual(Array.from({ length: total }, (_, i) => start + i + 1));
    expect(seen.every((e) => e.tenantId === acme)).toBe(true);
    expect(other).toEqual([]);
    stop();
    stopOther();
    expect(hub.stats()).toEqual({ tenants: 0, subscribers: 0 });
  });

  it('a subscriber of one connection gets that connection’s events and its runs’, and no other; a tenant subscriber gets all', async () => {
    const acme = await createTenant(db, 'hub-keyed');
    const [a, b] = await Promise.all([connectApp(db, acme, { status: 'active' }), connectApp(db, acme, { status: 'active' })]);
    const ofA: StoredEvent[] = [];
    const ofB: StoredEvent[] = [];
    const ofB2: StoredEvent[] = [];
    const all: StoredEvent[] = [];
    const stops = [
      await hub.subscribe(acme, collect(ofA), a!.id),
      await hub.subscribe(acme, collect(ofB), b!.id),
      await hub.subscribe(acme, collect(ofB2), b!.id),
      await hub.subscribe(acme, collect(all)),
    ];
    expect(hub.stats()).toEqual({ tenants: 1, subscribers: 4 });
    for (const connection of [a!, b!]) {
      const run = await triggerSync(db.raw, acme, { connectionId: connection.id });
      await claimSync(db.raw, acme, { workerId: WORKER, connectionId: connection.id });
      await finishSync(db.raw, acme, { syncId: run.id, workerId: WORKER, outcome: { status: 'success', summary: {} } });
    }
    await updateConnection(db.raw, acme, a!.id, { name: 'renamed' });
    await waitFor(async () => all.length >= 7, 10_000);
    await waitFor(async () => ofA.length >= 4 && ofB.length >= 3 && ofB2.length >= 3, 10_000);
    const about = (events: StoredEvent[]) =>
      events.map((e) => (e.type.startsWith('sync.') ? `${e.payload.connection_id} ${e.type}` : `${e.subjectId} ${e.type}`));
    expect(about(ofA)).toEqual([
      `${a!.id} sync.pending`,
      `${a!.id} sync.in_progress`,
      `${a!.id} sync.success`,
      `${a!.id} connection.updated`,
    ]);
    expect(about(ofB)).toEqual([`${b!.id} sync.pending`, `${b!.id} sync.in_progress`, `${b!.id} sync.success`]);
    expect(ofB2).toEqual(ofB);
    expect(all.map((e) => e.id)).toEqual([...ofA.slice(0, 3), ...ofB, ofA[3]!].map((e) => e.id));
    for (const stop of stops) stop();
    expect(hub.stats()).toEqual({ tenants: 0, subscribers: 0 });
  });

  it('progress is coalesced per run; status changes are all delivered, after the progress before them', async () => {
    const tenant = await createTenant(db, 'hub-progress');
    const connection = await connectApp(db, tenant, { status: 'active' });
    const seen: StoredEvent[] = [];
    const stop = await hub.subscribe(tenant, collect(seen));
    const run = await triggerSync(db.raw, tenant, { connectionId: connection.id });
    await claimSync(db.raw, tenant, { workerId: WORKER, connectionId: connection.id });
    for (let i = 1; i <= 30; i++) {
      await reportSyncProgress(db.raw, tenant, { syncId: run.id, workerId: WORKER, summary: { processed: i } });
    }
    await finishSync(db.raw, tenant, { syncId: run.id, workerId: WORKER, outcome: { status: 'success', summary: {} } });
    await waitFor(async () => seen.some((e) => e.type === 'sync.success'), 10_000);
    const types = seen.map((e) => e.type);
    expect(types[0]).toBe('sync.pending');
    expect(types[1]).toBe('sync.in_progress');
    expect(types.at(-1)).toBe('sync.success');
    const progress = seen.filter((e) => e.type === 'sync.progress');
    expect(progress.length).toBeGreaterThanOrEqual(1);
    expect(progress.length).toBeLessThan(30);
    // Delivered in id order, and the last progress before the success is delivered.
    const ids = seen.map((e) => e.id);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(seen.at(-2)!.type).toBe('sync.progress');
    expect(seen.at(-2)!.id).toBe(seen.at(-1)!.id - 1);
    stop();
  });

  it('after the LISTEN is lost and back, a poll delivers what was committed meanwhile', async () => {
    const tenant = await createTenant(db, 'hub-poll');
    const polling = new EventHub({ db, pollMs: 200 });
    await polling.start();
    const seen: StoredEvent[] = [];
    const stop = await polling.subscribe(tenant, collect(seen));
    // Simulate lost notifications: a hub that listens on nothing but polls.
    await (polling as unknown as { unlisten: () => Promise<void> }).unlisten();
    await connectApp(db, tenant);
    await connectApp(db, tenant);
    await waitFor(async () => seen.length >= 2, 5_000);
    expect(seen.map((e) => e.type)).toEqual(['connection.created', 'connection.created']);
    stop();
    await polling.stop();
  });

  it.runIf(kind === 'postgres')('the LISTEN connection killed: it is reopened and what committed meanwhile is delivered', async () => {
    const tenant = await createTenant(db, 'hub-reconnect');
    const seen: StoredEvent[] = [];
    const stop = await hub.subscribe(tenant, collect(seen));
    const killed = await db.raw.query<{ pid: number }>(
      `SELECT pg_terminate_backend(pid) AS pid FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN%'`,
    );
    expect(killed).toHaveLength(1);
    // Written while the hub has no LISTEN: only the poll after its reconnect can find them.
    await connectApp(db, tenant);
    await connectApp(db, tenant);
    await waitFor(async () => seen.length >= 2, 10_000);
    expect(seen.map((e) => e.id)).toEqual([1, 2]);
    // Listening again: the next event comes by NOTIFY (the hub's poll is a minute away).
    await waitFor(
      async () =>
        (await db.raw.query(`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN%'`)).length === 1,
      10_000,
    );
    await connectApp(db, tenant);
    await waitFor(async () => seen.length >= 3, 5_000);
    expect(seen.map((e) => e.id)).toEqual([1, 2, 3]);
    stop();
  });

  it.runIf(kind === 'postgres')(
    'deliveries do not wait for the main pool: with its every connection held, an event is still delivered',
    async () => {
      const small = await createTestDatabase(kind, { poolSize: 1 });
      const writer = await openDatabase({ databaseUrl: small.url!, poolSize: 2 });
      const smallHub = new EventHub({ db: small, pollMs: 60_000 });
      let release = () => {};
      try {
        await seedCatalog(small);
        const tenant = await createTenant(small, 'hub-full-pool');
        await smallHub.start();
        const seen: StoredEvent[] = [];
        const stop = await smallHub.subscribe(tenant, collect(seen));
        // The main pool's one connection, held in a transaction; a statement on the pool now waits for it.
        const held = new Promise<void>((resolve) => (release = resolve));
        let holding = () => {};
        const holds = new Promise<void>((resolve) => (holding = resolve));
        const transaction = small.raw.transaction(async (tx) => {
          await tx.query('SELECT 1');
          holding();
          await held;
        });
        await holds;
        let waitingQueryDone = false;
        const waitingQuery = small.raw.query('SELECT 1').then(() => (waitingQueryDone = true));
        await waitFor(async () => small.poolStats!().waiting === 1, 5_000, 'a statement waiting for the main pool');
        // Committed by another client of the database: its NOTIFY reaches the hub, whose read must not wait.
        const connection = await connectApp(writer, tenant);
        await waitFor(async () => seen.length >= 1, 5_000, 'the delivery');
        expect(seen.map((e) => [e.type, e.subjectId])).toEqual([['connection.created', connection.id]]);
        expect(waitingQueryDone).toBe(false);
        expect(small.poolStats!()).toMatchObject({ total: 1, idle: 0, waiting: 1 });
        release();
        await transaction;
        await waitingQuery;
        stop();
      } finally {
        release();
        await smallHub.stop();
        await writer.close();
        await small.dispose();
      }
    },
  );

  it.runIf(kind === 'postgres')('two processes: a listener here sees the events another process writes', async () => {
    const tenant = await createTenant(db, 'hub-processes');
    const seen: StoredEvent[] = [];
    const stop = await hub.subscribe(tenant, collect(seen));
    const child = startChild('test/fixtures/event-writer-process.ts', [db.url!, tenant, '40']);
    expect(await child.exited, child.stderr()).toBe(0);
    await waitFor(async () => seen.length >= 40, 10_000);
    expect(seen.map((e) => e.id)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
    stop();
  });
});
