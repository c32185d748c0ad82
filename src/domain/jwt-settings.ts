// What a JWT from another issuer must look like to be accepted, when configuration does not say
// (JWT_TENANT_CLAIM, JWT_ROLE_CLAIM, JWT_JWKS_ALGORITHMS, JWT_CLOCK_SKEW_SECONDS, JWT_JWKS_COOLDOWN_SECONDS,
// JWT_JWKS_MAX_AGE_SECONDS; read in auth/jwt.ts).

export const JWT_DEFAULTS = {
  /** The claim naming the tenant (its id, unless JWT_TENANT_MAP maps the claim's values). */
  tenantClaim: 'tenant_id',
  /** The claim naming the role (a role name, unless JWT_ROLE_MAP maps the claim's values). */
  roleClaim: 'role',
  /** What a key set's keys may sign with. */
  jwksAlgorithms: ['RS256', 'ES256'],
  /** How far the issuer's clock may run ahead of ours, for `iat` and `nbf`. `exp` is not stretched. */
  clockSkewSeconds: 60,
  /** An unknown `kid` fetches the key set again at most once in this time. */
  jwksCooldownSeconds: 30,
  /** A fetched key set is used this long, then fetched again (a removed key stops working by then). */
  jwksMaxAgeSeconds: 600,
} as const;

/** The algorithms JWT_JWKS_ALGORITHMS may name: asymmetric only, so a public key can never serve as an HMAC secret. */
export const JWKS_ALGORITHM_CHOICES = ['RS256', 'PS256', 'ES256', 'ES384'] as const;
