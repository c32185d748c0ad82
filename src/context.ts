import type { IdempotencyRecord } from './db/idempotency.js';
import type { Permission } from './auth/permissions.js';
import type { Database } from './db/client.js';
import type { Role } from './generated/prisma/enums.js';

/** The authenticated caller. Every tenant-owned query is scoped by `tenantId` in SQL. */
export interface Viewer {
  tenantId: string;
  role: Role;
  permissions: ReadonlySet<Permission>;
  /** Service user id (token) or JWT `sub`. */
  subject: string;
  credential: 'token' | 'jwt';
  /** Token id, for throttled last_used_at updates and logs; never the secret. */
  tokenId?: string;
}

export interface Context {
  db: Database;
  /** null when the request carries no valid credential; protected fields then answer UNAUTHORIZED. */
  viewer: Viewer | null;
  requestId: string;
  /**
   * The request's `Idempotency-Key` header, for the mutations a POST runs (createConnection, triggerSync,
   * claimSync). `outcome` is set by the mutation: whether it did the work or found an earlier request's.
   */
  idempotency: { key: string; outcome?: { replayed: boolean; record?: IdempotencyRecord } } | null;
}
