import { z } from 'zod';
import type { FieldProblem } from './problems.js';

// The REST body that registers a partner's application, in one schema: the 400's problems and the OpenAPI
// document both come from it. The rules beyond shape (an https redirect URI without a fragment, known scopes) are
// src/auth/oauth-applications.ts's.

const createBody = z.strictObject({
  name: z.string().trim().min(1).max(100).describe("The application's name, as the consent page shows it."),
  redirect_uris: z
    .array(z.string().min(1).max(2000))
    .min(1)
    .max(10)
    .describe('Where codes are sent, compared exactly: https (http only on 127.0.0.1, [::1] or localhost), no fragment.'),
  scope: z.string().max(100).optional().describe('Space-separated scopes it may ask for, among read, write and engine; absent: all three.'),
});

export const OAUTH_APPLICATION_BODY_SCHEMA = z.toJSONSchema(createBody, { io: 'input' });

export function oauthApplicationBodyProblems(body: unknown): FieldProblem[] {
  const parsed = createBody.safeParse(body);
  if (parsed.success) return [];
  return parsed.error.issues.map((issue) => ({ field: issue.path.join('.') || 'body', message: issue.message }));
}
