import type { Database } from '../db/client.js';
import { APPLICATIONS, seedCatalog } from './catalog.js';
import { buildConnection, insertConnections, type ConnectionRow } from './connections.js';
import { DEFAULT_SEED, type SeedResult } from './demo.js';
import { createRng, type Rng } from './random.js';
import { insertSyncs, syncHistory, type SyncRow } from './syncs.js';

interface SeedLoadOptions {
  connections: number;
  syncs: number;
  seed?: number;
  /** The end of the generated history (default: now). */
  now?: Date;
  /** Rows per INSERT statement. */
  batchSize?: number;
}

const DAY = 24 * 60 * 60 * 1000;
const HISTORY_DAYS = 182;
/** Rows per transaction: large enough that commits are rare, small enough that a failure loses little. */
const ROWS_PER_TRANSACTION = 50_000;
/** Parallel connections writing syncs on PostgreSQL; stays below the default pool size of 10. */
const WRITERS = 4;

/**
 * Splits `total` over `parts` unevenly (busy and quiet connections, as in production) while keeping the sum
 * exact, so a benchmark asking for 1,000,000 rows gets exactly that many.
 */
function allocate(rng: Rng, total: number, parts: number): number[] {
  const weights = Array.from({ length: parts }, () => 0.25 + rng.next() * 1.75);
  const sum = weights.reduce((a, b) => a + b, 0);
  const counts = weights.map((w) => Math.floor((total * w) / sum));
  let missing = total - counts.reduce((a, b) => a + b, 0);
  for (let i = 0; missing > 0; i = (i + 1) % parts, missing--) counts[i]! += 1;
  return counts;
}

function assertCount(name: string, value: number): void {
  if (!Number.isSafeInteger(value) || value < 0) throw new Error(`${name} must be a non-negative integer`);
}

/**
 * Bulk synthetic data for benchmarks: `connections` new connections of the tenant with `syncs` sync rows
 * spread over them. Rows stream from the generator into multi-row INSERTs, so memory stays flat at millions
 * of rows. Repeated loads add more: the random stream is keyed by the tenant's connection count.
 */
export async function seedLoad(db: Database, tenantSlug: string, options: SeedLoadOptions): Promise<SeedResult> {
  assertCount('connections', options.connections);
  assertCount('syncs', options.syncs);
  if (options.syncs > 0 && options.connections === 0) throw new Error('syncs need at least one connection');
  const batchSize = options.batchSize ?? 5_000;
  const seed = options.seed ?? DEFAULT_SEED;
  const now = (options.now ?? new Date()).getTime();
  const from = now - HISTORY_DAYS * DAY;

  const tenant = await db.prisma.tenant.findUnique({ where: { slug: tenantSlug }, select: { id: true } });
  if (!tenant) throw new Error(`tenant "${tenantSlug}" does not exist`);
  await seedCatalog(db);
  const offset = await db.prisma.connection.count({ where: { tenantId: tenant.id } });
  const rng = createRng(`load:${seed}:${tenantSlug}:${offset}`);

  const connections: ConnectionRow[] = [];
  for (let i = 0; i < options.connections; i++) {
    const number = offset + i + 1;
    const application = APPLICATIONS[i % APPLICATIONS.length]!;
    connections.push(
      buildConnection(rng, {
        tenantId: tenant.id,
        application,
        label: `Load ${number}`,
        slug: `${application.slug}-load-${number}`,
        createdAt: new Date(from - rng.int(1, 60) * DAY),
      }),
    );
  }
  const counts = allocate(rng, options.syncs, options.connections);

  for (let start = 0; start < connections.length; start += batchSize) {
    const batch = connections.slice(start, start + batchSize);
    await db.raw.transaction((tx) => insertConnections(tx, tenant.id, batch));
  }

  // Each connection's history is written by one worker alone: the triggers that keep sync_counts exact lock a
  // (connection, status) row until the writing transaction commits, so workers sharing a connection would
  // wait on each other (or deadlock). A worker takes the next connection when its own runs out.
  let nextConnection = 0;
  let inserted = 0;
  let failed = false;
  const history = (index: number): Iterator<SyncRow> =>
    syncHistory(rng.fork(`syncs:${index}`), {
      tenantId: tenant.id,
      connectionId: connections[index]!.id,
      from: new Date(from),
      to: new Date(now),
      count: counts[index]!,
    });
  const worker = async (): Promise<void> => {
    let rows: Iterator<SyncRow> | null = null;
    // Synchronous, so workers interleaving at their awaits never take the same connection.
    const takeBatch = (): SyncRow[] => {
      const batch: SyncRow[] = [];
      while (!failed && batch.length < batchSize) {
        if (!rows) {
          if (nextConnection >= connections.length) break;
          rows = history(nextConnection++);
        }
        const next = rows.next();
        if (next.done) rows = null;
        else batch.push(next.value);
      }
      return batch;
    };
    let exhausted = false;
    while (!exhausted && !failed) {
      await db.raw.transaction(async (tx) => {
        let written = 0;
        while (written < ROWS_PER_TRANSACTION) {
          const batch = takeBatch();
          if (batch.length === 0) {
            exhausted = true;
            break;
          }
          // Awaited first, then added: `inserted += await …` reads `inserted` before the await, and the
          // other writers' additions made meanwhile would be lost.
          const rows = await insertSyncs(tx, tenant.id, batch);
          inserted += rows;
          written += batch.length;
        }
      });
    }
  };
  // Index maintenance and JSONB parsing are server-side CPU work, so a few parallel writers roughly halve the
  // time on PostgreSQL. PGlite has one connection; extra workers would only queue behind its lock.
  const workers = db.kind === 'postgres' ? WRITERS : 1;
  const results = await Promise.allSettled(
    Array.from({ length: workers }, () =>
      worker().catch((error: unknown) => {
        failed = true;
        throw error;
      }),
    ),
  );
  const failure = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failure) throw failure.reason;
  return { tenantId: tenant.id, connections: connections.length, syncs: inserted };
}
