import type { ArgBuilder, EnumRef, InputFieldMap, ObjectRef } from '@pothos/core';
import type { GraphQLResolveInfo } from 'graphql';
import type { Permission } from '../auth/permissions.js';
import type { Context } from '../context.js';
import type { ListQuery } from '../db/list-reads.js';
import type { Columns, PrismaColumn, SqlColumn } from '../query/columns.js';
import { type OrderInput, type OrderKey, orderKeys, searchTerm } from '../query/filter.js';
import type { PageBounds } from '../query/page-bounds.js';
import { allOf, filterSql, keysetOrder, keyValuesOf, type Sql } from '../query/sql.js';
import { builder } from './builder.js';
import { pageComplexity } from './complexity.js';
import { resourceFilter, resourceOrder } from './filters.js';
import { type ListPage, listPage, listType, pageArgs, type PageWindow, pageWindow } from './list.js';

// The root list fields, whichever way their rows are read (through Prisma: prisma-list.ts; with hand-written
// SQL: sqlListField below): their filter, order and page types, their arguments, and a page's order and window.

type Types = typeof builder.$inferSchemaTypes;

/** What every paged list declares. */
export interface PagedList<Row extends object, Column extends PrismaColumn | SqlColumn> {
  item: ObjectRef<Types, Row>;
  /** The list's filter, order and page types are `<name>Filter`, `<name>Order`, `<name>List`; default: the item's name. */
  name?: string;
  listDescription: string;
  description: string;
  permission: Permission;
  page: PageBounds;
  columns: Columns<Column>;
  /** The enum types of the columns of kind enum. */
  enums?: Readonly<Record<string, EnumRef<Types, string, string>>>;
  /** The order when the caller gives none: as a caller gives one, or as sort keys (for keys beyond the columns). */
  defaultOrder: readonly OrderInput[] | readonly OrderKey<Column>[];
  /** What the `search` argument says it looks in. */
  search: { description: string };
  /** Arguments before the filter's. */
  args?: (arg: ArgBuilder<Types>) => InputFieldMap;
}

/**
 * Declares `Query.<field>`: a page of `list`, with filter, search, orderBy and the page arguments (limit, offset,
 * after; `limitDescription` says what limit takes), as the REST list routes run it.
 */
export function pagedListField<Row extends object, Column extends PrismaColumn | SqlColumn>(
  field: string,
  list: PagedList<Row, Column>,
  limitDescription: string | undefined,
  /** A page of the list, read once the caller's order (`keys`) and page window are known. */
  read: (
    args: Readonly<Record<string, unknown>> & { filter?: unknown; search?: string | null },
    context: Context,
    info: GraphQLResolveInfo,
    keys: readonly OrderKey<Column>[],
    window: PageWindow,
  ) => Promise<ListPage<Row>> | ListPage<Row>,
) {
  const { columns, defaultOrder, page } = list;
  const name = list.name ?? list.item.name;
  const filter = resourceFilter(`${name}Filter`, columns, list.enums);
  const order = resourceOrder(`${name}Order`, columns);
  const type = listType(`${name}List`, list.item, list.listDescription);
  const defaultKeys = defaultOrder.every((key) => 'column' in key)
    ? defaultOrder
    : orderKeys(null, columns, defaultOrder as readonly OrderInput[]);
  builder.queryField(field, (t) =>
    t.field({
      type,
      complexity: pageComplexity(page),
      description: list.description,
      authScopes: { permission: list.permission },
      args: {
        ...list.args?.(t.arg),
        filter: t.arg({ type: filter }),
        search: t.arg.string({ description: list.search.description }),
        orderBy: t.arg({ type: [order] }),
        ...pageArgs(t.arg, page, { limitDescription }),
      },
      resolve: async (_root, args, context, info) => {
        const orderBy = args.orderBy as OrderInput[] | null | undefined;
        const keys = orderBy?.length ? orderKeys(orderBy, columns, []) : defaultKeys;
        const window = await pageWindow(args, page, context, { list: field, args, keyCount: keys.length });
        return read(args, context, info, keys, window);
      },
    }),
  );
}

/** A paged list read with hand-written SQL (db/*-queries.ts): what differs from one such list to the next. */
interface SqlList<Row extends object, Property extends string> extends PagedList<Row, SqlColumn> {
  /** What `search` looks in, as its argument says, and its condition for a search term. */
  search: { description: string; sql: (term: string | null) => Sql };
  /** The conditions the arguments before the filter's add, before the filter's (checked after the page's). */
  where?: (args: Readonly<Record<string, unknown>>) => readonly Sql[];
  /** The row properties the item fields selected at `path` read (null: every one). */
  properties: (info: GraphQLResolveInfo, path: readonly string[]) => ReadonlySet<string> | null;
  read: (context: Context, query: ListQuery<Property>) => Promise<Row[]>;
  count: (context: Context, query: ListQuery<Property>) => Promise<number>;
}

/** Declares `Query.<field>` : a page of a list read with hand-written SQL. */
export function sqlListField<Row extends object, Property extends string>(field: string, list: SqlList<Row, Property>) {
  pagedListField(field, list, undefined, (args, context, info, keys, window) => {
    const query: ListQuery<Property> = {
      where: allOf([
        ...(list.where?.(args) ?? []),
        filterSql(args.filter as Record<string, unknown> | null | undefined, list.columns),
        list.search.sql(searchTerm(args.search)),
      ]),
      ...keysetOrder(keys, window.after),
      take: window.take,
      skip: window.skip,
      properties: list.properties(info, ['nodes']),
    };
    return listPage(
      (take) => list.read(context, { ...query, take }),
      () => list.count(context, query),
      window,
      (row) => keyValuesOf(row as Record<string, unknown>, keys.length),
    );
  });
}
