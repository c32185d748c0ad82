import { INVITATION_ATTEMPTS_PER_ADDRESS } from '../auth/login-throttle.js';
import { MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from '../auth/passwords.js';
import { SESSION_COOKIE } from '../auth/session-cookie.js';
import { EXAMPLE_ORIGIN } from '../errors.js';
import { AUTH_BASE } from '../paths.js';
import { SSO_BINDING_COOKIE, SSO_REFUSALS, SSO_STATE_LIFETIME_MS } from '../auth/sso-sign-in.js';
import { demoExamples } from '../seed/demo-examples.js';

// The sign-in endpoints (plugins/use-sign-in.ts) in the OpenAPI document. They are not routes of the table: they
// set and clear the session cookie, which no GraphQL operation can, so their shapes are written here.

const SCHEMA_REF = '#/components/schemas/';

/** The member the invite example invites, whose sign-in the example is; no example is a secret (seed/demo-examples.ts). */
const DEMO = demoExamples();
const error = (name: string) => ({ $ref: `#/components/responses/${name}` });

const signedIn = {
  type: 'object',
  required: ['msg', 'data'],
  properties: {
    msg: { type: 'string' },
    data: { $ref: `${SCHEMA_REF}SignedInMember` },
  },
};

/** The components the paths refer to. */
export function signInSchemas(): Record<string, Record<string, unknown>> {
  return {
    SignedInMember: {
      type: 'object',
      required: ['email', 'role', 'tenant'],
      properties: {
        email: { type: 'string', description: 'Lower-cased.' },
        role: { type: 'string', enum: ['admin', 'reader'] },
        tenant: { type: 'string', description: "The organization's slug." },
        tenant_name: { type: 'string', description: "The organization's name." },
      },
    },
    CodeHolder: {
      type: 'object',
      required: ['email', 'role', 'purpose', 'tenant', 'tenant_name', 'expires_at'],
      additionalProperties: false,
      properties: {
        email: { type: 'string', description: 'The member the code is for, lower-cased.' },
        role: { type: 'string', enum: ['admin', 'reader'] },
        purpose: {
          type: 'string',
          enum: ['invitation', 'password_reset'],
          description: 'invitation: the member has no password yet; password_reset: the member has one, which the code replaces.',
        },
        tenant: { type: 'string', description: "The organization's slug." },
        tenant_name: { type: 'string', description: "The organization's name." },
        expires_at: { type: 'string', format: 'date-time', description: 'Until when the code works.' },
      },
    },
  };
}

export const SESSION_SECURITY_SCHEME = {
  type: 'apiKey',
  in: 'cookie',
  name: SESSION_COOKIE,
  description: `The session cookie that ${AUTH_BASE}/login sets. A request it authenticates that is not GET, HEAD or OPTIONS must carry X-Requested-With (any value), and its Origin, when sent, must be this server's.`,
};

export function signInPaths(): Record<string, Record<string, unknown>> {
  const jsonBody = (schema: Record<string, unknown>, example: Record<string, unknown>) => ({
    required: true,
    content: { 'application/json': { schema, example } },
  });
  const codeParameter = {
    name: 'code',
    in: 'path',
    required: true,
    schema: { type: 'string' },
    description:
      'The code of the invitation URL (`/console/invite/<code>`) or of the password reset URL (`/console/reset/<code>`). It is a secret shown once, to the admin who invites or resets: in the answer of POST /api/v1/integrations/members (`code`; "Try it out" of inviteMember above makes one for the example member), of POST /api/v1/integrations/members/{id}/invitation or /password-reset, or printed by `npm run cli -- member invite` or `member reset-password`. Paste it here; the example is no code.',
    example: 'paste-the-code-inviteMember-answered',
  };
  const attempts = `Attempts are limited per client address (${INVITATION_ATTEMPTS_PER_ADDRESS} in 15 minutes, reads and password choices together, whatever credential the request carries): then 429 with Retry-After.`;
  return {
    // In the order a new member takes them: read the invitation, choose a password with it (signed in), sign in, sign out.
    [`${AUTH_BASE}/invitations/{code}`]: {
      get: {
        operationId: 'readInvitation',
        tags: ['Sign-in'],
        summary: 'Read what an invitation or a reset code is for',
        description: `The organization and the email a usable code (unused, not expired) is for, and whether it is an invitation or a password reset: what the console's page shows before a password is chosen. An unknown, used or expired code is a 404. ${attempts}`,
        security: [],
        parameters: [codeParameter],
        responses: {
          200: {
            description: 'The code is usable.',
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  required: ['msg', 'data'],
                  properties: { msg: { type: 'string' }, data: { $ref: `${SCHEMA_REF}CodeHolder` } },
                },
              },
            },
          },
          404: error('NotFound'),
          429: error('RateLimited'),
        },
      },
      post: {
        operationId: 'acceptInvitation',
        tags: ['Sign-in'],
        summary: 'Choose a password with an invitation or a reset code, and sign in',
        description: `Sets the password of the code's member (an invitation, or a password reset an admin created) and signs the member in to the code's organization: the session cookie is set as by ${AUTH_BASE}/login. The code works once, for 7 days. A weak password is a 400 that says why: at least ${MIN_PASSWORD_LENGTH} characters (at most ${MAX_PASSWORD_LENGTH}), not on a list of commonly used passwords; the code stays usable. Every earlier session of the member ends. ${attempts} The password is hashed in turn with every other of the server (503 with Retry-After when the wait is too long).`,
        security: [],
        parameters: [codeParameter],
        requestBody: jsonBody(
          {
            type: 'object',
            required: ['password'],
            properties: {
              password: {
                type: 'string',
                minLength: MIN_PASSWORD_LENGTH,
                maxLength: MAX_PASSWORD_LENGTH,
                description: `At least ${MIN_PASSWORD_LENGTH} characters, at most ${MAX_PASSWORD_LENGTH} UTF-16 code units, not a commonly used password.`,
              },
            },
          },
          { password: DEMO.members.password },
        ),
        responses: {
          200: {
            description: 'The password is set, and the member signed in.',
            headers: {
              'Set-Cookie': { description: `${SESSION_COOKIE}=<session>; HttpOnly; SameSite=Lax; Path=/`, schema: { type: 'string' } },
            },
            content: { 'application/json': { schema: signedIn } },
          },
          400: error('InvalidQuery'),
          403: error('Forbidden'),
          404: error('NotFound'),
          413: error('PayloadTooLarge'),
          415: error('UnsupportedMediaType'),
          429: error('RateLimited'),
          503: error('Unavailable'),
        },
      },
    },
    [`${AUTH_BASE}/login`]: {
      post: {
        operationId: 'signIn',
        tags: ['Sign-in'],
        summary: 'Sign a member in',
        description:
          "Checks the email and password and sets the session cookie (HttpOnly, SameSite=Lax, Path=/, Secure over HTTPS). An email may be a member of several organizations, each membership with its own password: `organization` (a slug) names the one to sign in to; without it, the membership whose password this is. When the password is that of several memberships, the answer is 409 CONFLICT listing them in error.details, and nothing is signed in. An unknown email, a wrong password and an organization the email is no member of answer the same 401. Failed attempts of one account from one client address (LOGIN_FAILURES_PER_ACCOUNT) and from one client address (LOGIN_FAILURES_PER_ADDRESS), in 15 minutes, are answered 429 with Retry-After; past LOGIN_FAILURES_PER_ACCOUNT failures from all addresses, an account's passwords are checked one at a time, a few seconds apart (429 with Retry-After when its turn is further away). The password is checked in turn with every other of the server (503 with Retry-After when the wait is too long).",
        security: [],
        requestBody: jsonBody(
          {
            type: 'object',
            required: ['email', 'password'],
            properties: {
              email: { type: 'string', pattern: '\\S', description: 'Not blank.' },
              password: { type: 'string', minLength: 1 },
              organization: {
                type: 'string',
                pattern: '\\S',
                description:
                  "The slug of the organization to sign in to; needed only when the password is that of several of the email's memberships.",
              },
            },
            description: 'A body without both strings is 400 and counts toward no lockout.',
          },
          { email: DEMO.members.invited.email, password: DEMO.members.password },
        ),
        responses: {
          200: {
            description: 'Signed in.',
            headers: {
              'Set-Cookie': { description: `${SESSION_COOKIE}=<session>; HttpOnly; SameSite=Lax; Path=/`, schema: { type: 'string' } },
            },
            content: { 'application/json': { schema: signedIn } },
          },
          400: error('InvalidQuery'),
          401: error('Unauthorized'),
          403: error('Forbidden'),
          409: {
            description:
              'CONFLICT: the password is that of several memberships of the email and no organization was sent. Nothing is signed in; send the request again with organization, one of those error.details lists. Answered only after the password is checked, and listing only the organizations whose password it is.',
            headers: { 'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' } },
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  required: ['msg', 'error'],
                  additionalProperties: false,
                  properties: {
                    msg: { type: 'string' },
                    error: {
                      type: 'object',
                      required: ['code', 'docs', 'req_id', 'details'],
                      additionalProperties: false,
                      properties: {
                        code: { type: 'string', enum: ['CONFLICT'] },
                        docs: { type: 'string', format: 'uri' },
                        req_id: { type: 'string', pattern: '^req_\\d+$' },
                        details: {
                          type: 'array',
                          minItems: 2,
                          description: 'One item an organization to choose from, by slug.',
                          items: {
                            type: 'object',
                            required: ['parameter', 'message'],
                            additionalProperties: false,
                            properties: { parameter: { type: 'string', enum: ['organization'] }, message: { type: 'string' } },
                          },
                        },
                      },
                    },
                  },
                },
                example: {
                  msg: 'This email and password sign in to 2 organizations: send organization, one of acme, demo',
                  error: {
                    code: 'CONFLICT',
                    docs: `${EXAMPLE_ORIGIN}/docs/errors/CONFLICT`,
                    req_id: 'req_1764236400000001',
                    details: [
                      { parameter: 'organization', message: 'acme' },
                      { parameter: 'organization', message: 'demo' },
                    ],
                  },
                },
              },
            },
          },
          413: error('PayloadTooLarge'),
          415: error('UnsupportedMediaType'),
          429: error('RateLimited'),
          503: error('Unavailable'),
        },
      },
    },
    [`${AUTH_BASE}/sso/start`]: {
      get: {
        operationId: 'startSingleSignOn',
        tags: ['Sign-in'],
        summary: "Sign in with the organization's identity provider",
        description: `A browser navigation. Finds the organization by \`organization\` (its slug) or by the domain of \`email\` (one organization's identity provider names it), and redirects (303) to that provider's authorization endpoint: OpenID Connect's authorization code flow with PKCE (S256), \`state\` and \`nonce\`, scope \`openid email profile\`. The flow's state is kept server-side for ${SSO_STATE_LIFETIME_MS / 60_000} minutes and bound to this browser by the cookie ${SSO_BINDING_COOKIE} (HttpOnly, SameSite=Lax, Path=${AUTH_BASE}/sso). When no organization is found, or its provider cannot be reached, the redirect goes to the console instead: \`/console/?sso_error=<reason>\` (reasons: ${Object.keys(SSO_REFUSALS).join(', ')}). Rate limited per client address like every request without a credential.`,
        security: [],
        parameters: [
          { name: 'organization', in: 'query', required: false, schema: { type: 'string' }, description: "The organization's slug." },
          {
            name: 'email',
            in: 'query',
            required: false,
            schema: { type: 'string' },
            description: "The person's email: its domain finds the organization, and it is passed on as login_hint.",
          },
        ],
        responses: {
          303: {
            description: 'To the identity provider (with the binding cookie), or back to the console with ?sso_error=<reason>.',
            headers: {
              Location: { schema: { type: 'string' } },
              'Set-Cookie': {
                description: `${SSO_BINDING_COOKIE}=<binding>; HttpOnly; SameSite=Lax; Path=${AUTH_BASE}/sso`,
                schema: { type: 'string' },
              },
            },
          },
          400: error('InvalidQuery'),
          429: error('RateLimited'),
        },
      },
    },
    [`${AUTH_BASE}/sso/callback`]: {
      get: {
        operationId: 'finishSingleSignOn',
        tags: ['Sign-in'],
        summary: 'Where the identity provider sends the browser back',
        description: `Register <this server's origin>${AUTH_BASE}/sso/callback as the redirect URI at the provider. Checks \`state\` against the flow kept server-side and this browser's ${SSO_BINDING_COOKIE} cookie (single use), redeems the code with the PKCE verifier and the client secret, and validates the ID token (signature against the provider's JWKS, iss, aud, exp, nonce). The person is the member linked to the provider's \`sub\`; at a first sign-in, the member with the verified email (an invited one is linked), else what the organization's first_sign_in allows. Signed in, the redirect (303) goes to \`/console/?sso=signed_in\` with the session cookie ${SESSION_COOKIE}, the same session as a password sign-in; refused, to \`/console/?sso_error=<reason>\` (${Object.keys(SSO_REFUSALS).join(', ')}).`,
        security: [],
        parameters: [
          { name: 'code', in: 'query', required: false, schema: { type: 'string' } },
          { name: 'state', in: 'query', required: false, schema: { type: 'string' } },
          { name: 'iss', in: 'query', required: false, schema: { type: 'string' } },
          { name: 'error', in: 'query', required: false, schema: { type: 'string' } },
        ],
        responses: {
          303: {
            description: 'To the console: signed in (the session cookie set), or with ?sso_error=<reason>.',
            headers: {
              Location: { schema: { type: 'string' } },
              'Set-Cookie': { description: `${SESSION_COOKIE}=<session>; HttpOnly; SameSite=Lax; Path=/`, schema: { type: 'string' } },
            },
          },
          429: error('RateLimited'),
        },
      },
    },
    [`${AUTH_BASE}/logout`]: {
      post: {
        operationId: 'signOut',
        tags: ['Sign-in'],
        summary: 'Sign out',
        description: 'Ends the session of the cookie sent, on the server, and clears the cookie. Answers 200 also without a session.',
        security: [],
        responses: {
          200: {
            description: 'Signed out.',
            content: { 'application/json': { schema: { type: 'object', required: ['msg'], properties: { msg: { type: 'string' } } } } },
          },
          403: error('Forbidden'),
        },
      },
    },
  };
}
