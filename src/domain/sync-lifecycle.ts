import { ApiError } from '../errors.js';
import type { SyncStatus } from '../generated/prisma/enums.js';

// A sync run's lifecycle. The data layer moves runs with one conditional UPDATE per transition, and the
// database trigger `syncs_status_transition_guard` (the write_side migration) refuses anything
// else; a test checks that the trigger and this table agree on every pair of statuses.

/** pending → in_progress → success | failed, and pending → failed (cancelled). Nothing leaves a finished run. */
export const SYNC_TRANSITIONS: Readonly<Record<SyncStatus, readonly SyncStatus[]>> = {
  pending: ['in_progress', 'failed'],
  in_progress: ['success', 'failed'],
  success: [],
  failed: [],
};

/** Runs that hold a connection's one active slot (the partial unique index). */
export const ACTIVE_SYNC_STATUSES: readonly SyncStatus[] = ['pending', 'in_progress'];

/** Error messages the service itself writes on runs. */
export const SYNC_FAILURES = {
  leaseExpired: 'worker lost: lease expired',
  connectionDeleted: 'connection deleted',
  /** Written by the write-side migration on the extra active runs of a connection. */
  superseded: 'superseded',
} as const;

/** `lease_seconds` of a claim: how long a run stays the claimer's without a heartbeat. */
export const LEASE_SECONDS = { min: 1, default: 60, max: 3600 } as const;

export interface RetryPolicy {
  /** Delay before the second attempt. */
  baseSeconds: number;
  /** Each further retry waits this many times longer… */
  factor: number;
  /** …up to this cap. */
  maxSeconds: number;
}

/** 30 s, 1 min, 2 min, 4 min … capped at 1 h. */
export const RETRY_BACKOFF: RetryPolicy = { baseSeconds: 30, factor: 2, maxSeconds: 3600 };

/**
 * Whether a failed attempt is retried: a lost lease and an engine-reported failure both are, while the
 * connection's `retry_attempts` (retries after the first attempt) allows another one.
 */
export function shouldRetry(failedAttempt: number, retryAttempts: number): boolean {
  return failedAttempt <= retryAttempts;
}

/** Seconds the retry of attempt `failedAttempt` waits before it may be claimed. */
export function retryDelaySeconds(failedAttempt: number, policy: RetryPolicy = RETRY_BACKOFF): number {
  const exponent = Math.max(0, failedAttempt - 1);
  return Math.min(policy.maxSeconds, policy.baseSeconds * policy.factor ** exponent);
}

function allowedList(statuses: readonly SyncStatus[]): string {
  return statuses.length === 0 ? 'nothing (it is finished)' : statuses.map((s) => `"${s}"`).join(' or ');
}

/** CONFLICT for a transition the table does not allow, naming the current status and what it allows. */
export function syncTransitionConflict(id: string, current: SyncStatus, requested: SyncStatus): ApiError {
  return new ApiError(
    'CONFLICT',
    `sync ${id} is "${current}": it cannot move to "${requested}"; from "${current}" it can move to ${allowedList(SYNC_TRANSITIONS[current])}`,
  );
}
