import type { Viewer } from './viewer.js';
import type { Database } from '../db/client.js';
import { looksLikeJwt, type JwtVerifier } from './jwt.js';
import { createKnownTenants, type KnownTenants } from './known-tenants.js';
import { DEFAULT_SESSION_POLICY, looksLikeSession, type SessionPolicy, verifySession } from './sessions.js';
import { parsePersonalAccessToken, type TokenCacheUse, verifyPersonalAccessToken } from './tokens.js';
import { verifyApplicationAccessToken } from './oauth-applications.js';
import { looksLikeOAuthAccessToken, verifyOAuthAccessToken } from './oauth-clients.js';
import type { CookiePolicy } from './session-cookie.js';

/** `doubled-scheme`: the scheme written twice (`Token Token …`), as pasting a whole header into a token field does. */
type AuthFailureReason = 'missing' | 'malformed' | 'doubled-scheme' | 'invalid';

type AuthResult = { viewer: Viewer } | { viewer: null; reason: AuthFailureReason };

/** Longer headers are refused before any parsing or database work. */
const MAX_AUTHORIZATION_LENGTH = 4096;

/** `<scheme> <credential>`: one token68-ish credential, no further parameters (RFC 9110 allows 1*SP). */
const AUTHORIZATION_PATTERN = /^([A-Za-z]+) +([\x21-\x7e]+)$/;
const DOUBLED_SCHEME_PATTERN = /^(?:token|bearer) +(?:token|bearer) +\S/i;

/**
 * Resolves an Authorization header to a viewer, or says why not. Four forms exist:
 * `Token <personal access token>`, `Bearer <JWT>`, `Bearer <OAuth access token>` (this server's authorization
 * server issued it) and `Session <session>` (scheme case-insensitive; the last is
 * what the session cookie becomes, src/auth/session-cookie.ts). A personal access token sent
 * as `Bearer` is accepted too, because many HTTP clients only offer a "bearer token" field; the token format
 * is unambiguous, so this cannot confuse the two kinds.
 *
 * Never throws for bad input; database errors (and an unreachable JWKS) propagate, so an outage is not
 * reported as a bad credential.
 */
export async function authenticate(
  authorization: string | null | undefined,
  deps: {
    db: Database;
    jwt: JwtVerifier;
    tenants?: KnownTenants;
    tokenCache?: TokenCacheUse;
    sessions?: SessionPolicy & CookiePolicy;
    /** The audience of this API's OAuth access tokens (OAUTH_AUDIENCE); without it they are refused. */
    oauthAudience?: string;
  },
): Promise<AuthResult> {
  if (authorization === undefined || authorization === null || authorization === '') {
    return { viewer: null, reason: 'missing' };
  }
  if (typeof authorization !== 'string' || authorization.length > MAX_AUTHORIZATION_LENGTH) {
    return { viewer: null, reason: 'malformed' };
  }
  if (DOUBLED_SCHEME_PATTERN.test(authorization.trim())) return { viewer: null, reason: 'doubled-scheme' };
  const match = AUTHORIZATION_PATTERN.exec(authorization.trim());
  const scheme = match?.[1]?.toLowerCase();
  const credential = match?.[2];
  if (!scheme || !credential) return { viewer: null, reason: 'malformed' };

  if (scheme === 'token' || (scheme === 'bearer' && credential.startsWith('igw_pat_'))) {
    // A value that is not a whole token (cut short when copied, say) is as unknown as a revoked one.
    if (!parsePersonalAccessToken(credential)) return { viewer: null, reason: 'invalid' };
    const viewer = await verifyPersonalAccessToken(deps.db, credential, new Date(), deps.tokenCache);
    return viewer ? { viewer } : { viewer: null, reason: 'invalid' };
  }
  if (scheme === 'session') {
    if (!looksLikeSession(credential)) return { viewer: null, reason: 'malformed' };
    const viewer = await verifySession(deps.db, credential, deps.sessions ?? DEFAULT_SESSION_POLICY);
    return viewer ? { viewer } : { viewer: null, reason: 'invalid' };
  }
  if (scheme === 'bearer' && looksLikeOAuthAccessToken(credential)) {
    // An access token of this server's authorization server (src/oauth/): opaque, looked up on every request.
    if (!deps.oauthAudience) return { viewer: null, reason: 'invalid' };
    // A service user's client's token, else an application's acting for a member.
    const viewer =
      (await verifyOAuthAccessToken(deps.db, credential, deps.oauthAudience)) ??
      (await verifyApplicationAccessToken(deps.db, credential, deps.oauthAudience));
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
