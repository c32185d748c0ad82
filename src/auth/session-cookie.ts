import { parseCookie, stringifySetCookie } from 'cookie';
import { ApiError } from '../errors.js';

// The session cookie as a credential, and the checks that keep another site from using it (CSRF). A browser
// sends the cookie with every request to this server, also one a page of another site makes it send (a form
// post, an <img>, a WebSocket). So a request authenticated by the cookie is accepted only when its `Origin`, if
// sent, is this server's own, and, when it may change state (any method but GET, HEAD and OPTIONS), it carries
// `X-Requested-With`: a header no form can set and no cross-site script can set without a CORS preflight, which
// this server refuses for the cookie (as yoga's CSRF prevention requires its own header). A request with an
// Authorization header is authenticated by it and never by the cookie: tokens and JWTs are unaffected.

export const SESSION_COOKIE = 'igw_session';
/** The Authorization scheme a session takes inside the server (and the one a client may send it with). */
export const SESSION_SCHEME = 'Session';

export interface CookiePolicy {
  /** The origin this server is reached at (PUBLIC_ORIGIN), when configured. */
  publicOrigin?: string | undefined;
  /** Whether X-Forwarded-Proto / X-Forwarded-Host / X-Forwarded-For come from a proxy of ours (TRUST_PROXY). */
  trustProxy: boolean;
}

/** What the checks read of a request, on any transport. */
export interface CredentialSource {
  method: string;
  /** The request URL as the server saw it (its scheme says whether the socket was TLS). */
  url: string;
  header(name: string): string | null;
}

/** How the request reached us: an HTTP request, or a WebSocket upgrade (which changes state whatever its method). */
type Surface = 'http' | 'websocket';

const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The session value a request's Cookie header carries, if any. */
export function sessionCookieOf(cookieHeader: string | null | undefined): string | undefined {
  if (!cookieHeader) return undefined;
  const value = parseCookie(cookieHeader)[SESSION_COOKIE];
  return value === undefined || value === '' ? undefined : value;
}

/**
 * The credential a request presents, as an Authorization header value: the header itself when sent, else the
 * session cookie (`Session <value>`) once the request passed the cross-site checks; null when it has neither.
 * A cross-site use of the cookie is a 403.
 */
export function credentialOf(request: CredentialSource, policy: CookiePolicy, surface: Surface = 'http'): string | null {
  const authorization = request.header('authorization');
  if (authorization !== null && authorization !== '') return authorization;
  const session = sessionCookieOf(request.header('cookie'));
  if (session === undefined) return null;
  assertOwnOrigin(request, policy);
  if (surface === 'http' && !READ_METHODS.has(request.method.toUpperCase()) && request.header('x-requested-with') === null) {
    throw crossSite("it lacks the X-Requested-With header that a request from this server's pages sends");
  }
  return `${SESSION_SCHEME} ${session}`;
}

/** A 403 when the request's Origin, if sent, is not this server's. */
export function assertOwnOrigin(request: CredentialSource, policy: CookiePolicy): void {
  const origin = request.header('origin');
  if (origin !== null && !isOwnOrigin(origin, request, policy)) {
    throw crossSite(`its Origin (${origin.slice(0, 100)}) is not this server's`);
  }
}

function crossSite(why: string): ApiError {
  return new ApiError(
    'UNAUTHORIZED',
    `A request from a browser session was refused: ${why}. Send X-Requested-With from this server's own pages, or use an Authorization header`,
    {
      status: 403,
    },
  );
}

/**
 * Whether `origin` is this server: PUBLIC_ORIGIN, or the scheme and host the request was sent to. The scheme
 * counts: a page served over plain HTTP on the same host (another port's proxy, a captive portal) is another site.
 */
function isOwnOrigin(origin: string, request: CredentialSource, policy: CookiePolicy): boolean {
  let parsed: URL;
  try {
    parsed = new URL(origin);
  } catch {
    return false;
  }
  if (policy.publicOrigin !== undefined && parsed.origin === new URL(policy.publicOrigin).origin) return true;
  const own = requestOriginOf(request, policy);
  return own !== undefined && parsed.origin === own;
}

/** Where the browser reaches this server: PUBLIC_ORIGIN, else the scheme and host the request was sent to. */
export function ownOriginOf(request: CredentialSource, policy: CookiePolicy): string | undefined {
  return policy.publicOrigin !== undefined ? new URL(policy.publicOrigin).origin : requestOriginOf(request, policy);
}

/** The origin the client sent the request to: its scheme and host, as a trusted proxy saw them under TRUST_PROXY. */
function requestOriginOf(request: CredentialSource, policy: CookiePolicy): string | undefined {
  const url = parsedUrl(request.url);
  const forwarded = (name: string) => (policy.trustProxy ? proxyHopOf(request.header(name)) : undefined);
  const scheme = forwarded('x-forwarded-proto')?.toLowerCase() ?? url?.protocol.slice(0, -1);
  const host = forwarded('x-forwarded-host') ?? request.header('host') ?? url?.host;
  // A host with more than a host name and port in it (`a@b`, `a/b`) names no origin.
  if ((scheme !== 'http' && scheme !== 'https') || host === undefined || !PLAIN_HOST.test(host)) return undefined;
  return parsedUrl(`${scheme}://${host}`)?.origin;
}

const PLAIN_HOST = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

function parsedUrl(url: string): URL | undefined {
  try {
    return new URL(url);
  } catch {
    return undefined;
  }
}

/**
 * The entry a trusted proxy wrote in an X-Forwarded-* list: the last one. A proxy appends its own to what the
 * client sent (or replaces the list); earlier entries are the client's to choose, so the first one is never trusted.
 */
function proxyHopOf(list: string | null): string | undefined {
  const last = list?.split(',').at(-1)?.trim();
  return last === '' ? undefined : last;
}

/** Whether the browser reached us over HTTPS: the socket, a trusted proxy's X-Forwarded-Proto, or an https PUBLIC_ORIGIN. */
export function isSecureRequest(request: CredentialSource, policy: CookiePolicy): boolean {
  if (request.url.startsWith('https:')) return true;
  if (policy.trustProxy && proxyHopOf(request.header('x-forwarded-proto'))?.toLowerCase() === 'https') return true;
  return policy.publicOrigin?.startsWith('https:') ?? false;
}

/** The client's address: the socket's, or the last hop a trusted proxy appended to X-Forwarded-For. */
export function clientAddressOf(
  request: Pick<CredentialSource, 'header'>,
  socketAddress: string,
  policy: Pick<CookiePolicy, 'trustProxy'>,
): string {
  return (policy.trustProxy ? proxyHopOf(request.header('x-forwarded-for')) : undefined) ?? socketAddress;
}

/** The Set-Cookie value that hands a session to the browser (or, with null, takes it back). */
export function sessionSetCookie(value: string | null, options: { secure: boolean; maxAgeSeconds: number }): string {
  return stringifySetCookie({
    name: SESSION_COOKIE,
    value: value ?? '',
    httpOnly: true,
    sameSite: 'lax',
    path: '/',
    secure: options.secure,
    maxAge: value === null ? 0 : options.maxAgeSeconds,
  });
}
