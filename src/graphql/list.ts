import type { ObjectRef } from '@pothos/core';
import { ApiError } from '../errors.js';
import { builder } from './builder.js';
import { PAGE_ITEMS_COMPLEXITY } from './complexity.js';

/** A page of a list. Nodes and count load only when selected, and at most once each. */
export interface ListPage<T> {
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

export const MAX_OFFSET = 1_000_000;

/** Validates limit/offset arguments; out-of-range values are a client error, not a silent clamp. */
export function pageWindow(
  args: { limit?: number | null; offset?: number | null },
  bounds: { defaultLimit: number; maxLimit: number },
): { take: number; skip: number } {
  const take = args.limit ?? bounds.defaultLimit;
  const skip = args.offset ?? 0;
  if (!Number.isInteger(take) || take < 1 || take > bounds.maxLimit) {
    throw new ApiError('INVALID_QUERY', `limit must be an integer from 1 to ${bounds.maxLimit}`);
  }
  if (!Number.isInteger(skip) || skip < 0 || skip > MAX_OFFSET) {
    throw new ApiError('INVALID_QUERY', `offset must be an integer from 0 to ${MAX_OFFSET}`);
  }
  return { take, skip };
}
