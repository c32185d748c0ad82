import type { Database } from '../db/client.js';
import type { Logger } from '../logger.js';
import { CredentialWatch, type Authenticate } from './credential-watch.js';
import { EventHub } from './event-hub.js';
import { Governor, type GovernorLimits } from '../governor/governor.js';

// What the live surfaces (GraphQL subscriptions over SSE and WebSocket, REST event streams) share in one
// process: the event hub, the credential watch, the governor their slots are leased from and the heartbeat.

export interface LiveOptions {
  /** Caps of the governor's resources (defaults: RESOURCES in governor/governor.ts). */
  limits?: GovernorLimits;
  /** How often open streams' credentials are checked again (default 2 s: a revoked one is closed within ~2 s). */
  credentialCheckMs?: number;
  /** Comment lines a REST event stream sends while idle, so proxies keep it open (default 15 s). */
  heartbeatMs?: number;
  /** A stream or export whose client takes nothing this long while it has more to send is ended (default 10 s). */
  stallMs?: number | undefined;
  /** The hub's safety-net poll and progress coalescing (see EventHub). */
  pollMs?: number;
  progressMs?: number;
}

export interface Live {
  hub: EventHub;
  credentials: CredentialWatch;
  /** What open streams and exports hold is leased from it (governor/governor.ts). */
  governor: Governor;
  heartbeatMs: number;
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
  const governor = new Governor(options.limits, options.stallMs);
  let started: Promise<EventHub> | undefined;
  const open = new Set<() => void>();
  let ended = false;
  return {
    hub,
    credentials,
    governor,
    heartbeatMs: options.heartbeatMs ?? 15_000,
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
      governor.close();
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
