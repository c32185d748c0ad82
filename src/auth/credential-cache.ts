import { hash } from 'node:crypto';
import type { Viewer } from './viewer.js';
import type { Database } from '../db/client.js';

// Verified personal access tokens, kept in-process for a few seconds (TOKEN_CACHE_TTL_MS, default 5 s) so a
// token-authenticated request needs no statement. Keyed by the token's public prefix and the
// SHA-256 of the secret presented, so only the exact token value that was verified hits.
//
// Bounds: a revocation, a role change or a deleted service user made through the API or the CLI is evicted at
// once in the process that made it and, through a NOTIFY on `ig_credentials`, in every other process within
// milliseconds; a change made behind their back (SQL) takes effect within the TTL. A token's expiry is checked on
// every hit.

const CREDENTIALS_CHANNEL = 'ig_credentials';
export const DEFAULT_TOKEN_CACHE_TTL_MS = 5000;
/** Entries kept at most; the least recently used go first. */
const MAX_ENTRIES = 10_000;

/** What changed: these tokens, or every token of these service users. */
interface CredentialChange {
  tokenIds?: string[];
  serviceUserIds?: string[];
}

interface Entry {
  viewer: Viewer;
  tokenId: string;
  serviceUserId: string;
  /** Cached until (ms epoch), and the token's own expiry. */
  until: number;
  expiresAt: number;
}

export class CredentialCache {
  private readonly entries = new Map<string, Entry>();

  constructor(readonly ttlMs: number) {}

  keyOf(prefix: string, secret: string): string {
    return `${prefix}:${hash('sha256', secret, 'base64url')}`;
  }

  get(key: string, now: number): Viewer | null {
    const entry = this.entries.get(key);
    if (!entry) return null;
    this.entries.delete(key);
    if (entry.until <= now || entry.expiresAt <= now) return null;
    // Most recently used last: Map keeps insertion order.
    this.entries.set(key, entry);
    return entry.viewer;
  }

  set(key: string, entry: { viewer: Viewer; tokenId: string; serviceUserId: string; expiresAt: number }, now: number): void {
    if (this.ttlMs <= 0) return;
    if (this.entries.size >= MAX_ENTRIES) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    this.entries.set(key, { ...entry, until: now + this.ttlMs });
  }

  evict(change: CredentialChange): void {
    const tokens = new Set(change.tokenIds ?? []);
    const users = new Set(change.serviceUserIds ?? []);
    for (const [key, entry] of this.entries) {
      if (tokens.has(entry.tokenId) || users.has(entry.serviceUserId)) this.entries.delete(key);
    }
  }

  clear(): void {
    this.entries.clear();
  }

  get size(): number {
    return this.entries.size;
  }
}

/** The caches of the gateways in this process, per database: a change evicts from each at once. */
const caches = new WeakMap<Database, Set<CredentialCache>>();

/**
 * Registers a gateway's cache: evicted at once by changes made in this process, and by the NOTIFYs of others
 * (one LISTEN, opened with the first cached token). Returns the function that unregisters it.
 */
export function registerCredentialCache(db: Database, cache: CredentialCache): { listen(): void; stop(): Promise<void> } {
  let set = caches.get(db);
  if (!set) {
    set = new Set();
    caches.set(db, set);
  }
  set.add(cache);
  let listening: Promise<(() => Promise<void>) | undefined> | undefined;
  return {
    listen() {
      listening ??= db
        .listen(
          CREDENTIALS_CHANNEL,
          (payload) => {
            try {
              cache.evict(JSON.parse(payload) as CredentialChange);
            } catch {
              cache.clear();
            }
          },
          // Notifications may have been lost while the connection was away.
          () => cache.clear(),
        )
        .catch(() => {
          // No LISTEN (the database away): entries still end with the TTL; try again with the next token.
          listening = undefined;
          return undefined;
        });
    },
    async stop() {
      set.delete(cache);
      const unlisten = await listening;
      await unlisten?.().catch(() => {});
    },
  };
}

/**
 * After a revocation, role change or service-user deletion committed: evicts those tokens from this process's
 * caches at once and tells the other processes (NOTIFY). Never fails the change it follows: a lost
 * notification is bounded by the TTL.
 */
export async function credentialsChanged(db: Database, change: CredentialChange): Promise<void> {
  for (const cache of caches.get(db) ?? []) cache.evict(change);
  await db.raw.query('SELECT pg_notify($1, $2)', [CREDENTIALS_CHANNEL, JSON.stringify(change)]).catch(() => {});
}
