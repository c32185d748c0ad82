import type { ExecutionArgs } from 'graphql';
import type { StatementSignal } from '../db/cancellation.js';
import { ApiError } from '../errors.js';

const TIMED_OUT = Symbol('timed out');

/**
 * A request's time limit, from its arrival: at `at` it aborts, with the 503 error as its reason, which cancels
 * the statements the request runs (it is their StatementSignal). Not an AbortController: making one's signal,
 * and a listener added and removed on it for each bounded step, cost ~15 µs a request on Node 20.
 */
export class Deadline implements StatementSignal {
  /** performance.now() at which the request's time is up. */
  readonly at: number;
  aborted = false;
  /** The request was answered: its limit no longer bounds work (a stream's later steps have limits of their own). */
  ended = false;
  reason: unknown = undefined;
  private readonly timer: NodeJS.Timeout;
  private readonly listeners = new Set<() => void>();
  private expiredPromise: Promise<typeof TIMED_OUT> | undefined;
  private expire: (() => void) | undefined;

  constructor(timeoutMs: number) {
    this.at = performance.now() + timeoutMs;
    this.timer = setTimeout(() => this.abort(), timeoutMs);
  }

  /** Settles once aborted (never before), for Promise.race; one promise per request, made when first raced. */
  get expired(): Promise<typeof TIMED_OUT> {
    this.expiredPromise ??= this.aborted
      ? Promise.resolve(TIMED_OUT)
      : new Promise<typeof TIMED_OUT>((resolve) => (this.expire = () => resolve(TIMED_OUT)));
    return this.expiredPromise;
  }

  onAbort(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  /** The request is answered: the timer stops. */
  end(): void {
    this.ended = true;
    clearTimeout(this.timer);
    // `expired` never settles now, and a promise keeps what raced it (Promise.race's reactions hold each racer's
    // result). The deadline itself outlives the request: it is the async context's store, which every timer
    // started under it keeps (a pool's idle timer, for seconds). Letting go of the promise frees the results.
    this.expiredPromise = undefined;
    this.expire = undefined;
    this.listeners.clear();
  }

  private abort(): void {
    this.aborted = true;
    this.reason = timeoutError();
    this.expire?.();
    for (const listener of [...this.listeners]) listener();
    this.listeners.clear();
  }
}

/** Starts a request's time limit; `end()` once it is answered. */
export function startDeadline(timeoutMs: number): Deadline {
  return new Deadline(timeoutMs);
}

/** Whether an answer ready now comes too late: it is replaced by the 503 (streams excepted). */
export function isPastDeadline(deadline: Deadline | undefined): boolean {
  return deadline !== undefined && performance.now() > deadline.at;
}

/** Runs `work` within the deadline (none: no bound); past it, fails with 503 UNAVAILABLE. */
export async function withinDeadline<T>(deadline: Deadline | undefined, work: Promise<T>): Promise<T> {
  const outcome = await raceDeadline(deadline, work);
  if (outcome === TIMED_OUT) throw timeoutError();
  return outcome.value;
}

/** The error of a request past its time limit, and of a statement cancelled for running too long. */
export function timeoutError(): ApiError {
  return new ApiError('UNAVAILABLE', 'The request took too long and was stopped; retry later or ask for less');
}

/**
 * `work`'s value, or TIMED_OUT once the deadline has passed (at once when it already has: `expired` is then
 * settled, and wins the race). Raced even then, so a rejection of `work` is always handled.
 */
function raceDeadline<T>(deadline: Deadline | undefined, work: Promise<T>): Promise<{ value: T } | typeof TIMED_OUT> {
  const done = work.then((value) => ({ value }));
  // An ended deadline never expires: racing its promise would only pile reactions (holding each result) on it.
  return deadline === undefined || (deadline.ended && !deadline.aborted) ? done : Promise.race([done, deadline.expired]);
}

type ExecuteFn = (args: ExecutionArgs & { signal?: AbortSignal }) => unknown;

/**
 * Runs an operation within the deadline: past it, its resolvers stop starting and the result is the 503 error.
 * `usesSignal: false` for an executor that takes no signal (graphql-jit's compiled queries): no controller of its
 * own is made for it; the statements it runs are still cancelled through the request's statement signal.
 */
export async function executeWithinDeadline(
  deadline: Deadline,
  executeFn: ExecuteFn,
  args: ExecutionArgs & { signal?: AbortSignal },
  { usesSignal = true }: { usesSignal?: boolean } = {},
) {
  if (!usesSignal) {
    const outcome = await raceDeadline(deadline, Promise.resolve(executeFn(args)));
    return outcome !== TIMED_OUT ? outcome.value : { errors: [timeoutError()] };
  }
  // Aborting stops the executor from starting more resolvers; the statements of those already running are
  // cancelled through the request's statement signal.
  const controller = new AbortController();
  // The caller's signal (yoga's, aborted when the client goes away) aborts ours too. Forwarded by a listener:
  // AbortSignal.any costs ~30 µs per request on Node 20.
  const outer = args.signal;
  const forward = () => controller.abort(outer?.reason);
  if (outer?.aborted) forward();
  else outer?.addEventListener('abort', forward, { once: true });
  let outcome;
  try {
    outcome = await raceDeadline(deadline, Promise.resolve(executeFn({ ...args, signal: controller.signal })));
  } finally {
    outer?.removeEventListener('abort', forward);
  }
  if (outcome !== TIMED_OUT) return outcome.value;
  const error = timeoutError();
  controller.abort(error);
  return { errors: [error] };
}
