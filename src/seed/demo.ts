import type { Database } from '../db/client.js';
import type { ConnectionMetadata } from '../domain/connection-members.js';
import type { ConnectionStatus, ConnectionVia, SyncStatus } from '../generated/prisma/enums.js';
import { newId } from '../prefixed-ids.js';
import { applicationBySlug, seedCatalog } from './catalog.js';
import { buildConnection, insertConnections, type ConnectionRow } from './connections.js';
import { createRng } from './random.js';
import { generateSyncs, insertSyncs, type SyncRow } from './syncs.js';

export const DEMO_TENANT_SLUG = 'demo';
const DEMO_TENANT_NAME = 'Demo Hotel Group';
export const DEFAULT_SEED = 1;

const DAY = 24 * 60 * 60 * 1000;
/** How far back the demo history reaches. */
const HISTORY_DAYS = 182;

interface DemoConnection {
  app: string;
  label: string;
  slug: string;
  via: ConnectionVia;
  status: ConnectionStatus;
  metadata?: ConnectionMetadata;
  /** Forced statuses of the newest runs, so every demo shows all four sync statuses whatever the seed. */
  newest: SyncStatus[];
  failureRate?: number;
  /** A paused connection stopped syncing this many days ago. */
  stoppedDaysAgo?: number;
}

const DEMO_CONNECTIONS: DemoConnection[] = [
  {
    app: 'stripe',
    label: 'EU account',
    slug: 'stripe-eu',
    via: 'api_key',
    status: 'active',
    metadata: { currency: 'EUR' },
    newest: ['in_progress'],
  },
  {
    app: 'mews-pms',
    label: 'Berlin Mitte',
    slug: 'mews-berlin-mitte',
    via: 'oauth',
    status: 'active',
    newest: ['pending', 'failed'],
  },
  { app: 'nuki-smart-lock', label: 'Apartment doors', slug: 'nuki-apartments', via: 'oauth', status: 'active', newest: [] },
  {
    app: 'salto-ks',
    label: 'Staff entrances',
    slug: 'salto-staff-entrances',
    via: 'partner',
    status: 'error',
    newest: ['failed', 'failed'],
    failureRate: 0.25,
  },
  {
    app: 'slack',
    label: '#front-desk',
    slug: 'slack-front-desk',
    via: 'oauth',
    status: 'active',
    metadata: { channel: '#front-desk', bot_name: 'Concierge' },
    newest: [],
  },
  { app: 'google-analytics', label: 'Booking site', slug: 'ga-booking-site', via: 'api_key', status: 'active', newest: [] },
  {
    app: 'siteminder',
    label: 'All channels',
    slug: 'siteminder-all-channels',
    via: 'partner',
    status: 'paused',
    newest: [],
    stoppedDaysAgo: 21,
  },
  { app: 'xero', label: 'Group ledger', slug: 'xero-group-ledger', via: 'oauth', status: 'active', newest: [] },
];

interface SeedDemoOptions {
  /** Same seed and tenant slug give the same rows, ids included. */
  seed?: number;
  /** The end of the generated history; pass a fixed date to reproduce timestamps too. */
  now?: Date;
}

interface DemoRowsOptions extends SeedDemoOptions {
  /**
   * The slugs of the connections whose sync history is generated (every connection's by default). Each connection
   * draws from a stream of its own, so its rows are the same whichever others are generated.
   */
  historyOf?: readonly string[];
}

export interface SeedResult {
  tenantId: string;
  connections: number;
  syncs: number;
}

/**
 * The demo connections and their sync history for a tenant, as rows (no database): the same seed and tenant slug
 * give the same rows, ids included, whatever the tenant id and `now` (which only move the timestamps).
 */
export function demoRows(
  tenantId: string,
  tenantSlug: string,
  options: DemoRowsOptions = {},
): { connections: ConnectionRow[]; syncs: SyncRow[] } {
  const seed = options.seed ?? DEFAULT_SEED;
  const now = (options.now ?? new Date()).getTime();
  // Keyed by slug, not tenant id: tenant ids are random, and the same seed must reproduce the same rows.
  const rng = createRng(`demo:${seed}:${tenantSlug}`);
  const from = now - HISTORY_DAYS * DAY;
  const connections: ConnectionRow[] = [];
  const syncs: SyncRow[] = [];
  for (const demo of DEMO_CONNECTIONS) {
    const local = rng.fork(`connection:${demo.slug}`);
    const connection = buildConnection(local, {
      tenantId,
      application: applicationBySlug(demo.app),
      label: demo.label,
      slug: demo.slug,
      via: demo.via,
      status: demo.status,
      createdAt: new Date(from - local.int(1, 30) * DAY),
      ...(demo.metadata ? { metadata: demo.metadata } : {}),
    });
    connections.push(connection);
    if (options.historyOf && !options.historyOf.includes(demo.slug)) continue;
    syncs.push(
      ...generateSyncs(local, {
        tenantId,
        connectionId: connection.id,
        from: new Date(from),
        to: new Date(now - (demo.stoppedDaysAgo ?? 0) * DAY),
        count: local.int(28, 48),
        newest: demo.newest,
        ...(demo.failureRate === undefined ? {} : { failureRate: demo.failureRate }),
      }),
    );
  }
  return { connections, syncs };
}

/** Adds the demo connections (several categories) and six months of sync history to an existing tenant. */
export async function seedDemoTenant(db: Database, tenantSlug: string, options: SeedDemoOptions = {}): Promise<SeedResult> {
  const seed = options.seed ?? DEFAULT_SEED;
  const tenant = await db.prisma.tenant.findUnique({ where: { slug: tenantSlug }, select: { id: true } });
  if (!tenant) throw new Error(`tenant "${tenantSlug}" does not exist`);
  await seedCatalog(db);
  const { connections, syncs } = demoRows(tenant.id, tenantSlug, options);

  const existing = await db.prisma.connection.count({ where: { id: { in: connections.map((c) => c.id) } } });
  if (existing > 0) {
    throw new Error(`tenant "${tenantSlug}" already has the demo data of seed ${seed}; use another seed`);
  }
  await db.raw.transaction(async (tx) => {
    await insertConnections(tx, tenant.id, connections);
    await insertSyncs(tx, tenant.id, syncs);
  });
  return { tenantId: tenant.id, connections: connections.length, syncs: syncs.length };
}

/**
 * Server start on an empty database: catalog, the `demo` tenant and its data, so a first `npm start` has
 * something to show. Returns the new tenant's id, or undefined when any tenant exists already (the database is
 * in use and must not be touched).
 */
export async function ensureDemo(db: Database, options: SeedDemoOptions = {}): Promise<string | undefined> {
  // SQL, not Prisma: on a restart (the usual case) nothing else loads Prisma before the server listens.
  const [tenants] = await db.raw.query<{ exist: boolean }>('SELECT EXISTS (SELECT 1 FROM tenants) AS exist');
  if (tenants?.exist) return undefined;
  await seedCatalog(db);
  const tenant = await db.prisma.tenant.create({
    data: { id: newId('ten'), slug: DEMO_TENANT_SLUG, name: DEMO_TENANT_NAME },
  });
  await seedDemoTenant(db, tenant.slug, options);
  return tenant.id;
}
