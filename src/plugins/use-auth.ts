import type { Viewer } from '../context.js';
import type { Database } from '../db/client.js';
import { authenticate } from '../auth/credentials.js';
import type { JwtVerifier } from '../auth/jwt.js';
import type { KnownTenants } from '../auth/known-tenants.js';
import { ApiError } from '../errors.js';

const viewers = new WeakMap<Request, Viewer | null>();

/** The viewer resolved for a request, for logging and rate limiting after the context was built. */
export function viewerOf(request: Request): Viewer | null | undefined {
  return viewers.get(request);
}

/**
 * Resolves the request's credential once. No credential gives a null viewer (protected fields then answer
 * 401); a credential that is present but malformed, unknown, expired or revoked fails the whole request.
 */
export async function resolveViewer(
  request: Request,
  deps: { db: Database; jwt: JwtVerifier; tenants: KnownTenants },
): Promise<Viewer | null> {
  if (viewers.has(request)) return viewers.get(request) ?? null;
  const result = await authenticate(request.headers.get('authorization'), deps);
  if (!result.viewer && result.reason !== 'missing') {
    throw new ApiError(
      'UNAUTHORIZED',
      result.reason === 'malformed'
        ? 'The Authorization header is malformed: use "Token <personal access token>" or "Bearer <JWT>"'
        : 'The credential is unknown, expired or revoked',
      { headers: { 'WWW-Authenticate': 'Bearer, Token' } },
    );
  }
  viewers.set(request, result.viewer);
  return result.viewer;
}
