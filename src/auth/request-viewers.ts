import { ApiError } from '../errors.js';
import { authenticate } from './credentials.js';
import { credentialOf, type CredentialSource } from './session-cookie.js';
import type { Viewer } from './viewer.js';

const AUTH_FAILURE_MESSAGES = {
  malformed: 'The Authorization header is malformed: use "Token <personal access token>" or "Bearer <JWT>"',
  'doubled-scheme':
    'The Authorization header names its scheme twice ("Token Token …"): send "Token <personal access token>"; in the API reference page, paste the token alone',
  invalid: 'Unknown or expired token: the credential is unknown, expired or revoked',
} as const;

/**
 * The viewer an Authorization header names: null without one; a credential that is present but malformed,
 * unknown, expired or revoked fails with 401 UNAUTHORIZED.
 */
export async function viewerOf(
  authorization: string | null | undefined,
  credentials: Parameters<typeof authenticate>[1],
): Promise<Viewer | null> {
  const result = await authenticate(authorization, credentials);
  if (!result.viewer && result.reason !== 'missing') {
    throw new ApiError('UNAUTHORIZED', AUTH_FAILURE_MESSAGES[result.reason], { headers: { 'WWW-Authenticate': 'Bearer, Token' } });
  }
  return result.viewer;
}

/** A fetch API request as the credential checks read it. */
export function sourceOfFetch(request: Request): CredentialSource {
  return { method: request.method, url: request.url, header: (name) => request.headers.get(name) };
}

/** The credential a request presents (Authorization, or the session cookie past its cross-site checks). */
export function requestCredential(
  source: CredentialSource,
  credentials: Parameters<typeof authenticate>[1],
  surface?: 'websocket',
): string | null {
  return credentialOf(source, credentials.sessions ?? { trustProxy: false }, surface);
}
