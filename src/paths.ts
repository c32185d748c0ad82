// Where the gateway answers: every fixed path (GraphQL, the REST facade and its documents, the pages, health and
// metrics). Route paths themselves are in rest/routes.ts.

/** GraphQL over HTTP, GraphiQL in a browser, subscriptions over SSE and the graphql-ws WebSocket. */
export const GRAPHQL_ENDPOINT = '/graphql';

/** Everything under this prefix is the REST facade's: its routes, the OpenAPI document and the API reference. */
export const API_PREFIX = '/api';
/** The documented REST paths (`/connected`, `/syncs`, …) are below this one; rest/routes.ts lists them. */
export const INTEGRATIONS_BASE = '/api/v1/integrations';
export const OPENAPI_PATH = '/api/v1/openapi.json';
/** The API reference (Swagger UI) and, below it, its files. */
export const DOCS_PATH = '/api/v1/docs';

/** Each error code's documentation page is served below this path; the path itself lists them all. */
export const ERROR_DOCS_PATH = '/docs/errors';

/** Where the pages' own static files (`static/`) are served. */
export const ASSETS_PATH = '/assets';

/** The catalog applications' logos (`static/logos/<slug>.svg`), which their `logo_url` names: served here, never fetched from elsewhere. */
export const LOGOS_PATH = '/logos';

/** The console, a single-page app (console/ in the repository); its hashed files are below `${CONSOLE_PATH}/assets/`. */
export const CONSOLE_PATH = '/console';

/** The authorization server's endpoints (src/oauth/), below the issuer, which is the server's origin. */
export const OAUTH_ROUTES = {
  authorization: '/oauth/authorize',
  token: '/oauth/token',
  jwks: '/oauth/jwks',
  introspection: '/oauth/introspect',
  revocation: '/oauth/revoke',
  userinfo: '/oauth/userinfo',
  end_session: '/oauth/session/end',
} as const;
/** oidc-provider sends the browser here to ask for a member's consent (src/oauth/consent.ts); it goes on to the console. */
export const OAUTH_INTERACTION_PATH = '/oauth/interaction';
/** The console's consent page: `/console/consent/<interaction uid>`. */
export const CONSENT_PAGE_PATH = '/console/consent';
/** OpenID Connect discovery, and RFC 8414's metadata path for an issuer without a path (the same document). */
export const OPENID_CONFIGURATION_PATH = '/.well-known/openid-configuration';
export const OAUTH_METADATA_PATH = '/.well-known/oauth-authorization-server';

/** The process answers (liveness). */
export const HEALTH_PATH = '/healthz';
/** The process and its database answer, and it is not shutting down (readiness). */
export const READY_PATH = '/readyz';
/** Prometheus metrics. */
export const METRICS_PATH = '/metrics';

/** A path without its trailing slash (`/graphql/` is `/graphql`); `/` stays `/`. */
export function withoutTrailingSlash(pathname: string): string {
  return pathname.length > 1 && pathname.endsWith('/') ? pathname.slice(0, -1) : pathname;
}

/** Members sign in, out, and accept invitations below this path (plugins/use-sign-in.ts). */
export const AUTH_BASE = '/api/v1/auth';
/** The console page where an invitation's holder chooses a password: `<origin>/console/invite/<code>`. */
export const INVITATION_PAGE_PATH = '/console/invite';
/** The console page where a password reset's holder chooses a new password: `<origin>/console/reset/<code>`. */
export const PASSWORD_RESET_PAGE_PATH = '/console/reset';

/** Invitation and reset codes travel in paths (the API's and the console's): a log line shows `{code}` in their place. */
const SECRET_PATH = new RegExp(`^(${AUTH_BASE}/invitations|${INVITATION_PAGE_PATH}|${PASSWORD_RESET_PAGE_PATH})/[^/]+`);

/** A path as a log line may show it: without the secrets some paths carry. */
export function loggablePath(pathname: string): string {
  return pathname.replace(SECRET_PATH, '$1/{code}');
}
