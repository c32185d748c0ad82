import type { IncomingMessage, ServerResponse } from 'node:http';
import { LoginThrottle } from '../auth/login-throttle.js';
import { ApiError, errorBody } from '../errors.js';
import { timeoutError } from '../admission/deadline.js';
import type { Logger } from '../logger.js';
import type { Database } from '../db/client.js';
import type { AuthorizationServer, BuiltProvider } from '../oauth/authorization-server.js';
import { answerConsent, consentDetails } from '../oauth/consent.js';
import { CONSENT_PAGE_PATH, OAUTH_INTERACTION_PATH, OAUTH_METADATA_PATH, OAUTH_ROUTES, OPENID_CONFIGURATION_PATH } from '../paths.js';
import type { Admission } from './admission.js';
import { bareAnswerHeaders, localOrigin } from './host.js';
import { incomingOfNode } from './incoming-outgoing.js';

// The authorization server's endpoints on node:http: oidc-provider (a Koa application) answers them itself, so
// this adapter calls the admission spine's functions around it, as the direct paths do: the deadline, security
// headers, the size of the body, a throttle of failed client authentications per address, the log line and
// metrics. Its answers are the protocol's own (RFC 6749 §5.2 error bodies), except the spine's refusals.

/** oidc-provider refuses larger bodies; this refuses them first, with the API's 413. */
export const MAX_OAUTH_BODY_BYTES = 56 * 1024;
/** The endpoints where a client authenticates: their failures are throttled per address. */
const CLIENT_AUTHENTICATED = new Set<string>([OAUTH_ROUTES.token, OAUTH_ROUTES.introspection, OAUTH_ROUTES.revocation]);

export interface OAuthEndpoints {
  /** Answers the request when it is for the authorization server; false when it is not. */
  node(req: IncomingMessage, res: ServerResponse): boolean;
  dispose(): Promise<void>;
}

/** `/oauth/interaction/<uid>` and its steps `details`, `approve` and `refuse`. */
const INTERACTION_PATTERN = new RegExp(`^${OAUTH_INTERACTION_PATH}/([A-Za-z0-9_-]{1,64})(?:/(details|approve|refuse))?$`);

/** oidc-provider's own browser session: never kept (an approval is asked of whoever is signed in to the console). */
const PROVIDER_SESSION_COOKIE = /^\s*_session(?:\.legacy)?(?:\.sig)?=/;

/** Takes the provider's session cookies out of a request, so that it sees a browser it has never signed in. */
function dropProviderSession(req: IncomingMessage): void {
  const cookie = req.headers.cookie;
  if (!cookie) return;
  const kept = cookie.split(';').filter((pair) => !PROVIDER_SESSION_COOKIE.test(pair));
  if (kept.length === 0) delete req.headers.cookie;
  else req.headers.cookie = kept.join(';');
}

/** Whether a path is the authorization server's. */
export function isOAuthPath(pathname: string): boolean {
  return pathname.startsWith('/oauth/') || pathname === OPENID_CONFIGURATION_PATH || pathname === OAUTH_METADATA_PATH;
}

export function createOAuthEndpoints(options: {
  server: AuthorizationServer;
  db: Database;
  admission: Admission;
  logger: Logger;
  failuresPerAddress: number;
  redisUrl?: string | undefined;
  keyPrefix?: string | undefined;
}): OAuthEndpoints {
  const { server, admission, logger } = options;
  const throttle = new LoginThrottle({
    failuresPerAccount: options.failuresPerAddress,
    failuresPerAddress: options.failuresPerAddress,
    redisUrl: options.redisUrl,
    keyPrefix: options.keyPrefix,
    logger,
  });

  async function serve(req: IncomingMessage, res: ServerResponse, pathname: string, requestId: string): Promise<void> {
    const timer = setTimeout(() => {
      if (!res.headersSent) refuse(res, req, requestId, timeoutError());
    }, admission.limits.timeoutMs);
    try {
      for (const [name, value] of Object.entries(admission.headers('application/json'))) res.setHeader(name, value);
      res.setHeader('X-Request-Id', requestId);
      const length = Number(req.headers['content-length'] ?? 0);
      if (length > MAX_OAUTH_BODY_BYTES) {
        throw new ApiError('PAYLOAD_TOO_LARGE', `The request body exceeds the limit of ${MAX_OAUTH_BODY_BYTES} bytes`);
      }
      if (pathname === OAUTH_METADATA_PATH) req.url = OPENID_CONFIGURATION_PATH;
      // An authorization request stores an interaction before anyone has authenticated: counted per address.
      if (pathname.startsWith(OAUTH_ROUTES.authorization) || pathname.startsWith(OAUTH_INTERACTION_PATH)) {
        const refusal = await admission.rateLimitAddress(pathname, admission.clientAddress(incomingOfNode(req)));
        if (refusal) throw refusal;
      }
      dropProviderSession(req);
      const built = await server.provider(localOrigin(req.socket));
      const { handle } = built;
      // Answered 503 while the provider was being built: nothing is left to do.
      if (res.writableEnded) return;
      const interaction = INTERACTION_PATTERN.exec(pathname);
      if (interaction) {
        await serveInteraction(req, res, built, interaction[1]!, interaction[2]);
      } else if (req.method === 'POST' && CLIENT_AUTHENTICATED.has(pathname)) {
        const address = admission.clientAddress(incomingOfNode(req));
        await throttle.clientAuthentication(address, async () => {
          await handle(req, res);
          return res.statusCode === 401;
        });
      } else {
        await handle(req, res);
      }
    } catch (error) {
      if (!res.headersSent) refuse(res, req, requestId, error instanceof ApiError ? error : new ApiError('INTERNAL', 'Unexpected error.'));
      if (!(error instanceof ApiError)) logger.error({ err: error, req_id: requestId }, 'authorization server request failed');
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * The consent steps (src/oauth/consent.ts): the provider's redirect goes on to the console's page; the page reads
   * the request and sends the answer with the member's console session (cookie, past its cross-site checks).
   */
  async function serveInteraction(req: IncomingMessage, res: ServerResponse, built: BuiltProvider, uid: string, step: string | undefined) {
    if (step === undefined) {
      if (req.method !== 'GET' && req.method !== 'HEAD')
        throw new ApiError('METHOD_NOT_ALLOWED', 'GET only', { headers: { Allow: 'GET' } });
      res.writeHead(303, { Location: `${CONSENT_PAGE_PATH}/${uid}`, 'Cache-Control': 'no-store', 'Content-Length': '0' });
      res.end();
      return;
    }
    const expected = step === 'details' ? 'GET' : 'POST';
    if (req.method !== expected) {
      throw new ApiError('METHOD_NOT_ALLOWED', `${expected} only`, { headers: { Allow: expected } });
    }
    const viewer = await admission.credential(admission.presented(incomingOfNode(req)));
    if (!viewer)
      throw new ApiError('UNAUTHORIZED', 'Sign in to the console to answer this request', { headers: { 'WWW-Authenticate': 'Session' } });
    if (viewer.credential !== 'session') {
      throw new ApiError('UNAUTHORIZED', 'Only a member signed in to the console can answer an authorization request', { status: 403 });
    }
    const member = { tenantId: viewer.tenantId, memberId: viewer.subject, role: viewer.role };
    const body =
      step === 'details'
        ? await consentDetails(built.provider, options.db, req, res, uid, member)
        : { location: await answerConsent(built.provider, options.db, req, res, uid, member, step === 'approve', built.audience) };
    const text = JSON.stringify({ data: body });
    res.writeHead(200, {
      'Content-Type': 'application/json; charset=utf-8',
      'Cache-Control': 'no-store',
      'Content-Length': Buffer.byteLength(text),
    });
    res.end(text);
  }

  return {
    node(req, res) {
      const pathname = (req.url ?? '/').split('?', 1)[0]!;
      if (!isOAuthPath(pathname)) return false;
      // oidc-provider writes its own answers: the spine's headers are set first, and the ticket settled once sent.
      const ticket = admission.arrive(incomingOfNode(req), 'oauth');
      res.once('finish', () => admission.settle(ticket, { status: res.statusCode, contentType: 'application/json' }));
      res.once('close', () => ticket.deadline.end());
      void serve(req, res, pathname, ticket.requestId);
      return true;
    },
    dispose: () => throttle.dispose(),
  };
}

/** The API's error body for a refusal of the spine (size, throttle, deadline); the connection closes after it. */
function refuse(res: ServerResponse, req: IncomingMessage, requestId: string, error: ApiError): void {
  const status = (error.extensions.http as { status?: number } | undefined)?.status ?? 500;
  const body = JSON.stringify(errorBody(error.code, error.message, requestId, localOrigin(req.socket)));
  const extra = (error.extensions.http as { headers?: Record<string, string> } | undefined)?.headers ?? {};
  res.writeHead(status, { ...bareAnswerHeaders(body, requestId), ...extra, Connection: 'close' });
  res.end(body);
}
