import type { IncomingMessage, ServerResponse } from 'node:http';
import { LoginThrottle } from '../auth/login-throttle.js';
import { ApiError, errorBody } from '../errors.js';
import { timeoutError } from '../plugins/use-deadline.js';
import type { Logger } from '../logger.js';
import type { AuthorizationServer } from '../oauth/authorization-server.js';
import { OAUTH_METADATA_PATH, OAUTH_ROUTES, OPENID_CONFIGURATION_PATH } from '../paths.js';
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

/** Whether a path is the authorization server's. */
export function isOAuthPath(pathname: string): boolean {
  return pathname.startsWith('/oauth/') || pathname === OPENID_CONFIGURATION_PATH || pathname === OAUTH_METADATA_PATH;
}

export function createOAuthEndpoints(options: {
  server: AuthorizationServer;
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
      const handle = await server.handler(localOrigin(req.socket));
      // Answered 503 while the provider was being built: nothing is left to do.
      if (res.writableEnded) return;
      if (req.method === 'POST' && CLIENT_AUTHENTICATED.has(pathname)) {
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
