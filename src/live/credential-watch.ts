import type { Permission } from '../auth/permissions.js';
import type { Viewer } from '../auth/viewer.js';
import type { Logger } from '../logger.js';

// Long-lived streams (GraphQL subscriptions, REST event streams) were authorised when they opened. This checks
// their credentials again every `intervalMs`, with the same authentication as a request: a token revoked or
// expired, a JWT past its `exp`, a service user deleted or demoted below the permission the stream needs, all
// end the stream at the next check. One check per distinct credential per round, however many streams share it.

/** Authenticates an Authorization header as a request would: the viewer, or null when it is no longer valid. */
export type Authenticate = (authorization: string) => Promise<Viewer | null>;

interface Watched {
  authorization: string;
  permission: Permission;
  onLost: (reason: string) => void;
}

export class CredentialWatch {
  private readonly watched = new Set<Watched>();
  private timer: NodeJS.Timeout | undefined;
  private checking = false;

  constructor(
    private readonly authenticate: Authenticate,
    private readonly intervalMs: number,
    private readonly logger?: Pick<Logger, 'warn'>,
  ) {}

  /** Calls `onLost` (once) when the credential stops granting `permission`; returns the function that stops watching. */
  watch(authorization: string, permission: Permission, onLost: (reason: string) => void): () => void {
    const entry: Watched = { authorization, permission, onLost };
    this.watched.add(entry);
    if (!this.timer) {
      this.timer = setInterval(() => void this.check(), this.intervalMs);
      this.timer.unref();
    }
    return () => {
      this.watched.delete(entry);
      if (this.watched.size === 0) this.stop();
    };
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** One round: every distinct credential authenticated once. Exposed for tests. */
  async check(): Promise<void> {
    if (this.checking) return;
    this.checking = true;
    try {
      const byCredential = new Map<string, Watched[]>();
      for (const entry of this.watched) {
        const list = byCredential.get(entry.authorization);
        if (list) list.push(entry);
        else byCredential.set(entry.authorization, [entry]);
      }
      await Promise.all(
        [...byCredential].map(async ([authorization, entries]) => {
          let viewer: Viewer | null;
          try {
            viewer = await this.authenticate(authorization);
          } catch (error) {
            // The database is away: the credential is not known to be bad; the next round asks again.
            this.logger?.warn({ err: error }, 'credential check of open streams failed');
            return;
          }
          for (const entry of entries) {
            if (!this.watched.has(entry)) continue;
            const reason = !viewer
              ? 'The credential was revoked or expired'
              : viewer.permissions.has(entry.permission)
                ? null
                : 'The credential no longer has the permission this stream needs';
            if (reason) {
              this.watched.delete(entry);
              entry.onLost(reason);
            }
          }
        }),
      );
    } finally {
      this.checking = false;
      if (this.watched.size === 0) this.stop();
    }
  }
}
