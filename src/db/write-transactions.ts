import { ApiError } from '../errors.js';
import type { RawSql, TransactionSql } from './client.js';
import { connectionSelectSql } from '../domain/connection-record.js';
import { syncSelectSql } from '../domain/sync-record.js';
import { aliasedColumns } from './list-reads.js';

// What every write of the data layer (connection-writes.ts, sync-runs.ts, idempotency.ts) shares: the
// transaction it runs in, the database refusals it turns into CONFLICT, and the row shapes it returns.
//
// Lock order, so that no two writes can wait on each other: a connection row before its runs. Every function
// that changes both takes the connection first (claims and progress reports touch only the run).

/** A statement runner inside an open transaction. */
export type Tx = TransactionSql;

/** Where a write function opens its transaction: `db.raw`, or `withinTransaction(tx)` to join one. */
export type TransactionRunner = Pick<RawSql, 'transaction'>;

/**
 * Runs a write function inside a transaction already open, so that it commits with other work (the
 * Idempotency-Key that reserved it, for one).
 */
export function withinTransaction(tx: Tx): TransactionRunner {
  // The joined work's last statement is not the transaction's: the one that opened it commits.
  return { transaction: (work) => work({ ...tx, queryThenCommit: tx.query }) };
}

/** SQLSTATE raised by the `syncs_status_transition_guard` trigger. */
const TRANSITION_REFUSED = 'IG409';
const ONE_ACTIVE_RUN_INDEX = 'syncs_one_active_run_per_connection';

interface DatabaseError {
  code?: string;
  constraint?: string;
  message: string;
}

/** The database's own refusals that mean CONFLICT: the transition trigger and the one-active-run index. */
function conflictFromDatabase(error: unknown): ApiError | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const { code, constraint, message } = error as DatabaseError;
  if (code === TRANSITION_REFUSED) return new ApiError('CONFLICT', message);
  if (code === '23505' && constraint === ONE_ACTIVE_RUN_INDEX) {
    return new ApiError('CONFLICT', 'the connection already has a pending or in-progress run');
  }
  return undefined;
}

/** One transaction for one change: everything in `work` commits together or not at all. */
export async function inTransaction<T>(runner: TransactionRunner, work: (tx: Tx) => Promise<T>): Promise<T> {
  try {
    return await runner.transaction(work);
  } catch (error) {
    throw conflictFromDatabase(error) ?? error;
  }
}

/** A write's RETURNING: every column of the descriptor's SQL, named as Prisma names them. */
function returningOf(columns: Record<string, string>): string {
  return aliasedColumns(columns, Object.keys(columns)).text;
}

/** Every column of a sync row, named as Prisma's `Sync` names them (table alias "s"). */
export const SYNC_ROW = returningOf(syncSelectSql('s', false));

/** Every column of a connection row, named as Prisma's `Connection` names them (table alias "c"). */
export const CONNECTION_ROW = returningOf(connectionSelectSql('c'));

/**
 * The summary of a run failed by the service: the error, and how far it got. `$n` is the message parameter;
 * the run's table alias is "s".
 */
export function failedSummarySql(messageParam: string): string {
  return `jsonb_strip_nulls(jsonb_build_object('errors', jsonb_build_array(${messageParam}::text), 'processed', "s"."summary" -> 'processed'))`;
}
