import type { Database } from '../db/client.js';
import { MAX_ID_LENGTH } from '../prefixed-ids.js';

/**
 * Which tenant ids exist. A JWT names its tenant in a claim that only its signature vouches for; the tenant must
 * also exist. Asking the database on every request would cost a statement per request, so a tenant seen to
 * exist is remembered for `ttlMs`. An unknown id is never remembered: a tenant created a moment ago works at once,
 * and only a correctly signed token can ask. A deleted tenant's JWTs stop working within `ttlMs`.
 */
export interface KnownTenants {
  exists(tenantId: string): Promise<boolean>;
}

/** How long a tenant seen to exist is taken to exist without asking again. */
const KNOWN_TENANT_TTL_MS = 60_000;

/** Bound on the remembered ids; past it the oldest is forgotten first. */
const MAX_REMEMBERED = 10_000;

export function createKnownTenants(db: Database, ttlMs = KNOWN_TENANT_TTL_MS): KnownTenants {
  const knownUntil = new Map<string, number>();
  return {
    async exists(tenantId) {
      const now = Date.now();
      if ((knownUntil.get(tenantId) ?? 0) > now) return true;
      knownUntil.delete(tenantId);
      if (tenantId.length > MAX_ID_LENGTH) return false;
      const tenant = await db.prisma.tenant.findUnique({ where: { id: tenantId }, select: { id: true } });
      if (!tenant) return false;
      if (knownUntil.size >= MAX_REMEMBERED) knownUntil.delete(knownUntil.keys().next().value as string);
      knownUntil.set(tenantId, now + ttlMs);
      return true;
    },
  };
}
