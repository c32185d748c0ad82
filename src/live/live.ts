import type { Database } from '../db/client.js';
import type { Logger } from '../logger.js';
import { CredentialWatch, type Authenticate } from './credential-watch.js';
import { EventHub } from './event-hub.js';
import { StreamSlots, type StreamLimits } from './stream-slots.js';

// What the live surfaces (GraphQL subscriptions over SSE and WebSocket, REST event streams) share in one
// process: the event hub, the credential watch, the caps on open streams and the heartbeat interval.

export interface LiveOptions {
  perCredential?: number | undefined;
  perTenant?: number | undefined;
  perProcess?: number | undefined;
  /** How often open streams' credentials are checked again (default 2 s: a revoked one is closed within ~2 s). */
  credentialCheckMs?: number;
  /** Comment lines a REST event stream sends while idle, so proxies keep it open (default 15 s). */
  heartbeatMs?: number;
  /** A REST event stream whose client takes nothing this long while it has more to send is ended (default 10 s). */
  stallMs?: number;
  /** The hub's safety-net poll and progress coalescing (see EventHub). */
  pollMs?: number;
  progressMs?: number;
}

/** Documented defaults (docs/reference/limits.md): STREAMS_PER_CREDENTIAL, STREAMS_PER_TENANT and STREAMS_PER_PROCESS. */
const DEFAULT_STREAM_LIMITS: StreamLimits = { perCredential: 20, perTenant: 200, perProcess: 2000 };

export interface Live {
  hub: EventHub;
  credentials: CredentialWatch;
  slots: StreamSlots;
  heartbeatMs: number;
  stallMs: number | undefined;
  /** The hub, listening: started by the first stream, so a process nobody streams from holds no LISTEN connection. */
  startedHub(): Promise<EventHub>;
  /** Registers an open stream's `end`, called by `endStreams`; returns the function that unregisters it. */
  track(end: () => void): () => void;
  /** Ends every open stream (at shutdown: their clients reconnect, to another replica, and resume). */
  endStreams(): void;
  /** Whether endStreams ran: the process is shutting down, and a stream that ends now was cut, not finished. */
  streamsEnded(): boolean;
  stop(): Promise<void>;
}

export function createLive(
  db: Pick<Database, 'liveReads' | 'listen'>,
  authenticate: Authenticate,
  logger: Logger,
  options: LiveOptions = {},
): Live {
  const hub = new EventHub({ db, logger, pollMs: options.pollMs, progressMs: options.progressMs });
  const credentials = new CredentialWatch(authenticate, options.credentialCheckMs ?? 2000, logger);
  const slots = new StreamSlots({
    perCredential: options.perCredential ?? DEFAULT_STREAM_LIMITS.perCredential,
    perTenant: options.perTenant ?? DEFAULT_STREAM_LIMITS.perTenant,
    perProcess: options.perProcess ?? DEFAULT_STREAM_LIMITS.perProcess,
  });
  let started: Promise<EventHub> | undefined;
  const open = new Set<() => void>();
  let ended = false;
  return {
    hub,
    credentials,
    slots,
    heartbeatMs: options.heartbeatMs ?? 15_000,
    stallMs: options.stallMs,
    startedHub() {
      started ??= hub.start().then(
        () => hub,
        (error: unknown) => {
          started = undefined;
          throw error;
        },
      );
      return started;
    },
    track(end) {
      open.add(end);
      return () => open.delete(end);
    },
    endStreams() {
      ended = true;
      for (const end of [...open]) end();
    },
    streamsEnded: () => ended,
    async stop() {
      this.endStreams();
      credentials.stop();
      if (started)
        await started.then(
          () => hub.stop(),
          () => {},
        );
      started = undefined;
    },
  };
}
