import type { Viewer } from './viewer.js';
import type { Database } from '../db/client.js';
import { looksLikeJwt, type JwtVerifier } from './jwt.js';
import { createKnownTenants, type KnownTenants } from './known-tenants.js';
import { DEFAULT_SESSION_POLICY, looksLikeSession, type SessionPolicy, verifySession } from './sessions.js';
import { parsePersonalAccessToken, type TokenCacheUse, verifyPersonalAccessToken } from './tokens.js';
import type { CookiePolicy } from './session-cookie.js';

type AuthFailureReason = 'missing' | 'malformed' | 'invalid';

type AuthResult = { viewer: Viewer } | { viewer: null; reason: AuthFailureReason };

/** Longer headers are refused before any parsing or database work. */
const MAX_AUTHORIZATION_LENGTH = 4096;

/** `<scheme> <credential>`: one token68-ish credential, no further parameters (RFC 9110 allows 1*SP). */
const AUTHORIZATION_PATTERN = /^([A-Za-z]+) +([\x21-\x7e]+)$/;

/**
 * Resolves an Authorization header to a viewer, or says why not. Three forms exist:
 * `Token <personal access token>`, `Bearer <JWT>` and `Session <session>` (scheme case-insensitive; the last is
 * what the session cookie becomes, src/auth/session-cookie.ts). A personal access token sent
 * as `Bearer` is accepted too, because many HTTP clients only offer a "bearer token" field; the token format
 * is unambiguous, so this cannot confuse the two kinds.
 *
 * Never throws for bad input; database errors (and an unreachable JWKS) propagate, so an outage is not
 * reported as a bad credential.
 */
export async function authenticate(
  authorization: string | null | undefined,
  deps: { db: Database; jwt: JwtVerifier; tenants?: KnownTenants; tokenCache?: TokenCacheUse; sessions?: SessionPolicy & CookiePolicy },
): Promise<AuthResult> {
  if (authorization === undefined || authorization === null || authorization === '') {
    return { viewer: null, reason: 'missing' };
  }
  if (typeof authorization !== 'string' || authorization.length > MAX_AUTHORIZATION_LENGTH) {
    return { viewer: null, reason: 'malformed' };
  }
  const match = AUTHORIZATION_PATTERN.exec(authorization.trim());
  const scheme = match?.[1]?.toLowerCase();
  const credential = match?.[2];
  if (!scheme || !credential) return { viewer: null, reason: 'malformed' };

  if (scheme === 'token' || (scheme === 'bearer' && credential.startsWith('igw_pat_'))) {
    if (!parsePersonalAccessToken(credential)) return { viewer: null, reason: 'malformed' };
    const viewer = await verifyPersonalAccessToken(deps.db, credential, new Date(), deps.tokenCache);
    return viewer ? { viewer } : { viewer: null, reason: 'invalid' };
  }
  if (scheme === 'session') {
    if (!looksLikeSession(credential)) return { viewer: null, reason: 'malformed' };
    const viewer = await verifySession(deps.db, credential, deps.sessions ?? DEFAULT_SESSION_POLICY);
    return viewer ? { viewer } : { viewer: null, reason: 'invalid' };
  }
  if (scheme === 'bearer') {
    if (!deps.jwt.enabled) return { viewer: null, reason: 'invalid' };
    if (!looksLikeJwt(credential)) return { viewer: null, reason: 'malformed' };
    const viewer = await deps.jwt.verify(credential);
    // A signed tenant_id that names no tenant would act on nothing, with every answer empty: refuse it instead.
    const known = viewer !== null && (await (deps.tenants ?? createKnownTenants(deps.db)).exists(viewer.tenantId));
    return viewer && known ? { viewer } : { viewer: null, reason: 'invalid' };
  }
  return { viewer: null, reason: 'malformed' };
}
