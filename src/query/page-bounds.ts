// How far a list may be paged. The GraphQL field declares its bounds on its `limit` argument (graphql/list.ts,
// pageArgs) and the REST routes read them there (rest/compile-routes.ts): the bounds are written once, on the field.

/** How far any list may be paged by offset: the same for every list, and for the REST `offset`/`page`. */
const MAX_OFFSET = 1_000_000;

/** A paginated field's page sizes and how far it may be paged. */
export interface PageBounds {
  defaultLimit: number;
  maxLimit: number;
  maxOffset: number;
}

export function pageBounds(defaultLimit: number, maxLimit: number): PageBounds {
  return { defaultLimit, maxLimit, maxOffset: MAX_OFFSET };
}

/** The extensions of a field's `limit` argument that carry its bounds. */
export function pageBoundsExtension(bounds: PageBounds): { pageBounds: PageBounds } {
  return { pageBounds: bounds };
}

/** The bounds a field's `limit` argument carries (see pageBoundsExtension), or null for a field that is not paginated. */
export function pageBoundsOf(field: {
  args: readonly { name: string; extensions: Readonly<Record<string, unknown>> }[];
}): PageBounds | null {
  const limit = field.args.find((argument) => argument.name === 'limit');
  return (limit?.extensions.pageBounds as PageBounds | undefined) ?? null;
}
