import { z } from 'zod';
import type { FieldProblem } from './problems.js';

/** RFC 5321's limit on a forward path. */
export const MAX_EMAIL_LENGTH = 254;
/** One `@`, something on each side, no white space or control characters: mail itself decides the rest. */
export const EMAIL_PATTERN = /^[^\s@\p{Cc}\p{Cf}]+@[^\s@\p{Cc}\p{Cf}]+$/u;

// The REST bodies of the member routes, in one schema each: the 400's problems and the OpenAPI document both
// come from them. The domain rules beyond shape (the last admin) are src/auth/members.ts's.

const role = z.enum(['admin', 'reader']);

const email = z
  .string()
  .trim()
  .max(MAX_EMAIL_LENGTH)
  .regex(EMAIL_PATTERN, 'must be an email address (name@domain)')
  .describe('An email address: name@domain, no white space; matched case-insensitively.');
const inviteBody = z.strictObject({ email, role });
const patchBody = z.strictObject({ role });

export const MEMBER_BODY_SCHEMAS = {
  invite: z.toJSONSchema(inviteBody, { io: 'input' }),
  patch: z.toJSONSchema(patchBody, { io: 'input' }),
};

function problemsOf(schema: z.ZodType, body: unknown): FieldProblem[] {
  const parsed = schema.safeParse(body);
  if (parsed.success) return [];
  return parsed.error.issues.map((issue) => ({
    field: issue.path.join('.') || 'body',
    message:
      issue.code === 'invalid_value' && issue.path[0] === 'role'
        ? 'must be admin or reader (engine is a service user role)'
        : issue.message,
  }));
}

export const memberBodyProblems = (kind: keyof typeof MEMBER_BODY_SCHEMAS, body: unknown): FieldProblem[] =>
  problemsOf(kind === 'invite' ? inviteBody : patchBody, body);
