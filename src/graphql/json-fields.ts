// JSON columns are typed objects in GraphQL. Stored members are snake_case (as the REST API shows them);
// a member of the wrong type or absent reads as null rather than failing the whole response.

export type JsonObject = Record<string, unknown>;

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function asJsonObject(value: unknown): JsonObject {
  return isJsonObject(value) ? value : {};
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
