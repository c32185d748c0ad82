import { ApiError } from '../errors.js';

/** One thing wrong with an input: where, as the REST body names it (`settings.retry_attempts`), and what. */
export interface FieldProblem {
  field: string;
  message: string;
}

/** One problem as an error's `details` carry it on REST: the body member (or query parameter) and what is wrong. */
export interface ParameterProblem {
  parameter: string;
  message: string;
}

/** Every problem of a REST body in one 400: each in the message, and as `{parameter, message}` in `details`. */
export function invalidInput(problems: readonly FieldProblem[]): ApiError {
  const details: ParameterProblem[] = problems.map((p) => ({ parameter: p.field, message: p.message }));
  return new ApiError('INVALID_QUERY', `invalid input: ${details.map((p) => `${p.parameter}: ${p.message}`).join('; ')}`, { details });
}

/** `retry_attempts` → `retryAttempts`: a body member as GraphQL names it. */
export function camelCaseName(name: string): string {
  return name.replace(/_([a-z0-9])/g, (_m, c: string) => c.toUpperCase());
}

/** `applicationId` → `application_id`: a GraphQL name as the REST body names it. */
export function snakeCaseName(name: string): string {
  return name.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);
}

/**
 * The problems of a GraphQL argument's value, named by their GraphQL path (`input.settings.retryAttempts`):
 * the argument, then each member in camelCase. `argument` is left out when the problems already start with an
 * argument's own name (the scalar arguments of triggerSync, say).
 */
export function invalidGraphQLInput(problems: readonly FieldProblem[], argument?: string): ApiError {
  const details = problems.map((p) => {
    const path = p.field === '(body)' ? [] : p.field.split('.').map(camelCaseName);
    return { field: [argument, ...path].filter(Boolean).join('.') || '(input)', message: p.message };
  });
  return new ApiError('INVALID_QUERY', `invalid input: ${details.map((p) => `${p.field}: ${p.message}`).join('; ')}`, { details });
}

/**
 * Runs a data-layer write whose input problems are named as the REST body names them, and names them by their
 * GraphQL path instead (for a resolver): the data layer is shared, the names are the surface's.
 */
export async function withGraphQLNames<T>(argument: string | undefined, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (error) {
    const details = error instanceof ApiError && error.code === 'INVALID_QUERY' ? error.extensions.details : undefined;
    if (!Array.isArray(details) || !details.every(isParameterProblem)) throw error;
    throw invalidGraphQLInput(
      details.map((d) => ({ field: d.parameter, message: d.message })),
      argument,
    );
  }
}

function isParameterProblem(value: unknown): value is ParameterProblem {
  return typeof value === 'object' && value !== null && 'parameter' in value && 'message' in value;
}

/** The GraphQL arguments a REST body is passed in whole (`input`, `report`): not part of a body member's name. */
const BODY_ARGUMENTS = new Set(['input', 'report']);

/** `input.settings.retryAttempts` → `settings.retry_attempts`: a GraphQL input path as the REST body names it. */
export function restNameOfGraphQLPath(path: string): string {
  const segments = path.split('.');
  if (segments.length > 0 && BODY_ARGUMENTS.has(segments[0]!)) segments.shift();
  return segments.map(snakeCaseName).join('.') || '(body)';
}
