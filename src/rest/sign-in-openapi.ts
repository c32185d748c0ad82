import { INVITATION_ATTEMPTS_PER_ADDRESS } from '../auth/login-throttle.js';
import { MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from '../auth/passwords.js';
import { SESSION_COOKIE } from '../auth/session-cookie.js';
import { EXAMPLE_ORIGIN } from '../errors.js';
import { AUTH_BASE } from '../paths.js';
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
        tenant_name: { type: 'string', description: "The organization's name (sign-in only)." },
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
  return {
    // In the order a new member takes them: choose a password with the invitation, sign in, sign out.
    [`${AUTH_BASE}/invitations/{code}`]: {
      post: {
        operationId: 'acceptInvitation',
        tags: ['Sign-in'],
        summary: 'Choose a password with an invitation',
        description: `Sets the password of the invited member. The code works once, for 7 days. A weak password is a 400 that says why: at least ${MIN_PASSWORD_LENGTH} characters (at most ${MAX_PASSWORD_LENGTH}), not on a list of commonly used passwords; the code stays usable. Every earlier session of the member ends. Attempts are limited per client address (${INVITATION_ATTEMPTS_PER_ADDRESS} in 15 minutes, whatever credential the request carries): then 429 with Retry-After. The password is hashed in turn with every other of the server (503 with Retry-After when the wait is too long).`,
        security: [],
        parameters: [
          {
            name: 'code',
            in: 'path',
            required: true,
            schema: { type: 'string' },
            description:
              'The code of the invitation URL (`/console/invite/<code>`). It is a secret shown once, to the admin who invites: in the answer of POST /api/v1/integrations/members (`code`; "Try it out" of inviteMember above makes one for the example member), or printed by `npm run cli -- member invite`. Paste it here; the example is no code.',
            example: 'paste-the-code-inviteMember-answered',
          },
        ],
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
          200: { description: 'The password is set: sign in with it.', content: { 'application/json': { schema: signedIn } } },
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
