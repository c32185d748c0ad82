import { camelCaseName, type FieldProblem, invalidGraphQLInput, snakeCaseName } from '../domain/problems.js';
import { isJsonObject } from './json-fields.js';

// A mutation's arguments as the body the REST route takes, which the domain's one parser reads (src/domain/*), so
// both surfaces accept and refuse exactly the same inputs; and that parse's problems as GraphQL input errors.

/**
 * The REST body equivalent of a GraphQL argument: member names in snake_case at every depth (the JSON members
 * settings, metadata, summary… included), omitted members left out, explicit nulls kept. GraphQL inputs are
 * camelCase throughout, so a member written in snake_case is refused, named by its GraphQL path under `argument`.
 */
export function bodyOf(args: Record<string, unknown>, argument?: string): Record<string, unknown> {
  const problems: FieldProblem[] = [];
  const convert = (value: unknown, path: readonly string[]): unknown => {
    if (Array.isArray(value)) return value.map((member) => convert(member, path));
    if (!isJsonObject(value)) return value;
    const members: [string, unknown][] = [];
    for (const [key, member] of Object.entries(value)) {
      if (member === undefined) continue;
      if (key.includes('_')) {
        problems.push({
          field: [...path, key].join('.'),
          message: `GraphQL inputs are camelCase: write ${camelCaseName(key)}, not ${key}`,
        });
        continue;
      }
      members.push([snakeCaseName(key), convert(member, [...path, snakeCaseName(key)])]);
    }
    return Object.fromEntries(members);
  };
  const body = convert(args, []) as Record<string, unknown>;
  if (problems.length > 0) throw invalidGraphQLInput(problems, argument);
  return body;
}

/** A parse result's value, or its problems named by their GraphQL path under `argument`. */
export function parsed<T>(result: T | { problems: FieldProblem[] }, argument?: string): T {
  if (typeof result === 'object' && result !== null && 'problems' in result) throw invalidGraphQLInput(result.problems, argument);
  return result as T;
}
