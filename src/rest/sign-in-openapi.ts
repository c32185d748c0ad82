import { INVITATION_ATTEMPTS_PER_ADDRESS } from '../auth/login-throttle.js';
import { MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from '../auth/passwords.js';
import { SESSION_COOKIE } from '../auth/session-cookie.js';
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
          "Checks the email and password and sets the session cookie (HttpOnly, SameSite=Lax, Path=/, Secure over HTTPS). An unknown email and a wrong password answer the same 401. Failed attempts of one account from one client address (LOGIN_FAILURES_PER_ACCOUNT) and from one client address (LOGIN_FAILURES_PER_ADDRESS), in 15 minutes, are answered 429 with Retry-After; past LOGIN_FAILURES_PER_ACCOUNT failures from all addresses, an account's passwords are checked one at a time, a few seconds apart (429 with Retry-After when its turn is further away). The password is checked in turn with every other of the server (503 with Retry-After when the wait is too long).",
        security: [],
        requestBody: jsonBody(
          {
            type: 'object',
            required: ['email', 'password'],
            properties: {
              email: { type: 'string', pattern: '\\S', description: 'Not blank.' },
              password: { type: 'string', minLength: 1 },
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
