import { z } from 'zod';
import type { FieldProblem } from './problems.js';

// The REST bodies that register a partner's application and create a service user's OAuth client, in one schema
// each: the 400's problems and the OpenAPI document both come from them. The rules beyond shape (an https redirect
// URI without a fragment, known scopes within the role, public keys only) are src/auth/'s.

const createBody = z.strictObject({
  name: z.string().trim().min(1).max(100).describe("The application's name, as the consent page shows it."),
  redirect_uris: z
    .array(z.string().min(1).max(2000))
    .min(1)
    .max(10)
    .describe('Where codes are sent, compared exactly: https (http only on 127.0.0.1, [::1] or localhost), no fragment.'),
  scope: z.string().max(100).optional().describe('Space-separated scopes it may ask for, among read, write and engine; absent: all three.'),
});

const clientBody = z.strictObject({
  service_user_id: z.string().min(1).max(64).describe('The service user the client acts as.'),
  name: z.string().max(100).optional().describe('A name to tell the client apart.'),
  scope: z
    .string()
    .max(100)
    .optional()
    .describe("Space-separated scopes it may ask for, within the service user's role; absent: all the role holds."),
  jwks: z
    .looseObject({ keys: z.array(z.record(z.string(), z.unknown())).min(1).max(10) })
    .optional()
    .describe('A JWK Set of public keys: the client then authenticates with private_key_jwt, and no secret is made.'),
});

export const OAUTH_APPLICATION_BODY_SCHEMA = z.toJSONSchema(createBody, { io: 'input' });
export const OAUTH_CLIENT_BODY_SCHEMA = z.toJSONSchema(clientBody, { io: 'input' });

function problemsOf(schema: z.ZodType, body: unknown): FieldProblem[] {
  const parsed = schema.safeParse(body);
  if (parsed.success) return [];
  return parsed.error.issues.map((issue) => ({ field: issue.path.join('.') || 'body', message: issue.message }));
}

export const oauthApplicationBodyProblems = (body: unknown): FieldProblem[] => problemsOf(createBody, body);
export const oauthClientBodyProblems = (body: unknown): FieldProblem[] => problemsOf(clientBody, body);
