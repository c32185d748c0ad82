// JSON columns are typed objects in GraphQL. Stored members are snake_case (as the REST API shows them);
// a member of the wrong type or absent reads as null rather than failing the whole response.

export type JsonObject = Record<string, unknown>;

/**
 * The extension naming the row property a string field is the JSON text of (`JSON.stringify` of the property's
 * value): a REST export (rest/export.ts) writes the field from the property's text instead of running it.
 */
export const JSON_TEXT_OF = 'jsonTextOf';

export function asJsonObject(value: unknown): JsonObject {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as JsonObject) : {};
}

export function jsonString(object: JsonObject, key: string): string | null {
  const value = object[key];
  return typeof value === 'string' ? value : null;
}

export function jsonBoolean(object: JsonObject, key: string): boolean | null {
  const value = object[key];
  return typeof value === 'boolean' ? value : null;
}

export function jsonInt(object: JsonObject, key: string): number | null {
  const value = object[key];
  return typeof value === 'number' && Number.isInteger(value) ? value : null;
}

export function jsonStringList(object: JsonObject, key: string): string[] | null {
  const value = object[key];
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : null;
}
