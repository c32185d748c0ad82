import { ApiError } from '../errors.js';
import { authenticate } from './credentials.js';
import { credentialOf, type CredentialSource } from './session-cookie.js';
import type { Viewer } from './viewer.js';

/**
 * The viewer of each request, authenticated once: the rate limiter (before the context is built), the context
 * and the request log share one lookup, also while it is pending. No credential gives a null viewer (protected
 * fields then answer 401); a credential that is present but malformed, unknown, expired or revoked fails the
 * whole request.
 */
export class RequestViewers {
  private readonly lookups = new WeakMap<Request, Promise<Viewer | null>>();
  private readonly known = new WeakMap<Request, Viewer | null>();
  private readonly presented = new WeakMap<Request, string | null>();

  constructor(
    private readonly credentials: Parameters<typeof authenticate>[1],
    /** Bounds a lookup, by the request's time limit say; a lookup that outlasts it fails the request. */
    private readonly bound: (request: Request, lookup: Promise<Viewer | null>) => Promise<Viewer | null> = (_request, lookup) => lookup,
  ) {}

  /** The request's viewer, authenticated by the first call; later calls share its outcome. */
  of(request: Request): Promise<Viewer | null> {
    let lookup = this.lookups.get(request);
    if (!lookup) {
      lookup = this.bound(request, this.authenticate(request));
      this.lookups.set(request, lookup);
    }
    return lookup;
  }

  /** The viewer once authenticated, without waiting: undefined before that or when the credential was refused. */
  resolved(request: Request): Viewer | null | undefined {
    return this.known.get(request);
  }

  /** The credential the request presented (its Authorization header, or its session cookie), once looked up. */
  credential(request: Request): string | null {
    return this.presented.get(request) ?? null;
  }

  private async authenticate(request: Request): Promise<Viewer | null> {
    const credential = requestCredential(sourceOfFetch(request), this.credentials);
    this.presented.set(request, credential);
    const viewer = await viewerOf(credential, this.credentials);
    this.known.set(request, viewer);
    return viewer;
  }
}

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
