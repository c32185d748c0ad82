import type { Role } from '../generated/prisma/enums.js';
import type { Permission } from './permissions.js';

/** The authenticated caller. Every tenant-owned query is scoped by `tenantId` in SQL. */
export interface Viewer {
  tenantId: string;
  role: Role;
  permissions: ReadonlySet<Permission>;
  /** Service user id (token), JWT `sub` or member id (session). */
  subject: string;
  credential: 'token' | 'jwt' | 'session' | 'oauth';
  /** Token id, or an OAuth access token's client id (`oac_…`): per-credential budgets and caps count it. */
  tokenId?: string;
}
