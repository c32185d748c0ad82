import type { ArgBuilder, ObjectRef } from '@pothos/core';
import { getNamedType, type GraphQLSchema } from 'graphql';
import type { Context } from '../context.js';
import { serverKey } from '../db/server-keys.js';
import { ApiError } from '../errors.js';
import { cursorBinding, decodeCursor, encodeCursor } from '../query/cursor.js';
import type { ListRowReader } from '../db/binary-rows.js';
import { type ListPlan, ListPlanRequest } from '../query/list-plan.js';
import { type PageBounds, pageBoundsExtension } from '../query/page-bounds.js';
import { builder } from './builder.js';
import { PAGE_ITEMS_COMPLEXITY } from './complexity.js';

/** Where a page ends: whether rows follow it, and the cursor (`after`) of the page that follows. */
interface PageInfo {
  hasNextPage: boolean;
  endCursor: string | null;
}

/** A page of a list: its read plan. Rows, count and page info load only when selected, and at most once each. */
export interface ListPage<T> extends ListPlan<ListRowReader> {
  nodes: () => Promise<T[]>;
  totalCount: () => Promise<number>;
  pageInfo: () => Promise<PageInfo>;
  limit: number;
  offset: number;
}

function once<T>(load: () => Promise<T>): () => Promise<T> {
  let promise: Promise<T> | undefined;
  return () => (promise ??= load());
}

/**
 * A page: `read(n)` reads up to n rows of the window (one more than the page holds, which says whether a next
 * page exists without counting), `keyValues` gives a row's sort keys' values for the next page's cursor.
 */
export function listPage<T>(
  read: (take: number) => Promise<T[]>,
  totalCount: () => Promise<number>,
  window: PageWindow,
  keyValues: (row: T) => unknown[],
  exportRows?: ListRowReader,
): ListPage<T> {
  const rows = once(() => read(window.take + 1));
  const nodes = once(async () => (await rows()).slice(0, window.take));
  const pageInfo = once(async (): Promise<PageInfo> => {
    const page = await nodes();
    const last = page.at(-1);
    const endCursor = last === undefined ? null : window.cursorAfter(keyValues(last), window.offset + page.length);
    return { hasNextPage: (await rows()).length > window.take, endCursor };
  });
  return { nodes, totalCount: once(totalCount), pageInfo, limit: window.take, offset: window.offset, exportRows };
}

/** The names of the list page types (listType). */
const LIST_TYPES = new Set<string>();

/**
 * The schema with each root field that answers a list page handing its page, the list's plan, to an execution
 * whose root value asks for it (query/list-plan.ts ListPlanRequest), after the field's own checks. The asker
 * answers the items from the plan's rows itself: the page that execution goes on with has none, its count and
 * position read as ever.
 */
export function handingOverListPlans(schema: GraphQLSchema): GraphQLSchema {
  for (const field of Object.values(schema.getQueryType()?.getFields() ?? {})) {
    const resolve = field.resolve;
    if (!resolve || !LIST_TYPES.has(getNamedType(field.type).name)) continue;
    field.resolve = async (root, args, context, info) => {
      const page = (await resolve(root, args, context, info)) as ListPage<unknown> | null;
      if (!(root instanceof ListPlanRequest) || !page || root.plan) return page;
      root.plan = page;
      return { ...page, nodes: async () => [] };
    };
  }
  return schema;
}

const PageInfoType = builder.objectRef<PageInfo>('PageInfo').implement({
  description: 'Where a page ends, for cursor paging (Relay style): pass endCursor as `after` to read the next page.',
  fields: (t) => ({
    hasNextPage: t.exposeBoolean('hasNextPage', { description: 'Whether rows follow this page.' }),
    endCursor: t.exposeString('endCursor', {
      nullable: true,
      description: "The cursor after this page's last row (null for an empty page): the next page's `after`.",
    }),
  }),
});

/** `<Name>List { nodes, totalCount, limit, offset, pageInfo }` for a paginated list of `item`. */
export function listType<T>(name: string, item: ObjectRef<typeof builder.$inferSchemaTypes, T>, description: string) {
  LIST_TYPES.add(name);
  return builder.objectRef<ListPage<T>>(name).implement({
    description,
    fields: (t) => ({
      nodes: t.field({
        type: [item],
        complexity: PAGE_ITEMS_COMPLEXITY,
        resolve: (page) => page.nodes(),
      }),
      totalCount: t.int({
        description: 'Number of items matching the filter and search, ignoring limit, offset and after.',
        resolve: (page) => page.totalCount(),
      }),
      limit: t.exposeInt('limit'),
      offset: t.exposeInt('offset', { description: 'How many items of the list come before this page (on a cursor page too).' }),
      pageInfo: t.field({ type: PageInfoType, resolve: (page) => page.pageInfo() }),
    }),
  });
}

/**
 * The `limit` and `offset` arguments of a paginated field. `limit` carries the field's bounds in its
 * extensions, where the REST routes read their defaults and maxima (rest/compile-routes.ts): the bounds are
 * written once, on the field. `defaults` shows them as argument defaults in the schema.
 */
export function pageArgs(
  arg: ArgBuilder<typeof builder.$inferSchemaTypes>,
  bounds: PageBounds,
  options: { limitDescription?: string; defaults?: boolean; cursor?: boolean } = {},
) {
  const defaults = options.defaults === true;
  const offsetArgs = {
    limit: arg.int({
      description: options.limitDescription,
      extensions: pageBoundsExtension(bounds),
      ...(defaults ? { defaultValue: bounds.defaultLimit } : {}),
    }),
    offset: arg.int(defaults ? { defaultValue: 0 } : {}),
  };
  // A list returned as a page type has pageInfo, whose endCursor is what `after` takes.
  if (options.cursor === false) return offsetArgs;
  return {
    ...offsetArgs,
    after: arg.string({
      description: "A cursor: the page after the row it names (a previous page's pageInfo.endCursor). Not with offset; at any depth.",
    }),
  };
}

/** The rows a page reads: how many, from where (OFFSET, or after a cursor's row), and how to write the next cursor. */
export interface PageWindow {
  take: number;
  skip: number;
  /** The sort keys' values of the row a cursor page starts after; null for an offset page. */
  after: unknown[] | null;
  /** How many rows of the list precede the page. */
  offset: number;
  /** The cursor of the page after a row with these sort key values, `rowsBefore` rows into the list. */
  cursorAfter(values: unknown[], rowsBefore: number): string;
}

/** What a list's cursors are bound to: the list, and the arguments that shape it (limit, offset and after aside). */
export interface CursorScope {
  list: string;
  args: Record<string, unknown>;
  /** How many sort keys the list's order has (a cursor carries one value for each). */
  keyCount: number;
}

const CURSOR_KEY = 'list-cursor';

/** Validates limit/offset/after arguments; out-of-range values are a client error, not a silent clamp. */
export async function pageWindow(
  args: { limit?: number | null; offset?: number | null; after?: string | null },
  bounds: PageBounds,
  context: Context,
  scope: CursorScope,
): Promise<PageWindow> {
  const { take, skip } = offsetWindow(args, bounds);
  const { limit: _limit, offset: _offset, after: _after, ...shape } = scope.args;
  const binding = cursorBinding([scope.list, context.viewer?.tenantId ?? null, shape]);
  const key = await serverKey(context.db.raw, CURSOR_KEY);
  const cursorAfter = (values: unknown[], rowsBefore: number) => encodeCursor(key, binding, { values, offset: rowsBefore });
  if (args.after === null || args.after === undefined) return { take, skip, after: null, offset: skip, cursorAfter };
  if (skip > 0) throw new ApiError('INVALID_QUERY', 'a cursor (after) and offset cannot be combined; give one of them');
  const position = decodeCursor(key, binding, args.after, scope.keyCount);
  return { take, skip: 0, after: position.values, offset: position.offset, cursorAfter };
}

/** Validates limit/offset arguments; out-of-range values are a client error, not a silent clamp. */
export function offsetWindow(args: { limit?: number | null; offset?: number | null }, bounds: PageBounds): { take: number; skip: number } {
  const take = args.limit ?? bounds.defaultLimit;
  const skip = args.offset ?? 0;
  if (!Number.isInteger(take) || take < 1 || take > bounds.maxLimit) {
    throw new ApiError('INVALID_QUERY', `limit must be an integer from 1 to ${bounds.maxLimit}`);
  }
  if (!Number.isInteger(skip) || skip < 0 || skip > bounds.maxOffset) {
    throw new ApiError('INVALID_QUERY', `offset must be an integer from 0 to ${bounds.maxOffset}; ${DEEPER_WITH_CURSORS}`);
  }
  return { take, skip };
}

/** What an offset past the limit is told: cursors reach every row, at any depth. */
export const DEEPER_WITH_CURSORS = 'to page deeper, follow cursors (GraphQL: after = pageInfo.endCursor; REST: the Link rel="next" URL)';
