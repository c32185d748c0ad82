import type { Permission } from '../auth/permissions.js';
import type { Context } from '../context.js';
import { syncOfEvent, type StoredEvent } from '../db/events.js';
import { connectionExists, runOf } from '../db/stream-reads.js';
import { SYNC_TRANSITIONS } from '../domain/sync-lifecycle.js';
import type { SyncStatus } from '../generated/prisma/enums.js';
import { ApiError } from '../errors.js';
import { endingMessage, holderOf } from '../governor/governor.js';
import {
  changeStream,
  StreamPosition,
  streamStart,
  type ChangeItem,
  type ChangeStreamOptions,
  type StreamStart,
} from '../live/change-stream.js';
import { builder } from './builder.js';
import { Connection, connectionById } from './connection.js';
import { assertIdLength } from './ids.js';
import { Sync } from './sync.js';
import { requireViewer } from './viewer.js';

// Subscriptions: each change of a run or a connection, from the durable event log (src/live/change-stream.ts),
// served over SSE (yoga) and WebSocket (graphql-ws, src/http/graphql-ws.ts), and run by the REST event streams.
// Authorised like a query (the same scopes) when they open, checked again while open (CredentialWatch), and
// scoped to the caller's tenant in every statement that reads an event or a row.

builder.subscriptionType({
  description: 'Changes as they are committed. A stream ends when its credential is revoked or expires (within ~2 s).',
});

/**
 * The caller's changes that `matches` accepts, delivered as ChangeItems (an error item ends the stream): a
 * stream lease of the request's owner (governor/governor.ts), given back however the stream ends: finished,
 * its client gone or stalled, its credential revoked, taken for another tenant's fair share, or at shutdown.
 */
async function subscribeChanges(
  context: Context,
  permission: Permission,
  start: StreamStart,
  stream: Pick<ChangeStreamOptions, 'matches' | 'connectionId' | 'initial' | 'isLast'>,
): Promise<AsyncIterable<ChangeItem>> {
  const viewer = requireViewer(context);
  const { governor } = context.live;
  const lease = governor.lease('stream', holderOf(viewer), governor.ownerOf(context.request));
  try {
    const hub = await context.live.startedHub();
    const authorization = context.authorization ?? '';
    const items = changeStream({
      ...stream,
      hub,
      sql: context.db.raw,
      tenantId: viewer.tenantId,
      start,
      guard: (end) => {
        const unwatch = context.live.credentials.watch(authorization, permission, (reason) => end(new ApiError('UNAUTHORIZED', reason)));
        const untrack = context.live.track(() => end(new ApiError('UNAVAILABLE', endingMessage('shutdown'))));
        // Ended by the governor (fairness, stall, shutdown) or by its client leaving: the stream stops at once.
        lease.onEnd((reason) => {
          if (reason !== 'done') end(new ApiError('UNAVAILABLE', endingMessage(reason, governor.stallMs)));
        });
        return () => {
          unwatch();
          untrack();
        };
      },
      onEnd: () => lease.end('done'),
      onFellBehind: () => lease.owner?.end('fell-behind'),
    });
    return items;
  } catch (error) {
    lease.end('error');
    throw error;
  }
}

/**
 * The event an item carries, or its error thrown (the stream's last result). Its execution is shared by the
 * event's subscribers with the same operation and access, and the REST stream's message id is set before it
 * (plugins/use-shared-subscription-results.ts).
 */
function itemValue(item: ChangeItem): StoredEvent {
  if ('error' in item) throw item.error;
  return item.event;
}

builder.subscriptionFields((t) => ({
  syncChanged: t.field({
    type: Sync,
    description:
      'The run at each change: queued, claimed, each progress report (coalesced to a few per second), finished. With syncId: that run, starting with its current state and ending after its terminal status; with connectionId: every run of that connection; with neither: every run of the caller. NOT_FOUND for an id that names nothing.',
    authScopes: { permission: 'syncs:read' },
    args: {
      connectionId: t.arg.id({ description: 'Only runs of this connection.' }),
      syncId: t.arg.id({ description: 'Only this run.' }),
    },
    subscribe: async (root, args, context) => {
      const tenantId = requireViewer(context).tenantId;
      const syncId = args.syncId ? assertIdLength(args.syncId, 'sync') : null;
      const connectionId = args.connectionId ? assertIdLength(args.connectionId, 'connection') : null;
      const start = await streamStart(context.db.raw, tenantId, root instanceof StreamPosition ? root.after : undefined);
      // Read after the start id: the run as of that event or later, so no change after it is missed.
      const run = syncId ? await runOf(context.db.raw, tenantId, syncId) : undefined;
      if (syncId && (!run || (connectionId && run.connectionId !== connectionId)))
        throw new ApiError('NOT_FOUND', `sync record ${syncId} not found`);
      if (connectionId && !syncId && !(await connectionExists(context.db.raw, tenantId, connectionId))) {
        throw new ApiError('NOT_FOUND', `connection ${connectionId} not found`);
      }
      return subscribeChanges(context, 'syncs:read', start, {
        matches: (event) =>
          event.type.startsWith('sync.') &&
          (!syncId || event.subjectId === syncId) &&
          (!connectionId || event.payload.connection_id === connectionId),
        connectionId: connectionId ?? run?.connectionId,
        // A resumed stream continues where it was; a new one on one run starts with the run as it is.
        initial:
          run && !start.resumed
            ? [{ id: start.after, tenantId, type: `sync.${run.status}`, subjectId: run.id, payload: { run }, createdAt: new Date() }]
            : undefined,
        isLast: syncId
          ? (event) => event.type !== 'sync.progress' && SYNC_TRANSITIONS[event.type.slice(5) as SyncStatus]?.length === 0
          : undefined,
      });
    },
    resolve: (item: ChangeItem) => {
      const run = syncOfEvent(itemValue(item));
      if (!run) throw new ApiError('UNAVAILABLE', 'This event was recorded before runs were kept in events; read the run instead');
      return run;
    },
  }),
  connectionChanged: t.field({
    type: Connection,
    description:
      'The connection at each change: created, updated (also by its runs: pending → active, → error), deleted. With id: that connection only (deleted ones included); without: every connection of the caller.',
    authScopes: { permission: 'connections:read' },
    args: { id: t.arg.id({ description: 'Only this connection.' }) },
    subscribe: async (root, args, context) => {
      const tenantId = requireViewer(context).tenantId;
      const id = args.id ? assertIdLength(args.id, 'connection') : null;
      if (id && !(await connectionExists(context.db.raw, tenantId, id))) throw new ApiError('NOT_FOUND', `connection ${id} not found`);
      const start = await streamStart(context.db.raw, tenantId, root instanceof StreamPosition ? root.after : undefined);
      return subscribeChanges(context, 'connections:read', start, {
        matches: (event) => event.type.startsWith('connection.') && (!id || event.subjectId === id),
        connectionId: id ?? undefined,
      });
    },
    // The connection as it is when the change is delivered (deleted ones too), read with its application and
    // category in one statement.
    resolve: async (item: ChangeItem, _args, context, info) => {
      const id = itemValue(item).subjectId;
      const connection = await connectionById(context, id, info, { deleted: true });
      if (!connection) throw new Error(`connection ${id} of an event is not found`);
      return connection;
    },
  }),
}));
