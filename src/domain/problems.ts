import { ApiError } from '../errors.js';

/** One thing wrong with an input: where (`settings.retry_attempts`) and what. */
export interface FieldProblem {
  field: string;
  message: string;
}

/** Every problem of an input in one 400: each in the message, and as `{field, message}` in `details`. */
export function invalidInput(problems: readonly FieldProblem[]): ApiError {
  const listed = problems.map((p) => `${p.field}: ${p.message}`).join('; ');
  return new ApiError('INVALID_QUERY', `invalid input: ${listed}`, { details: problems });
}
