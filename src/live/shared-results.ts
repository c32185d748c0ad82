import type { ExecutionResult } from 'graphql';
import type { StoredEvent } from '../db/events.js';

// The subscribers of one tenant receive the same event object from the event hub (event-hub.ts). What one
// subscription's operation makes of an event depends only on the event, the operation and its variables, and the
// subscriber's access (tenant, role, permissions): so it is executed once and its result shared by every
// subscriber with the same of these (plugins/use-shared-subscription-results.ts), and a transport that encodes
// results the same way for every subscriber encodes it once (http/graphql-ws.ts). With 200 subscribers of a
// 100 KB change, that is one execution and one buffer instead of 200 of each. A shared result is never changed.

/** Results by event, then by what else they depend on: they live as long as the event is held. */
const resultsByEvent = new WeakMap<StoredEvent, Map<string, Promise<ExecutionResult> | ExecutionResult>>();
/** The shared results, and their encodings (by format) once a transport asked. */
const sharedResults = new WeakMap<ExecutionResult, Map<string, Buffer>>();

/**
 * `event`'s result for `key` (operation, variables and access): executed by the first subscriber that takes the
 * event. A result with errors is not kept: a subscriber that takes the event later executes it for itself.
 */
export function sharedResult(
  event: StoredEvent,
  key: string,
  execute: () => Promise<ExecutionResult> | ExecutionResult,
): Promise<ExecutionResult> | ExecutionResult {
  let byKey = resultsByEvent.get(event);
  if (!byKey) {
    byKey = new Map();
    resultsByEvent.set(event, byKey);
  }
  const known = byKey.get(key);
  if (known) return known;
  const keep = (result: ExecutionResult) => {
    if (result.errors) byKey.delete(key);
    else {
      byKey.set(key, result);
      if (!sharedResults.has(result)) sharedResults.set(result, new Map());
    }
    return result;
  };
  const executed = execute();
  if (!(executed instanceof Promise)) return keep(executed);
  const kept = executed.then(keep, (error: unknown) => {
    byKey.delete(key);
    throw error;
  });
  byKey.set(key, kept);
  return kept;
}

/**
 * The bytes of `result` in a transport's `format` (`encode` makes them), made once when the result is shared by
 * the subscribers of an event.
 */
export function encodedOnce(result: ExecutionResult, format: string, encode: () => Buffer): Buffer {
  const encodings = sharedResults.get(result);
  let bytes = encodings?.get(format);
  if (!bytes) {
    bytes = encode();
    encodings?.set(format, bytes);
  }
  return bytes;
}
