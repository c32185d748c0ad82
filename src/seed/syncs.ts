import type { RawSql } from '../db/client.js';
import { ACTIVE_SYNC_STATUSES, LEASE_SECONDS } from '../domain/sync-lifecycle.js';
import { SEEDED_SYNC_PROPERTIES, SYNC } from '../domain/sync-record.js';
import { unnestedColumns, unnestedValues } from './bulk-insert.js';
import type { SyncStatus } from '../generated/prisma/enums.js';
import { formatId } from '../prefixed-ids.js';
import type { Rng } from './random.js';

type SyncSummary = Record<string, boolean | number | string[]>;
type SyncDiff = Partial<Record<'added' | 'changed' | 'removed', string[]>>;
interface SyncChecksum {
  b: string;
  f: string;
  ac: string;
  ap: string;
  ls: string;
  file: string;
}

export interface SyncRow {
  id: string;
  tenantId: string;
  connectionId: string;
  status: SyncStatus;
  startedAt: Date;
  finishedAt: Date | null;
  errorMessage: string | null;
  summary: SyncSummary;
  fileUrl: string | null;
  isAutoMigrate: boolean | null;
  diff: SyncDiff;
  checksum: SyncChecksum;
  /** Set on pending runs: when they may be claimed. */
  dueAt: Date | null;
  /** Set on in-progress runs: a claimer holds them until then (nobody, for seeded runs: the reaper fails them). */
  leaseExpiresAt: Date | null;
  leaseSeconds: number | null;
}

interface SyncHistorySpec {
  tenantId: string;
  connectionId: string;
  /** Runs start in [from, to); finished runs never finish after `to` (the "now" of the history). */
  from: Date;
  to: Date;
  count: number;
  /** Share of finished runs that failed. */
  failureRate?: number;
  /**
   * Statuses forced onto the newest runs, newest first (e.g. `['in_progress', 'failed']`). At most one of
   * them may be open (pending or in progress): a connection has one active run at a time. Without it, the
   * newest run is left open now and then, as in a live system.
   */
  newest?: SyncStatus[];
}

const ERROR_MESSAGES = [
  'Rate limit exceeded (429) from provider API',
  'OAuth token expired',
  'Timeout after 300s',
  'Provider API returned 503 Service Unavailable',
  'Invalid API key: authentication rejected by provider',
  'Connection reset by peer while reading page 3',
  'Webhook signature verification failed',
  'Record ext_4411 rejected: "email" is not a valid address',
  "Mapping missing for room type 'DBL-SEA'",
  'TLS handshake failed: certificate has expired',
] as const;

const MINUTE = 60_000;

/** Run duration in ms: most syncs are quick, a few crawl through a large backlog. */
function duration(rng: Rng, status: SyncStatus, errorMessage: string | null): number {
  if (errorMessage?.startsWith('Timeout after 300s')) return 300_000 + rng.int(0, 2_000);
  if (status === 'failed') return rng.int(800, 4 * MINUTE);
  return rng.chance(0.9) ? rng.int(2_000, 3 * MINUTE) : rng.int(3 * MINUTE, 40 * MINUTE);
}

function externalIds(rng: Rng): string[] {
  return Array.from({ length: rng.int(1, 6) }, () => `ext_${rng.hex(10)}`);
}

function summaryFor(rng: Rng, status: SyncStatus, errorMessage: string | null): SyncSummary {
  switch (status) {
    case 'pending':
      return rng.chance(0.7) ? { queued: true, estimated_items: rng.int(1, 2_500) } : {};
    case 'in_progress':
      return rng.chance(0.8) ? { processed: rng.int(0, 1_800), in_progress: true } : {};
    case 'success': {
      if (rng.chance(0.12)) return {};
      const processed = rng.int(0, 2_000);
      const inserted = rng.int(0, Math.floor(processed / 3));
      const updated = rng.int(0, processed - inserted);
      const deleted = rng.int(0, Math.min(processed - inserted - updated, 25));
      return { processed, inserted, updated, deleted };
    }
    case 'failed': {
      if (rng.chance(0.2)) return {};
      const errors = [errorMessage ?? 'Unknown error'];
      if (rng.chance(0.25)) errors.push(`Retry ${rng.int(1, 3)} of 3 failed`);
      return { errors, processed: rng.int(0, 400) };
    }
  }
}

function emptyChecksum(): SyncChecksum {
  return { b: '', f: '', ac: '', ap: '', ls: '', file: '' };
}

function checksumFor(rng: Rng, status: SyncStatus, hasFile: boolean): SyncChecksum {
  const checksum = emptyChecksum();
  if (status !== 'success' || rng.chance(0.3)) return checksum;
  checksum.b = rng.hex(16);
  if (rng.chance(0.6)) checksum.f = rng.hex(16);
  if (rng.chance(0.4)) checksum.ac = rng.hex(8);
  if (rng.chance(0.4)) checksum.ap = rng.hex(8);
  if (rng.chance(0.5)) checksum.ls = rng.hex(12);
  if (hasFile) checksum.file = rng.hex(40);
  return checksum;
}

function diffFor(rng: Rng, status: SyncStatus): SyncDiff {
  if (status !== 'success' || !rng.chance(0.25)) return {};
  const diff: SyncDiff = {};
  if (rng.chance(0.7)) diff.added = externalIds(rng);
  if (rng.chance(0.5)) diff.changed = externalIds(rng);
  if (rng.chance(0.25)) diff.removed = externalIds(rng);
  if (Object.keys(diff).length === 0) diff.changed = externalIds(rng);
  return diff;
}

/**
 * Yields one connection's sync history, oldest run first, obeying the spec's field-condition table (which the
 * database enforces with CHECK constraints). A generator, so a bulk load of millions of rows streams in
 * batches instead of materialising everything.
 */
export function* syncHistory(rng: Rng, spec: SyncHistorySpec): Generator<SyncRow> {
  const { tenantId, connectionId, count } = spec;
  const from = spec.from.getTime();
  const to = spec.to.getTime();
  if (!(to > from)) throw new RangeError('sync history window is empty');
  const failureRate = spec.failureRate ?? 0.08;
  const newest = spec.newest ?? randomNewest(rng);
  if (newest.filter(isOpen).length > 1) throw new RangeError('a connection has at most one pending or in-progress run');
  const step = (to - from) / Math.max(count, 1);

  for (let index = 0; index < count; index++) {
    const id = formatId('syn', rng.bytes(16));
    // Evenly spaced slots with jitter: a scheduled sync drifts, but runs of one connection do not pile up.
    const startedAt = Math.floor(from + index * step + rng.next() * step * 0.8);
    const fromNewest = count - 1 - index;
    const status: SyncStatus = newest[fromNewest] ?? (rng.chance(failureRate) ? 'failed' : 'success');
    const errorMessage = status === 'failed' ? rng.pick(ERROR_MESSAGES) : null;
    const open = isOpen(status);
    const finishedAt = open ? null : Math.min(startedAt + duration(rng, status, errorMessage), to);
    const hasFile = status === 'success' && rng.chance(0.3);
    yield {
      id,
      tenantId,
      connectionId,
      status,
      startedAt: new Date(startedAt),
      finishedAt: finishedAt === null ? null : new Date(Math.max(finishedAt, startedAt)),
      errorMessage,
      summary: summaryFor(rng, status, errorMessage),
      fileUrl: hasFile ? `https://files.example.com/syncs/${id}.json` : null,
      isAutoMigrate: rng.weighted<boolean | null>([
        [false, 6],
        [true, 2],
        [null, 2],
      ]),
      diff: diffFor(rng, status),
      checksum: checksumFor(rng, status, hasFile),
      dueAt: status === 'pending' ? new Date(startedAt) : null,
      leaseExpiresAt: status === 'in_progress' ? new Date(to + LEASE_SECONDS.default * 1000) : null,
      leaseSeconds: status === 'in_progress' ? LEASE_SECONDS.default : null,
    };
  }
}

function isOpen(status: SyncStatus): boolean {
  return (ACTIVE_SYNC_STATUSES as readonly SyncStatus[]).includes(status);
}

/** Most connections are idle; some have a run going, a few one queued, some a run that failed just now. */
function randomNewest(rng: Rng): SyncStatus[] {
  return rng.weighted<SyncStatus[]>([
    [[], 80],
    [['in_progress'], 10],
    [['pending'], 6],
    [['pending', 'failed'], 4],
  ]);
}

export function generateSyncs(rng: Rng, spec: SyncHistorySpec): SyncRow[] {
  return [...syncHistory(rng, spec)];
}

/** Every column as one text[] parameter (bulk-insert.ts). */
const COLUMNS = unnestedColumns(SYNC.fields, SEEDED_SYNC_PROPERTIES);

// A connection has one active run at a time (the partial unique index). A loaded history whose newest run is
// open meets a run the write side opened meanwhile when the loader runs beside live writers (the scheduler, an
// engine, the API) on a connection it has just created: the live run wins and the loaded one is left out, so
// the load goes on. Any other conflict (a duplicate id) still fails the statement.
const INSERT_SYNCS = `
WITH "inserted" AS (
  INSERT INTO syncs (tenant_id, ${COLUMNS.columns})
  SELECT $1, ${COLUMNS.values}
  FROM ${COLUMNS.from}
  ON CONFLICT (tenant_id, connection_id) WHERE status IN ('pending', 'in_progress') DO NOTHING
  RETURNING 1
)
SELECT count(*)::int AS "n" FROM "inserted"`;

/**
 * Inserts rows of one tenant with a single statement; callers batch (a few thousand rows per call). Returns how
 * many were inserted: all of them, but for an open run left out for a connection's live one (INSERT_SYNCS).
 */
export async function insertSyncs(sql: Pick<RawSql, 'query'>, tenantId: string, rows: SyncRow[]): Promise<number> {
  if (rows.length === 0) return 0;
  for (const row of rows) if (row.tenantId !== tenantId) throw new Error(`sync ${row.id} belongs to another tenant`);
  const values = unnestedValues(SYNC.fields, SEEDED_SYNC_PROPERTIES, rows);
  const [result] = await sql.query<{ n: number }>(INSERT_SYNCS, [tenantId, ...values]);
  return result?.n ?? 0;
}
