import type { IncomingMessage, ServerResponse } from 'node:http';
import { createYoga, type YogaServerInstance } from 'graphql-yoga';
import { CredentialCache, DEFAULT_TOKEN_CACHE_TTL_MS, registerCredentialCache } from '../auth/credential-cache.js';
import { authenticate } from '../auth/credentials.js';
import { createJwtVerifier, type JwtConfig } from '../auth/jwt.js';
import { createKnownTenants } from '../auth/known-tenants.js';
import { idempotencyOf, type Context } from '../context.js';
import type { Database } from '../db/client.js';
import { applicationCategoryOf } from '../db/connection-writes.js';
import { DEFAULT_LOGIN_FAILURES, DEFAULT_RATE_LIMIT_PER_MINUTE, type Config } from '../env.js';
import { compiledExecutionOf } from '../graphql/compiled-execution.js';
import { schema } from '../graphql/schema.js';
import { createLive, type Live, type LiveOptions } from '../live/live.js';
import type { Logger } from '../logger.js';
import { GRAPHQL_ENDPOINT } from '../paths.js';
import { useCompiledExecution } from '../plugins/use-compiled-execution.js';
import { useErrorDocs } from '../plugins/use-error-docs.js';
import { createMaskError } from '../admission/error-masking.js';
import { useHealth } from '../plugins/use-health.js';
import { DEFAULT_REQUEST_LIMITS, type RequestLimits } from '../admission/request-limits.js';
import { GatewayMetrics, useMetricsEndpoint } from '../plugins/use-metrics.js';
import { usePages } from '../plugins/use-pages.js';
import { renderGraphiQLPage } from '../pages/graphiql.js';
import { RateLimits, socketAddressOf } from '../admission/rate-limits.js';
import { useRest } from '../plugins/use-rest.js';
import { useSharedSubscriptionResults } from '../plugins/use-shared-subscription-results.js';
import { useSignIn } from '../plugins/use-sign-in.js';
import { useSsoSignIn } from '../plugins/use-sso-sign-in.js';
import { IdentityProviders } from '../auth/identity-providers.js';
import { signInSettingsOf } from '../auth/sessions.js';
import { useResultBytes } from '../plugins/use-result-bytes.js';
import { useSseShutdownCut } from '../plugins/use-sse-shutdown-cut.js';
import { corsPolicy } from '../admission/security-headers.js';
import { compileRoutes } from '../rest/compile-routes.js';
import { createDirectRest, type DirectRest } from './direct-rest.js';
import { incomingOfFetch, incomingOfNode } from './incoming-outgoing.js';
import { createDirectGraphQL, type DirectGraphQL } from './direct-graphql.js';
import { useValidatedDocuments, ValidatedDocuments } from '../plugins/use-validated-documents.js';
import { routes } from '../rest/routes.js';
import { createRowWriterFallbacks } from '../rest/row-writer.js';
import { createAdmission, type Admission } from './admission.js';
import { useAdmission } from './use-admission.js';
import { refuseBadHost } from './host.js';
import { tokenCapsOf } from '../domain/token-caps.js';
import { webhookSettingsOf, type WebhookConfig } from '../webhooks/settings.js';
import { useReadRouting, withRequestReadScope } from '../plugins/use-read-routing.js';
import {
  AuthorizationServer,
  DEFAULT_ACCESS_TOKEN_SECONDS,
  DEFAULT_OAUTH_AUDIENCE,
  DEFAULT_REFRESH_TOKEN_DAYS,
} from '../oauth/authorization-server.js';
import { createOAuthEndpoints, type OAuthEndpoints } from './oauth-endpoints.js';

/** The operations the REST routes run (their documents and streams): bounded in cost by construction (admission.operation). */
const REST_DOCUMENTS = new Set(routes.flatMap((route) => [route.document, ...(route.stream ? [route.stream.document] : [])]));

/** Members' sign-in settings (src/auth/sessions.ts, plugins/use-sign-in.ts). */
type SignInConfig =
  | 'PUBLIC_ORIGIN'
  | 'TRUST_PROXY'
  | 'SESSION_IDLE_MINUTES'
  | 'SESSION_LIFETIME_HOURS'
  | 'LOGIN_FAILURES_PER_ACCOUNT'
  | 'LOGIN_FAILURES_PER_ADDRESS';

export interface GatewayOptions {
  db: Database;
  config: JwtConfig &
    Partial<
      Pick<
        Config,
        | 'RATE_LIMIT_PER_MINUTE'
        | SignInConfig
        | 'REDIS_URL'
        | 'CORS_ORIGINS'
        | 'METRICS_TOKEN'
        | 'STREAMS_PER_CREDENTIAL'
        | 'STREAMS_PER_TENANT'
        | 'STREAMS_PER_PROCESS'
        | 'EXPORTS_PER_CREDENTIAL'
        | 'EXPORTS_PER_TENANT'
        | 'EXPORTS_PER_PROCESS'
        | 'STALL_MS'
        | 'WEBHOOK_ALLOW_PRIVATE'
        | 'TOKEN_CACHE_TTL_MS'
        | 'ROW_WRITER_FALLBACK'
        | 'OAUTH_AUDIENCE'
        | 'OAUTH_ACCESS_TOKEN_SECONDS'
        | 'OAUTH_REFRESH_TOKEN_DAYS'
        | 'SSO_ALLOW_PRIVATE_ISSUERS'
      >
    > &
    WebhookConfig &
    Partial<Pick<Config, 'TOKENS_PER_SERVICE_USER' | 'TOKENS_PER_TENANT'>>;
  logger: Logger;
  /** Request size, GraphQL document and time limits; each one left out keeps its default. */
  limits?: Partial<RequestLimits>;
  /** Tenant budget as a multiple of the credential budget (default 5), and the Redis key prefix. */
  rateLimit?: { tenantMultiplier?: number; keyPrefix?: string };
  /** Stream caps, credential checks and heartbeats of the live surfaces (defaults in src/live/live.ts). */
  live?: LiveOptions;
  /**
   * Whether REST requests are served directly (src/http/direct-rest.ts; default true). Off, every request goes through
   * yoga's pipeline: test/direct-rest.test.ts compares the two.
   */
  directRest?: boolean;
  /**
   * Whether GraphQL queries of documents yoga has validated are served directly (src/http/direct-graphql.ts; default
   * true). Off, they go through yoga's pipeline: test/direct-graphql.test.ts compares the two.
   */
  directGraphQL?: boolean;
}

type Yoga = YogaServerInstance<Record<string, unknown>, Context>;

/**
 * The whole HTTP surface, as a node:http request listener and as `fetch` (tests call it in-process): the REST
 * reads served directly (src/http/direct-rest.ts), everything else through yoga's pipeline.
 */
export interface Gateway {
  (req: IncomingMessage, res: ServerResponse): void;
  fetch(input: string | URL | Request, init?: RequestInit): Promise<Response>;
  getEnveloped: Yoga['getEnveloped'];
  /** Stops the plugins' and the live services' background work. */
  dispose(): Promise<void>;
  /** The REST requests served without yoga's pipeline (src/http/direct-rest.ts); null when the option `directRest` is off. */
  directRest: DirectRest | null;
  /** The GraphQL queries served without yoga's pipeline (src/http/direct-graphql.ts); null when the option `directGraphQL` is off. */
  directGraphQL: DirectGraphQL | null;
  /** The live services of this gateway; `dispose()` stops them. */
  live: Live;
  /** The admission spine's functions, bound to this gateway (src/http/admission.ts): what the transports call. */
  admission: Admission;
  /** From now on `/readyz` answers 503 `draining` (at shutdown), while every other request is still served. */
  startDraining(): void;
  /** The authorization server's endpoints (served by the node:http listener only, not by `fetch`). */
  oauth: OAuthEndpoints;
  /** The credential a WebSocket upgrade presents (Authorization, or the session cookie: a cross-site one throws). */
  credentialOfUpgrade(req: IncomingMessage): string | null;
}

/** The whole HTTP surface: GraphQL at /graphql and the plugins every request passes through. */
export function createGateway({
  db,
  config,
  logger,
  limits: limitOverrides,
  rateLimit,
  live: liveOptions,
  directRest = true,
  directGraphQL = true,
}: GatewayOptions): Gateway {
  const jwt = createJwtVerifier(config);
  const tenants = createKnownTenants(db);
  // Verified tokens, kept TOKEN_CACHE_TTL_MS (src/auth/credential-cache.ts); revocations evict them everywhere.
  const tokenCache = new CredentialCache(config.TOKEN_CACHE_TTL_MS ?? DEFAULT_TOKEN_CACHE_TTL_MS);
  const cacheRegistration = registerCredentialCache(db, tokenCache);
  const sessions = signInSettingsOf(config);
  const oauthAudience = config.OAUTH_AUDIENCE ?? DEFAULT_OAUTH_AUDIENCE;
  const credentials = {
    db,
    jwt,
    tenants,
    tokenCache: { cache: tokenCache, onStore: () => cacheRegistration.listen() },
    sessions,
    oauthAudience,
  };
  const live = createLive(db, async (authorization) => (await authenticate(authorization, credentials)).viewer ?? null, logger, {
    ...liveOptions,
    stallMs: liveOptions?.stallMs ?? config.STALL_MS,
    limits: {
      stream: {
        perCredential: config.STREAMS_PER_CREDENTIAL,
        perTenant: config.STREAMS_PER_TENANT,
        perProcess: config.STREAMS_PER_PROCESS,
      },
      export: {
        perCredential: config.EXPORTS_PER_CREDENTIAL,
        perTenant: config.EXPORTS_PER_TENANT,
        perProcess: config.EXPORTS_PER_PROCESS,
      },
      ...liveOptions?.limits,
    },
  });
  const limits = { ...DEFAULT_REQUEST_LIMITS, ...limitOverrides };
  const corsOrigins = config.CORS_ORIGINS ?? [];
  const webhooks = webhookSettingsOf(config, db);
  const identityProviders = new IdentityProviders({
    db,
    secretKeys: webhooks.secretKeys,
    allowPrivateIssuers: config.SSO_ALLOW_PRIVATE_ISSUERS === '1',
  });
  const tokenCaps = tokenCapsOf(config);
  const applicationCategory = applicationCategoryOf(db.raw);
  const compiledRoutes = compileRoutes(schema, routes);
  const metrics = new GatewayMetrics({ db, live });
  const rowWriterFallbacks = createRowWriterFallbacks({
    log: logger,
    count: (route, reason) => metrics.rowWriterFellBack(route, reason),
    refuse: config.ROW_WRITER_FALLBACK === 'refuse',
  });
  const rateLimits = RateLimits.create({
    perMinute: config.RATE_LIMIT_PER_MINUTE ?? DEFAULT_RATE_LIMIT_PER_MINUTE,
    redisUrl: config.REDIS_URL,
    logger,
    ...rateLimit,
  });
  const maskError = createMaskError(logger);
  const cors = corsOrigins.length > 0;
  const admission = createAdmission({ logger, credentials, rateLimits, metrics, limits, maskError, cors });
  const oauth = createOAuthEndpoints({
    db,
    server: new AuthorizationServer(
      db,
      {
        issuer: config.PUBLIC_ORIGIN,
        audience: oauthAudience,
        accessTokenSeconds: config.OAUTH_ACCESS_TOKEN_SECONDS ?? DEFAULT_ACCESS_TOKEN_SECONDS,
        refreshTokenSeconds: (config.OAUTH_REFRESH_TOKEN_DAYS ?? DEFAULT_REFRESH_TOKEN_DAYS) * 86_400,
        trustProxy: sessions.trustProxy,
      },
      logger,
    ),
    admission,
    logger,
    failuresPerAddress: config.LOGIN_FAILURES_PER_ADDRESS ?? DEFAULT_LOGIN_FAILURES.perAddress,
    redisUrl: config.REDIS_URL,
    keyPrefix: rateLimit?.keyPrefix,
  });
  const compiledExecution = compiledExecutionOf(schema);
  const validatedDocuments = new ValidatedDocuments();
  let draining = false;
  const yoga = createYoga<Record<string, unknown>, Context>({
    schema,
    graphqlEndpoint: GRAPHQL_ENDPOINT,
    // yoga's built-in check answers an empty 200 to every URL that *ends with* this value, before auth, rate
    // limits, logs and metrics (`/api/v1/integrations/connected/health`, say). It cannot be removed, so it
    // gets a value no request URL can end with: a serialized URL never holds a raw space. Health and
    // readiness are `/healthz` and `/readyz` (use-health), on exactly those paths.
    healthCheckEndpoint: ' built-in health check disabled',
    // yoga's default answers every origin; cross-origin browser access is opt-in (CORS_ORIGINS).
    cors: corsPolicy(corsOrigins),
    // The body size limit is the spine's (use-admission: the same refusals, without yoga's per-request stream pipeline).
    maxRequestBodySize: false,
    multipart: false,
    landingPage: false,
    renderGraphiQL: renderGraphiQLPage,
    graphiql: {
      title: 'Integrations & Sync API',
      // The session cookie of a person signed in to the console is accepted only with this header (CSRF).
      additionalHeaders: { 'X-Requested-With': 'GraphiQL' },
      credentials: 'same-origin',
      defaultQuery: `# Signed in to the console? Your session is used. Otherwise set the Authorization header below
# (Headers tab), e.g. {"Authorization": "Token igw_pat_…"}
query Connections {
  connections(limit: 5) {
    totalCount
    nodes {
      name
      status
      application { name category { name } }
      syncs(limit: 3) { status startedAt finishedAt errorMessage }
    }
  }
}
`,
    },
    logging: {
      debug: (...args) => logger.debug(args.map(String).join(' ')),
      info: (...args) => logger.info(args.map(String).join(' ')),
      warn: (...args) => logger.warn(args.map(String).join(' ')),
      error: (...args) => logger.error(args.map(String).join(' ')),
    },
    maskedErrors: { maskError },
    plugins: [
      // The deadline wraps the executor this one picks.
      useCompiledExecution({ compiled: compiledExecution, trusted: REST_DOCUMENTS }),
      useSharedSubscriptionResults(),
      useAdmission({
        admission,
        boundedDocuments: REST_DOCUMENTS,
        governor: live.governor,
        // /metrics, probes, error docs and pages answer before the size and rate limits.
        unrefused: [
          useMetricsEndpoint({ metrics, token: config.METRICS_TOKEN }),
          useHealth({ db, draining: () => draining }),
          useErrorDocs(),
          usePages(),
        ],
      }),
      // The routes and the result's encoding, once every check has passed.
      useSsoSignIn({ providers: identityProviders, policy: sessions, logger }),
      useSignIn({
        db,
        policy: sessions,
        failuresPerAccount: config.LOGIN_FAILURES_PER_ACCOUNT ?? DEFAULT_LOGIN_FAILURES.perAccount,
        failuresPerAddress: config.LOGIN_FAILURES_PER_ADDRESS ?? DEFAULT_LOGIN_FAILURES.perAddress,
        redisUrl: config.REDIS_URL,
        keyPrefix: rateLimit?.keyPrefix,
        logger,
        governor: live.governor,
      }),
      useResultBytes(),
      useSseShutdownCut({ streamsEnded: () => live.streamsEnded() }),
      useValidatedDocuments(validatedDocuments),
      useReadRouting(),
      useRest({ schema, compiled: compiledRoutes, logger, maxBodyBytes: limits.maxBodyBytes, rowWriterFallbacks }),
      {
        onDispose: () => Promise.all([live.stop(), cacheRegistration.stop(), oauth.dispose(), rateLimits?.dispose()]).then(() => undefined),
      },
    ],
    context: async (serverContext) => {
      const { request } = serverContext;
      // The request's admission (use-admission.ts; graphql-ws carries its operation's): its id, address and viewer.
      const ticket =
        admission.carried(request) ?? admission.arrive(incomingOfFetch(request, socketAddressOf(serverContext)), 'graphql-http');
      const viewer = await ticket.viewer();
      return {
        db,
        requestId: ticket.requestId,
        // The address the rate limit counted this request under.
        clientAddress: ticket.clientAddress,
        viewer,
        idempotency: idempotencyOf(request.headers.get('idempotency-key')),
        authorization: ticket.authorization,
        webhooks,
        applicationCategory,
        tokenCaps,
        live,
        identityProviders,
      };
    },
  });
  // What both direct paths share with the pipeline.
  const directPath = {
    schema,
    logger,
    admission,
    maxBodyBytes: limits.maxBodyBytes,
    compiledExecution,
    contextBase: { db, webhooks, applicationCategory, tokenCaps, live, identityProviders },
  };
  const direct = directRest
    ? createDirectRest({ ...directPath, compiled: compiledRoutes, maxUrlLength: limits.maxUrlLength, rowWriterFallbacks })
    : null;
  const graphqlDirect = directGraphQL
    ? createDirectGraphQL({
        ...directPath,
        validated: validatedDocuments,
        yoga: (request, serverContext) =>
          (yoga.fetch as (request: Request, context: Record<string, unknown>) => Promise<Response>)(request, serverContext),
      })
    : null;
  const listener = (req: IncomingMessage, res: ServerResponse) => {
    // The first check of the spine, before any URL is built from the Host header.
    if (refuseBadHost(req, res, admission)) return;
    // The authorization server's endpoints (oidc-provider answers them on node:http).
    if (oauth.node(req, res)) return;
    withRequestReadScope(db, req, res, () => {
      if (!direct?.node(req, res) && !graphqlDirect?.node(req, res)) void yoga(req, res);
    });
  };
  const fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const request = (direct || graphqlDirect) && directRequest(input, init);
    const answered = request && (direct?.fetch(request) ?? graphqlDirect?.fetch(request));
    if (answered) return answered;
    return (yoga.fetch as (input: string | URL | Request, init?: RequestInit) => Promise<Response>)(input, init);
  };
  return Object.assign(listener, {
    fetch,
    getEnveloped: yoga.getEnveloped,
    directRest: direct,
    directGraphQL: graphqlDirect,
    oauth,
    dispose: async () => {
      await yoga.dispose();
    },
    live,
    admission,
    startDraining: () => {
      draining = true;
    },
    credentialOfUpgrade: (req: IncomingMessage) => admission.presented(incomingOfNode(req), 'websocket'),
  });
}

/**
 * A fetch call's request as the direct REST path reads it; null when the platform refuses it or its body could
 * only be read once (a stream): yoga then answers, with the call's own arguments.
 */
function directRequest(input: string | URL | Request, init: RequestInit | undefined): Request | null {
  if (input instanceof Request && init === undefined) return input;
  const body = init?.body;
  if (body !== undefined && body !== null && typeof body !== 'string' && !(body instanceof Uint8Array)) return null;
  try {
    return new Request(input, init);
  } catch {
    return null;
  }
}
