// When a failed webhook attempt is tried again. The default is Standard Webhooks' reference schedule (Svix's):
// the first attempt at once, then retries 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h after the failed one
// before, about 27.6 hours in all. Each delay is jittered by ±20% so that the retries of many deliveries that
// failed together (an endpoint that was down) do not all arrive at the same moment. WEBHOOK_RETRY_SCHEDULE
// replaces the delays (seconds, comma-separated).

export const DEFAULT_RETRY_SCHEDULE_SECONDS: readonly number[] = [5, 300, 1800, 7200, 18_000, 36_000, 36_000];

const RETRY_JITTER = 0.2;

/** Parses WEBHOOK_RETRY_SCHEDULE: positive seconds, comma-separated, at most 20 retries. */
export function parseRetrySchedule(raw: string): number[] {
  const delays = raw.split(',').map((part) => Number(part.trim()));
  if (delays.length === 0 || delays.length > 20 || delays.some((d) => !Number.isFinite(d) || d <= 0 || d > 7 * 86_400)) {
    throw new Error('must be 1 to 20 comma-separated delays in seconds, each above 0 and at most 604800');
  }
  return delays;
}

/**
 * The delay before the next attempt after `attempt` attempts failed (1 = the first attempt failed), in ms;
 * null when the schedule is spent and the delivery has failed.
 */
export function retryDelayMs(schedule: readonly number[], attempt: number, random: () => number = Math.random): number | null {
  const seconds = schedule[attempt - 1];
  if (seconds === undefined) return null;
  const jitter = 1 + RETRY_JITTER * (2 * random() - 1);
  return Math.round(seconds * 1000 * jitter);
}
