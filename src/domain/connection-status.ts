import { ApiError } from '../errors.js';
import type { ConnectionStatus } from '../generated/prisma/enums.js';

// A connection's status, as a state machine. The spec leaves it open; the choice is written down in
// docs/reference/sync-lifecycle.md (the tables) and enforced here and in the data layer.
//
// - `pending`: new, no successful run yet. Scheduled, so the first run comes without anyone asking.
// - `active`: scheduled every `sync_interval`.
// - `paused`: not scheduled, its runs are not claimable and cannot be triggered.
// - `error`: the last run failed with its retries spent. Not scheduled; a trigger is allowed (a successful
//   run makes it active again), and an admin can resume (active) or pause it.

/** The transitions an admin may ask for (PATCH status). Setting the current status again is a no-op. */
export const ADMIN_CONNECTION_TRANSITIONS: Readonly<Record<ConnectionStatus, readonly ConnectionStatus[]>> = {
  pending: [],
  active: ['paused'],
  paused: ['active'],
  error: ['active', 'paused'],
};

/** How a finished run moves its connection: `failed` means failed with no retry queued. */
type RunOutcome = 'success' | 'failed';

/**
 * The connection's status after one of its runs finished. A paused connection stays paused whatever the
 * outcome (an admin paused it; a run that was already going does not resume it).
 */
export function connectionStatusAfterRun(current: ConnectionStatus, outcome: RunOutcome): ConnectionStatus {
  if (current === 'paused') return current;
  return outcome === 'success' ? 'active' : 'error';
}

/** The statuses whose connections the scheduler queues runs for. */
export const SCHEDULED_CONNECTION_STATUSES: readonly ConnectionStatus[] = ['pending', 'active'];

/** The statuses whose connections' pending runs an engine may claim, and for which a run may be triggered. */
export const RUNNABLE_CONNECTION_STATUSES: readonly ConnectionStatus[] = ['pending', 'active', 'error'];

function allowedList(statuses: readonly string[]): string {
  return statuses.length === 0 ? 'nothing' : statuses.map((s) => `"${s}"`).join(' or ');
}

/**
 * Refuses a status change an admin may not make, with CONFLICT naming the current status and what is
 * allowed from it. Asking for the current status again is allowed (a no-op).
 */
export function assertAdminConnectionTransition(id: string, current: ConnectionStatus, requested: ConnectionStatus): void {
  if (requested === current || ADMIN_CONNECTION_TRANSITIONS[current].includes(requested)) return;
  const why =
    current === 'pending'
      ? ' (a new connection becomes "active" with its first successful run)'
      : requested === 'pending' || requested === 'error'
        ? ` ("${requested}" is set by the service, never by a request)`
        : '';
  throw new ApiError(
    'CONFLICT',
    `connection ${id} is "${current}": it cannot be set to "${requested}"; from "${current}" an admin can set ${allowedList(ADMIN_CONNECTION_TRANSITIONS[current])}${why}`,
  );
}
