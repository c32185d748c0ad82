import { parseCookie, stringifySetCookie } from 'cookie';
import type { Plugin } from 'graphql-yoga';
import type { Logger } from 'pino';
import type { IdentityProviders } from '../auth/identity-providers.js';
import { sourceOfFetch } from '../auth/request-viewers.js';
import { isSecureRequest, ownOriginOf, sessionSetCookie, type CookiePolicy } from '../auth/session-cookie.js';
import { createSession, type SessionPolicy } from '../auth/sessions.js';
import { finishSsoSignIn, SSO_BINDING_COOKIE, SSO_STATE_LIFETIME_MS, SsoRefusal, startSsoSignIn } from '../auth/sso-sign-in.js';
import { ApiError } from '../errors.js';
import { AUTH_BASE, CONSOLE_PATH } from '../paths.js';
import { earlyErrorResponse } from './error-response.js';

// Members sign in with their organization's identity provider (docs/how-to/single-sign-on.md). Both routes are
// browser navigations, so they answer with redirects: `start` to the provider, with the cookie that binds the flow
// to this browser; `callback` back to the console, signed in (`?sso=signed_in`, with the session cookie a password
// sign-in sets) or with `?sso_error=<reason>`. The binding cookie is HttpOnly, SameSite=Lax (the provider's top-level redirect
// back carries it; a cross-site subrequest does not), limited to these paths and to the flow's ten minutes.

export const SSO_START_PATH = `${AUTH_BASE}/sso/start`;
export const SSO_CALLBACK_PATH = `${AUTH_BASE}/sso/callback`;
const SSO_COOKIE_PATH = `${AUTH_BASE}/sso`;

export interface SsoSignInOptions {
  providers: IdentityProviders;
  policy: SessionPolicy & CookiePolicy;
  logger: Logger;
}

export function useSsoSignIn({ providers, policy, logger }: SsoSignInOptions): Plugin {
  async function answer(request: Request, url: URL, fetchAPI: { Response: typeof Response }): Promise<Response> {
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      throw new ApiError('METHOD_NOT_ALLOWED', `${url.pathname} accepts GET only`, { headers: { Allow: 'GET' } });
    }
    const source = sourceOfFetch(request);
    const secure = isSecureRequest(source, policy);
    const binding = (value: string | null) =>
      stringifySetCookie({
        name: SSO_BINDING_COOKIE,
        value: value ?? '',
        httpOnly: true,
        sameSite: 'lax',
        path: SSO_COOKIE_PATH,
        secure,
        maxAge: value === null ? 0 : SSO_STATE_LIFETIME_MS / 1000,
      });
    const redirect = (location: string, cookies: string[]) => {
      const headers = new Headers({ Location: location, 'Cache-Control': 'no-store', 'Referrer-Policy': 'no-referrer' });
      for (const cookie of cookies) headers.append('Set-Cookie', cookie);
      return new fetchAPI.Response(null, { status: 303, headers });
    };
    const refused = (refusal: SsoRefusal) => {
      logger.info({ reason: refusal.reason, detail: refusal.detail }, 'single sign-on refused');
      return redirect(`${CONSOLE_PATH}/?sso_error=${refusal.reason}`, [binding(null)]);
    };
    try {
      if (url.pathname === SSO_START_PATH) {
        const origin = ownOriginOf(source, policy);
        if (origin === undefined) throw new ApiError('INVALID_QUERY', 'the request names no origin this server can be reached at');
        const organization = url.searchParams.get('organization') ?? undefined;
        const email = url.searchParams.get('email') ?? undefined;
        if (organization === undefined && email === undefined) {
          throw new ApiError('INVALID_QUERY', 'send email (whose domain finds the organization) or organization (its slug)');
        }
        const started = await startSsoSignIn(providers, { organization, email }, `${origin}${SSO_CALLBACK_PATH}`);
        return redirect(started.authorizationUrl.href, [binding(started.browserValue)]);
      }
      const browserValue = parseCookie(request.headers.get('cookie') ?? '')[SSO_BINDING_COOKIE];
      const member = await finishSsoSignIn(providers, url.searchParams, browserValue || undefined);
      const session = await createSession(providers.db, member, policy);
      return redirect(`${CONSOLE_PATH}/?sso=signed_in`, [
        binding(null),
        sessionSetCookie(session.value, { secure, maxAgeSeconds: Math.floor(policy.lifetimeMs / 1000) }),
      ]);
    } catch (error) {
      if (error instanceof SsoRefusal) return refused(error);
      throw error;
    }
  }

  return {
    async onRequest({ request, url, endResponse, fetchAPI }) {
      if (url.pathname !== SSO_START_PATH && url.pathname !== SSO_CALLBACK_PATH) return;
      try {
        endResponse(await answer(request, url, fetchAPI));
      } catch (error) {
        if (!(error instanceof ApiError)) {
          logger.error({ err: error }, 'single sign-on request failed');
          endResponse(earlyErrorResponse(request, new ApiError('INTERNAL', 'Unexpected error.'), fetchAPI));
          return;
        }
        endResponse(earlyErrorResponse(request, error, fetchAPI));
      }
    },
  };
}
