import type { Plugin } from 'graphql-yoga';
import type { Logger } from 'pino';
import { LoginThrottle } from '../auth/login-throttle.js';
import { acceptInvitation, codeHolderOf, signInOfPassword, type SignedInMember } from '../auth/members.js';
import { hashTurnOf } from '../auth/passwords.js';
import { sourceOfFetch } from '../auth/request-viewers.js';
import {
  assertOwnOrigin,
  clientAddressOf,
  isSecureRequest,
  sessionCookieOf,
  sessionSetCookie,
  type CookiePolicy,
} from '../auth/session-cookie.js';
import { createSession, endSession, type SessionPolicy } from '../auth/sessions.js';
import type { Database } from '../db/client.js';
import type { Governor } from '../governor/governor.js';
import { ApiError } from '../errors.js';
import { parseJsonBody } from '../json-body.js';
import { AUTH_BASE } from '../paths.js';
import { jsonResponse } from './json-response.js';
import { socketAddressOf } from '../admission/rate-limits.js';
import { earlyErrorResponse } from './error-response.js';

// Members sign in and out, and accept invitations and password resets, at /api/v1/auth (docs/how-to/sign-in.md).
// These answer before GraphQL: they set and clear the session cookie, which no GraphQL result can. Bodies are JSON
// only, so a cross-site form cannot post them, and a request from a page of another origin is refused. A code's
// page reads what the code is for with a GET, counted with the POSTs: each is a guess at a code.

const LOGIN_PATH = `${AUTH_BASE}/login`;
const LOGOUT_PATH = `${AUTH_BASE}/logout`;
const INVITATION_PATTERN = new RegExp(`^${AUTH_BASE}/invitations/([^/]+)$`);
/** An email and a password fit in far less; a larger body is refused before it is parsed. */
const MAX_BODY_BYTES = 4096;
const SIGNED_OUT = 'The email or the password is wrong';

export interface SignInOptions {
  db: Database;
  policy: SessionPolicy & CookiePolicy;
  failuresPerAccount: number;
  failuresPerAddress: number;
  /** With a Redis URL every replica counts the same failures; without one each process counts alone. */
  redisUrl?: string | undefined;
  keyPrefix?: string | undefined;
  logger: Logger;
  /** Every password hash and verification is leased from it (`password-hash`), keyed by client address. */
  governor: Governor;
}

export function useSignIn(options: SignInOptions): Plugin {
  const throttle = new LoginThrottle(options);
  const { db, policy } = options;

  async function answer(
    request: Request,
    pathname: string,
    socketAddress: string,
    fetchAPI: { Response: typeof Response },
  ): Promise<Response> {
    const source = sourceOfFetch(request);
    const invitation = INVITATION_PATTERN.exec(pathname);
    if (pathname !== LOGIN_PATH && pathname !== LOGOUT_PATH && !invitation) throw new ApiError('NOT_FOUND', `no such path: ${pathname}`);
    const noStore = { 'Cache-Control': 'no-store' };
    // A code is base64url: nothing in it is percent-encoded, and a path that is no code is an unknown one.
    const code = invitation?.[1];
    if (code !== undefined && (request.method === 'GET' || request.method === 'HEAD')) {
      const holder = await throttle.invitation(clientAddressOf(source, socketAddress, policy), () => codeHolderOf(db, code));
      const data = {
        email: holder.email,
        role: holder.role,
        purpose: holder.purpose,
        tenant: holder.organization.slug,
        tenant_name: holder.organization.name,
        expires_at: holder.expiresAt.toISOString(),
      };
      return jsonResponse(fetchAPI, { msg: 'OK', data }, { headers: noStore, withoutBody: request.method === 'HEAD' });
    }
    if (request.method !== 'POST') {
      const allowed = code !== undefined ? 'GET, HEAD, POST' : 'POST';
      throw new ApiError('METHOD_NOT_ALLOWED', `${pathname} accepts ${allowed} only`, { headers: { Allow: allowed } });
    }
    // A page of another origin may not sign anyone in or out, nor choose a password.
    assertOwnOrigin(source, policy);
    const cookie = (value: string | null) =>
      sessionSetCookie(value, { secure: isSecureRequest(source, policy), maxAgeSeconds: Math.floor(policy.lifetimeMs / 1000) });
    /** The answer that signs `member` in: a new session in its cookie. */
    const signedInAnswer = async (msg: string, member: SignedInMember) => {
      const session = await createSession(db, member, policy);
      return jsonResponse(
        fetchAPI,
        { msg, data: { email: member.email, role: member.role, tenant: member.tenant, tenant_name: member.tenantName } },
        { headers: { ...noStore, 'Set-Cookie': cookie(session.value) } },
      );
    };

    if (pathname === LOGOUT_PATH) {
      const session = sessionCookieOf(request.headers.get('cookie'));
      if (session !== undefined) await endSession(db, session);
      return jsonResponse(fetchAPI, { msg: 'Signed out' }, { headers: { ...noStore, 'Set-Cookie': cookie(null) } });
    }
    const body = await jsonBody(request);
    const address = clientAddressOf(source, socketAddress, policy);
    // A client that leaves while its hash waits gives its place up.
    const turn = hashTurnOf(options.governor, address, request.signal);
    if (code !== undefined) {
      const accepted = await throttle.invitation(address, () => acceptInvitation(db, code, body.password, new Date(), turn));
      return signedInAnswer('Password set: signed in', accepted);
    }
    assertCredentialsShape(body);
    const account = body.email.trim().toLowerCase().slice(0, 254);
    const signedIn = await throttle.signIn(account, address, () =>
      signInOfPassword(db, { email: body.email, password: body.password, organization: body.organization?.trim() }, turn),
    );
    if (!signedIn) throw new ApiError('UNAUTHORIZED', SIGNED_OUT);
    // Told only to someone who knows the password of each organization listed.
    if ('organizations' in signedIn) throw organizationToChoose(signedIn.organizations);
    return signedInAnswer('Signed in', signedIn.member);
  }

  return {
    async onRequest({ request, url, endResponse, fetchAPI, serverContext }) {
      if (!url.pathname.startsWith(`${AUTH_BASE}/`)) return;
      const socketAddress = socketAddressOf(serverContext) ?? 'unknown';
      try {
        endResponse(await answer(request, url.pathname, socketAddress, fetchAPI));
      } catch (error) {
        if (!(error instanceof ApiError)) {
          options.logger.error({ err: error }, 'sign-in request failed');
          endResponse(earlyErrorResponse(request, new ApiError('INTERNAL', 'Unexpected error.'), fetchAPI));
          return;
        }
        endResponse(earlyErrorResponse(request, error, fetchAPI));
      }
    },
    onDispose: () => throttle.dispose(),
  };
}

/**
 * A sign-in body without a non-empty email and password string, or with an `organization` that is not one, is a
 * malformed request (400), refused before the throttle: it is no guess at a password and counts toward no lockout.
 */
function assertCredentialsShape(
  body: Record<string, unknown>,
): asserts body is { email: string; password: string; organization?: string | undefined } {
  const details = (['email', 'password', 'organization'] as const)
    .filter((member) => {
      const value = body[member];
      if (member === 'organization' && value === undefined) return false;
      return typeof value !== 'string' || (member === 'password' ? value : value.trim()) === '';
    })
    .map((member) => ({ parameter: member, message: `${member} must be a non-empty string` }));
  if (details.length > 0) throw new ApiError('INVALID_QUERY', details.map((d) => d.message).join('; '), { details });
}

/**
 * The 409 of a password that signs in to several organizations, sent without `organization`: each one in
 * error.details (`{parameter: "organization", message: <slug>}`), to send again with one of them.
 */
function organizationToChoose(organizations: readonly string[]): ApiError {
  return new ApiError(
    'CONFLICT',
    `This email and password sign in to ${organizations.length} organizations: send organization, one of ${organizations.join(', ')}`,
    { details: organizations.map((slug) => ({ parameter: 'organization', message: slug })) },
  );
}

/** The request's JSON object body, or a 400/413/415 saying what is wrong with it. */
async function jsonBody(request: Request): Promise<Record<string, unknown>> {
  if (!(request.headers.get('content-type') ?? '').toLowerCase().startsWith('application/json')) {
    throw new ApiError('UNSUPPORTED_MEDIA_TYPE', 'The body must be JSON (Content-Type: application/json)');
  }
  const bytes = new Uint8Array(await request.arrayBuffer());
  if (bytes.byteLength > MAX_BODY_BYTES) throw new ApiError('PAYLOAD_TOO_LARGE', `The body may be at most ${MAX_BODY_BYTES} bytes`);
  const parsed = parseJsonBody(bytes);
  if ('problem' in parsed) throw new ApiError('INVALID_QUERY', `Invalid body: ${parsed.problem}`);
  const body = parsed.value;
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new ApiError('INVALID_QUERY', 'The body must be a JSON object');
  return body as Record<string, unknown>;
}
