import { withStatementSignal } from '../db/cancellation.js';
import { startDeadline, withinDeadline } from '../admission/deadline.js';

/**
 * Runs one step of a long transfer (a batch of an export) within a time limit of its own: past it the step fails
 * with 503 UNAVAILABLE and the statements it still runs are cancelled in the database, as a request's would be.
 */
export async function withinStepDeadline<T>(timeoutMs: number, work: () => Promise<T>): Promise<T> {
  const deadline = startDeadline(timeoutMs);
  try {
    return await withStatementSignal(deadline, () => withinDeadline(deadline, work()));
  } finally {
    deadline.end();
  }
}
