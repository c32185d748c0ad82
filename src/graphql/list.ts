import type { ArgBuilder, ObjectRef } from '@pothos/core';
import type { GraphQLField } from 'graphql';
import { ApiError } from '../errors.js';
import { builder } from './builder.js';
import { PAGE_ITEMS_COMPLEXITY } from './complexity.js';

/** A page of a list. Nodes and count load only when selected, and at most once each. */
interface ListPage<T> {
  nodes: () => Promise<T[]>;
  totalCount: () => Promise<number>;
  limit: number;
  offset: number;
}

function once<T>(load: () => Promise<T>): () => Promise<T> {
  let promise: Promise<T> | undefined;
  return () => (promise ??= load());
}

export function listPage<T>(
  nodes: () => Promise<T[]>,
  totalCount: () => Promise<number>,
  limit: number,
  offset: number,
): ListPage<T> {
  return { nodes: once(nodes), totalCount: once(totalCount), limit, offset };
}

/** `<Name>List { nodes, totalCount, limit, offset }` for a paginated list of `item`. */
export function listType<T>(name: string, item: ObjectRef<typeof builder.$inferSchemaTypes, T>, description: string) {
  return builder.objectRef<ListPage<T>>(name).implement({
    description,
    fields: (t) => ({
      nodes: t.field({ type: [item], complexity: PAGE_ITEMS_COMPLEXITY, resolve: (page) => page.nodes() }),
      totalCount: t.int({
        description: 'Number of items matching the filter and search, ignoring limit and offset.',
        resolve: (page) => page.totalCount(),
      }),
      limit: t.exposeInt('limit'),
      offset: t.exposeInt('offset'),
    }),
  });
}

/** How far any list may be paged: the same for every list, and for the REST `offset`/`page`. */
const MAX_OFFSET = 1_000_000;

/** A paginated field's page sizes and how far it may be paged. */
interface PageBounds {
  defaultLimit: number;
  maxLimit: number;
  maxOffset: number;
}

export function pageBounds(defaultLimit: number, maxLimit: number): PageBounds {
  return { defaultLimit, maxLimit, maxOffset: MAX_OFFSET };
}

/**
 * The `limit` and `offset` arguments of a paginated field. `limit` carries the field's bounds in its
 * extensions, where the REST routes read their defaults and maxima (rest/compile-routes.ts): the bounds are
 * written once, on the field. `defaults` shows them as argument defaults in the schema.
 */
export function pageArgs(
  arg: ArgBuilder<typeof builder.$inferSchemaTypes>,
  bounds: PageBounds,
  options: { limitDescription?: string; defaults?: boolean } = {},
) {
  const defaults = options.defaults === true;
  return {
    limit: arg.int({ description: options.limitDescription, extensions: { pageBounds: bounds }, ...(defaults ? { defaultValue: bounds.defaultLimit } : {}) }),
    offset: arg.int(defaults ? { defaultValue: 0 } : {}),
  };
}

/** The bounds a field's `limit` argument carries (see pageArgs), or null for a field that is not paginated. */
export function pageBoundsOf(field: GraphQLField<unknown, unknown>): PageBounds | null {
  const limit = field.args.find((argument) => argument.name === 'limit');
  return (limit?.extensions.pageBounds as PageBounds | undefined) ?? null;
}

/** Validates limit/offset arguments; out-of-range values are a client error, not a silent clamp. */
export function pageWindow(args: { limit?: number | null; offset?: number | null }, bounds: PageBounds): { take: number; skip: number } {
  const take = args.limit ?? bounds.defaultLimit;
  const skip = args.offset ?? 0;
  if (!Number.isInteger(take) || take < 1 || take > bounds.maxLimit) {
    throw new ApiError('INVALID_QUERY', `limit must be an integer from 1 to ${bounds.maxLimit}`);
  }
  if (!Number.isInteger(skip) || skip < 0 || skip > bounds.maxOffset) {
    throw new ApiError('INVALID_QUERY', `offset must be an integer from 0 to ${bounds.maxOffset}`);
  }
  return { take, skip };
}
