import { execute } from '@graphql-tools/executor';
import { mapAsyncIterator } from '@graphql-tools/utils';
import { createSourceEventStream, type DocumentNode, type ExecutionArgs, type ExecutionResult } from 'graphql';
import { isAsyncIterable, type Plugin } from 'graphql-yoga';
import type { Context } from '../context.js';
import type { StoredEvent } from '../db/events.js';
import { StreamPosition } from '../live/change-stream.js';
import { sharedResult } from '../live/shared-results.js';

/**
 * Subscriptions (GraphQL over SSE and WebSocket, REST event streams) executed once per event for all their
 * subscribers alike (live/shared-results.ts): a subscription's source is its change stream, whose events the
 * hub shares among the tenant's subscribers; what an event's execution gives depends on the event, the operation
 * and its variables, and the subscriber's access. The first subscriber to take an event executes it; the others
 * with the same operation, variables and access take that result. Execution of a large change (a run's diff)
 * for each of 200 subscribers was most of what they cost, in garbage the collector freed behind.
 *
 * The subscription is otherwise graphql-tools' own (as yoga runs it): the field's `subscribe` resolver gives the
 * source, the iterator's `return` reaches it at once (a client that leaves ends its stream without waiting for
 * an event), and an event whose execution errs (an error item) is answered for that subscriber alone.
 */
export function useSharedSubscriptionResults(): Plugin<Context> {
  return {
    onSubscribe({ setSubscribeFn }) {
      setSubscribeFn(subscribeSharing as never);
    },
  };
}

/** Identities of documents (parsed once per text by yoga's cache), for the key of a result. */
const documentIds = new WeakMap<DocumentNode, number>();
let lastDocumentId = 0;

async function subscribeSharing(args: ExecutionArgs): Promise<AsyncIterable<ExecutionResult> | ExecutionResult> {
  const source = await createSourceEventStream(args);
  if (!isAsyncIterable(source)) return source;
  const context = args.contextValue as Context;
  const executeFor = (payload: unknown) => execute({ ...args, rootValue: payload }) as Promise<ExecutionResult> | ExecutionResult;
  let key: string | null | undefined;
  return mapAsyncIterator(source, (payload: unknown) => {
    const event = eventOf(payload);
    if (!event) return executeFor(payload);
    // A resumable stream (a REST event stream) names each message after its event.
    if (args.rootValue instanceof StreamPosition) args.rootValue.current = event.id;
    if (key === undefined) key = resultKey(args, context);
    return key === null ? executeFor(payload) : sharedResult(event, key, () => executeFor(payload));
  });
}

/** The event a change stream's item carries (an error item carries none, and is executed for its subscriber). */
function eventOf(payload: unknown): StoredEvent | undefined {
  return typeof payload === 'object' && payload !== null && 'event' in payload ? (payload as { event: StoredEvent }).event : undefined;
}

/** What a result depends on besides its event: the operation, its variables, the subscriber's access; null: not shared. */
function resultKey(args: ExecutionArgs, context: Context): string | null {
  const viewer = context.viewer;
  if (!viewer) return null;
  let documentId = documentIds.get(args.document);
  if (documentId === undefined) {
    documentId = ++lastDocumentId;
    documentIds.set(args.document, documentId);
  }
  return JSON.stringify([
    viewer.tenantId,
    viewer.role,
    viewer.credential,
    [...viewer.permissions].sort(),
    documentId,
    args.operationName ?? null,
    args.variableValues ?? null,
  ]);
}
