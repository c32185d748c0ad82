import { createPublicKey } from 'node:crypto';
import { isUnstorableText } from '../json-body.js';
import { createRemoteJWKSet, errors as joseErrors, importSPKI, jwtVerify, type CryptoKey, type JWTVerifyGetKey } from 'jose';
import type { Viewer } from './viewer.js';
import type { Config } from '../env.js';
import { ApiError } from '../errors.js';
import { JWT_DEFAULTS } from '../domain/jwt-settings.js';
import type { Role } from '../generated/prisma/enums.js';
import { isRole, permissionsOf, widestRole } from './permissions.js';

export type JwtConfig = Pick<Config, 'JWT_SECRET' | 'JWT_PUBLIC_KEY' | 'JWT_JWKS_URL' | 'JWT_ISSUER' | 'JWT_AUDIENCE'> &
  Partial<
    Pick<
      Config,
      | 'JWT_TENANT_CLAIM'
      | 'JWT_TENANT_MAP'
      | 'JWT_ROLE_CLAIM'
      | 'JWT_ROLE_MAP'
      | 'JWT_JWKS_ALGORITHMS'
      | 'JWT_CLOCK_SKEW_SECONDS'
      | 'JWT_JWKS_COOLDOWN_SECONDS'
      | 'JWT_JWKS_MAX_AGE_SECONDS'
      | 'JWT_MAX_LIFETIME_SECONDS'
    >
  >;

/** JWT_MAX_LIFETIME_SECONDS when unset: longer-lived tokens (`exp` − `iat`, or `exp` − now) are refused. */
export const DEFAULT_JWT_MAX_LIFETIME_SECONDS = 86_400;

export interface JwtVerifier {
  /** False when no key is configured: `Bearer` credentials are then always invalid. */
  enabled: boolean;
  /** The accepted `alg` values (never `none`). */
  algorithms: readonly string[];
  /**
   * The viewer for a valid token, null for any invalid one (bad signature, wrong alg, expired, missing or
   * malformed claims). Throws ApiError UNAVAILABLE only when the remote key set cannot be fetched: that is
   * our outage, not a bad credential, and must not look like one.
   */
  verify(token: string): Promise<Viewer | null>;
}

/** A remote key set is fetched within this, or the request is answered UNAVAILABLE. */
const JWKS_FETCH_TIMEOUT_MS = 5000;

/** Tokens larger than this are not JWTs we would issue; refuse before any parsing. */
const MAX_JWT_LENGTH = 4096;
const COMPACT_JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

/** Shape of a compact JWS (three base64url segments); says nothing about validity. */
export function looksLikeJwt(value: string): boolean {
  return value.length <= MAX_JWT_LENGTH && COMPACT_JWS.test(value);
}

class KeySetUnavailable extends Error {}

/** Picks the one algorithm a PEM public key can verify, so a key never accepts a family it was not made for. */
function algorithmOfPublicKey(pem: string): 'RS256' | 'ES256' | 'ES384' {
  let key;
  try {
    key = createPublicKey(pem);
  } catch (cause) {
    throw new Error('JWT_PUBLIC_KEY: not a valid PEM-encoded SPKI public key', { cause });
  }
  if (key.asymmetricKeyType === 'rsa') return 'RS256';
  if (key.asymmetricKeyType === 'ec') {
    const curve = key.asymmetricKeyDetails?.namedCurve;
    if (curve === 'prime256v1') return 'ES256';
    if (curve === 'secp384r1') return 'ES384';
    throw new Error(`JWT_PUBLIC_KEY: unsupported elliptic curve ${curve ?? 'unknown'} (use P-256 or P-384)`);
  }
  throw new Error(`JWT_PUBLIC_KEY: unsupported key type ${key.asymmetricKeyType ?? 'unknown'} (use RSA or EC)`);
}

/**
 * Builds the verifier from configuration. An unusable JWT_PUBLIC_KEY throws here, at start-up, rather than
 * failing every request later.
 */
export function createJwtVerifier(config: JwtConfig): JwtVerifier {
  const keys = new Map<string, () => Promise<Uint8Array | CryptoKey>>();
  let jwks: JWTVerifyGetKey | undefined;

  if (config.JWT_SECRET) {
    const secret = new TextEncoder().encode(config.JWT_SECRET);
    keys.set('HS256', async () => secret);
  }
  if (config.JWT_PUBLIC_KEY) {
    const pem = config.JWT_PUBLIC_KEY;
    const alg = algorithmOfPublicKey(pem);
    let imported: Promise<CryptoKey> | undefined;
    keys.set(alg, () => (imported ??= importSPKI(pem, alg)));
  } else if (config.JWT_JWKS_URL) {
    // Cached for JWT_JWKS_MAX_AGE_SECONDS; a token naming an unknown `kid` makes it fetch again, but never
    // twice within JWT_JWKS_COOLDOWN_SECONDS (and concurrent misses share one fetch): a flood of unknown kids
    // costs the provider one request per cooldown, and is answered 401 in between.
    jwks = createRemoteJWKSet(new URL(config.JWT_JWKS_URL), {
      cooldownDuration: (config.JWT_JWKS_COOLDOWN_SECONDS ?? JWT_DEFAULTS.jwksCooldownSeconds) * 1000,
      cacheMaxAge: (config.JWT_JWKS_MAX_AGE_SECONDS ?? JWT_DEFAULTS.jwksMaxAgeSeconds) * 1000,
      timeoutDuration: JWKS_FETCH_TIMEOUT_MS,
    });
  }

  const maxLifetime = config.JWT_MAX_LIFETIME_SECONDS ?? DEFAULT_JWT_MAX_LIFETIME_SECONDS;
  const skew = config.JWT_CLOCK_SKEW_SECONDS ?? JWT_DEFAULTS.clockSkewSeconds;
  // The algorithms are pinned by configuration, never taken from a token: HS256 only with JWT_SECRET, a PEM
  // key's own algorithm, and for a key set JWT_JWKS_ALGORITHMS (jose also holds each key to its `alg` and type).
  const algorithms = [
    ...keys.keys(),
    ...(jwks ? (config.JWT_JWKS_ALGORITHMS ?? JWT_DEFAULTS.jwksAlgorithms).filter((alg) => !keys.has(alg)) : []),
  ];
  const claimsOf = claimMapping(config);
  const enabled = algorithms.length > 0;

  // The key follows from the header's alg, which jwtVerify has already checked against `algorithms`.
  const getKey: JWTVerifyGetKey = async (header, token) => {
    const local = keys.get(header.alg);
    if (local) return local();
    if (!jwks) throw new joseErrors.JOSEAlgNotAllowed('unexpected "alg"');
    try {
      return await jwks(header, token);
    } catch (error) {
      // No (or several) matching keys is the token's fault; anything else is the key set being unreachable.
      if (error instanceof joseErrors.JWKSNoMatchingKey || error instanceof joseErrors.JWKSMultipleMatchingKeys) {
        throw error;
      }
      throw new KeySetUnavailable('the JWT key set could not be fetched', { cause: error });
    }
  };

  return {
    enabled,
    algorithms,
    async verify(token) {
      if (!enabled || typeof token !== 'string' || !looksLikeJwt(token)) {
        return null;
      }
      let payload;
      try {
        ({ payload } = await jwtVerify(token, getKey, {
          algorithms,
          requiredClaims: ['exp', 'sub'],
          // jose applies the tolerance to nbf (wanted) and to exp (not wanted: checked exactly below).
          clockTolerance: skew,
          ...(config.JWT_ISSUER ? { issuer: config.JWT_ISSUER } : {}),
          ...(config.JWT_AUDIENCE ? { audience: config.JWT_AUDIENCE } : {}),
        }));
      } catch (error) {
        if (error instanceof KeySetUnavailable) {
          throw new ApiError('UNAVAILABLE', 'the key set for verifying JWTs is unavailable, retry later');
        }
        return null;
      }
      if (!withinLifetime(payload.exp, payload.iat, maxLifetime, skew)) return null;
      // A signed claim is still outside input: text PostgreSQL cannot hold (a NUL, a lone surrogate) would
      // fail the tenant lookup as a server error instead of a refused credential.
      if (holdsUnstorableText(payload)) return null;
      const { sub } = payload;
      if (typeof sub !== 'string' || sub.trim() === '') return null;
      const mapped = claimsOf(payload);
      if (!mapped) return null;
      const { tenantId, role } = mapped;
      return { tenantId, role, permissions: permissionsOf(role), subject: sub, credential: 'jwt' };
    },
  };
}

/** Whether a claim, at any depth, is text PostgreSQL cannot store (member names included). */
function holdsUnstorableText(value: unknown, depth = 0): boolean {
  if (typeof value === 'string') return isUnstorableText(value);
  if (value === null || typeof value !== 'object' || depth > 16) return false;
  return Object.entries(value).some(([name, member]) => isUnstorableText(name) || holdsUnstorableText(member, depth + 1));
}

/**
 * Not expired (exactly, without the skew), not issued in the future beyond the skew, and not meant to live
 * longer than `maxLifetime`: `exp` − `iat`, or `exp` − now when there is no `iat` (jose has checked both are numbers).
 */
function withinLifetime(exp: number | undefined, iat: number | undefined, maxLifetime: number, skew: number): boolean {
  const now = Math.floor(Date.now() / 1000);
  if (exp === undefined || exp <= now) return false;
  if (iat !== undefined && iat > now + skew) return false;
  return exp - (iat ?? now) <= maxLifetime;
}

/**
 * The tenant and role a token's claims map to, by configuration, or null when either cannot be mapped (the
 * token is then refused, 401):
 * - the tenant: the JWT_TENANT_CLAIM claim (default `tenant_id`), a non-empty text; with JWT_TENANT_MAP, one of
 *   its keys, and the tenant is the id it maps to;
 * - the role: the JWT_ROLE_CLAIM claim (default `role`). Without JWT_ROLE_MAP it is a role name, `reader` when
 *   absent. With JWT_ROLE_MAP the claim is a text or a list of texts (groups, say); the values the map knows
 *   give roles, others are ignored, and the role is the one that holds every permission the others hold; none
 *   mapped, or two that neither holds (reader and engine), is refused rather than guessed.
 */
function claimMapping(config: JwtConfig): (payload: Record<string, unknown>) => { tenantId: string; role: Role } | null {
  const tenantMap = config.JWT_TENANT_MAP;
  const roleMap = config.JWT_ROLE_MAP;
  return (payload) => {
    const tenantValue = claimAt(payload, config.JWT_TENANT_CLAIM ?? JWT_DEFAULTS.tenantClaim);
    if (typeof tenantValue !== 'string' || tenantValue.trim() === '') return null;
    const tenantId = tenantMap ? (Object.hasOwn(tenantMap, tenantValue) ? tenantMap[tenantValue] : undefined) : tenantValue;
    if (tenantId === undefined) return null;
    const roleValue = claimAt(payload, config.JWT_ROLE_CLAIM ?? JWT_DEFAULTS.roleClaim);
    if (!roleMap) {
      if (roleValue === undefined) return { tenantId, role: 'reader' };
      return isRole(roleValue) ? { tenantId, role: roleValue } : null;
    }
    const values = Array.isArray(roleValue) ? roleValue : [roleValue];
    const roles = values.flatMap((value) => (typeof value === 'string' && Object.hasOwn(roleMap, value) ? [roleMap[value]!] : []));
    const role = widestRole(roles);
    return role ? { tenantId, role } : null;
  };
}

/** A claim by name, or by JSON Pointer (`/org/id`, RFC 6901: `~1` is `/`, `~0` is `~`) into object claims. */
export function claimAt(payload: Record<string, unknown>, nameOrPointer: string): unknown {
  if (!nameOrPointer.startsWith('/')) return Object.hasOwn(payload, nameOrPointer) ? payload[nameOrPointer] : undefined;
  let value: unknown = payload;
  for (const token of nameOrPointer.slice(1).split('/')) {
    const name = token.replaceAll('~1', '/').replaceAll('~0', '~');
    if (value === null || typeof value !== 'object' || Array.isArray(value) || !Object.hasOwn(value, name)) return undefined;
    value = (value as Record<string, unknown>)[name];
  }
  return value;
}
