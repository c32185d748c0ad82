// How many active tokens (neither revoked nor expired) a service user, and a tenant, may hold at once
// (TOKENS_PER_SERVICE_USER, TOKENS_PER_TENANT). Each token is a credential with its own rate limit and stream
// budget: without a cap, one tenant could multiply its share of the service by minting tokens.

/** TOKENS_PER_SERVICE_USER when unset. */
export const DEFAULT_TOKENS_PER_SERVICE_USER = 20;

/** TOKENS_PER_TENANT when unset. */
export const DEFAULT_TOKENS_PER_TENANT = 200;

export interface TokenCaps {
  perServiceUser: number;
  perTenant: number;
}

export const DEFAULT_TOKEN_CAPS: TokenCaps = { perServiceUser: DEFAULT_TOKENS_PER_SERVICE_USER, perTenant: DEFAULT_TOKENS_PER_TENANT };

/** The caps a configuration sets; the defaults for what it leaves out. */
export function tokenCapsOf(config: { TOKENS_PER_SERVICE_USER?: number | undefined; TOKENS_PER_TENANT?: number | undefined }): TokenCaps {
  return {
    perServiceUser: config.TOKENS_PER_SERVICE_USER ?? DEFAULT_TOKENS_PER_SERVICE_USER,
    perTenant: config.TOKENS_PER_TENANT ?? DEFAULT_TOKENS_PER_TENANT,
  };
}
