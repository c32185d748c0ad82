import { z } from 'zod';
import type { FieldProblem } from './problems.js';

// The settings of an organization's identity provider as a client sends them (GraphQL's input, REST's body after
// its members are camelCased), in one schema: the 400's problems and the OpenAPI document both come from it. The
// rules beyond shape (what a new provider needs, a discovery document that works) are src/auth/identity-providers.ts's.

/** A DNS name of at least two labels, lower-cased or not: `example.com`, `mail.example.co.uk`. */
const DOMAIN_PATTERN = /^(?=.{1,253}$)([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63}$/;
export const MAX_EMAIL_DOMAINS = 50;

const issuer = z
  .string()
  .trim()
  .min(1)
  .max(2048)
  .describe('The issuer identifier: the URL whose /.well-known/openid-configuration the gateway reads.');
const clientId = z.string().trim().min(1).max(255).describe('The client id the provider gave this gateway.');
const clientSecret = z
  .string()
  .min(1)
  .max(1024)
  .describe('The client secret the provider gave this gateway: stored sealed, never shown again.');
const emailDomains = z
  .array(z.string().trim().regex(DOMAIN_PATTERN, 'must be a domain name (example.com)'))
  .min(1)
  .max(MAX_EMAIL_DOMAINS)
  .describe(
    "The email domains whose people the provider vouches for: a person's verified email must be in one of them to be linked or let in.",
  );
const firstSignIn = z
  .enum(['invitation', 'reader', 'claim'])
  .describe(
    'What a person unknown to the organization gets at a first sign-in: invitation (refused unless invited), reader (a new reader member), claim (a new member with the role roleClaim names).',
  );
const roleClaim = z
  .string()
  .trim()
  .regex(/^[A-Za-z0-9_.:/-]{1,100}$/, 'must be a claim name (letters, digits, _ . : / -)')
  .nullable()
  .describe("With firstSignIn claim: the ID token claim whose value, admin or reader (or a list holding one), is the new member's role.");
const required = z.boolean().describe("True: the organization's members sign in with the provider only; password sign-in is off for them.");

const input = z.strictObject({
  issuer: issuer.optional(),
  clientId: clientId.optional(),
  clientSecret: clientSecret.optional(),
  emailDomains: emailDomains.optional(),
  firstSignIn: firstSignIn.optional(),
  roleClaim: roleClaim.optional(),
  required: required.optional(),
});

export type IdentityProviderInput = z.input<typeof input>;

/** The REST body: the same members, snake_cased. */
const body = z.strictObject({
  issuer: issuer.optional(),
  client_id: clientId.optional(),
  client_secret: clientSecret.optional(),
  email_domains: emailDomains.optional(),
  first_sign_in: firstSignIn.optional(),
  role_claim: roleClaim.optional(),
  required: required.optional(),
});

export const IDENTITY_PROVIDER_BODY_SCHEMA = z.toJSONSchema(body, { io: 'input' });

function problemsOf(schema: z.ZodType, value: unknown): FieldProblem[] {
  const parsed = schema.safeParse(value);
  if (parsed.success) return [];
  return parsed.error.issues.map((issue) => ({ field: issue.path.join('.') || 'body', message: issue.message }));
}

/** The problems of the settings a GraphQL input gives. */
export const identityProviderProblems = (value: unknown): FieldProblem[] => problemsOf(input, value);
/** The problems of a REST body. */
export const identityProviderBodyProblems = (value: unknown): FieldProblem[] => problemsOf(body, value);
