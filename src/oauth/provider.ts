import Provider, { errors, type Configuration, type KoaContextWithOIDC } from 'oidc-provider';
import { memberOfTenant, oauthApplicationOf } from '../auth/oauth-applications.js';
import { clientSecretMatches, OAUTH_SCOPES } from '../auth/oauth-clients.js';
import type { Database } from '../db/client.js';
import type { Logger } from '../logger.js';
import { OAUTH_INTERACTION_PATH, OAUTH_ROUTES } from '../paths.js';
import { SIGNING_ALGORITHM, type SigningJwk } from './signing-keys.js';
import { storeOf } from './store.js';

// oidc-provider (a certified implementation) configured for this API. Clients are the service users' OAuth
// clients (src/auth/oauth-clients.ts, client credentials) and partners' applications (src/auth/oauth-applications.ts,
// the authorization code flow with PKCE and a consent in the console: consent.ts); the resource is this API, one audience; access tokens are opaque and kept
// in the database (store.ts), so introspection and revocation answer for every replica and a deleted client's
// tokens stop at once. Imported only when a server first answers on an OAuth endpoint (authorization-server.ts):
// oidc-provider and Koa are a large part of the program that a server which serves no OAuth client never loads.

export interface ProviderSettings {
  issuer: string;
  audience: string;
  accessTokenSeconds: number;
  /** Whether X-Forwarded-* are believed (TRUST_PROXY). */
  trustProxy: boolean;
  /** Lifetime of a refresh token and of an approval (a grant), in seconds. */
  refreshTokenSeconds: number;
}

/** How long a consent may take, from the authorization request to the member's answer (seconds). */
export const INTERACTION_SECONDS = 10 * 60;

/** Builds the provider over `keys` (the current signing key first). */
export function buildProvider(db: Database, settings: ProviderSettings, keys: SigningJwk[], logger: Logger): Provider {
  const { audience } = settings;
  const configuration: Configuration = {
    adapter: storeOf(db),
    jwks: { keys: keys as never },
    routes: OAUTH_ROUTES,
    scopes: [...OAUTH_SCOPES],
    // Only OpenID Connect's minimum. The account is a member of the application's tenant (its id is the `sub`),
    // found again at each code and refresh exchange: a removed member's grant yields nothing more.
    claims: { openid: ['sub'] },
    findAccount: async (ctx, id) => {
      const clientId = ctx.oidc.client?.clientId;
      const application = clientId ? await oauthApplicationOf(db, clientId) : undefined;
      if (!application || !(await memberOfTenant(db, application.tenantId, id))) return undefined;
      return { accountId: id, claims: async () => ({ sub: id }) };
    },
    interactions: { url: async (_ctx, interaction) => `${OAUTH_INTERACTION_PATH}/${interaction.uid}` },
    // A grant is found by the consent page's answer only (an approval is asked each time, by the member signed in
    // to the console then): never by oidc-provider's own browser session, which this server does not keep.
    loadExistingGrant: async (ctx) => {
      const grantId = ctx.oidc.result?.consent?.grantId;
      return grantId ? ctx.oidc.provider.Grant.find(grantId) : undefined;
    },
    // An application's code always comes with a refresh token, which outlives no session (there is none)...
    issueRefreshToken: async (_ctx, client, code) => client.grantTypeAllowed('refresh_token') && code.kind === 'AuthorizationCode',
    expiresWithSession: async () => false,
    // ...and is exchanged for a new one each time; presenting a used one revokes the grant with all its tokens.
    rotateRefreshToken: true,
    clientDefaults: {
      grant_types: ['client_credentials'],
      response_types: [],
      token_endpoint_auth_method: 'client_secret_basic',
      id_token_signed_response_alg: SIGNING_ALGORITHM,
    },
    clientAuthMethods: ['client_secret_basic', 'client_secret_post', 'private_key_jwt'],
    enabledJWA: { clientAuthSigningAlgValues: ['ES256', 'ES384', 'RS256', 'PS256', 'EdDSA'] },
    pkce: { required: () => true },
    // The authorization code flow only (no implicit, no hybrid).
    responseTypes: ['code'],
    features: {
      devInteractions: { enabled: false },
      // This API checks no proof of possession: a DPoP-bound token would be accepted as a plain Bearer.
      dPoP: { enabled: false },
      // Its endpoint would sit outside /oauth/; nothing here needs it.
      pushedAuthorizationRequests: { enabled: false },
      clientCredentials: { enabled: true },
      introspection: {
        enabled: true,
        // A client learns about its own tokens only.
        allowedPolicy: async (_ctx, client, token) => token.clientId === client.clientId,
      },
      revocation: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: async () => audience,
        useGrantedResource: async () => true,
        getResourceServerInfo: async (ctx, resource, client) => {
          if (resource !== audience) throw new errors.InvalidTarget();
          // RFC 6749 §3.3: a client-credentials request without scope gets every scope its client may ask for.
          const params = ctx.oidc.params as { grant_type?: string; scope?: string } | undefined;
          if (ctx.oidc.route === 'token' && params?.grant_type === 'client_credentials' && !params.scope) params.scope = client.scope;
          return { scope: OAUTH_SCOPES.join(' '), audience, accessTokenFormat: 'opaque', accessTokenTTL: settings.accessTokenSeconds };
        },
      },
    },
    ttl: {
      ClientCredentials: settings.accessTokenSeconds,
      AccessToken: settings.accessTokenSeconds,
      AuthorizationCode: 60,
      // Every record has an end, so the scheduler's housekeeping deletes it (oauth_records stays bounded).
      Interaction: INTERACTION_SECONDS,
      Session: INTERACTION_SECONDS,
      RefreshToken: settings.refreshTokenSeconds,
      Grant: settings.refreshTokenSeconds,
    },
    // Errors are answered by the protocol's JSON bodies (RFC 6749 §5.2); an HTML error page is never rendered.
    renderError: async (ctx, out) => {
      ctx.type = 'json';
      ctx.body = out;
    },
  };
  const provider = new Provider(settings.issuer, configuration);
  provider.proxy = settings.trustProxy;
  // Only a secret's SHA-256 is stored: the stored value the provider holds as `client_secret` is that hash.
  const clientClass = provider.Client as unknown as { prototype: { compareClientSecret(actual: string): Promise<boolean> } };
  clientClass.prototype.compareClientSecret = async function compare(this: { clientSecret?: string }, actual: string) {
    return typeof this.clientSecret === 'string' && clientSecretMatches(actual, this.clientSecret);
  };
  provider.on('server_error', (_ctx: KoaContextWithOIDC, error: Error) => logger.error({ err: error }, 'authorization server error'));
  return provider;
}
